package realtime

import (
	"strconv"

	"github.com/udsproject/uds/internal/jsontext"
)

// The types of the server's messages.
const (
	TypeSubscribed   = "subscribed"
	TypeChange       = "change"
	TypeUnsubscribed = "unsubscribed"
	TypeResync       = "resync"
	TypeError        = "error"
)

// Refusal is an error message's content: the HTTP status a request refused
// the same way would have, and its body's error and details.
type Refusal struct {
	Status         int
	Error, Details string
}

// The messages are appended by hand, as the HTTP API's item answers are:
// a change embeds the feed's entry as its bytes.

// subscribedMessage is the first answer to a subscribe: where it starts.
func subscribedMessage(id, cursor string) []byte {
	b := appendHead(nil, TypeSubscribed, id)
	b = append(b, `,"cursor":`...)
	b = jsontext.AppendString(b, cursor)
	return append(b, '}')
}

// changeMessage carries one entry of the feed and the cursor after it.
func changeMessage(id string, entry []byte, cursor string) []byte {
	b := make([]byte, 0, len(entry)+len(id)+len(cursor)+48)
	b = appendHead(b, TypeChange, id)
	b = append(b, `,"change":`...)
	b = append(b, entry...)
	b = append(b, `,"cursor":`...)
	b = jsontext.AppendString(b, cursor)
	return append(b, '}')
}

// idMessage is a message of a type that carries the id only.
func idMessage(typ, id string) []byte {
	return append(appendHead(nil, typ, id), '}')
}

// errorMessage refuses a request.
func errorMessage(id string, r Refusal) []byte {
	b := appendHead(nil, TypeError, id)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"error":`...)
	b = jsontext.AppendString(b, r.Error)
	if r.Details != "" {
		b = append(b, `,"details":`...)
		b = jsontext.AppendString(b, r.Details)
	}
	return append(b, '}')
}

func appendHead(b []byte, typ, id string) []byte {
	b = append(b, `{"type":`...)
	b = jsontext.AppendString(b, typ)
	b = append(b, `,"id":`...)
	return jsontext.AppendString(b, id)
}
