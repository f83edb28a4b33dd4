// Package realtime pushes a namespace's changes to subscribers over a
// WebSocket as they commit, on top of the changes feed: each change a
// subscriber receives carries a feed cursor, so that a lost connection
// costs latency, never data (docs/realtime.md). This file is the
// protocol: what a client sends and what the server answers, one JSON
// object per text message.
package realtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/udsproject/uds/pkg/uds"
)

// The actions a client sends.
const (
	ActionSubscribe   = "subscribe"
	ActionUnsubscribe = "unsubscribe"
)

// MaxRequestBytes bounds a client's message: a subscribe with the longest
// keys and a cursor fits many times over.
const MaxRequestBytes = 16 << 10

// maxIDBytes bounds a subscription's id, the client's name for it.
const maxIDBytes = 128

// Request is a client's message: a subscribe or an unsubscribe.
type Request struct {
	Action string `json:"action"`
	// ID is the client's name for the subscription, unique on its
	// connection: every answer about it carries it.
	ID              string `json:"id"`
	ApplicationUUID string `json:"applicationUuid,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	// Key narrows a subscription to one item or list, SortKey (with Key)
	// to one list item.
	Key     string `json:"key,omitempty"`
	SortKey string `json:"sortKey,omitempty"`
	// Cursor is where a subscription starts: nil, live changes from now
	// on; "", the namespace from the beginning; else a feed cursor.
	Cursor *string `json:"cursor,omitempty"`
}

// ParseRequest reads a client's message. It refuses what is not one JSON
// object of known members, an unknown action, an id that is missing, too
// long or not printable, and a subscribe without its namespace or with a
// sort key but no key; the namespace and keys themselves are checked where
// the subscription is opened, as the HTTP routes check them. The error is
// a uds.InvalidError naming the member; the request is returned as far as
// it was read, so that a refusal can carry its id.
func ParseRequest(b []byte) (Request, error) {
	var req Request
	if len(b) > MaxRequestBytes {
		return req, uds.Invalid("message", "is %d bytes; at most %d", len(b), MaxRequestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		// A message that names its id is answered with it even when the
		// rest is wrong.
		var loose struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(b, &loose) == nil && validID(loose.ID) == nil {
			req = Request{ID: loose.ID}
		} else {
			req = Request{}
		}
		return req, uds.Invalid("message", "is not a JSON object of action, id, applicationUuid, namespace, key, sortKey and cursor: %s", jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		refused := Request{}
		if validID(req.ID) == nil {
			refused.ID = req.ID // answered with its id, as a malformed one is
		}
		return refused, uds.Invalid("message", "holds more than one JSON value")
	}
	if err := validID(req.ID); err != nil {
		req.ID = ""
		return req, err
	}
	switch req.Action {
	case ActionSubscribe:
		switch {
		case req.ApplicationUUID == "":
			return req, uds.Invalid("applicationUuid", "is required to subscribe")
		case req.Namespace == "":
			return req, uds.Invalid("namespace", "is required to subscribe")
		case req.SortKey != "" && req.Key == "":
			return req, uds.Invalid("sortKey", "narrows a subscription to one list item, and needs the list's key")
		}
	case ActionUnsubscribe:
		if req.ApplicationUUID != "" || req.Namespace != "" || req.Key != "" || req.SortKey != "" || req.Cursor != nil {
			return req, uds.Invalid("message", "an unsubscribe names the subscription's id only")
		}
	case "":
		return req, uds.Invalid("action", "is required: subscribe or unsubscribe")
	default:
		return req, uds.Invalid("action", "must be subscribe or unsubscribe, got %q", uds.Truncate(req.Action, 32))
	}
	return req, nil
}

// validID checks a subscription's id: 1 to maxIDBytes bytes of printable
// UTF-8.
func validID(id string) error {
	switch {
	case id == "":
		return uds.Invalid("id", "is required: the client's name for the subscription")
	case len(id) > maxIDBytes:
		return uds.Invalid("id", "is %d bytes; at most %d", len(id), maxIDBytes)
	case !utf8.ValidString(id) || strings.IndexFunc(id, unicode.IsControl) >= 0:
		return uds.Invalid("id", "must be UTF-8 text without control characters")
	}
	return nil
}

// jsonProblem says what a decoder found wrong, without echoing more than a
// little of the client's bytes.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return "not valid JSON at byte " + strconv.FormatInt(syntax.Offset, 10)
	case errors.As(err, &typ) && typ.Field == "":
		return "it is not an object"
	case errors.As(err, &typ):
		// The fields are strings; a Go type's name says nothing to a
		// client.
		return typ.Field + " must be a string"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the message ends early"
	}
	return uds.Truncate(err.Error(), 120)
}
