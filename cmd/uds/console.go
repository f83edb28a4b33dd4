package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/internal/sameorigin"
	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/console"
	"github.com/udsproject/uds/pkg/httpapi"
)

const consoleLong = `The console page (the one make run serves at /console/) is served on 127.0.0.1, and
its calls to the API are carried to --endpoint with this machine's credentials, which
never reach the browser: admin calls signed with SigV4 (the default AWS credential chain
and --region or AWS_REGION) when the endpoint is not a loopback address, or with --sigv4;
data calls with --token (UDS_TOKEN), or as --subject (UDS_SUBJECT) for a local server.
It prints the console's URL and opens a browser on it (xdg-open, or open on macOS)
unless --no-open; Ctrl-C stops it. Only pages of the console's own address may call
through it: a request naming another host, or sent from another origin, is refused, and so
is a browser's load of an API path other than the page's own fetch calls (a link to an item
opened in a tab: stored values are read through the console's data page).`

func consoleFlags(fs *flag.FlagSet) {
	fs.Int("port", 8090, "the port to serve the console on, on 127.0.0.1 (0: any free port)")
	fs.Bool("no-open", false, "print the URL without opening a browser")
}

// maxProxiedBody bounds a request body the console carries: an import page
// of 1000 records fits well within it, and API Gateway takes no more than
// 10 MB. The whole body is read before it is sent, to be signed.
const maxProxiedBody = 16 << 20

// consoleAuth is how the console's proxy authenticates the page's calls.
type consoleAuth struct {
	signer  *client.Signer // admin calls; nil: sent unsigned (a local server)
	token   string         // data calls' bearer token
	subject string         // data calls' X-Uds-Subject, for a local server
}

func runConsole(e *env, _ []string) error {
	// The client every command gets has checked the endpoint already.
	endpoint, err := url.Parse(strings.TrimSuffix(e.flag("endpoint"), "/"))
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(e.flag("port"))
	if err != nil || port < 0 || port > 65535 {
		return usageError("--port %q is not a port", e.flag("port"))
	}
	auth := consoleAuth{token: e.flag("token"), subject: e.flag("subject")}
	if e.flag("sigv4") == "true" || !loopbackHost(endpoint.Hostname()) {
		if auth.signer, err = client.DefaultSigner(e.ctx, e.flag("region")); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer ln.Close()
	self := ln.Addr().String()
	page := "http://" + self + console.Path
	fmt.Fprintf(e.stdout, "UDS console on %s for %s (%s); Ctrl-C stops it\n", page, endpoint, auth.describe())
	if e.flag("no-open") != "true" {
		if err := openBrowser(page); err != nil {
			fmt.Fprintf(e.stderr, "uds console: no browser opened (%v): open the URL above\n", err)
		}
	}
	srv := &http.Server{Handler: consoleHandler(self, endpoint, auth), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-e.ctx.Done():
	}
	stopping, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(stopping)
}

// describe says how the page's calls are authenticated, for the start line.
func (a consoleAuth) describe() string {
	admin := "admin calls unsigned"
	if a.signer != nil {
		admin = "admin calls signed with SigV4"
	}
	data := "data calls as anonymous"
	switch {
	case a.token != "":
		data = "data calls with the token"
	case a.subject != "":
		data = "data calls as " + a.subject
	}
	return admin + ", " + data
}

// actingAs is who the page's data calls act as, for its header.
func (a consoleAuth) actingAs() string {
	switch {
	case a.token != "":
		return "the token's subject"
	case a.subject != "":
		return a.subject
	}
	return "anonymous"
}

// loopbackHost says whether an endpoint's host is this machine: there
// admin routes are open, and the console signs nothing unless told to.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func openBrowser(page string) error {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	cmd := exec.Command(opener, page)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// consoleHandler serves the page and carries its API calls to endpoint. It
// answers only requests addressed to self, the console's own address (so a
// page of another site that resolves its name to 127.0.0.1 cannot reach
// it), and carries API calls only from the console's own pages: a browser
// names another page's origin in Origin and Sec-Fetch-Site.
func consoleHandler(self string, endpoint *url.URL, auth consoleAuth) http.Handler {
	guard := sameorigin.New(self, "", nil)
	apiPrefix := httpapi.BasePath + "/"
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(endpoint)
			h := pr.Out.Header
			// Whatever credentials or identity the browser sent are not
			// the proxy's to pass on; nor are its cookies and origin.
			for _, name := range []string{"Authorization", httpapi.SubjectHeader, "Cookie", "Origin", "Referer"} {
				h.Del(name)
			}
			if strings.HasPrefix(pr.In.URL.Path, apiPrefix+"admin/") {
				return
			}
			if auth.token != "" {
				h.Set("Authorization", "Bearer "+auth.token)
			}
			if auth.subject != "" {
				h.Set(httpapi.SubjectHeader, auth.subject)
			}
		},
		Transport:    signingTransport{base: http.DefaultTransport, signer: auth.signer, admin: strings.TrimSuffix(endpoint.Path, "/") + apiPrefix + "admin/"},
		ErrorHandler: proxyError,
	}
	page := console.Mount(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, apiPrefix) {
			http.NotFound(w, r)
			return
		}
		if refusal := guard.CheckOrigin(r); refusal != nil {
			refuse(w, refusal.Why, "the console carries only its own page's calls")
			return
		}
		if browserLoad(r) {
			refuse(w, "a browser's "+r.Header.Get("Sec-Fetch-Dest")+" load of an API path", "the console carries only its page's calls, which it makes with fetch; open stored values through the console's data page")
			return
		}
		proxy.ServeHTTP(w, r)
	}), console.Config{Server: endpoint.String(), Subject: auth.actingAs(), Calls: auth.describe()})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusal := guard.CheckHost(r); refusal != nil {
			refuse(w, refusal.Why, "open the console at http://"+self+console.Path)
			return
		}
		page.ServeHTTP(w, r)
	})
}

