package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// TestPolicyCommands sets, shows and clears policies, a change into
// private waiting until it completes, and repairs a namespace whose items
// sit in the key space its policy does not use.
func TestPolicyCommands(t *testing.T) {
	srv, tables := apitest.ServerOver(t, 10*time.Second)
	schema := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","required":["title"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("set-policy into private waits and completes", func(t *testing.T) {
		code, out, errOut := uds(t, srv, "", "set-policy", app, "mine", "--access", "private")
		if code != 0 || !strings.Contains(out, `"access":"private"`) || strings.Contains(out, "pending") ||
			!strings.Contains(errOut, "the change to private is announced") {
			t.Errorf("set-policy: %d %q %q", code, out, errOut)
		}
		if code, out, _ := uds(t, srv, "", "policy", app, "mine"); code != 0 || !strings.Contains(out, `"access":"private"`) {
			t.Errorf("policy: %d %q", code, out)
		}
	})
	t.Run("set-policy with a schema, then --clear", func(t *testing.T) {
		if code, out, errOut := uds(t, srv, "", "set-policy", app, "posts", "--access", "owner-write", "--schema", schema); code != 0 ||
			!strings.Contains(out, `"required":["title"]`) || errOut != "" {
			t.Errorf("set-policy: %d %q %q", code, out, errOut)
		}
		if code, _, errOut := uds(t, srv, "", "set-policy", app, "posts", "--clear"); code != 0 {
			t.Errorf("--clear: %d %s", code, errOut)
		}
		if code, out, _ := uds(t, srv, "", "policy", app, "posts"); code != 0 || !strings.Contains(out, `"access":"shared"`) {
			t.Errorf("after --clear: %d %q", code, out)
		}
	})
	t.Run("history", func(t *testing.T) {
		// In order, on one namespace.
		for _, s := range []step{
			{"set with versions and days", []string{"set-policy", app, "kept", "--access", "shared", "--history-versions", "10", "--history-days", "30"},
				0, `"history":{"versions":10,"days":30}`, "", ""},
			{"shown", []string{"policy", app, "kept"}, 0, `"history":{"versions":10,"days":30}`, "", ""},
			{"beside a change into private", []string{"set-policy", app, "kept", "--access", "private", "--history-versions", "5"},
				0, `"history":{"versions":5,"days":30}`, "pending", "the change to private is announced"},
			{"kept when not given", []string{"set-policy", app, "kept", "--access", "private"}, 0, `"history":{"versions":5,"days":30}`, "", ""},
			{"days changed alone", []string{"set-policy", app, "kept", "--history-days", "7"}, 0, `"history":{"versions":5,"days":7}`, "", ""},
			{"versions changed alone keep the days", []string{"set-policy", app, "kept", "--history-versions", "6"}, 0, `"history":{"versions":6,"days":7}`, "", ""},
			{"dropped", []string{"set-policy", app, "kept", "--drop", "history"}, 0, `"access":"private"`, "history", ""},
			{"refused past its bound", []string{"set-policy", app, "kept", "--access", "private", "--history-versions", "101"},
				1, "", "", "history.versions"},
			{"days without versions", []string{"set-policy", app, "kept", "--access", "private", "--history-days", "3"},
				2, "", "", "--history-days needs --history-versions"},
			{"dropped and given", []string{"set-policy", app, "kept", "--drop", "history", "--history-versions", "3"}, 2, "", "", "contradict"},
			{"an unknown part dropped", []string{"set-policy", app, "kept", "--drop", "owner"}, 2, "", "", "--drop takes schema, history, indexes, binary"},
			{"with --clear", []string{"set-policy", app, "kept", "--clear", "--history-versions", "1"}, 2, "", "", "--clear takes no"},
			{"unchanged by the refusals", []string{"policy", app, "kept"}, 0, `"access":"private"`, "history", ""},
		} {
			s.run(t, srv)
		}
	})
	t.Run("every part no flag changes is restated", func(t *testing.T) {
		// In order, on one namespace that has every part.
		for _, s := range []step{
			{"every part set", []string{"set-policy", app, "photos", "--access", "owner-write", "--schema", schema, "--history-versions", "3",
				"--index", "byTitle:/title:string", "--binary-types", "image/png, image/*", "--binary-max-bytes", "1048576"},
				0, `"binary":{"contentTypes":["image/png","image/*"],"maxBytes":1048576}`, "", ""},
			{"the access changed alone", []string{"set-policy", app, "photos", "--access", "shared"},
				0, `"access":"shared","schema":{"type":"object","required":["title"]},"history":{"versions":3},"indexes":[{"name":"byTitle","path":"/title","type":"string"`, "", ""},
			{"the binary rule kept", []string{"policy", app, "photos"}, 0, `"binary":{"contentTypes":["image/png","image/*"],"maxBytes":1048576}`, "", ""},
			{"its cap changed alone", []string{"set-policy", app, "photos", "--binary-max-bytes", "2048"},
				0, `"binary":{"contentTypes":["image/png","image/*"],"maxBytes":2048}`, "", ""},
			{"its types changed alone keep the cap", []string{"set-policy", app, "photos", "--binary-types", "application/pdf"},
				0, `"binary":{"contentTypes":["application/pdf"],"maxBytes":2048}`, "", ""},
			{"the schema and the binary rule dropped", []string{"set-policy", app, "photos", "--drop", "schema,binary"},
				0, `"access":"shared","schema":null,"history":{"versions":3},"indexes":[{"name":"byTitle"`, "binary", ""},
			{"a cap without a rule", []string{"set-policy", app, "photos", "--binary-max-bytes", "5"}, 2, "", "", "--binary-max-bytes needs --binary-types"},
			{"a refused rule names its member", []string{"set-policy", app, "photos", "--binary-types", "application/json"}, 1, "", "", "binary.contentTypes"},
		} {
			s.run(t, srv)
		}
	})
	t.Run("a change under way needs --access", func(t *testing.T) {
		// Announced by another admin: the first PUT into private answers
		// 202 and leaves the change pending.
		if status := putPolicy(t, srv, app, "pending", `{"access":"private"}`); status != http.StatusAccepted {
			t.Fatalf("the announcement answered %d", status)
		}
		for _, s := range []step{
			{"refused without", []string{"set-policy", app, "pending", "--history-versions", "2"}, 2, "", "",
				"a change of the namespace to private is under way: give --access private to complete it, or --access shared to cancel it"},
			{"completed with", []string{"set-policy", app, "pending", "--access", "private", "--history-versions", "2"}, 0,
				`"access":"private","schema":null,"history":{"versions":2}`, `"pending":{`, ""},
		} {
			s.run(t, srv)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		for _, args := range [][]string{{"set-policy", app, "x"}, {"set-policy", app, "x", "--clear", "--access", "private"}, {"set-policy", app, "x", "--clear", "--drop", "schema"}} {
			if code, _, errOut := uds(t, srv, "", args...); code != 2 {
				t.Errorf("%v: %d %s", args, code, errOut)
			}
		}
	})
	t.Run("strays", func(t *testing.T) {
		for _, id := range []string{"a", "b"} {
			if code, _, errOut := uds(t, srv, `{"v":1}`, "--subject", "alice", "create", app, "notes", id); code != 0 {
				t.Fatal(errOut)
			}
		}
		// The namespace turns private behind the API's back: its items are
		// now strays, and no change of its policy is possible.
		_, err := storetest.Client(t).PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName: aws.String(tables.Namespaces),
			Item: map[string]types.AttributeValue{
				"app": &types.AttributeValueMemberS{Value: app}, "namespace": &types.AttributeValueMemberS{Value: "notes"},
				"access": &types.AttributeValueMemberS{Value: "private"}, "policyVersion": &types.AttributeValueMemberN{Value: "1"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := uds(t, srv, "", "set-policy", app, "notes", "--access", "shared"); code != 1 || !strings.Contains(errOut, "409") {
			t.Errorf("a change over strays: %d %s", code, errOut)
		}
		code, out, errOut := uds(t, srv, "", "strays", app, "notes")
		if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"owner":"alice"`) || !strings.Contains(errOut, "listed 2 strays") {
			t.Errorf("strays: %d %q %q", code, out, errOut)
		}
		if code, _, errOut := uds(t, srv, "", "rm-strays", app, "notes"); code != 0 || !strings.Contains(errOut, "removed 2 strays") {
			t.Errorf("rm-strays: %d %q", code, errOut)
		}
		if code, out, _ := uds(t, srv, "", "quota", app, "alice"); code != 0 || !strings.Contains(out, `"usedItems":0`) {
			t.Errorf("alice's usage after the strays went: %d %q", code, out)
		}
		if code, out, errOut := uds(t, srv, "", "set-policy", app, "notes", "--access", "shared"); code != 0 || !strings.Contains(out, `"access":"shared"`) {
			t.Errorf("the change after the repair: %d %q %q", code, out, errOut)
		}
	})
}

// putPolicy sets a namespace's policy through the API itself, as another
// admin would beside the command line, and returns the answer's status.
func putPolicy(t *testing.T, srv, app, namespace, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, srv+"/rest/api/v1/admin/apps/"+app+"/namespaces/"+namespace, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
