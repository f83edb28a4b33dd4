// Package console serves the UDS console: a page of plain HTML, CSS and
// JavaScript (ES modules, no framework, no build step) built into the
// binaries, from which a person sees and manages apps, users, usage,
// namespace policies and data. The page calls the API at the same origin
// under /rest/api/v1, so one page serves both ways of opening it: the local
// server (make run) mounts it beside the API, and `uds console` serves it
// beside a proxy that carries the page's calls to a deployed stack with the
// operator's credentials.
package console

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Path is where the console is served: the page at Path, its assets and
// configuration under it.
const Path = "/console/"

// Config is what the page learns from the server that serves it
// (GET /console/config.json).
type Config struct {
	// SubjectHeader says the API takes the caller from X-Uds-Subject, so
	// the page offers a caller field and sends it with data calls: the
	// local server on a loopback address. Behind `uds console` the proxy's
	// credentials decide who the caller is, and the page hides the field.
	SubjectHeader bool `json:"subjectHeader"`
	// Server names what answers the page's API calls, for the page's
	// header: the stack's endpoint behind `uds console`, "local server"
	// beside the local server's API. A person with two consoles open, or
	// one pointed at production, sees which one this is before acting.
	Server string `json:"server,omitempty"`
	// Subject is who data calls act as where the server decides it (uds
	// console's --subject, a token's subject, anonymous); empty where the
	// page's caller field decides it (SubjectHeader).
	Subject string `json:"subject,omitempty"`
	// Calls says in words how the page's calls are authenticated (admin
	// calls signed or not), shown beside the server.
	Calls string `json:"calls,omitempty"`
	// Realtime says the page may subscribe to changes over the API's
	// WebSocket at /rest/api/v1/realtime on its own origin (the local
	// server), so that a namespace's changes and an open item update as
	// they are made. Behind `uds console`, whose proxy carries no
	// WebSocket, the page reads the changes feed every few seconds.
	Realtime bool `json:"realtime,omitempty"`
}

// Local is the configuration beside the local server (make run): the
// page's header names the local server, the caller is the page's caller
// field where the server takes it from X-Uds-Subject (trusted), anonymous
// otherwise, and changes come live over the server's WebSocket.
func Local(trusted bool) Config {
	if trusted {
		return Config{SubjectHeader: true, Server: "local server", Calls: "data calls as the caller field's subject", Realtime: true}
	}
	return Config{Server: "local server", Subject: "anonymous", Calls: "every caller is anonymous: the server does not trust X-Uds-Subject", Realtime: true}
}

//go:embed assets
var embedded embed.FS

// assets are the page's files, at the root of the file system.
var assets = func() fs.FS {
	sub, err := fs.Sub(embedded, "assets")
	if err != nil {
		panic(err) // the directory is embedded above: it exists
	}
	return sub
}()

// contentTypes are the types of the page's files by extension. They are
// named here rather than taken from the system's MIME tables, which differ
// between machines (a .js file is application/javascript on some, and
// browsers refuse a module of a type they do not take for JavaScript).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
}

// The page's security policy names its own script and style sheet by a
// nonce that each answer of the page draws afresh, rather than by 'self':
// the API shares the page's origin, and 'self' would let a stored value
// the API answers as JavaScript or CSS run in the page. The modules
// main.js imports inherit its nonce. Images (the icon) and calls (the API)
// may come from the page's origin, and images from blob: URLs, which only
// the page's own script mints: a stored image is shown from the bytes the
// page fetched (with the caller's identity, and through uds console's
// proxy, which refuses a browser's image load of an API path), never by
// its URL. Nothing comes from elsewhere, and no other page may frame it.
const (
	pagePolicyF = "default-src 'none'; script-src 'nonce-%[1]s'; style-src 'nonce-%[1]s'; img-src 'self' blob:; connect-src 'self'; " + fileSources
	// fileSources are what every answer's policy says: no base URL, no
	// form's target, no framing.
	fileSources = "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	// filePolicy is every other answer's: the page's files are never a
	// document of their own, and opened as one they load nothing.
	filePolicy = "default-src 'none'; " + fileSources
	// noncePlaceholder marks where index.html takes the nonce.
	noncePlaceholder = "{{nonce}}"
)

// newNonce is a fresh nonce for one answer of the page: 128 random bits.
func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return base64.StdEncoding.EncodeToString(b)
}

// servePage answers index.html with a fresh nonce in its policy and on its
// script and style sheet.
func servePage(w http.ResponseWriter, page []byte) {
	nonce := newNonce()
	h := w.Header()
	h.Set("Content-Security-Policy", fmt.Sprintf(pagePolicyF, nonce))
	h.Set("Content-Type", contentTypes[".html"])
	_, _ = w.Write(bytes.ReplaceAll(page, []byte(noncePlaceholder), []byte(nonce)))
}

// Handler serves the console under Path: index.html for Path itself,
// config.json from cfg, and the embedded assets, every answer with
// Cache-Control no-cache (a new binary's page is never mixed with an old
// one's modules) and a strict security policy (the page's with a nonce of
// its own). /console without the slash redirects to Path; anything else is
// a 404.
func Handler(cfg Config) http.Handler {
	config, err := json.Marshal(cfg)
	if err != nil {
		panic(err) // a struct of a bool and strings always marshals
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", filePolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == strings.TrimSuffix(Path, "/") {
			http.Redirect(w, r, Path, http.StatusMovedPermanently)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, Path)
		switch name {
		case "":
			name = "index.html"
		case "config.json":
			h.Set("Content-Type", contentTypes[".json"])
			_, _ = w.Write(config)
			return
		}
		ctype, known := contentTypes[path.Ext(name)]
		if !known || !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		body, err := fs.ReadFile(assets, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if name == "index.html" {
			servePage(w, body)
			return
		}
		h.Set("Content-Type", ctype)
		_, _ = w.Write(body)
	})
}

// Mount serves the console under Path and every other request with next
// (the API, or the proxy to it). It looks at the path's prefix only, rather
// than through http.ServeMux, which cleans paths and would redirect API
// paths whose keys hold "//" or "/./".
func Mount(next http.Handler, cfg Config) http.Handler {
	console := Handler(cfg)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == strings.TrimSuffix(Path, "/") || strings.HasPrefix(r.URL.Path, Path) {
			console.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
