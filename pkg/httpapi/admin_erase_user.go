package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Erasing a person's data: POST .../admin/users/{user}/erase starts the
// erase of everything the user owns in every app, or takes it a step
// further (store/erase.go), and answers where it stands: 202 with
// Retry-After while work remains, to be sent again; 200 with the receipt
// once done. GET of the same path answers the same body without doing
// anything. The body, optional, holds holdDays: how long after the erase
// ends the user's writes stay refused.

// ErasureStore erases a user's data in every app.
type ErasureStore interface {
	EraseUser(context.Context, store.EraseQuery) (uds.Erasure, error)
	Erasure(ctx context.Context, user string) (uds.Erasure, error)
}

// erasureJSON is an erase's state, and once done its receipt: counts per
// app and kind of what went, and until when backups and the hold last.
type erasureJSON struct {
	User         string                      `json:"user"`
	State        uds.ErasureState            `json:"state"`
	StartedAt    string                      `json:"startedAt"`
	DeletesFrom  string                      `json:"deletesFrom"`
	EndedAt      string                      `json:"endedAt,omitempty"`
	HoldDays     int                         `json:"holdDays"`
	HoldUntil    string                      `json:"holdUntil,omitempty"`
	BackupsUntil string                      `json:"backupsUntil,omitempty"`
	Erased       map[string]map[string]int64 `json:"erased"`
	// Previous are the receipts of the user's earlier erases, oldest
	// first (an erase asked for again once the last one's hold was over).
	Previous []erasureJSON `json:"previous,omitempty"`
}

func toErasureJSON(e uds.Erasure) erasureJSON {
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return store.FormatTime(t)
	}
	j := erasureJSON{
		User: e.User, State: e.State, StartedAt: at(e.Started), DeletesFrom: at(e.DeletesFrom), EndedAt: at(e.Ended),
		HoldDays: e.HoldDays, HoldUntil: at(e.HoldUntil), BackupsUntil: at(e.BackupsUntil), Erased: e.Erased,
	}
	for _, p := range e.Previous {
		j.Previous = append(j.Previous, toErasureJSON(p))
	}
	return j
}

// maxEraseBody bounds an erase's body: {"holdDays": N}.
const maxEraseBody = 1 << 10

const eraseShape = `{"holdDays": N} (optional; N from 0 to 3650)`

// eraseUser starts or continues an erase, spending half the request's time
// on it (the rest is margin for the work in hand and the answer).
func (a *API) eraseUser(w http.ResponseWriter, r *http.Request, p params) {
	user, err := uds.ParseUser(p.user)
	if err == nil && user == Anonymous {
		// Every caller without an authorizer is anonymous: an erase of
		// it would remove what they all wrote, and refuse all their
		// writes, in every app, for the hold.
		err = uds.Invalid("user", "is %q, the subject every unauthenticated caller shares, not a person; an app's anonymous data goes with a delete of its items", Anonymous)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	body, err := readBody(r, maxEraseBody, "an erase body takes at most 1 KiB: "+eraseShape)
	q := store.EraseQuery{User: user}
	if err == nil {
		q.HoldDays, err = parseErase(body)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	if dl, ok := r.Context().Deadline(); ok {
		q.Deadline = time.Now().Add(time.Until(dl) / 2)
	}
	e, err := a.stores.Erasures.EraseUser(r.Context(), q)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	a.answerErasure(w, e)
}

// getErasure answers where an erase stands, or its receipt.
func (a *API) getErasure(w http.ResponseWriter, r *http.Request, p params) {
	user, err := uds.ParseUser(p.user)
	if err == nil {
		var e uds.Erasure
		if e, err = a.stores.Erasures.Erasure(r.Context(), user); err == nil {
			a.answerErasure(w, e)
			return
		}
	}
	if errors.Is(err, uds.ErrNotFound) {
		err = errNoErasure
	}
	a.fail(w, r, err, nil)
}

// errNoErasure answers a GET of the erase of a user none was asked for.
var errNoErasure = uds.NewError(uds.CodeNotFound, "no erase of this user's data was asked for")

// answerErasure answers 200 with a done erase's receipt, else 202 with
// Retry-After: until the settling ends, or a second while it erases.
func (a *API) answerErasure(w http.ResponseWriter, e uds.Erasure) {
	status := http.StatusOK
	if e.State != uds.ErasureDone {
		wait := 1
		status = http.StatusAccepted
		if e.State == uds.ErasureSettling {
			wait = max(1, int(e.DeletesFrom.Sub(a.now()).Seconds()+0.999))
		}
		w.Header().Set("Retry-After", strconv.Itoa(wait))
	}
	writeJSON(w, status, toErasureJSON(e))
}

// parseErase reads an erase's body: empty, or {"holdDays": N}.
func parseErase(body []byte) (holdDays int, err error) {
	if len(body) == 0 {
		return 0, nil
	}
	var b struct {
		HoldDays *int `json:"holdDays"`
	}
	if err := decodeBody(body, &b, eraseShape); err != nil {
		return 0, err
	}
	if b.HoldDays == nil {
		return 0, nil
	}
	if *b.HoldDays < 0 || *b.HoldDays > uds.MaxHoldDays {
		return 0, uds.Invalid("holdDays", "must be from 0 to %d days, got %d", uds.MaxHoldDays, *b.HoldDays)
	}
	return *b.HoldDays, nil
}
