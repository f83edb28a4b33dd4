package wsgateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/realtime"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/streampoll"
)

const stepsApp = "7b0c2f4e-3a51-4d8e-9c1a-2e6f8d4b5a90"

// deployed is the deployed endpoint over a real feed: the HTTP API writes,
// the changes function (its stream poller) lands the feed's rows and
// publishes them, and a worker takes the queue's events through the
// realtime protocol (realtime.Steps), as the deliver function does.
type deployed struct {
	*transport
	api http.Handler
}

func newDeployed(t *testing.T) *deployed {
	t.Helper()
	tables := storetest.NewStreamedTables(t)
	client := storetest.Client(t)
	logger := apitest.Logger(t)
	// A change of access mode settles at once, as in apitest's servers.
	api := httpapi.New(httpapi.StoresOf(store.New(client, tables, store.WithPolicySettle(100*time.Millisecond))), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("steps"), RequestBudget: apitest.Budget,
		DeleteAllBudget: apitest.Budget, Logger: logger,
	})
	tr := newTransport(t)
	tr.deliv.engine = StepsEngine{Steps: realtime.NewSteps(api.RealtimeFeed(), time.Now)}
	found, err := streampoll.Streams(t.Context(), client, tables.Data, tables.List)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := streampoll.NewClient(t.Context(), os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	poller, err := streampoll.New(streams, found,
		changes.Handler(store.New(client, tables, store.WithLanded(tr.pub.Landed)), logger), streampoll.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{}, 2)
	go func() { poller.Run(ctx); stopped <- struct{}{} }()
	// The queue's event source: batches of ten, as they come.
	go func() {
		defer func() { stopped <- struct{}{} }()
		for ctx.Err() == nil {
			batch := tr.queue.take(10)
			if len(batch.Records) == 0 {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			res, err := tr.deliv.Handle(ctx, batch)
			if ctx.Err() == nil && (err != nil || len(res.BatchItemFailures) > 0) {
				t.Errorf("a batch failed: %v, %v", res.BatchItemFailures, err)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-stopped; <-stopped })
	return &deployed{transport: tr, api: api}
}

func (d *deployed) write(t *testing.T, method, path, body, subject string, want int) {
	t.Helper()
	req := httptest.NewRequest(method, "/rest/api/v1/data/"+stepsApp+"/"+path, strings.NewReader(body))
	if subject != "" {
		req.Header.Set(httpapi.SubjectHeader, subject)
	}
	res := httptest.NewRecorder()
	d.api.ServeHTTP(res, req)
	if res.Code != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, res.Code, res.Body, want)
	}
}

// stepMessage is a message the connection received.
type stepMessage struct {
	Type   string         `json:"type"`
	ID     string         `json:"id"`
	Change map[string]any `json:"change"`
	Cursor string         `json:"cursor"`
	Status int            `json:"status"`
}

