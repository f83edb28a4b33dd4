package sameorigin

import (
	"net"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCheck sends a guard of 127.0.0.1:8080 (allowing one origin) any
// Host, Origin and Sec-Fetch-Site: it admits only a Host of this machine
// on port 8080, and of the requests that name an origin only its own and
// the allowed one; a Sec-Fetch-Site that says another site is admitted
// only with the allowed origin.
func FuzzCheck(f *testing.F) {
	const allowed = "http://localhost:3000"
	g := New("127.0.0.1:8080", "", []string{allowed})
	for _, seed := range [][3]string{
		{"127.0.0.1:8080", "", ""},
		{"localhost:8080", "http://localhost:8080", "same-origin"},
		{"[::1]:8080", allowed, "same-site"},
		{"evil.example:8080", "", ""},
		{"127.0.0.1:8080", "http://evil.example", "cross-site"},
		{"127.0.0.1:8080", "null", ""},
		{"127.0.0.1", "", "none"},
		{"127.0.0.1:08080", "", ""},
		{"[::ffff:127.0.0.1]:8080", "", ""},
		{"127.0.0.1:8080:8080", "", ""},
		{"LOCALHOST:8080", "http://LOCALHOST:8080", "same-origin"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, host, origin, site string) {
		r := httptest.NewRequest("POST", "http://127.0.0.1:8080/", nil)
		r.Host = host
		r.Header.Set("Origin", origin)
		r.Header.Set("Sec-Fetch-Site", site)
		if g.Check(r) != nil {
			return
		}
		name, port, err := net.SplitHostPort(host)
		ip := net.ParseIP(name)
		if err != nil || port != "8080" || !strings.EqualFold(name, "localhost") && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("admitted Host %q", host)
		}
		if origin != "" && origin != allowed && origin != "http://"+strings.ToLower(host) {
			t.Fatalf("admitted Origin %q to Host %q", origin, host)
		}
		if origin != allowed && site != "" && site != "same-origin" && site != "none" {
			t.Fatalf("admitted Sec-Fetch-Site %q with Origin %q", site, origin)
		}
	})
}
