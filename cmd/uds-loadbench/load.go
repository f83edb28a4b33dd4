package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/udsproject/uds/internal/localbench"
)

// seedItems is how many items each owner has before the load; its GETs
// read them in turn.
const seedItems = 32

// itemData is an item's data: 1024 bytes of JSON, as the server stores it
// (compact).
var itemData = `{"text":"` + strings.Repeat("x", 1024-len(`{"text":""}`)) + `"}`

// itemBody is the body of every POST: a 1 KB item.
var itemBody = `{"data": ` + itemData + `}`

// owner is one owner of items and the client that acts for it.
type owner struct {
	subject string
	// gets and posts are the requests the client has sent of each
	// kind: the next GET reads seed item gets % seedItems, the next POST
	// creates item posts.
	gets, posts int
}

func newOwners(n int) []*owner {
	owners := make([]*owner, n)
	for i := range owners {
		owners[i] = &owner{subject: fmt.Sprintf("owner-%02d", i+1)}
	}
	return owners
}

// itemsPath is where the load's key-value items are, under the API's URL.
const itemsPath = "/data/" + benchApp + "/loadbench/"

// Item ids start with their owner's subject: the key is the app's, not
// the owner's.
func (ow *owner) seedPath(k int) string { return fmt.Sprintf("%s%s-seed-%d", itemsPath, ow.subject, k) }
func (ow *owner) postPath(n int) string { return fmt.Sprintf("%s%s-%d", itemsPath, ow.subject, n) }

// load has one client per owner send requests, one at a time, until d has
// passed (closed loop: the load is as much as the server answers), and
// returns the outcomes of the GETs and POSTs. A client alternates GET and
// POST, the even ones starting with a GET and the odd ones with a POST,
// so that at any moment about half the requests in flight are of each
// kind.
func load(ctx context.Context, client *http.Client, url string, owners []*owner, d time.Duration) (gets, posts []localbench.Outcome) {
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, ow := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var g, p []localbench.Outcome
			for n := i; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				if n%2 == 0 {
					g = append(g, localbench.Do(ctx, client, http.MethodGet, url+ow.seedPath(ow.gets%seedItems), ow.subject, ""))
					ow.gets++
				} else {
					p = append(p, localbench.Do(ctx, client, http.MethodPost, url+ow.postPath(ow.posts), ow.subject, itemBody))
					ow.posts++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			gets, posts = append(gets, g...), append(posts, p...)
		}()
	}
	wg.Wait()
	return gets, posts
}
