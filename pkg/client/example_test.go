package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

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

func ExampleClient_PutBytes() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:8080")
	f, err := os.Open("holiday.mp4")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		log.Fatal(err)
	}
	// Up to 350 KiB in one request; larger files stream to S3 (a file can
	// be sent again after a failure: it is an io.Seeker).
	key := client.Key{App: exampleApp, Namespace: "videos", ID: "user123"}
	it, err := c.PutBytes(ctx, key, f, st.Size(), "video/mp4", client.Progress(func(done, total int64) {
		fmt.Fprintf(os.Stderr, "\r%d of %d bytes", done, total)
	}))
	if errors.Is(err, client.ErrQuotaExceeded) {
		fmt.Println("no room for it")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(it.Size, it.ContentType, it.Large)
}

func ExampleClient_GetBytes() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:8080")
	out, err := os.Create("holiday.mp4")
	if err != nil {
		log.Fatal(err)
	}
	defer out.Close()
	it, err := c.GetBytes(ctx, client.Key{App: exampleApp, Namespace: "videos", ID: "user123"}, out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(it.Size, it.ContentType, it.ETag)
}
