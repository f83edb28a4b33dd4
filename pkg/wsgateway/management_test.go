package wsgateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

func TestManagementAnswers(t *testing.T) {
	var calls atomic.Int32
	var path atomic.Value
	status := map[string][]int{
		"ok": {200}, "gone": {410}, "big": {413}, "throttled": {429, 500, 200}, "down": {503, 503, 503, 503, 503},
		"refused": {403},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		path.Store(r.URL.EscapedPath())
		id := r.URL.Path[len("/prod/@connections/"):]
		seq, ok := status[id]
		if !ok {
			seq = []int{200}
		}
		w.WriteHeader(seq[min(int(n)-1, len(seq)-1)])
	}))
	defer srv.Close()
	m, err := NewManagement(srv.URL+"/prod/", "eu-west-1", credentials.NewStaticCredentialsProvider("AKID", "s", ""), srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		id    string
		want  error
		calls int32
	}{
		{"ok", nil, 1}, {"gone", ErrGone, 1}, {"big", ErrTooLarge, 1}, {"throttled", nil, 3}, {"down", errAny, managementAttempts},
		{"refused", errAny, 1},
	} {
		calls.Store(0)
		err := m.Post(ctx, tc.id, []byte(`{}`))
		switch {
		case tc.want == errAny && err == nil, tc.want != errAny && !errors.Is(err, tc.want):
			t.Errorf("Post to %s: %v, want %v", tc.id, err, tc.want)
		}
		if n := calls.Load(); n != tc.calls {
			t.Errorf("Post to %s: %d calls, want %d", tc.id, n, tc.calls)
		}
	}
	calls.Store(0)
	if err := m.Close(ctx, "gone"); err != nil {
		t.Errorf("Close of a gone connection: %v", err)
	}
	// A connection id is a path segment, escaped.
	calls.Store(0)
	_ = m.Post(ctx, "a/b=", nil)
	if p := path.Load(); p != "/prod/@connections/a%2Fb=" {
		t.Errorf("path %v", p)
	}
}

// errAny stands for any error in TestManagementAnswers.
var errAny = errors.New("any error")
