package httpapi_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/udsproject/uds/pkg/store/storetest/faults"
)

// A batch's PATCH answers as PATCH does, one by one and all or none.
func TestBatchPatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("POST", base+"/p/a", `{"data":{"n":1.0,"tags":["x"]},"className":"Card","ttl":3600}`, "X-Uds-Subject", "pia").expect(t, 201)
	e.do("POST", base+"/p/b", `{"data":{"n":1}}`, "X-Uds-Subject", "pia").expect(t, 201)
	e.do("POST", base+"/p/c", `{"data":{"n":1}}`, "X-Uds-Subject", "pia").expect(t, 201)
	e.send("POST", base+"/p/bin", []byte{0, 1, 2}, "X-Uds-Subject", "pia", "Content-Type", "application/octet-stream").expect(t, 201)

	t.Run("one by one", func(t *testing.T) {
		rs, _ := e.batch(t, 200, `{"operations":[
			{"method":"PATCH","path":"p/a","body":{"n":2,"added":true}},
			{"method":"PATCH","path":"p/b","contentType":"application/json-patch+json","body":[{"op":"test","path":"/n","value":9}]},
			{"method":"PATCH","path":"p/missing","body":{"n":2}},
			{"method":"PATCH","path":"p/c","body":{"n":2},"ifMatch":"\"7-zz\""},
			{"method":"PATCH","path":"p/bin","body":{"n":2}}
		]}`, "X-Uds-Subject", "pia")
		if fmt.Sprint(statuses(rs)) != "[200 409 404 412 409]" {
			t.Fatalf("statuses %v: %+v", statuses(rs), rs)
		}
		// The patch keeps what it does not name, with the class name and
		// the expiry, as PATCH without its headers does.
		if body := string(rs[0].Body); !strings.Contains(body, `"data":{"n":2,"tags":["x"],"added":true}`) ||
			!strings.Contains(body, `"className":"Card"`) || !strings.Contains(body, `"expiresAt"`) || rs[0].ETag == "" {
			t.Errorf("patched: %s", body)
		}
		if !strings.Contains(string(rs[1].Body), "operation 0") || !strings.Contains(string(rs[4].Body), "binary") {
			t.Errorf("conflicts: %s / %s", rs[1].Body, rs[4].Body)
		}
		if r := e.do("GET", base+"/p/a", "").expect(t, 200); r.header.Get("ETag") != rs[0].ETag {
			t.Errorf("GET ETag %s, the batch said %s", r.header.Get("ETag"), rs[0].ETag)
		}
		if r := e.do("GET", base+"/p/c", "").expect(t, 200); !strings.Contains(string(r.raw), `"data":{"n":1}`) {
			t.Errorf("a refused patch wrote: %s", r.raw)
		}
	})

	t.Run("all or none", func(t *testing.T) {
		rs, _ := e.batch(t, 200, `{"atomic":true,"operations":[
			{"method":"PATCH","path":"p/a","contentType":"application/json-patch+json","body":[{"op":"add","path":"/tags/-","value":"y"}]},
			{"method":"PATCH","path":"p/b","body":{"n":null,"m":3}},
			{"method":"POST","path":"p/d","body":{"data":1}}
		]}`, "X-Uds-Subject", "pia")
		if fmt.Sprint(statuses(rs)) != "[200 200 201]" {
			t.Fatalf("statuses %v: %+v", statuses(rs), rs)
		}
		if !strings.Contains(string(rs[0].Body), `"tags":["x","y"]`) || !strings.Contains(string(rs[1].Body), `"data":{"m":3}`) {
			t.Errorf("patched: %s / %s", rs[0].Body, rs[1].Body)
		}
		before := e.do("GET", base+"/p/a", "").expect(t, 200).header.Get("ETag")
		for _, tc := range []struct {
			name, ops string
			status    int
			failed    int64
		}{
			{"a failed test", `{"method":"PATCH","path":"p/a","body":{"n":3}},{"method":"PATCH","path":"p/b","contentType":"application/json-patch+json","body":[{"op":"test","path":"/m","value":4}]}`, 409, 1},
			{"a missing item", `{"method":"POST","path":"p/e","body":{"data":1}},{"method":"PATCH","path":"p/missing","body":{"n":3}}`, 404, 1},
			{"a stale ifMatch", `{"method":"PATCH","path":"p/a","body":{"n":3},"ifMatch":"\"7-zz\""},{"method":"POST","path":"p/e","body":{"data":1}}`, 412, 0},
			{"a binary value", `{"method":"POST","path":"p/e","body":{"data":1}},{"method":"PATCH","path":"p/bin","body":{"n":3}}`, 409, 1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, r := e.batch(t, tc.status, `{"atomic":true,"operations":[`+tc.ops+`]}`, "X-Uds-Subject", "pia")
				if num(t, r.body["failedIndex"]) != tc.failed {
					t.Errorf("failedIndex %v, want %d: %s", r.body["failedIndex"], tc.failed, r.raw)
				}
				if got := e.do("GET", base+"/p/a", "").expect(t, 200).header.Get("ETag"); got != before {
					t.Errorf("p/a changed to %s", got)
				}
				e.do("GET", base+"/p/e", "").expect(t, 404)
			})
		}
	})

	t.Run("refused before anything is written", func(t *testing.T) {
		for _, tc := range []struct{ name, op, want string }{
			{"another patch type", `{"method":"PATCH","path":"p/a","contentType":"application/xml","body":{"n":1}}`, "Invalid operations[0].contentType"},
			{"a malformed JSON Patch", `{"method":"PATCH","path":"p/a","contentType":"application/json-patch+json","body":[{"op":"jump","path":"/n"}]}`, "Invalid operations[0].body"},
			{"a JSON Patch that is no array", `{"method":"PATCH","path":"p/a","contentType":"application/json-patch+json","body":{"n":1}}`, "Invalid operations[0].body"},
			{"no patch", `{"method":"PATCH","path":"p/a"}`, "Invalid operations[0].body"},
			{"contentType on a PUT", `{"method":"PUT","path":"p/a","contentType":"application/merge-patch+json","body":{"data":1}}`, "Invalid operations[0].contentType"},
		} {
			for _, atomic := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s, atomic %v", tc.name, atomic), func(t *testing.T) {
					_, r := e.batch(t, 400, fmt.Sprintf(`{"atomic":%v,"operations":[{"method":"POST","path":"p/f","body":{"data":1}},%s]}`, atomic, strings.Replace(tc.op, "[0]", "[1]", 1)), "X-Uds-Subject", "pia")
					if want := strings.Replace(tc.want, "[0]", "[1]", 1); r.body["error"] != want {
						t.Errorf("error %v, want %q: %s", r.body["error"], want, r.raw)
					}
					e.do("GET", base+"/p/f", "").expect(t, 404)
				})
			}
		}
	})
	exactUsage(t, e, "pia")
}

