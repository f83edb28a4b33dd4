// Package client is the Go client of the UDS API: key-value items and list
// items with their ETags and version history, values of bytes up to 5 GB,
// list pages and whole-range iterators, queries by a namespace's declared indexes, a namespace's
// changes feed and realtime subscriptions, delete-all,
// batches, the caller's quota, every admin route, and an app's export and
// import.
//
// A client of the local server (make run):
//
//	c, err := client.New("http://127.0.0.1:8080")
//	if err != nil { ... }
//	key := client.Key{App: app, Namespace: "user-preferences", ID: "user123"}
//	it, err := c.Create(ctx, key, map[string]any{"theme": "dark"})
//	switch {
//	case errors.Is(err, client.ErrConflict):        // the key is taken
//	case errors.Is(err, client.ErrQuotaExceeded):   // see *client.APIError for usage and limits
//	}
//	// Update only if nobody changed it since it was read:
//	it, err = c.Update(ctx, key, map[string]any{"theme": "light"}, client.IfMatch(it.ETag))
//
// An item's value may be bytes of any content type rather than JSON, up
// to MaxBytes (5 GB). PutBytes sends up to MaxInlineBytes (350 KiB) in one
// request and streams larger ones straight to S3; GetBytes streams the
// value to a writer, from S3 for a large one:
//
//	f, err := os.Open("avatar.png")
//	st, err := f.Stat()
//	it, err := c.PutBytes(ctx, key, f, st.Size(), "image/png", client.Progress(func(done, total int64) { ... }))
//	meta, err := c.GetBytes(ctx, key, w) // meta.ContentType, meta.Size, meta.ETag...
//
// List pages, batch reads and exports show such a value as ContentType,
// Size and, for a small one, its Bytes.
//
// In a namespace whose policy keeps history, an item's replaced versions
// are listed, read back and restored (also after a delete):
//
//	for v, err := range c.History(ctx, key) { ... } // newest first
//	old, err := c.GetVersion(ctx, key, 1)
//	it, err = c.Restore(ctx, key, 1, client.IfMatch(it.ETag))
//
// Iterating over a list, page after page:
//
//	for it, err := range c.List(ctx, client.Key{App: app, Namespace: "activities", ID: "user123"}, client.ListQuery{Descending: true}) {
//		if err != nil { ... }
//		fmt.Println(it.SortKey, string(it.Data))
//	}
//
// A namespace's policy declares indexes on fields of its items' data; once
// built, they select and order its items (key-value and list items
// alike), page after page:
//
//	p, err := admin.SetPolicy(ctx, app, "tasks", client.Policy{Access: "shared", Indexes: []client.Index{
//		{Name: "byStatus", Path: "/status", Type: "string"},
//		{Name: "byDue", Path: "/due", Type: "number"},
//	}})
//	p, err = admin.BuildIndexes(ctx, app, "tasks") // until every index is ready
//	for it, err := range c.Query(ctx, app, "tasks", client.IndexQuery{Index: "byStatus", Eq: "open"}) { ... }
//	for it, err := range c.Query(ctx, app, "tasks", client.IndexQuery{Index: "byDue", From: 20240101, To: 20240201, Descending: true}) { ... }
//
// A query on an index still building is ErrIndexNotReady.
//
// A namespace's changes feed keeps a replica of its items: from the
// beginning ("") it lists the items as they are, then every change, page
// by page; each page is applied in order (an item upserted by its key, a
// tombstone's key removed) and its cursor kept, to read on from later:
//
//	for p, err := range c.Changes(ctx, app, "notes", cursor, 0) {
//		if errors.Is(err, client.ErrCursorExpired) { ... } // empty the replica, read again from ""
//		for _, ch := range p.Changes {
//			key := [2]string{ch.ID, ch.SortKey}
//			if ch.Deleted { delete(replica, key) } else { replica[key] = ch.Item }
//		}
//		cursor = p.Cursor // the last page is UpToDate
//	}
//
// A subscription receives each change of a namespace, a list or an item
// as it commits, over a WebSocket, with the feed cursor after it; it
// connects again after a lost connection and goes on from its last cursor
// by itself, and a Resync change says to empty the replica, whose items
// follow from the beginning:
//
//	for ch, err := range c.Subscribe(ctx, client.SubscribeRequest{App: app, Namespace: "notes", Cursor: &cursor}) {
//		if err != nil { ... } // refused (ErrUnauthenticated, ErrInvalid...), or ctx ended
//		if ch.Resync { clear(replica); continue }
//		// apply ch.Change as a page's entry; keep ch.Cursor
//	}
//
// A deployed stack takes a JWT on the data routes and IAM (SigV4) on the
// admin routes:
//
//	c, err := client.New(apiURL, client.WithToken(jwt))
//	sign, err := client.DefaultSigV4(ctx, "eu-west-1") // the default credential chain
//	admin, err := client.New(apiURL, sign)
//
// Errors from the API are *APIError values, matched with errors.Is against
// ErrNotFound, ErrConflict, ErrPreconditionFailed, ErrQuotaExceeded,
// ErrIndexNotReady, ErrErasing, ErrInvalid and the others, by the answer's
// code (APIError.Code); errors.As gives the server's details. A call whose
// request would name something other than what it is about (a Key with
// an empty part, the sort key "list", which names the list itself, a list
// method's key with a sort key, a batch operation in another app) is
// refused before anything is sent, with an error that is ErrInvalid but
// no *APIError. No error text names this package or UDS ("404 Key not
// found: ..."): the caller adds what it was doing, once.
//
// Retries: requests are sent again, only where that is safe, after the
// server's Retry-After (seconds or an HTTP date) plus up to half as much
// again drawn at random, or else with exponential backoff and full
// jitter; the context, WithRetries (how many times) and WithMaxRetryWait
// (the pauses in total) bound them. A 429, from one of UDS's rate limits
// or API Gateway's throttle, did nothing, and every request is sent again
// after it; once the bounds are reached the call returns that answer:
// ErrRateLimited (also ErrThrottled) for a rate limit, with its
// RetryAfter and how many times the request was sent (APIError.Attempts).
// Reads and writes whose repeat leaves the data as one would (an update or
// restore with IfMatch, DELETE, delete-all, dropping a history, import,
// recompute, limits, rate limits, quota modes, policies, app
// registrations, index build steps) are also retried after 502, 503, 504
// or a lost connection. Creates, batches, and updates and restores without
// IfMatch are retried only when they certainly did nothing (no connection
// could be made, a 429, or a 503 policy_pending, with which a namespace
// changing its access mode refuses writes): a repeated create that took effect the first
// time would answer 409 for the caller's own write, and a repeated
// unconditional update or restore would bump the version again and could
// overwrite a write made in between.
//
// An app's rate limits, and a user's override of the per-caller one, are
// set on the admin routes:
//
//	_, err := admin.SetAppRateLimits(ctx, app, client.RateLimits{
//		PerCaller: &client.Rate{RequestsPerSecond: 10, Burst: 20},
//		PerApp:    &client.Rate{RequestsPerSecond: 200, Burst: 400},
//	})
//	_, err = admin.SetUserRateLimits(ctx, app, "batch-job", client.Rate{RequestsPerSecond: -1}) // no per-caller limit for it
//	_, err = c.Get(ctx, key)
//	if errors.Is(err, client.ErrRateLimited) { ... } // still over a limit after the retries
//
// An app's quota mode says how its owners' usage is kept: uds.QuotaStrict
// (the default) charges each write in its own transaction, so a limit is
// never passed; uds.QuotaStreamed writes plainly and sums usage from the
// tables' streams, so an owner passes a limit by at most what it writes
// within the stream's lag:
//
//	mode, err := admin.SetQuotaMode(ctx, app, uds.QuotaStreamed)
//	mode, err = admin.QuotaMode(ctx, app)
//
// Apps have names in the registry (admin), unique whatever their case, by
// which operators find them; data paths keep the app's id:
//
//	_, err := admin.RegisterApp(ctx, app, "Fitness", "Workouts and goals") // ErrConflict if another app has the name
//	a, err := admin.AppByName(ctx, "fitness")                               // ErrNotFound if no app has it
//	for a, err := range admin.Apps(ctx) { ... }                             // every registered app, by name
package client
