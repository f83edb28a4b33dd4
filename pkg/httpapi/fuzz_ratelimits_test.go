package httpapi

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// FuzzRateLimitsBody parses rate limit bodies, an app's (perCaller and
// perApp) and a user's (perCaller only): a refusal is a 400 naming the
// field; an accepted part holds the whole numbers sent, a rate from 1 to
// uds.MaxRatePerSecond with a burst of at least 1, or a rate of -1 alone.
func FuzzRateLimitsBody(f *testing.F) {
	for _, s := range []string{
		`{"perCaller":{"requestsPerSecond":10,"burst":20}}`, `{"perApp":{"requestsPerSecond":100,"burst":100}}`,
		`{"perCaller":{"requestsPerSecond":-1}}`, `{"perCaller":null,"perApp":null}`, `{}`, `{"perCaller":{}}`,
		`{"perCaller":{"requestsPerSecond":0,"burst":1}}`, `{"perCaller":{"requestsPerSecond":1.5,"burst":1}}`,
		`{"perCaller":{"requestsPerSecond":"1","burst":1}}`, `{"perCaller":{"requestsPerSecond":1e3,"burst":1}}`,
		`{"perCaller":{"requestsPerSecond":1000001,"burst":1}}`, `{"perCaller":{"requestsPerSecond":-1,"burst":5}}`,
		`{"perCaller":{"requestsPerSecond":5,"burst":5},"perCaller":{"requestsPerSecond":6,"burst":6}}`,
		`{"perUser":{}}`, `[]`, `null`, `{"perCaller":[1,2]}`, `{"perCaller":{"requestsPerSecond":9223372036854775808,"burst":1}}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, perApp bool) {
		rl, err := parseRateLimits(body, perApp)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "perCaller", "perApp")
			return
		}
		known := []string{"perCaller"}
		if perApp {
			known = append(known, "perApp")
		}
		m := objectMembers(t, body, known...)
		for _, part := range []struct {
			name string
			got  uds.Rate
		}{{"perCaller", rl.PerCaller}, {"perApp", rl.PerApp}} {
			if !present(m[part.name]) {
				if part.got != (uds.Rate{}) {
					t.Fatalf("%s not sent, read as %+v", part.name, part.got)
				}
				continue
			}
			nums := objectMembers(t, m[part.name], "requestsPerSecond", "burst")
			want := uds.Rate{PerSecond: wholeNumber(t, nums["requestsPerSecond"]), Burst: wholeNumber(t, nums["burst"])}
			if part.got != want || part.got.Validate(part.name) != nil {
				t.Fatalf("%s %s read as %+v", part.name, m[part.name], part.got)
			}
		}
	})
}

// wholeNumber is the whole number a member sends (0 when absent or
// null), failing the test if it sends anything else.
func wholeNumber(t *testing.T, raw json.RawMessage) int64 {
	t.Helper()
	if !present(raw) {
		return 0
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		t.Fatalf("accepted %s as a whole number", raw)
	}
	return n
}
