package realtime

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

func TestParseRequest(t *testing.T) {
	cursor := "c"
	empty := ""
	for _, tc := range []struct {
		name, msg string
		want      Request
		// field is the member a refusal names ("" when accepted), id the
		// id it carries.
		field, id string
	}{
		{name: "subscribe", msg: `{"action":"subscribe","id":"s1","applicationUuid":"a","namespace":"n"}`,
			want: Request{Action: "subscribe", ID: "s1", ApplicationUUID: "a", Namespace: "n"}},
		{name: "subscribe to a list item from a cursor", msg: `{"action":"subscribe","id":"s1","applicationUuid":"a","namespace":"n","key":"l","sortKey":"s","cursor":"c"}`,
			want: Request{Action: "subscribe", ID: "s1", ApplicationUUID: "a", Namespace: "n", Key: "l", SortKey: "s", Cursor: &cursor}},
		{name: "subscribe from the beginning", msg: `{"action":"subscribe","id":"s1","applicationUuid":"a","namespace":"n","cursor":""}`,
			want: Request{Action: "subscribe", ID: "s1", ApplicationUUID: "a", Namespace: "n", Cursor: &empty}},
		{name: "unsubscribe", msg: `{"action":"unsubscribe","id":"s1"}`, want: Request{Action: "unsubscribe", ID: "s1"}},
		{name: "not JSON", msg: `subscribe`, field: "message"},
		{name: "not an object", msg: `[1]`, field: "message"},
		{name: "unknown member keeps its id", msg: `{"action":"subscribe","id":"s1","topic":"x"}`, field: "message", id: "s1"},
		{name: "two values keep the first's id", msg: `{"action":"unsubscribe","id":"s1"} {}`, field: "message", id: "s1"},
		{name: "no id", msg: `{"action":"unsubscribe"}`, field: "id"},
		{name: "long id", msg: `{"action":"unsubscribe","id":"` + strings.Repeat("x", 129) + `"}`, field: "id"},
		{name: "control character in id", msg: `{"action":"unsubscribe","id":"a\u0001"}`, field: "id"},
		{name: "no action", msg: `{"id":"s1"}`, field: "action", id: "s1"},
		{name: "unknown action", msg: `{"action":"publish","id":"s1"}`, field: "action", id: "s1"},
		{name: "no app", msg: `{"action":"subscribe","id":"s1","namespace":"n"}`, field: "applicationUuid", id: "s1"},
		{name: "no namespace", msg: `{"action":"subscribe","id":"s1","applicationUuid":"a"}`, field: "namespace", id: "s1"},
		{name: "sort key without key", msg: `{"action":"subscribe","id":"s1","applicationUuid":"a","namespace":"n","sortKey":"s"}`, field: "sortKey", id: "s1"},
		{name: "unsubscribe with more", msg: `{"action":"unsubscribe","id":"s1","namespace":"n"}`, field: "message", id: "s1"},
		{name: "cursor not a string", msg: `{"action":"subscribe","id":"s1","applicationUuid":"a","namespace":"n","cursor":1}`, field: "message", id: "s1"},
		{name: "too large", msg: `{"action":"unsubscribe","id":"s1","x":"` + strings.Repeat("x", MaxRequestBytes) + `"}`, field: "message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRequest([]byte(tc.msg))
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tc.want)
				if string(g) != string(w) {
					t.Fatalf("got %s, want %s", g, w)
				}
				return
			}
			var invalid *uds.InvalidError
			if !errors.As(err, &invalid) || invalid.Field != tc.field {
				t.Fatalf("want a refusal naming %s, got %v", tc.field, err)
			}
			if got.ID != tc.id {
				t.Errorf("the refusal carries id %q, want %q", got.ID, tc.id)
			}
			if strings.Contains(invalid.Reason, "realtime.") || strings.Contains(invalid.Reason, "*string") {
				t.Errorf("the refusal names a Go type: %s", invalid.Reason)
			}
		})
	}
}

// FuzzParseRequest gives the parser arbitrary messages: it refuses with a
// uds.InvalidError, whose id (if any) is a valid one, or accepts a request
// that holds what the protocol requires, and that reads back the same
// when encoded again.
func FuzzParseRequest(f *testing.F) {
	for _, m := range []string{
		`{"action":"subscribe","id":"s1","applicationUuid":"a","namespace":"n"}`,
		`{"action":"subscribe","id":"s1","applicationUuid":"a","namespace":"n","key":"k","sortKey":"s","cursor":""}`,
		`{"action":"unsubscribe","id":"s1"}`, `{"action":"unsubscribe","id":""}`, `{"action":1}`, `{}`, `null`, `"x"`,
		`{"action":"subscribe","id":"s1","applicationUuid":"a","namespace":"n","cursor":null}`,
		`{"ACTION":"unsubscribe","Id":"s1"}`, `{"action":"unsubscribe","id":"s1"}x`, `{"action":"subscribe","id":"\ud800"}`,
	} {
		f.Add([]byte(m))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		req, err := ParseRequest(msg)
		if err != nil {
			var invalid *uds.InvalidError
			if !errors.As(err, &invalid) {
				t.Fatalf("a refusal that is not a uds.InvalidError: %v", err)
			}
			if req.ID != "" && validID(req.ID) != nil {
				t.Fatalf("a refusal carries the invalid id %q", req.ID)
			}
			return
		}
		if validID(req.ID) != nil {
			t.Fatalf("accepted the id %q", req.ID)
		}
		switch req.Action {
		case ActionSubscribe:
			if req.ApplicationUUID == "" || req.Namespace == "" || req.SortKey != "" && req.Key == "" {
				t.Fatalf("accepted an incomplete subscribe %+v", req)
			}
		case ActionUnsubscribe:
			if req.ApplicationUUID != "" || req.Namespace != "" || req.Key != "" || req.SortKey != "" || req.Cursor != nil {
				t.Fatalf("accepted an unsubscribe with more than its id %+v", req)
			}
		default:
			t.Fatalf("accepted the action %q", req.Action)
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseRequest(again)
		if err != nil {
			t.Fatalf("%s reads back refused: %v", again, err)
		}
		b, _ := json.Marshal(back)
		if string(b) != string(again) {
			t.Fatalf("%s reads back as %s", again, b)
		}
	})
}
