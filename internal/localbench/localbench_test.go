package localbench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/httpapi"
)

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sorted []float64
		q      float64
		want   float64
	}{
		{"none", nil, 0.5, 0},
		{"the least", []float64{1, 2, 3}, 0, 1},
		{"the median of three", []float64{1, 2, 3}, 0.5, 2},
		{"p99 of three: the greatest", []float64{1, 2, 3}, 0.99, 3},
		{"p50 of four: the upper middle", []float64{1, 2, 3, 4}, 0.5, 3},
		{"p99 of a hundred: the 100th", seq(100), 0.99, 100},
		{"p99 of a thousand: the 991st", seq(1000), 0.99, 991},
		{"q of 1", []float64{1, 2}, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quantile(tc.sorted, tc.q); got != tc.want {
				t.Errorf("Quantile(%d values, %v) = %v, want %v", len(tc.sorted), tc.q, got, tc.want)
			}
		})
	}
}

// seq returns 1, 2, …, n.
func seq(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i + 1)
	}
	return s
}

// Do sends the subject and body, and keeps what went wrong: the start of
// an answer that was not 2xx, or why none came. Send checks the status.
func TestDoAndSend(t *testing.T) {
	long := strings.Repeat("x", 2*maxProblem)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 64)
		n, _ := r.Body.Read(body)
		switch r.URL.Path {
		case "/echo":
			if r.Header.Get(httpapi.SubjectHeader) != "someone" || string(body[:n]) != `{"data": 1}` {
				http.Error(w, "the subject or body did not come", http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusCreated)
		case "/long":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(long))
		default:
			http.Error(w, `{"error":"no such route"}`, http.StatusNotFound)
		}
	}))
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	defer srv.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name, url   string
		want        int
		wantProblem string
	}{
		{"2xx", srv.URL + "/echo", http.StatusCreated, ""},
		{"a 404", srv.URL + "/missing", http.StatusNotFound, `{"error":"no such route"}`},
		{"a long 503", srv.URL + "/long", http.StatusServiceUnavailable, long[:maxProblem] + "…"},
		{"no answer", gone.URL + "/echo", 0, "connect: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Do(ctx, http.DefaultClient, http.MethodPost, tc.url, "someone", `{"data": 1}`)
			if o.Status != tc.want || !strings.Contains(o.Problem, tc.wantProblem) || (tc.wantProblem == "" && o.Problem != "") || o.Latency <= 0 {
				t.Errorf("Do: %+v, want status %d and problem %q", o, tc.want, tc.wantProblem)
			}
			err := Send(ctx, http.DefaultClient, http.MethodPost, tc.url, "someone", `{"data": 1}`, http.StatusCreated, http.StatusConflict)
			switch {
			case tc.want == http.StatusCreated && err != nil:
				t.Errorf("Send: %v", err)
			case tc.want != http.StatusCreated && (err == nil || !strings.Contains(err.Error(), tc.url)):
				t.Errorf("Send: %v, want an error naming %s", err, tc.url)
			}
		})
	}
}

func TestLoadAverage(t *testing.T) {
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		t.Skip("no /proc/loadavg here")
	}
	if got := LoadAverage(); !regexp.MustCompile(`^[0-9.]+, [0-9.]+, [0-9.]+$`).MatchString(got) {
		t.Errorf("load average %q, want three numbers", got)
	}
}
