package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/store/storetest/faults"
)

// thirdApp is a third app of the user export's tests.
const thirdApp = "5c1f3a2e-8d4b-4f6a-9e21-7b3c0d9e8f10"

// userExportPage is one page of GET .../admin/users/{user}/export.
type userExportPage struct {
	Apps    []json.RawMessage
	Records []json.RawMessage
	Cursor  string
}

// exportUser pages through a user's export with the given page size and
// returns the apps and records as the server encoded them.
func (e *env) exportUser(t *testing.T, user string, limit int) (apps, records []json.RawMessage) {
	t.Helper()
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the export does not end")
		}
		q := fmt.Sprintf("?limit=%d", limit)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r := e.do("GET", admin+"/users/"+user+"/export"+q, "").expect(t, 200)
		var page userExportPage
		if err := json.Unmarshal(r.raw, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Records) > limit {
			t.Fatalf("a page of limit %d holds %d records", limit, len(page.Records))
		}
		apps, records = append(apps, page.Apps...), append(records, page.Records...)
		if page.Cursor == "" {
			return apps, records
		}
		cursor = page.Cursor
	}
}

// storeEveryKind stores, as user in appID, a record of every kind: key-value
// items (one of them bytes), list items, items in a private namespace,
// kept versions and a delete marker, and, when large, a large value.
func (e *env) storeEveryKind(t *testing.T, appID, user string, large bool) {
	t.Helper()
	data := "/rest/api/v1/data/" + appID
	as := []string{"X-Uds-Subject", user}
	for _, p := range []struct{ ns, policy string }{
		{"mine", `{"access":"private"}`},
		{"kept", `{"access":"shared","history":{"versions":5}}`},
	} {
		completePolicy(t, e.now, 200, func() response { return e.do("PUT", admin+"/apps/"+appID+"/namespaces/"+p.ns, p.policy) })
	}
	e.do("POST", data+"/kv/"+user+"-prefs", `{"data":{"theme":"dark","size":1.50},"className":"Prefs"}`, as...).expect(t, 201)
	e.send("POST", data+"/kv/"+user+"-avatar", png, append([]string{"Content-Type", "image/png"}, as...)...).expect(t, 201)
	for i := range 3 {
		e.do("POST", fmt.Sprintf("%s/progress/%s/list/step%d", data, user, i), fmt.Sprintf(`{"data":{"step":%d}}`, i), as...).expect(t, 201)
	}
	e.do("POST", data+"/mine/notes/n1", `{"data":"private note"}`, as...).expect(t, 201)
	e.do("POST", data+"/kept/"+user+"-essay", `{"data":"draft 1"}`, as...).expect(t, 201)
	e.do("PUT", data+"/kept/"+user+"-essay", `{"data":"draft 2"}`, as...).expect(t, 200)
	e.do("POST", data+"/kept/"+user+"-gone", `{"data":"written, then deleted"}`, as...).expect(t, 201)
	e.do("DELETE", data+"/kept/"+user+"-gone", "", as...).expect(t, 204)
	if large {
		value := bytes.Repeat([]byte(user+" large "), 50_000)
		id := e.upload(data+"/kv/"+user+"-video", len(value), "application/octet-stream", value, as...)
		e.commit(data+"/kv/"+user+"-video", id, as...).expect(t, 201)
	}
}

