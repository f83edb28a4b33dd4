package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// TestPolicyChangesRacingWriters changes a namespace into and out of
// private while writers create and delete items through several servers,
// each with its own cache of policies, as functions on Lambda have. After
// each change, whatever its outcome, every acknowledged write that was not
// deleted is readable by its creator under the policy in effect, through
// every server, and no item sits in a key space that policy does not use:
// no acknowledged write is stranded. Writers refused while the change
// settles are told to retry (503 with Retry-After), never anything else.
func TestPolicyChangesRacingWriters(t *testing.T) {
	t.Parallel()
	const (
		servers = 3
		writers = 6
		ttl     = 300 * time.Millisecond
		budget  = time.Second
		margin  = 2 * time.Second
	)
	tables := storetest.NewTables(t)
	client := storetest.Client(t)
	var urls []string
	for range servers {
		st := store.New(client, tables, store.WithLimitsTTL(ttl), store.WithRecomputeQuiet(0),
			// The servers share a clock; the margin covers a write sent
			// just before its budget ran out that a loaded engine commits
			// late.
			store.WithPolicySettle(ttl+budget+margin))
		api := httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
			Subject: httpapi.HeaderSubject, CursorSecret: []byte("race"), RequestBudget: budget, Logger: apitest.Logger(t),
		})
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	send := func(server int, subject, method, path, body string) (int, http.Header, string) {
		req, err := http.NewRequest(method, urls[server]+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if subject != "" {
			req.Header.Set(httpapi.SubjectHeader, subject)
		}
		res, err := testClient.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return 0, nil, ""
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
		}
		return res.StatusCode, res.Header, string(raw)
	}
	// answered sends a request of the test's own setup and checks, which
	// race nothing, until it is answered with more than a 503: on a loaded
	// machine a request can outlast the request budget, and what these
	// requests are for is not that budget.
	answered := func(server int, subject, method, path, body string) (int, http.Header, string) {
		for range 9 {
			if status, h, raw := send(server, subject, method, path, body); status != http.StatusServiceUnavailable {
				return status, h, raw
			}
			time.Sleep(100 * time.Millisecond)
		}
		return send(server, subject, method, path, body)
	}

	// kept holds the acknowledged writes not deleted since: path -> creator.
	var mu sync.Mutex
	kept := map[string]string{}
	refused := 0

	// Each round changes the namespace to target, in both directions. In
	// rounds that keep some items, writers keep some of what they write,
	// so the change must be refused; in the others every item is deleted
	// soon after it is written, so the change can find the namespace empty
	// and complete.
	for round, r := range []struct {
		target   string
		keepSome bool
	}{{"private", false}, {"shared", false}, {"private", true}, {"private", false}, {"shared", true}, {"shared", false}} {
		target, keepSome := r.target, r.keepSome
		// Every server caches the policy in effect, so that writes through
		// it read the old one for a while after the change is announced.
		for s := range servers {
			send(s, "w0", "GET", base+"/race/warm", "")
		}
		// The change is announced (202); a server that applied it at once
		// (200) would be checked all the same.
		outcome := ""
		switch status, _, body := answered(0, "admin", "PUT", adminApps+"/namespaces/race", `{"access":"`+target+`"}`); status {
		case http.StatusOK:
			outcome = "done at once"
		case http.StatusAccepted:
		default:
			t.Fatalf("round %d: announcing the change to an empty namespace answered %d %s", round, status, body)
		}
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				subject := fmt.Sprintf("w%d", w)
				// remove deletes path through a random server. A 503 with
				// Retry-After (refused while the change settles, or out of
				// its one-second budget on a loaded machine, applied or
				// not) is sent again: DELETE is idempotent.
				remove := func(path string) bool {
					status, header, body := send(rng.IntN(servers), subject, "DELETE", path, "")
					for status == http.StatusServiceUnavailable && header.Get("Retry-After") != "" {
						time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
						status, header, body = send(rng.IntN(servers), subject, "DELETE", path, "")
					}
					if status != http.StatusNoContent {
						t.Errorf("delete %s answered %d %s", path, status, body)
						return false
					}
					return true
				}
				for n := 0; ctx.Err() == nil; n++ {
					path := fmt.Sprintf("%s/race/r%d-%s-%d", base, round, subject, n)
					if rng.IntN(2) == 0 {
						path += "/sk" // a list item
					}
					status, header, body := send(rng.IntN(servers), subject, "POST", path, `{"data":1}`)
					switch {
					case status == http.StatusServiceUnavailable && header.Get("Retry-After") != "":
						mu.Lock()
						refused++
						mu.Unlock()
						// Out of its budget on a loaded machine, the create
						// may have been applied: it is removed.
						if strings.Contains(body, "did not complete the request in time") && !remove(path) {
							return
						}
						time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
						continue
					case status != http.StatusCreated:
						t.Errorf("create %s answered %d %s", path, status, body)
						return
					}
					mu.Lock()
					kept[path] = subject
					mu.Unlock()
					if keepSome && rng.IntN(4) == 0 {
						continue
					}
					// Deleted through another server, whose cache may hold
					// another policy than the one the write read.
					time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
					if !remove(path) {
						return
					}
					mu.Lock()
					delete(kept, path)
					mu.Unlock()
					time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
				}
			}()
		}
		// Once the change settles, the repeat that completes it (or finds
		// data and drops it); while the writers run. A change that finds
		// data in a round where everything is deleted is announced again.
		if outcome != "" {
			time.Sleep(ttl + budget)
		}
		for attempt := 0; outcome == "" && attempt < 20; attempt++ {
			time.Sleep(ttl + budget + margin + 50*time.Millisecond)
			status, header, body := send(0, "admin", "PUT", adminApps+"/namespaces/race", `{"access":"`+target+`"}`)
			switch {
			case status == http.StatusServiceUnavailable && header.Get("Retry-After") != "":
				// The completion's scan of the tables outlasted the
				// one-second budget (a loaded machine): it is sent again.
			case status == http.StatusOK:
				outcome = "done"
			case status == http.StatusConflict && keepSome:
				outcome = "refused"
			case status == http.StatusConflict:
				// Refused this time; announced again below.
				for status == http.StatusConflict {
					time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
					status, _, body = answered(0, "admin", "PUT", adminApps+"/namespaces/race", `{"access":"`+target+`"}`)
				}
				if status != http.StatusAccepted {
					t.Fatalf("round %d: announcing again answered %d %s", round, status, body)
				}
			case status != http.StatusAccepted:
				t.Fatalf("round %d: completing the change answered %d %s", round, status, body)
			}
		}
		// Writers go on a moment under the outcome.
		time.Sleep(ttl)
		stop()
		wg.Wait()
		if outcome == "" {
			t.Fatalf("round %d: the change to %s never completed nor was refused", round, target)
		}
		// The mode in effect, and every server's cache past its TTL.
		_, _, raw := answered(0, "admin", "GET", adminApps+"/namespaces/race", "")
		private := strings.Contains(raw, `"access":"private"`)
		if strings.Contains(raw, `"pending"`) {
			t.Fatalf("round %d: a change is still pending after it ended: %s", round, raw)
		}
		time.Sleep(ttl + 50*time.Millisecond)
		t.Logf("round %d: change to %s %s; %d items kept; %d writes refused while changes settled", round, target, outcome, len(kept), refused)

		for path, creator := range kept {
			for s := range servers {
				if status, _, body := answered(s, creator, "GET", path, ""); status != http.StatusOK {
					t.Errorf("round %d: %s, acknowledged to %s, reads %d %s through server %d (private: %v)", round, path, creator, status, body, s, private)
				}
			}
		}
		for _, table := range []string{tables.Data, tables.List} {
			for _, key := range dataKeys(t, client, table, app+"|race|") {
				if inPrivateSpace := strings.Count(key, "|") > 2; inPrivateSpace != private {
					t.Errorf("round %d: %s is in the %s key space of a namespace that is now %s", round, key,
						map[bool]string{true: "private", false: "shared"}[inPrivateSpace],
						map[bool]string{true: "private", false: "not private"}[private])
				}
			}
		}
		// The writers' items were all deleted or are kept: the next round
		// starts from what this one left, deleted by their creators.
		for path, creator := range kept {
			if status, _, body := answered(0, creator, "DELETE", path, ""); status != http.StatusNoContent {
				t.Fatalf("clean up %s: %d %s", path, status, body)
			}
			delete(kept, path)
		}
	}
	for w := range writers {
		_, _, raw := answered(0, "admin", "POST", fmt.Sprintf("%s/apps/%s/users/w%d/quota/recompute", admin, app, w), "")
		if !strings.Contains(raw, `"drift":{"bytes":0,"items":0,"historyBytes":0}`) || !strings.Contains(raw, `"usedItems":0`) {
			t.Errorf("w%d's usage after every item was deleted: %s", w, raw)
		}
	}
	if refused == 0 {
		t.Log("no write met a settling change: the test did not race this time")
	}
}

// dataKeys lists the data keys of a table that start with prefix,
// strongly consistent.
func dataKeys(t *testing.T, client *dynamodb.Client, table, prefix string) []string {
	t.Helper()
	var keys []string
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		out, err := client.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			if k, ok := it["dataKey"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(k.Value, prefix) {
				keys = append(keys, k.Value)
			}
		}
		if out.LastEvaluatedKey == nil {
			return keys
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
