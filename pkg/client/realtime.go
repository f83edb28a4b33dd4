package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Realtime (docs/realtime.md): a subscription to a namespace, a list or an
// item receives each change over a WebSocket as it commits, in the order
// of the changes feed, and resumes from its last cursor after a lost
// connection, so that a drop costs latency and never a change.

// realtimePath is where the API answers WebSocket upgrades, below the
// endpoint as the other routes are.
const realtimePath = basePath + "/realtime"

// realtimeReadLimit bounds one message the client reads. An entry carries
// an item's data (up to 1 MB, and binary bytes as base64 up to what list
// pages show), which the websocket package's default of 32 KiB would cut.
const realtimeReadLimit = 8 << 20

// subscriptionID is the client's name for its subscription. Each
// subscription has a connection of its own, so one name serves them all.
const subscriptionID = "1"

// WithRealtimeURL sets the WebSocket URL subscriptions connect to, for a
// deployment whose WebSocket API has a URL of its own (the stack's
// RealtimeUrl output, wss://...). Without it the URL is the endpoint's,
// ws:// for http:// and wss:// for https://, with the path
// /rest/api/v1/realtime, as the local server answers it.
func WithRealtimeURL(u string) Option { return func(c *Client) { c.realtime = u } }

// realtimeURL checks the URL WithRealtimeURL gave, or derives it from the
// endpoint.
func realtimeURL(endpoint, given string) (string, error) {
	if given == "" {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", err
		}
		u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
		return u.String() + realtimePath, nil
	}
	u, err := url.Parse(given)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return "", fmt.Errorf("realtime URL %q is not a ws(s) URL", given)
	}
	return u.String(), nil
}

// SubscribeRequest says what a subscription follows: a namespace, or with
// Key one item or one list, or with Key and SortKey one list item.
type SubscribeRequest struct {
	App, Namespace string
	Key            string
	SortKey        string
	// Cursor is where the changes start: nil for the changes made from
	// now on, "" for the beginning (the items as they are, then every
	// change, as the changes feed reads from ""), or a cursor a change or
	// the changes feed gave, to go on after it.
	Cursor *string
}

// RealtimeChange is one change a subscription received: an entry exactly
// as the changes feed shows it (an item as a read of it answers now, or a
// tombstone, Deleted), and the cursor after it. Resuming from Cursor
// (SubscribeRequest.Cursor, or ChangesPage) loses nothing after the
// change, and may repeat a few seconds of changes, each item at its
// current version: a replica applies them as any other.
//
// When Resync is true it carries no entry: the subscription's cursor was
// older than the feed keeps (or the namespace changed into or out of
// private), and the subscription starts again from the beginning. A
// replica empties itself and applies what follows, the items as they are,
// then every change.
type RealtimeChange struct {
	Change
	Cursor string
	Resync bool
}

// Subscribe follows req's changes until ctx ends or the caller stops the
// iteration: each entry, in the feed's order, as soon as it is in the
// feed. An item never comes at an older version after a newer one; it may
// come twice at the same version.
//
// It is an iterator rather than a channel so that the connection is read
// only as fast as the caller takes the changes, with no buffer and no
// goroutine of its own to leak: the subscription lives as long as the
// loop. A caller slow enough that the server queues 10,000 messages for
// it is disconnected by the server, and the subscription resumes from its
// cursor as after any lost connection. A caller that wants a channel
// ranges over Subscribe in a goroutine of its own.
//
// A connection that drops, and a server that closes it (stopping, or the
// caller too far behind), are no errors: the subscription connects again,
// after a pause that doubles with each failed attempt up to 30 s, and
// subscribes again from the last cursor it received, by itself, for as
// long as ctx lives. The first connection is attempted as a request is
// sent (WithRetries): a server that cannot be reached at all, or answers
// the upgrade with 5xx or 429 every time, ends the iteration with that
// error. A refusal that trying again cannot change ends it at once, as
// an *APIError of the status the server gave (errors.Is ErrInvalid,
// ErrUnauthenticated, ErrForbidden, ErrNotFound); 429 (a rate limit, or
// the server's caps on subscriptions) is tried again. The iteration's
// last error, when ctx ends, is ctx's.
//
// The caller is named as the client's requests name it: WithSubject's
// X-Uds-Subject on the upgrade for a local server, WithToken's token as
// the access_token query parameter of the upgrade for a deployment (the
// parameter a browser, which cannot set a WebSocket's headers, sends
// too). SigV4 (WithSigV4) does not sign subscriptions.
func (c *Client) Subscribe(ctx context.Context, req SubscribeRequest) iter.Seq2[RealtimeChange, error] {
	return func(yield func(RealtimeChange, error) bool) {
		s := &subscription{c: c, req: req, cursor: req.Cursor}
		// attempt counts the connections that failed since the last
		// subscription the server confirmed, or since the first try.
		attempt := 0
		for {
			err := s.session(ctx, yield)
			switch {
			case errors.Is(err, errStopped):
				return
			case ctx.Err() != nil:
				yield(RealtimeChange{}, ctx.Err())
				return
			case !retryableRealtime(err):
				yield(RealtimeChange{}, err)
				return
			}
			if s.confirmed {
				attempt, s.confirmed = 0, false
				s.ever = true
			}
			if !s.ever && attempt >= c.maxRetries {
				yield(RealtimeChange{}, err)
				return
			}
			select {
			case <-ctx.Done():
				yield(RealtimeChange{}, ctx.Err())
				return
			case <-time.After(c.wait(err, attempt)):
			}
			attempt++
		}
	}
}

