// Package sameorigin keeps a server on this machine (uds console, the local
// server and its S3 engine) to the pages of its own origin and of the
// origins it is told to allow. A page of another site reaches such a
// server in two ways, and a Guard closes both:
//
//   - DNS rebinding: the page's own host name is made to resolve to
//     127.0.0.1, so its requests reach the server as same-origin ones and
//     can read every answer. They still name the page's host in Host, so
//     the server answers only the names it is reached by on this machine.
//   - Cross-site requests: a form-typed POST needs no preflight, so it runs
//     whatever it names even though the page cannot read the answer. A
//     browser names the page's origin in Origin, and its relation to the
//     server in Sec-Fetch-Site, so the server refuses those of other sites.
//
// A request without those headers comes from a program (curl, the SDK),
// not from a page, and is let through.
package sameorigin

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Guard admits the requests that name its server by one of its own names
// and that no page of another origin sent, except the allowed origins'.
type Guard struct {
	// port is the port the server is bound to; a Host of another port
	// names another server.
	port string
	// names are the host names, lower case, that name the server beside
	// localhost and the loopback addresses: the host it listens on, and
	// the one it was configured with (a machine's name).
	names []string
	// allowed are the origins, as browsers spell them, whose pages may
	// call the server.
	allowed []string
}

// New guards a server listening on addr (host:port, the port the one
// actually bound), which may also be named name (the host of its
// configured address; empty for none), and whose callers include the
// pages of the allowed origins (config.ParseOrigins spells them).
func New(addr, name string, allowed []string) *Guard {
	host, port, _ := net.SplitHostPort(addr)
	g := &Guard{port: port, allowed: allowed}
	for _, h := range []string{host, name} {
		// An address that listens on every interface (0.0.0.0, ::) is
		// no name a client sends.
		if ip := net.ParseIP(h); h != "" && (ip == nil || !ip.IsUnspecified()) {
			g.names = append(g.names, strings.ToLower(h))
		}
	}
	return g
}

// Refusal is why a Guard refuses a request, and what the caller can do.
type Refusal struct {
	Why, Remedy string
}

// Check refuses a request that CheckHost or CheckOrigin refuses.
func (g *Guard) Check(r *http.Request) *Refusal {
	if refusal := g.CheckHost(r); refusal != nil {
		return refusal
	}
	return g.CheckOrigin(r)
}

// CheckHost refuses a request whose Host names another server: another
// port, or a host name of another site (a DNS rebinding page's).
func (g *Guard) CheckHost(r *http.Request) *Refusal {
	if g.ownHost(r.Host) {
		return nil
	}
	return &Refusal{
		Why:    "Host " + strconv.Quote(r.Host) + " is not this server's",
		Remedy: "address it as " + net.JoinHostPort("127.0.0.1", g.port) + " or " + net.JoinHostPort("localhost", g.port),
	}
}

func (g *Guard) ownHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port: the scheme's, 80 for plain HTTP.
		host, port = hostport, "80"
	}
	if port != g.port {
		return false
	}
	host = strings.ToLower(host)
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return host == "localhost" || slices.Contains(g.names, host)
}

// CheckOrigin refuses a request a page of another origin sent, unless
// that origin is allowed. A page's own origin, with a Host CheckHost
// admits, is the server's.
func (g *Guard) CheckOrigin(r *http.Request) *Refusal {
	origin := r.Header.Get("Origin")
	if origin != "" && g.Allowed(origin) {
		return nil
	}
	if origin != "" && origin != "http://"+strings.ToLower(r.Host) {
		return &Refusal{
			Why:    "a request from another origin, " + strconv.Quote(origin),
			Remedy: "only this server's own pages, and the origins UDS_ALLOWED_ORIGINS names, may call it",
		}
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
		return nil
	default:
		return &Refusal{
			Why:    "a request from another site's page (Sec-Fetch-Site: " + site + ")",
			Remedy: "only this server's own pages, and the origins UDS_ALLOWED_ORIGINS names, may call it",
		}
	}
}

// Allowed says whether origin is one whose pages may call the server.
func (g *Guard) Allowed(origin string) bool {
	return slices.Contains(g.allowed, origin)
}

// CORS is what a server answers an allowed origin's requests: the methods
// and request headers its preflight admits, and the answer's headers its
// scripts may read.
type CORS struct {
	Methods, Headers, Expose []string
}

// API is what the API answers the origins it allows, deployed (API
// Gateway's CORS, infra/api.go) and on the local server, which adds the
// subject header it may trust. A binary write carries its metadata in the
// Uds-* headers, and a read of a binary value may ask for a range. Scripts
// read the ETag for If-Match, Location after a create (and a large value's
// presigned GET), Retry-After on 429 and 503, the rate limits' state to
// pace themselves, and a binary value's metadata and range from its
// headers, and the patch documents an item takes (Accept-Patch); browsers
// hide what is not exposed.
var API = CORS{
	Methods: []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"},
	Headers: []string{"Authorization", "Content-Type", "If-Match", "If-None-Match",
		"X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-Sha256",
		"Uds-Class-Name", "Uds-Ttl", "Uds-Expires-At", "Range", "If-Range", "Content-Encoding"},
	Expose: []string{"ETag", "Location", "Retry-After", "RateLimit", "RateLimit-Policy",
		"Uds-Version", "Uds-Created-Date", "Uds-Created-By-Subject", "Uds-Updated-Date", "Uds-Updated-By-Subject",
		"Uds-Expires-At", "Uds-Class-Name", "Uds-Content-Type", "Uds-Size", "Content-Range", "Accept-Ranges", "Accept-Patch"},
}

// Preflight says whether r is a CORS preflight: an OPTIONS that asks which
// method a page may send.
func Preflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// corsMaxAge is how long a browser keeps a preflight's answer, in seconds:
// an hour, as the deployment's API says.
const corsMaxAge = "3600"

// Answer sets the CORS headers on an answer to an allowed origin's request,
// and with preflight those of a preflight's answer. Where there are allowed
// origins, every answer varies by Origin, so a cache never hands one
// origin's answer to another.
func (g *Guard) Answer(h http.Header, r *http.Request, c CORS, preflight bool) {
	if len(g.allowed) == 0 {
		return
	}
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if !g.Allowed(origin) {
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if preflight {
		h.Set("Access-Control-Allow-Methods", strings.Join(c.Methods, ", "))
		h.Set("Access-Control-Allow-Headers", strings.Join(c.Headers, ", "))
		h.Set("Access-Control-Max-Age", corsMaxAge)
		return
	}
	h.Set("Access-Control-Expose-Headers", strings.Join(c.Expose, ", "))
}

// Handler serves next the requests g admits, answering an allowed
// origin's preflight itself and marking its other answers as cors says;
// it refuses the others with 403 in the API's error shape, as server (the
// server's name in the message) refusing them.
func (g *Guard) Handler(server string, cors CORS, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusal := g.Check(r); refusal != nil {
			WriteError(w, http.StatusForbidden, "forbidden", "Forbidden by "+server+": "+refusal.Why, refusal.Remedy)
			return
		}
		preflight := Preflight(r) && g.Allowed(r.Header.Get("Origin"))
		g.Answer(w.Header(), r, cors, preflight)
		if preflight {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// WriteError answers status with a body in the API's error shape: its
// code, what went wrong, details, and when (to the millisecond, as the
// API's are). Like every answer of the API it says nosniff.
func WriteError(w http.ResponseWriter, status int, code, msg, details string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "error": msg, "details": details,
		"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z")})
}