// An atomic batch of one PATCH, sent alone when nothing else changes with
// the item, keeps its answer when DynamoDB's is lost: the patch is not
// applied twice (a test that held would then fail) and the client is told
// it applied.
func TestBatchPatchLostAnswers(t *testing.T) {
	t.Parallel()
	e, ft := faultyEnv(t, 44)
	e.do("POST", base+"/lost/n", `{"data":{"n":0}}`, "X-Uds-Subject", "lia").expect(t, 201)
	ft.Set(faults.Rule{Kind: faults.LostAfterCommit, Ops: writeOps, Rate: 0.3})
	n := 0
	for range 9 {
		for _, atomic := range []bool{true, false} {
			if n == 9 {
				break
			}
			rs, _ := e.batch(t, 200, fmt.Sprintf(`{"atomic":%v,"operations":[{"method":"PATCH","path":"lost/n","contentType":"application/json-patch+json","body":[{"op":"test","path":"/n","value":%d},{"op":"replace","path":"/n","value":%d}]}]}`, atomic, n, n+1), "X-Uds-Subject", "lia")
			if rs[0].Status != 200 || !strings.Contains(string(rs[0].Body), fmt.Sprintf(`"data":{"n":%d}`, n+1)) {
				t.Fatalf("patch %d (atomic %v) answered %d: %s", n, atomic, rs[0].Status, rs[0].Body)
			}
			n++
		}
	}
	injected, _ := ft.Injected()
	ft.Set()
	if injected[faults.LostAfterCommit] == 0 {
		t.Fatalf("no answer was lost: %v", injected)
	}
	if r := e.do("GET", base+"/lost/n", "").expect(t, 200); !strings.Contains(string(r.raw), `"data":{"n":9}`) {
		t.Errorf("after nine patches: %s", r.raw)
	}
	exactUsage(t, e, "lia")
}

// Atomic batches that patch different members of one item at once, each
// without ifMatch, lose none of one another's members: each is applied
// to the item as its transaction finds it.
func TestBatchPatchConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("POST", base+"/hot/item", `{"data":{}}`, "X-Uds-Subject", "hal").expect(t, 201)
	const writers, patches = 6, 4
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range patches {
				body := fmt.Sprintf(`{"atomic":true,"operations":[{"method":"PATCH","path":"hot/item","body":{"m%d":%d}}]}`, w, n)
				// A write that keeps losing its races answers 503; a
				// client sends it again.
				r := e.do("POST", base+"/batch", body, "X-Uds-Subject", "hal")
				for r.status == 503 {
					r = e.do("POST", base+"/batch", body, "X-Uds-Subject", "hal")
				}
				if r.status != 200 {
					t.Errorf("writer %d patch %d answered %d: %s", w, n, r.status, r.raw)
				}
			}
		}()
	}
	wg.Wait()
	r := e.do("GET", base+"/hot/item", "").expect(t, 200)
	data := r.body["data"].(map[string]any)
	for w := range writers {
		if got := fmt.Sprint(data[fmt.Sprintf("m%d", w)]); got != fmt.Sprint(patches-1) {
			t.Errorf("member m%d is %s, want %d: %s", w, got, patches-1, r.raw)
		}
	}
	if v := num(t, r.body["version"]); v != 1+writers*patches {
		t.Errorf("version %d, want %d: every patch counted once", v, 1+writers*patches)
	}
}
