package config_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/config"
)

// FuzzParseOrigins: every origin ParseOrigins takes is one a browser
// could send, written as the browser writes it (a URL of scheme and host
// only, nothing to trim or lower), and the list it answers reads back as
// itself.
func FuzzParseOrigins(f *testing.F) {
	for _, seed := range []string{
		"http://localhost:3000", "http://localhost:3000, https://app.example", "http://[::1]:5173", "https://xn--bcher-kva.example",
		"http://localhost:3000/", "http://LOCALHOST", "http://localhost:80", "*", "null", ",", "http://a:0", "http://user@a",
		"http://a?b", "http://a#b", "http://[::1", "http://1.2.3.4:65535", "http://a..b", " http://a ",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		origins, err := config.ParseOrigins(v)
		if err != nil {
			if !strings.Contains(err.Error(), "origin") && !strings.Contains(err.Error(), "host") && !strings.Contains(err.Error(), "port") {
				t.Fatalf("error %q says nothing of what is wrong", err)
			}
			return
		}
		for _, o := range origins {
			u, err := url.Parse(o)
			if err != nil || u.Scheme+"://"+u.Host != o || u.Host != strings.ToLower(u.Host) || strings.ContainsAny(o, " ,*") {
				t.Fatalf("%q took %q, not an origin as a browser writes it", v, o)
			}
		}
		again, err := config.ParseOrigins(strings.Join(origins, ","))
		if err != nil || strings.Join(again, ",") != strings.Join(origins, ",") {
			t.Fatalf("%q read back as %q (%v), not %q", v, again, err, origins)
		}
	})
}