// TestExportUser stores records of every kind for two users in three apps
// and exports one of them: the export holds exactly, app by app, what each
// app's export holds of that owner, each record with its app; the same at
// every page size; the user's usage and overrides in each app, including
// one where they only have an override; a large value's link that reads
// its bytes. Imported into an empty deployment, app by app, the records
// export the same bytes again (the large value aside: an import leaves
// large values out).
func TestExportUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, a := range []string{app, otherApp, thirdApp} {
		for _, u := range []string{"alice", "bob"} {
			e.storeEveryKind(t, a, u, a == otherApp)
		}
	}
	// bob updates an item of alice's: it stays hers.
	e.do("PUT", "/rest/api/v1/data/"+thirdApp+"/kv/alice-prefs", `{"data":{"theme":"light"}}`, "X-Uds-Subject", "bob").expect(t, 200)
	e.do("PUT", admin+"/apps/"+otherApp+"/users/alice/quota", `{"limitBytes":1000000,"limitItems":-1}`).expect(t, 200)
	e.do("PUT", admin+"/apps/"+otherApp+"/users/alice/rate-limits", `{"perCaller":{"requestsPerSecond":5,"burst":10}}`).expect(t, 200)
	const onlyOverride = "9a7e2f4c-1b3d-4e5f-8a6b-0c1d2e3f4a5b"
	e.do("PUT", admin+"/apps/"+onlyOverride+"/users/alice/quota", `{"limitBytes":5000,"limitItems":0}`).expect(t, 200)

	apps, records := e.exportUser(t, "alice", 1000)
	// App by app, in app order.
	var want []string
	withData := []string{app, otherApp, thirdApp}
	slices.Sort(withData)
	for _, a := range withData {
		for _, r := range e.exportAll(t, a, 1000) {
			if bytes.Contains(r, []byte(`"owner":"alice"`)) {
				want = append(want, `{"applicationUuid":"`+a+`",`+string(r[1:]))
			}
		}
	}
	var got []string
	var link string
	for _, r := range records {
		s := string(r)
		if i := strings.Index(s, `,"downloadUrl":"`); i >= 0 {
			end := i + len(`,"downloadUrl":"`) + strings.IndexByte(s[i+len(`,"downloadUrl":"`):], '"') + 1
			if err := json.Unmarshal([]byte(s[i+len(`,"downloadUrl":`):end]), &link); err != nil {
				t.Fatal(err)
			}
			s = s[:i] + s[end:]
		}
		got = append(got, s)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("alice's export holds %d records:\n%s\nwant what the apps' exports hold of hers, %d:\n%s",
			len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	// In each app: 2 key-value items, 3 list items, 1 private item, and
	// in the namespace with history an item with its earlier version and
	// a delete marker with the version it replaced; and the large value.
	if len(records) != 3*10+1 {
		t.Fatalf("alice's export holds %d records, want %d", len(records), 3*10+1)
	}
	for _, limit := range []int{1, 4, 11} {
		pagedApps, paged := e.exportUser(t, "alice", limit)
		if !slices.EqualFunc(paged, records, func(a, b json.RawMessage) bool {
			return dropDownloadURL(a) == dropDownloadURL(b)
		}) || !slices.EqualFunc(pagedApps, apps, rawEqual) {
			t.Fatalf("pages of %d records differ from one page", limit)
		}
	}

	// The user's state in each app, in app order.
	if len(apps) != 4 {
		t.Fatalf("alice's export names %d apps, want 4: %s", len(apps), apps)
	}
	order := []string{app, otherApp, thirdApp, onlyOverride}
	slices.Sort(order)
	for i, a := range order {
		var st struct {
			ApplicationUUID                              string
			UsedBytes, UsedItems, LimitBytes, LimitItems int64
			PerCaller                                    *struct{ RequestsPerSecond, Burst int64 }
		}
		if err := json.Unmarshal(apps[i], &st); err != nil {
			t.Fatal(err)
		}
		q := e.do("GET", admin+"/apps/"+a+"/users/alice/quota", "").expect(t, 200)
		if st.ApplicationUUID != a || st.UsedBytes != int64(num(t, q.body["usedBytes"])) || st.UsedItems != int64(num(t, q.body["usedItems"])) {
			t.Errorf("app %d: %s, and its quota says %s", i, apps[i], q.raw)
		}
		switch a {
		case otherApp:
			if st.LimitBytes != 1000000 || st.LimitItems != -1 || st.PerCaller == nil || st.PerCaller.RequestsPerSecond != 5 || st.PerCaller.Burst != 10 {
				t.Errorf("alice's overrides in %s: %s", a, apps[i])
			}
		case onlyOverride:
			if st.LimitBytes != 5000 || st.UsedItems != 0 || st.PerCaller != nil {
				t.Errorf("alice's override in %s: %s", a, apps[i])
			}
		default:
			if st.LimitBytes != 0 || st.LimitItems != 0 || st.PerCaller != nil {
				t.Errorf("alice has no override in %s: %s", a, apps[i])
			}
		}
	}

	// The large value's link reads its bytes.
	if link == "" {
		t.Fatal("the large value's record has no downloadUrl")
	}
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(body, bytes.Repeat([]byte("alice large "), 50_000)) {
		t.Fatalf("the large value's link answered %d with %d bytes", res.StatusCode, len(body))
	}

	// Into an empty deployment, app by app, in the order exported.
	empty := newEnv(t)
	byApp := map[string][]json.RawMessage{}
	for _, r := range records {
		var rec struct{ ApplicationUUID string }
		if err := json.Unmarshal(r, &rec); err != nil {
			t.Fatal(err)
		}
		byApp[rec.ApplicationUUID] = append(byApp[rec.ApplicationUUID], r)
	}
	for a, rs := range byApp {
		completePolicy(t, empty.now, 200, func() response {
			return empty.do("PUT", admin+"/apps/"+a+"/namespaces/mine", `{"access":"private"}`)
		})
		empty.do("PUT", admin+"/apps/"+a+"/namespaces/kept", `{"access":"shared","history":{"versions":5}}`).expect(t, 200)
		got := empty.importRecords(t, a, rs)
		large := 0
		if a == otherApp {
			large = 1
		}
		if got.Imported != len(rs)-large || len(got.NotImported) != large || len(got.Conflicts) != 0 {
			t.Fatalf("the import of alice's %d records of %s answered %+v", len(rs), a, got)
		}
	}
	_, again := empty.exportUser(t, "alice", 1000)
	var wantAgain []string
	for _, r := range records {
		if !bytes.Contains(r, []byte(`"large":true`)) {
			wantAgain = append(wantAgain, string(r))
		}
	}
	if !slices.Equal(rawStrings(again), wantAgain) {
		t.Fatalf("exported again from the empty deployment:\n%s\nwant:\n%s", rawStrings(again), wantAgain)
	}
}

// dropDownloadURL is a record without its downloadUrl member, which a
// page signs afresh.
func dropDownloadURL(r json.RawMessage) string {
	s := string(r)
	i := strings.Index(s, `,"downloadUrl":"`)
	if i < 0 {
		return s
	}
	rest := s[i+len(`,"downloadUrl":"`):]
	return s[:i] + rest[strings.IndexByte(rest, '"')+1:]
}

func rawStrings(rs []json.RawMessage) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// TestExportUserRefusesBadCursors checks that a cursor of another user's
// export, of an app's export, or made up is a 400 naming the cursor.
func TestExportUserRefusesBadCursors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 3 {
		for _, u := range []string{"alice", "bob"} {
			e.do("POST", fmt.Sprintf("%s/kv/%s%d", base, u, i), `{"data":1}`, "X-Uds-Subject", u).expect(t, 201)
		}
	}
	cursorOf := func(path string) string {
		c, _ := e.do("GET", path, "").expect(t, 200).body["cursor"].(string)
		if c == "" {
			t.Fatalf("%s answered no cursor", path)
		}
		return c
	}
	bobs := cursorOf(admin + "/users/bob/export?limit=1")
	apps := cursorOf(admin + "/apps/" + app + "/export?limit=1")
	for name, cursor := range map[string]string{"another user's": bobs, "an app export's": apps, "made up": "abc"} {
		r := e.do("GET", admin+"/users/alice/export?limit=1&cursor="+cursor, "").expect(t, 400)
		if !strings.Contains(string(r.raw), "cursor") {
			t.Errorf("%s cursor: %s", name, r.raw)
		}
	}
	e.do("GET", admin+"/users/alice/export?limit=0", "").expect(t, 400)
	e.do("GET", admin+"/users/alice/export?history=false", "").expect(t, 400)
	r := e.do("GET", admin+"/users/nobody/export", "").expect(t, 200)
	if strings.TrimSpace(string(r.raw)) != `{"apps":[],"records":[]}` {
		t.Errorf("the export of a user with nothing stored answered %s", r.raw)
	}
}

