package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
)

// TestStraysAreListedAndRemoved checks the operator's repair of a
// namespace whose items sit in the key space its policy does not use (as
// a release before changes were announced could leave them): they are
// listed as records, page by page, and removed with their usage released,
// and items in the key space in use are left alone.
func TestStraysAreListedAndRemoved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/notes/a", "/notes/b", "/notes/feed/1"} {
		e.as("alice", "POST", base+path, `{"data":"`+path+`"}`).expect(t, 201)
	}
	e.as("bob", "POST", base+"/notes/c", `{"data":"c"}`).expect(t, 201)
	// The namespace turns private behind the API's back: its four items
	// are now strays.
	_, err := e.client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(e.tables.Namespaces),
		Item: map[string]types.AttributeValue{
			"app": &types.AttributeValueMemberS{Value: app}, "namespace": &types.AttributeValueMemberS{Value: "notes"},
			"access": &types.AttributeValueMemberS{Value: "private"}, "policyVersion": &types.AttributeValueMemberN{Value: "1"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A server started now reads the policy afresh.
	api := httpapi.New(httpapi.StoresOf(store.New(e.client, e.tables, store.WithPolicySettle(testSettle))), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("test secret"), DeleteAllBudget: apitest.Budget, RequestBudget: apitest.Budget,
		Logger: apitest.Logger(t),
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	e = &env{t: t, srv: srv, tables: e.tables, client: e.client}
	e.as("alice", "GET", base+"/notes/a", "").expect(t, 404)
	e.as("alice", "POST", base+"/notes/mine", `{"data":"kept"}`).expect(t, 201) // in alice's key space
	e.do("PUT", adminApps+"/namespaces/notes", `{"access":"shared"}`).expect(t, 409)

	strays := adminApps + "/namespaces/notes/strays"
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		r := e.do("GET", strays+"?limit=2"+cursor, "").expect(t, 200)
		for _, rec := range r.body["records"].([]any) {
			m := rec.(map[string]any)
			if m["private"] != nil || m["owner"] == nil {
				t.Errorf("stray record %v", m)
			}
			seen = append(seen, m["id"].(string)+"/"+m["owner"].(string))
		}
		c, _ := r.body["cursor"].(string)
		if c == "" {
			break
		}
		if pages > 4 {
			t.Fatal("the strays never end")
		}
		cursor = "&cursor=" + c
	}
	if got := strings.Join(slices.Sorted(slices.Values(seen)), ","); got != "a/alice,b/alice,c/bob,feed/alice" {
		t.Errorf("strays %s", got)
	}
	e.do("GET", strays+"?cursor=forged", "").expect(t, 400)

	if r := e.do("DELETE", strays, "").expect(t, 200); r.body["removed"] != json.Number("4") {
		t.Errorf("removal answered %s, want 4 removed", r.raw)
	}
	if r := e.do("GET", strays, "").expect(t, 200); len(r.body["records"].([]any)) != 0 {
		t.Errorf("strays left: %s", r.raw)
	}
	e.as("alice", "GET", base+"/notes/mine", "").expect(t, 200)
	for who, items := range map[string]string{"alice": `"usedItems":1`, "bob": `"usedItems":0`} {
		r := e.do("GET", admin+"/apps/"+app+"/users/"+who+"/quota", "").expect(t, 200)
		if !strings.Contains(string(r.raw), items) {
			t.Errorf("%s's usage after the strays went: %s", who, r.raw)
		}
	}
	// The namespace holds only alice's item now; once she deletes it, its
	// policy may change again.
	e.as("alice", "DELETE", base+"/notes/mine", "").expect(t, 204)
	e.setPolicy(t, "notes", `{"access":"shared"}`)
}
