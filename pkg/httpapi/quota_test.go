package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
)

const admin = "/rest/api/v1/admin"

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	if err != nil {
		t.Fatalf("%v is not an integer", v)
	}
	return n
}

func (e *env) quota(app, user string) (bytes, items int64) {
	e.t.Helper()
	r := e.do("GET", admin+"/apps/"+app+"/users/"+url.PathEscape(user)+"/quota", "").expect(e.t, 200)
	return num(e.t, r.body["usedBytes"]), num(e.t, r.body["usedItems"])
}

func TestConcurrentWritersNeverPassTheLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limits string
	}{
		{"item limit", `{"limitItems": 10}`},
		{"byte limit", `{"limitBytes": 12000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.do("PUT", admin+"/apps/"+app+"/users/carol/quota", tc.limits).expect(t, 200)
			const writers = 32
			var created, refused atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			// A reader watches usage while the writers race.
			var maxSeenBytes, maxSeenItems int64
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				for {
					select {
					case <-stop:
						return
					default:
					}
					r := e.do("GET", base+"/quota", "", "X-Uds-Subject", "carol")
					maxSeenBytes = max(maxSeenBytes, num(t, r.body["usedBytes"]))
					maxSeenItems = max(maxSeenItems, num(t, r.body["usedItems"]))
				}
			}()
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range 3 {
						body := fmt.Sprintf(`{"data":{"pad":%q}}`, fmt.Sprintf("%0900d", i*10+j))
						r := e.do("POST", fmt.Sprintf("%s/q/w%02d-%d", base, i, j), body, "X-Uds-Subject", "carol")
						switch r.status {
						case 201:
							created.Add(1)
						case 403:
							refused.Add(1)
							if r.body["error"] != "Quota exceeded" || r.body["usedBytes"] == nil || r.body["user"] != "carol" ||
								(r.body["limitItems"] == nil && r.body["limitBytes"] == nil) {
								t.Errorf("403 body = %s", r.raw)
							}
						default:
							t.Errorf("POST: %d %s", r.status, r.raw)
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			<-watched
			bytes, items := e.quota(app, "carol")
			stored := int64(e.count(e.tables.Data))
			t.Logf("%d created, %d refused; usage %d bytes / %d items; max seen %d bytes / %d items", created.Load(), refused.Load(), bytes, items, maxSeenBytes, maxSeenItems)
			if items != created.Load() || stored != created.Load() {
				t.Errorf("usage counts %d items, the table holds %d, %d creates succeeded", items, stored, created.Load())
			}
			if refused.Load() == 0 {
				t.Error("no write was refused; the limit was never reached")
			}
			var lim struct {
				LimitBytes, LimitItems int64
			}
			_ = json.Unmarshal([]byte(tc.limits), &lim)
			if lim.LimitItems > 0 && (items > lim.LimitItems || maxSeenItems > lim.LimitItems) {
				t.Errorf("usage passed the item limit %d: %d (max seen %d)", lim.LimitItems, items, maxSeenItems)
			}
			if lim.LimitBytes > 0 && (bytes > lim.LimitBytes || maxSeenBytes > lim.LimitBytes) {
				t.Errorf("usage passed the byte limit %d: %d (max seen %d)", lim.LimitBytes, bytes, maxSeenBytes)
			}
			if r := e.do("POST", admin+"/apps/"+app+"/users/carol/quota/recompute", "").expect(t, 200); num(t, r.body["drift"].(map[string]any)["items"]) != 0 || num(t, r.body["drift"].(map[string]any)["bytes"]) != 0 {
				t.Errorf("recompute after the race found drift: %s", r.raw)
			}
		})
	}
}

func TestMixedWorkloadRecomputesWithoutDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apps := []string{app, "0c2b8f0e-6f7a-4d3e-9a51-2b7c1d0e9f11"}
	users := []string{"ann", "ben", "cat"}
	rng := rand.New(rand.NewPCG(1, 2))
	type item struct{ app, path string }
	var live []item
	pad := func() string {
		return fmt.Sprintf(`{"data":{"p":"%s"}}`, string(make([]byte, 0))+fmt.Sprintf("%0*d", rng.IntN(3000)+1, 7))
	}
	for step := range 400 {
		a := apps[rng.IntN(len(apps))]
		u := users[rng.IntN(len(users))]
		switch op := rng.IntN(10); {
		case op < 4 || len(live) == 0: // create a key-value item or a list item
			path := fmt.Sprintf("/rest/api/v1/data/%s/mix/k%d", a, step)
			if op%2 == 0 {
				path = fmt.Sprintf("/rest/api/v1/data/%s/mix/list%d/s%d", a, rng.IntN(4), step)
			}
			e.do("POST", path, pad(), "X-Uds-Subject", u).expect(t, 201)
			live = append(live, item{a, path})
		case op < 7: // update (grow or shrink) by anyone
			it := live[rng.IntN(len(live))]
			e.do("PUT", it.path, pad(), "X-Uds-Subject", u).expect(t, 200)
		case op < 9: // delete one
			i := rng.IntN(len(live))
			e.do("DELETE", live[i].path, "").expect(t, 204)
			live = slices.Delete(live, i, i+1)
		default: // delete a whole list, which may free several owners' usage
			list := fmt.Sprintf("/rest/api/v1/data/%s/mix/list%d", a, rng.IntN(4))
			e.do("DELETE", list+"/list", "").expect(t, 204)
			live = slices.DeleteFunc(live, func(it item) bool { return len(it.path) > len(list) && it.path[:len(list)+1] == list+"/" })
		}
	}
	var total int64
	for _, a := range apps {
		for _, u := range users {
			r := e.do("POST", admin+"/apps/"+a+"/users/"+u+"/quota/recompute", "").expect(t, 200)
			d := r.body["drift"].(map[string]any)
			if num(t, d["bytes"]) != 0 || num(t, d["items"]) != 0 {
				t.Errorf("%s in %s: drift %v", u, a, d)
			}
			total += num(t, r.body["usedItems"])
		}
	}
	if total != int64(len(live)) {
		t.Errorf("usage counts %d items, %d are live", total, len(live))
	}
}

func TestAdminListingsPageThroughEveryShard(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Pick users until every shard of the app index holds at least two.
	perShard := map[string]int{}
	var users []string
	for i := 0; len(perShard) < schema.AppShards || slices.ContainsFunc(mapValues(perShard), func(n int) bool { return n < 2 }); i++ {
		u := fmt.Sprintf("user-%03d", i)
		perShard[store.AppShard(app, u)]++
		users = append(users, u)
	}
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.do("POST", base+"/listing/"+u, `{"data":1}`, "X-Uds-Subject", u).expect(t, 201)
		}()
	}
	wg.Wait()
	other := "0c2b8f0e-6f7a-4d3e-9a51-2b7c1d0e9f11"
	e.do("POST", "/rest/api/v1/data/"+other+"/listing/x", `{"data":1}`, "X-Uds-Subject", "user-000").expect(t, 201)

	for _, limit := range []string{"1", "3", "16", "1000"} {
		t.Run("users, limit "+limit, func(t *testing.T) {
			var got []string
			q := url.Values{"limit": {limit}}
			for pages := 0; ; pages++ {
				r := e.do("GET", admin+"/apps/"+app+"/users?"+q.Encode(), "").expect(t, 200)
				for _, u := range r.body["users"].([]any) {
					row := u.(map[string]any)
					got = append(got, row["user"].(string))
					if num(t, row["items"]) != 1 || num(t, row["bytes"]) <= 0 {
						t.Errorf("row %v", row)
					}
				}
				c, _ := r.body["cursor"].(string)
				if c == "" {
					break
				}
				q.Set("cursor", c)
			}
			want := slices.Clone(users)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("listed %d users, want %d in order", len(got), len(want))
			}
		})
	}
	t.Run("apps of a user", func(t *testing.T) {
		var got []string
		q := url.Values{"limit": {"1"}}
		for {
			r := e.do("GET", admin+"/users/user-000/apps?"+q.Encode(), "").expect(t, 200)
			for _, a := range r.body["apps"].([]any) {
				got = append(got, a.(map[string]any)["applicationUuid"].(string))
			}
			c, _ := r.body["cursor"].(string)
			if c == "" {
				break
			}
			q.Set("cursor", c)
		}
		if want := []string{other, app}; !slices.Equal(got, want) {
			t.Fatalf("apps %v, want %v", got, want)
		}
	})
}

func mapValues(m map[string]int) []int {
	var out []int
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestQuotaLimitsResolveAndBadAdminInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// App default, then a user override, then the override cleared.
	e.do("PUT", admin+"/apps/"+app+"/quota", `{"limitBytes": 5000, "limitItems": 3}`).expect(t, 200)
	r := e.do("GET", admin+"/apps/"+app+"/quota", "").expect(t, 200)
	if num(t, r.body["limitBytes"]) != 5000 || num(t, r.body["limitItems"]) != 3 {
		t.Errorf("app limits = %s", r.raw)
	}
	r = e.do("PUT", admin+"/apps/"+app+"/users/dave/quota", `{"limitItems": -1}`).expect(t, 200)
	if r.body["limitItems"] != nil || num(t, r.body["limitBytes"]) != 5000 {
		t.Errorf("override view = %s", r.raw)
	}
	e.do("DELETE", admin+"/apps/"+app+"/users/dave/quota", "").expect(t, 204)
	r = e.do("GET", base+"/quota/", "", "X-Uds-Subject", "dave").expect(t, 200)
	if num(t, r.body["limitItems"]) != 3 || r.body["user"] != "dave" || num(t, r.body["usedItems"]) != 0 {
		t.Errorf("own quota = %s", r.raw)
	}
	for _, tc := range []struct{ name, method, path, body, want string }{
		{"bad app", "GET", admin + "/apps/nope/users", "", "Invalid applicationUuid"},
		{"bad limit", "GET", admin + "/apps/" + app + "/users?limit=0", "", "Invalid limit"},
		{"foreign cursor", "GET", admin + "/apps/" + app + "/users?cursor=" + "eA.AAAAAAAAAAAAAAAAAAAAAA", "", "Invalid cursor"},
		{"user with a control character", "GET", admin + "/users/a%01b/apps", "", "Invalid user"},
		{"limit below -1", "PUT", admin + "/apps/" + app + "/quota", `{"limitBytes": -2}`, "Invalid limitBytes"},
		{"limit not a number", "PUT", admin + "/apps/" + app + "/quota", `{"limitBytes": "lots"}`, "Invalid limitBytes"},
		{"limit a string of a number", "PUT", admin + "/apps/" + app + "/quota", `{"limitBytes": "5"}`, "Invalid limitBytes"},
		{"limit fractional", "PUT", admin + "/apps/" + app + "/users/dave/quota", `{"limitItems": 1.5}`, "Invalid limitItems"},
		{"unknown field", "PUT", admin + "/apps/" + app + "/quota", `{"limit": 5}`, "Invalid body"},
		{"not JSON", "PUT", admin + "/apps/" + app + "/quota", `five`, "Invalid body"},
		{"bad app on recompute", "POST", admin + "/apps/x/users/dave/quota/recompute", "", "Invalid applicationUuid"},
		{"bad app on own quota", "GET", "/rest/api/v1/data/x/quota", "", "Invalid applicationUuid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body).expect(t, 400)
			if r.body["error"] != tc.want {
				t.Errorf("error %q, want %q: %s", r.body["error"], tc.want, r.raw)
			}
		})
	}
}

// Every subject the data routes accept can be named by the admin routes:
// JWT subjects with "|" and IAM ARNs with "/" (sent as %2F) included.
func TestAdminRoutesAcceptEverySubject(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, subject := range []string{"auth0|abc", "arn:aws:iam::123456789012:user/ops/alice", "ünïcode user"} {
		t.Run(subject, func(t *testing.T) {
			e.do("POST", base+"/ns/item", `{"data": 1}`, "X-Uds-Subject", subject).expect(t, 201)
			defer e.do("DELETE", base+"/ns/item", "")
			user := url.PathEscape(subject)
			if strings.Contains(subject, "/") && !strings.Contains(user, "%2F") {
				t.Fatalf("the path does not escape the subject's /: %s", user)
			}
			r := e.do("GET", admin+"/apps/"+app+"/users/"+user+"/quota", "").expect(t, 200)
			if r.body["user"] != subject || num(t, r.body["usedItems"]) != 1 {
				t.Errorf("quota view: %s", r.raw)
			}
			e.do("PUT", admin+"/apps/"+app+"/users/"+user+"/quota", `{"limitItems": 5}`).expect(t, 200)
			e.do("POST", admin+"/apps/"+app+"/users/"+user+"/quota/recompute", "").expect(t, 200)
			e.do("DELETE", admin+"/apps/"+app+"/users/"+user+"/quota", "").expect(t, 204)
			r = e.do("GET", admin+"/users/"+user+"/apps", "").expect(t, 200)
			if !strings.Contains(string(r.raw), app) {
				t.Errorf("the user's apps do not list the app: %s", r.raw)
			}
		})
	}
}

// A write refused by another owner's quota shows the caller that it was
// refused, not that owner's usage and limits.
func TestForeignQuotaStaysPrivate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("PUT", admin+"/apps/"+app+"/users/olga/quota", `{"limitBytes": 500}`).expect(t, 200)
	e.do("POST", base+"/ns/olgas", `{"data": "small"}`, "X-Uds-Subject", "olga").expect(t, 201)
	big := `{"data": "` + strings.Repeat("x", 600) + `"}`
	r := e.do("PUT", base+"/ns/olgas", big, "X-Uds-Subject", "peter").expect(t, 403)
	for _, field := range []string{"usedBytes", "usedItems", "limitBytes", "limitItems", "user"} {
		if _, ok := r.body[field]; ok {
			t.Errorf("the refusal shows the owner's %s to another caller: %s", field, r.raw)
		}
	}
	if r.body["error"] != "Quota exceeded" {
		t.Errorf("refusal: %s", r.raw)
	}
	r = e.do("PUT", base+"/ns/olgas", big, "X-Uds-Subject", "olga").expect(t, 403)
	if r.body["user"] != "olga" || num(t, r.body["limitBytes"]) != 500 {
		t.Errorf("the owner's own refusal lacks the quota: %s", r.raw)
	}
}