// TestExportUserUnderFaults pages through a user's export while reads are
// throttled, fail with 500s and lose their connections: a page either
// answers 503 (and is asked again with the same cursor) or is right, and
// the pages together hold exactly what the export holds without faults,
// each record once.
func TestExportUserUnderFaults(t *testing.T) {
	t.Parallel()
	e, ft := faultyEnv(t, 43)
	for _, a := range []string{app, otherApp} {
		for i := range 12 {
			for _, u := range []string{"alice", "bob"} {
				e.do("POST", fmt.Sprintf("/rest/api/v1/data/%s/kv/%s-%02d", a, u, i), fmt.Sprintf(`{"data":{"i":%d}}`, i), "X-Uds-Subject", u).expect(t, 201)
				e.do("POST", fmt.Sprintf("/rest/api/v1/data/%s/progress/%s/list/s%02d", a, u, i), `{"data":1}`, "X-Uds-Subject", u).expect(t, 201)
			}
		}
	}
	_, want := e.exportUser(t, "alice", 1000)
	if len(want) != 2*2*12 {
		t.Fatalf("alice's export holds %d records, want %d", len(want), 2*2*12)
	}
	ft.Set(
		faults.Rule{Kind: faults.Throttle, Rate: 0.25},
		faults.Rule{Kind: faults.ServerError, Rate: 0.25},
		faults.Rule{Kind: faults.Reset, Rate: 0.15},
	)
	var got []json.RawMessage
	unavailable := 0
	for cursor, pages := "", 0; ; pages++ {
		if pages > 500 {
			t.Fatal("the export does not end")
		}
		q := "?limit=7"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r := e.do("GET", admin+"/users/alice/export"+q, "")
		if r.status == http.StatusServiceUnavailable {
			unavailable++
			continue
		}
		r.expect(t, 200)
		var page userExportPage
		if err := json.Unmarshal(r.raw, &page); err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Records...)
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	injected, calls := ft.Injected()
	ft.Set()
	if !slices.EqualFunc(got, want, rawEqual) {
		t.Fatalf("under faults the pages held %d records:\n%s\nwant %d:\n%s", len(got), rawStrings(got), len(want), rawStrings(want))
	}
	if injected[faults.Throttle]+injected[faults.ServerError]+injected[faults.Reset] == 0 {
		t.Fatal("no fault was injected")
	}
	t.Logf("%d pages answered 503 and were asked again; %d DynamoDB calls, faults %v", unavailable, calls, injected)
}