// await waits until the connection has received messages that done
// accepts, and returns them all.
func (d *deployed) await(t *testing.T, id string, what string, done func([]stepMessage) bool) []stepMessage {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var msgs []stepMessage
		for _, raw := range d.gw.messages(id) {
			var m stepMessage
			if err := json.Unmarshal([]byte(raw), &m); err != nil {
				t.Fatalf("a message that is not JSON: %s", raw)
			}
			msgs = append(msgs, m)
		}
		if done(msgs) {
			return msgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not received; the connection has %d messages: %v", what, len(msgs), d.gw.messages(id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// state is what a subscriber's changes make of the namespace: each item's
// latest change, with a check that no item goes back to an older state.
func state(t *testing.T, msgs []stepMessage, sub string) map[string]map[string]any {
	t.Helper()
	items := map[string]map[string]any{}
	rank := map[string]float64{}
	for _, m := range msgs {
		if m.Type != realtime.TypeChange || m.ID != sub {
			continue
		}
		k, _ := m.Change["id"].(string)
		r, _ := m.Change["version"].(float64)
		if m.Change["deleted"] == true {
			r = 1 << 60
		}
		if prev, ok := rank[k]; ok && r < prev {
			t.Fatalf("%s came back to %v after a later state", k, m.Change)
		}
		rank[k], items[k] = r, m.Change
	}
	return items
}

func holds(items map[string]map[string]any, want map[string]string) bool {
	n := 0
	for k, e := range items {
		if e["deleted"] == true {
			continue
		}
		n++
		b, _ := json.Marshal(e["data"])
		if want[k] != string(b) {
			return false
		}
	}
	return n == len(want)
}

// TestDeployedDelivery subscribes through the deployed transport, writes
// through the HTTP API and receives every change, in order; a second
// connection resumes from the first one's last cursor and ends with the
// same namespace, then takes a live change too.
func TestDeployedDelivery(t *testing.T) {
	d := newDeployed(t)
	d.route(t, "CONNECT", "A", "")
	d.route(t, "MESSAGE", "A", fmt.Sprintf(`{"action":"subscribe","id":"s1","applicationUuid":%q,"namespace":"rt"}`, stepsApp))
	d.await(t, "A", "subscribed", func(m []stepMessage) bool { return len(m) > 0 && m[0].Type == realtime.TypeSubscribed })

	d.write(t, "POST", "rt/a", `{"data":1}`, "", 201)
	d.write(t, "POST", "rt/b", `{"data":"b"}`, "", 201)
	d.write(t, "PUT", "rt/a", `{"data":2}`, "", 200)
	d.write(t, "DELETE", "rt/b", "", "", 204)
	d.write(t, "POST", "rt/c", `{"data":[3]}`, "", 201)
	want := map[string]string{"a": "2", "c": "[3]"}
	msgs := d.await(t, "A", "every change", func(m []stepMessage) bool { return holds(state(t, m, "s1"), want) })

	var last string
	for _, m := range msgs {
		if m.Type == realtime.TypeChange {
			last = m.Cursor
		}
	}
	d.route(t, "CONNECT", "B", "")
	d.route(t, "MESSAGE", "B", fmt.Sprintf(`{"action":"subscribe","id":"r","applicationUuid":%q,"namespace":"rt","cursor":""}`, stepsApp))
	d.await(t, "B", "the namespace from the beginning", func(m []stepMessage) bool { return holds(state(t, m, "r"), want) })
	d.route(t, "CONNECT", "C", "")
	d.route(t, "MESSAGE", "C", fmt.Sprintf(`{"action":"subscribe","id":"r","applicationUuid":%q,"namespace":"rt","cursor":%q}`, stepsApp, last))
	d.await(t, "C", "subscribed from the cursor", func(m []stepMessage) bool { return len(m) > 0 && m[0].Type == realtime.TypeSubscribed })

	d.write(t, "PUT", "rt/c", `{"data":4}`, "", 200)
	want["c"] = "4"
	for _, id := range []string{"A", "B", "C"} {
		sub := map[string]string{"A": "s1", "B": "r", "C": "r"}[id]
		d.await(t, id, "the live change on "+id, func(m []stepMessage) bool {
			items := state(t, m, sub)
			c, _ := json.Marshal(items["c"]["data"])
			return string(c) == "4"
		})
	}
	if got := state(t, d.await(t, "A", "", func([]stepMessage) bool { return true }), "s1"); !holds(got, want) {
		t.Fatalf("A holds %v", got)
	}
}

// TestDeployedPrivate checks that a private namespace's subscription
// sees its caller's own items only, and is refused anonymously.
func TestDeployedPrivate(t *testing.T) {
	d := newDeployed(t)
	// A change into private settles before it is complete (200).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		req := httptest.NewRequest("PUT", "/rest/api/v1/admin/apps/"+stepsApp+"/namespaces/mine", strings.NewReader(`{"access":"private"}`))
		res := httptest.NewRecorder()
		d.api.ServeHTTP(res, req)
		if res.Code == 200 {
			break
		}
		if res.Code != 202 || time.Now().After(deadline) {
			t.Fatalf("private policy: %d %s", res.Code, res.Body)
		}
	}
	for _, id := range []string{"alice", "bob", "anon"} {
		d.route(t, "CONNECT", id, "")
	}
	// The routes of this transport are public: every caller is
	// anonymous there. Here the callers are named as an authorizer would.
	for _, who := range []string{"alice", "bob"} {
		if err := d.conns.Open(context.Background(), who, who, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	sub := fmt.Sprintf(`{"action":"subscribe","id":"p","applicationUuid":%q,"namespace":"mine"}`, stepsApp)
	for _, id := range []string{"alice", "bob", "anon"} {
		d.route(t, "MESSAGE", id, sub)
	}
	refused := d.await(t, "anon", "the anonymous refusal", func(m []stepMessage) bool { return len(m) > 0 })
	if refused[0].Type != realtime.TypeError || refused[0].Status != http.StatusUnauthorized {
		t.Fatalf("the anonymous subscribe answered %+v", refused[0])
	}
	for _, id := range []string{"alice", "bob"} {
		d.await(t, id, "subscribed", func(m []stepMessage) bool { return len(m) > 0 && m[0].Type == realtime.TypeSubscribed })
	}
	d.write(t, "POST", "mine/x", `{"data":"alice's"}`, "alice", 201)
	d.write(t, "POST", "mine/x", `{"data":"bob's"}`, "bob", 201)
	for who, data := range map[string]string{"alice": `"alice's"`, "bob": `"bob's"`} {
		msgs := d.await(t, who, who+"'s own item", func(m []stepMessage) bool { return holds(state(t, m, "p"), map[string]string{"x": data}) })
		if n := len(msgs); n != 2 {
			t.Errorf("%s received %d messages, want subscribed and its own change: %v", who, n, d.gw.messages(who))
		}
	}
}

// TestDeployedExpiry shows an item's expiry with the connection's next
// event after it: the deployed session has no timer of its own. The item
// lives long enough to be shown before it expires on a loaded machine
// (shown after its expiry, its change is already the tombstone).
func TestDeployedExpiry(t *testing.T) {
	d := newDeployed(t)
	d.route(t, "CONNECT", "A", "")
	d.route(t, "MESSAGE", "A", fmt.Sprintf(`{"action":"subscribe","id":"s","applicationUuid":%q,"namespace":"ttl"}`, stepsApp))
	d.await(t, "A", "subscribed", func(m []stepMessage) bool { return len(m) > 0 })
	d.write(t, "POST", "ttl/soon", `{"data":1,"ttl":5}`, "", 201)
	msgs := d.await(t, "A", "the item", func(m []stepMessage) bool { return len(state(t, m, "s")) == 1 })
	item := state(t, msgs, "s")["soon"]
	expires, err := time.Parse(time.RFC3339Nano, fmt.Sprint(item["expiresAt"]))
	if item["deleted"] == true || err != nil {
		t.Fatalf("the item was not shown with its expiry (%v): %v", err, d.gw.messages("A"))
	}
	time.Sleep(time.Until(expires) + 100*time.Millisecond)
	d.route(t, "MESSAGE", "A", `{"action":"unsubscribe","id":"other"}`)
	isAnswer := func(m stepMessage) bool { return m.Type == realtime.TypeError }
	msgs = d.await(t, "A", "the answer", func(m []stepMessage) bool { return slices.ContainsFunc(m, isAnswer) })
	answer := slices.IndexFunc(msgs, isAnswer)
	if msgs[answer].Status != http.StatusNotFound || state(t, msgs[:answer], "s")["soon"]["deleted"] != true {
		t.Fatalf("after the expiry, the tombstone and then the answer: %v", d.gw.messages("A"))
	}
}