// browserLoad says a browser sent r for anything but a script's fetch
// (Sec-Fetch-Dest empty): a navigation, such as a link opened from a mail
// app (Sec-Fetch-Site none), a frame, an image or a script. An API answer
// so loaded would be shown in the console's origin, where a stored page's
// script could call the admin routes the proxy signs with this machine's
// credentials. A request without the header comes from a program
// (curl), not from a browser.
func browserLoad(r *http.Request) bool {
	dest := r.Header.Get("Sec-Fetch-Dest")
	return dest != "" && dest != "empty" || r.Header.Get("Sec-Fetch-Mode") == "navigate"
}

// refuse answers 403 in the API's error shape, which the page shows.
func refuse(w http.ResponseWriter, why, details string) {
	sameorigin.WriteError(w, http.StatusForbidden, "forbidden", "Forbidden by the console: "+why, details)
}

func proxyError(w http.ResponseWriter, _ *http.Request, err error) {
	sameorigin.WriteError(w, http.StatusBadGateway, "unavailable", "The console could not reach the API", err.Error())
}

// signingTransport signs the admin calls (paths under admin) with SigV4
// before sending them, and sends the others as they are.
type signingTransport struct {
	base   http.RoundTripper
	signer *client.Signer
	admin  string
}

func (s signingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.signer == nil || !strings.HasPrefix(req.URL.Path, s.admin) {
		return s.base.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(req.Body, maxProxiedBody+1))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(body) > maxProxiedBody {
			return nil, errTooLarge
		}
	}
	// RoundTrip must leave the request it was given as it was: the
	// signed one is a copy.
	signed := req.Clone(req.Context())
	signed.Body, signed.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	if len(body) == 0 {
		signed.Body = http.NoBody
	}
	if err := s.signer.Sign(req.Context(), signed, body); err != nil {
		return nil, err
	}
	return s.base.RoundTrip(signed)
}

var errTooLarge = errors.New("the request body exceeds " + strconv.Itoa(maxProxiedBody>>20) + " MiB, more than the API takes")
