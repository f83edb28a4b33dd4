package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzChangesQuery gives a read of the changes feed arbitrary query
// strings, with {cursor} standing for a cursor this API sealed around an
// arbitrary position (a forged one cannot be made, but what the server
// sealed must still never be trusted blindly) and {other} for one of
// another caller's feed. A refusal names the parameter at fault and is a
// 4xx; an accepted read has a limit from 1 to 1,000 and a position only
// when it was given a cursor of its own feed.
func FuzzChangesQuery(f *testing.F) {
	for _, q := range []string{
		"changes=", "changes=&limit=1", "changes=&limit=1000", "changes=&limit=0", "changes=&limit=1001", "changes=&limit=ten",
		"changes=&limit=-1", "changes=abc", "changes={cursor}", "changes={cursor}&limit=5", "changes={other}", "changes=&index=x",
		"changes=&cursor=abc", "changes=&limit=5&limit=6", "changes=%zz", "changes&limit=2", "changes={cursor}&eq=1",
	} {
		f.Add(q, `{"s":"00017000000000000.ab"}`)
		f.Add(q, `{"w":true,"n":{"o":"alice","l":true,"k":"a|n|i"},"b":1700000000000}`)
	}
	const binding = "changes\x00" + fuzzApp + "\x00notes\x00alice"
	f.Fuzz(func(t *testing.T, rawQuery, position string) {
		own := fuzzAPI.cursors.Seal(binding, position)
		other := fuzzAPI.cursors.Seal("changes\x00"+fuzzApp+"\x00notes\x00bob", position)
		rawQuery = strings.Replace(rawQuery, "{cursor}", url.QueryEscape(own), 1)
		rawQuery = strings.Replace(rawQuery, "{other}", url.QueryEscape(other), 1)
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/", RawQuery: rawQuery}, Header: http.Header{}}
		params, err := query(r)
		if err != nil {
			checkRefusal(t, []byte(rawQuery), err)
			return
		}
		q, err := fuzzAPI.changesRequest(params, binding)
		if err != nil {
			checkRefusal(t, []byte(rawQuery), err)
			checkInvalidField(t, err, "changes", "limit", "")
			return
		}
		if q.Limit < 1 || q.Limit > maxChangesLimit {
			t.Fatalf("%q accepted with limit %d", rawQuery, q.Limit)
		}
		if q.After != nil && params.Get("changes") != own {
			t.Fatalf("%q accepted a cursor that is not of its feed", rawQuery)
		}
	})
}
