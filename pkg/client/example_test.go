package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/udsproject/uds/pkg/client"
)

// The examples run against the local server (make run).
const exampleApp = "d53065bd-f932-4841-83fb-849717d8df0f"

func ExampleClient_Create() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	key := client.Key{App: exampleApp, Namespace: "user-preferences", ID: "user123"}
	it, err := c.Create(ctx, key, map[string]any{"theme": "dark"}, client.ClassName("Preferences"))
	var apiErr *client.APIError
	switch {
	case errors.Is(err, client.ErrConflict):
		fmt.Println("already there")
	case errors.As(err, &apiErr) && errors.Is(err, client.ErrQuotaExceeded):
		fmt.Println("over quota:", apiErr.UsedBytes, "bytes used")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println(it.Version, it.ETag)
	}
}

func ExampleClient_Update() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:8080")
	key := client.Key{App: exampleApp, Namespace: "user-preferences", ID: "user123"}
	it, err := c.Get(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	// Only if nobody changed it meanwhile.
	_, err = c.Update(ctx, key, map[string]any{"theme": "light"}, client.IfMatch(it.ETag))
	if errors.Is(err, client.ErrPreconditionFailed) {
		fmt.Println("changed by someone else: read it again")
	}
}

func ExampleClient_List() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:8080")
	list := client.Key{App: exampleApp, Namespace: "activities", ID: "user123"}
	for it, err := range c.List(ctx, list, client.ListQuery{Start: "2024-01-01", Descending: true}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(it.SortKey, string(it.Data))
	}
}

func ExampleClient_Export() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:8080")
	n := 0
	for rec, err := range c.Export(ctx, exampleApp) {
		if err != nil {
			log.Fatal(err)
		}
		_ = rec // write it somewhere: uds export does, as NDJSON
		n++
	}
	fmt.Println(n, "records")
}
