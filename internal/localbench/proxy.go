package localbench

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Proxy stands between a benchmark's servers and the DynamoDB engine and
// passes every call on unchanged, giving each call and its answer to a
// count function: what a benchmark counts at the wire, which the servers'
// request lines cannot show (a failed conditional write carries no
// consumed capacity, and a lost race is no call of its own).
type Proxy struct {
	// URL is the endpoint to give the servers in place of the engine's.
	URL    string
	target string
	count  func(target string, call []byte, status int, answer []byte)
	client *http.Client
	front  *http.Server
}

// StartProxy starts a proxy to the engine at target on a loopback port.
// count is given each call's X-Amz-Target, its body, and the engine's
// status and answer; it is called from the proxy's handlers, so it must be
// safe for concurrent use, and the bodies are its own to keep.
func StartProxy(target string, count func(target string, call []byte, status int, answer []byte)) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := NewProxy(target, count)
	p.URL = "http://" + ln.Addr().String()
	p.front = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.front.Serve(ln) }()
	return p, nil
}

// NewProxy returns a proxy to the engine at target that serves nothing by
// itself (StartProxy serves one): for a test that serves it.
func NewProxy(target string, count func(target string, call []byte, status int, answer []byte)) *Proxy {
	// DisableCompression keeps the engine's answer byte for byte: the
	// SDK checks its CRC32.
	return &Proxy{target: strings.TrimSuffix(target, "/"), count: count, client: &http.Client{
		Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64},
	}}
}

// Close stops a proxy StartProxy started.
func (p *Proxy) Close() error {
	if p.front == nil {
		return nil
	}
	return p.front.Close()
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the call: "+err.Error(), http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, "calling the engine: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, "reading the engine's answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	p.count(r.Header.Get("X-Amz-Target"), body, resp.StatusCode, answer)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}