var (
	// errStopped ends a session whose caller stopped the iteration.
	errStopped = errors.New("the iteration was stopped")
	// errProtocol is a message the client cannot read: a server that
	// sends one would send it again, so it ends the subscription.
	errProtocol = errors.New("a realtime message outside the protocol")
)

// subscription is the state a subscription keeps across its connections.
type subscription struct {
	c   *Client
	req SubscribeRequest
	// cursor is where the next subscribe starts: the last cursor
	// received, or the request's until one is.
	cursor *string
	// confirmed says the server confirmed the subscription on the
	// session that just ended; ever, that it did on an earlier one.
	confirmed, ever bool
}

// realtimeMessage is a message of the protocol, either way: what the
// client sends (Action) and what the server answers (Type).
type realtimeMessage struct {
	Action          string          `json:"action,omitempty"`
	Type            string          `json:"type,omitempty"`
	ID              string          `json:"id"`
	ApplicationUUID string          `json:"applicationUuid,omitempty"`
	Namespace       string          `json:"namespace,omitempty"`
	Key             string          `json:"key,omitempty"`
	SortKey         string          `json:"sortKey,omitempty"`
	Cursor          *string         `json:"cursor,omitempty"`
	Change          json.RawMessage `json:"change,omitempty"`
	Status          int             `json:"status,omitempty"`
	Code            string          `json:"code,omitempty"`
	Error           string          `json:"error,omitempty"`
	Details         string          `json:"details,omitempty"`
}

// session connects, subscribes from s.cursor and yields the changes it
// receives until the connection ends, which it reports: errStopped when
// the caller stopped, an *APIError when the server refused the
// subscription, any other error when the connection failed or closed.
func (s *subscription) session(ctx context.Context, yield func(RealtimeChange, error) bool) error {
	conn, err := s.c.dial(ctx)
	if err != nil {
		return err
	}
	// The connection goes when the session ends, however it ends: only
	// its own subscription was on it.
	defer conn.CloseNow()
	conn.SetReadLimit(realtimeReadLimit)
	if err := s.subscribe(ctx, conn); err != nil {
		return err
	}
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		var m realtimeMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("%w: a message that is not JSON: %w", errProtocol, err)
		}
		if m.ID != subscriptionID {
			continue
		}
		switch m.Type {
		case "subscribed":
			s.confirmed = true
			if m.Cursor != nil {
				s.cursor = m.Cursor
			}
		case "change":
			if m.Cursor == nil {
				return fmt.Errorf("%w: a change without its cursor", errProtocol)
			}
			ch := RealtimeChange{Cursor: *m.Cursor}
			if err := json.Unmarshal(m.Change, &ch.Change); err != nil {
				return fmt.Errorf("%w: a change that is not an entry of the feed: %w", errProtocol, err)
			}
			s.cursor = m.Cursor
			if !yield(ch, nil) {
				_ = conn.Close(websocket.StatusNormalClosure, "")
				return errStopped
			}
		case "resync":
			// The subscription ended on the server: it starts again
			// from the beginning, after the caller heard to empty its
			// replica.
			beginning := ""
			s.cursor = &beginning
			if !yield(RealtimeChange{Resync: true}, nil) {
				_ = conn.Close(websocket.StatusNormalClosure, "")
				return errStopped
			}
			if err := s.subscribe(ctx, conn); err != nil {
				return err
			}
		case "error":
			return &APIError{Status: m.Status, Code: m.Code, Message: m.Error, Details: m.Details,
				ApplicationUUID: s.req.App, Namespace: s.req.Namespace, Body: data}
		}
	}
}

// subscribe sends the subscribe message from s.cursor.
func (s *subscription) subscribe(ctx context.Context, conn *websocket.Conn) error {
	msg, err := jsonBody(realtimeMessage{Action: "subscribe", ID: subscriptionID, ApplicationUUID: s.req.App,
		Namespace: s.req.Namespace, Key: s.req.Key, SortKey: s.req.SortKey, Cursor: s.cursor})
	if err != nil {
		return err
	}
	return conn.Write(ctx, websocket.MessageText, msg)
}

// dial opens a connection to the realtime URL as the client's caller. An
// upgrade the server answers with another status than 101 is an
// *APIError of that status.
func (c *Client) dial(ctx context.Context) (*websocket.Conn, error) {
	u := c.realtime
	h := http.Header{"User-Agent": {c.userAgent}}
	if c.subject != "" {
		h.Set("X-Uds-Subject", c.subject)
	}
	if c.token != "" {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + "access_token=" + url.QueryEscape(c.token)
	}
	conn, res, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: h})
	if err != nil && res != nil && res.StatusCode != http.StatusSwitchingProtocols {
		// The websocket package keeps the first 1024 bytes of the body,
		// enough for an error body.
		body, _ := io.ReadAll(res.Body)
		return nil, newAPIError(res.StatusCode, res.Header, body)
	}
	return conn, err
}

// retryableRealtime reports whether a session's end is one a new
// connection may get past: a lost or closed connection, a server that is
// unavailable, a rate limit or cap (429); not a refusal of the request
// itself, nor a message outside the protocol.
func retryableRealtime(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Status == http.StatusTooManyRequests || apiErr.Status >= 500
	}
	return !errors.Is(err, errProtocol)
}
