package client

import (
	"context"
	"net/http"
	"time"
)

// Erasure is an erase of a user's data in every app: where it stands
// ("settling", "erasing" or "done") and, once done, its receipt: counts
// per app and kind of what went ("items", "listItems", "versions",
// "markers", "uploads", "records", "audit"), the end, until when the
// user's writes stay refused and when backups no longer hold the data.
type Erasure struct {
	User         string                      `json:"user"`
	State        string                      `json:"state"`
	StartedAt    string                      `json:"startedAt"`
	DeletesFrom  string                      `json:"deletesFrom"`
	EndedAt      string                      `json:"endedAt,omitempty"`
	HoldDays     int                         `json:"holdDays"`
	HoldUntil    string                      `json:"holdUntil,omitempty"`
	BackupsUntil string                      `json:"backupsUntil,omitempty"`
	Erased       map[string]map[string]int64 `json:"erased"`
	// Previous are the receipts of the user's earlier erases, oldest
	// first: once an erase's hold is over, the user's writes are taken
	// again, and EraseUserStep starts a new erase, which keeps them.
	Previous []Erasure `json:"previous,omitempty"`
}

// Done reports whether the erase has ended.
func (e Erasure) Done() bool { return e.State == "done" }

// EraseUserStep starts the erase of everything user stores in every app,
// or takes the running one a step further, and answers where it stands
// and, while it runs, how long to wait before the next step. holdDays,
// read when it starts, keeps the user's writes refused that long after it
// ends. A step repeated does no harm, so it is retried as a read is.
func (c *Client) EraseUserStep(ctx context.Context, user string, holdDays int) (Erasure, time.Duration, error) {
	var e Erasure
	r := request{method: http.MethodPost, path: acrossApps(user) + "/erase", retry: always}
	if holdDays > 0 {
		body, err := jsonBody(struct {
			HoldDays int `json:"holdDays"`
		}{holdDays})
		if err != nil {
			return e, 0, err
		}
		r.body = body
	}
	res, err := c.call(ctx, r, &e, http.StatusOK, http.StatusAccepted)
	return e, retryAfter(res.header), err
}

// EraseUser runs the erase of user's data step after step, waiting as
// each step's answer says, until it is done, and returns its receipt; or
// it returns ctx's error (the erase goes on where the next call takes it).
// progress, if not nil, is told of each step that left work.
func (c *Client) EraseUser(ctx context.Context, user string, holdDays int, progress ...func(Erasure)) (Erasure, error) {
	for {
		e, wait, err := c.EraseUserStep(ctx, user, holdDays)
		if err != nil || e.Done() {
			return e, err
		}
		for _, f := range progress {
			f(e)
		}
		select {
		case <-ctx.Done():
			return e, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Erasure reads where the erase of user's data stands, or its receipt; a
// *APIError with status 404 when none was asked for.
func (c *Client) Erasure(ctx context.Context, user string) (Erasure, error) {
	var e Erasure
	_, err := c.call(ctx, request{method: http.MethodGet, path: acrossApps(user) + "/erase", retry: always}, &e, http.StatusOK, http.StatusAccepted)
	return e, err
}
