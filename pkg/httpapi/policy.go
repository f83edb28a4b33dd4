package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// PolicyReader gives the policy in effect for a namespace, which every
// data request reads first.
type PolicyReader interface {
	Policy(ctx context.Context, app, namespace string) (uds.Policy, error)
}

// scope is what a namespace's policy makes of a request on one item or
// list: the key in the caller's key space, the caller, and the policy.
type scope struct {
	key     uds.Key
	subject string
	policy  uds.Policy
}

// inNamespace names the caller of r and applies the policy of key's
// namespace.
func (a *API) inNamespace(r *http.Request, key uds.Key) (scope, error) {
	subject, err := a.subject(r)
	if err != nil {
		return scope{key: key}, err
	}
	return a.scopeOf(r.Context(), subject, key)
}

// scopeOf applies the policy of key's namespace to subject's request: in a
// private namespace the key moves into the subject's key space, and the
// anonymous caller, who has none, is refused.
func (a *API) scopeOf(ctx context.Context, subject string, key uds.Key) (scope, error) {
	sc := scope{key: key, subject: subject}
	var err error
	if sc.policy, err = a.stores.Policy.Policy(ctx, key.App, key.Namespace); err != nil {
		return sc, err
	}
	if sc.policy.Mode() != uds.AccessPrivate {
		return sc, nil
	}
	if subject == Anonymous {
		return sc, Unauthenticated("namespace " + key.Namespace + " is private: each caller has items of their own, and an anonymous caller has none; authenticate")
	}
	sc.key, err = key.InSpaceOf(subject)
	if err != nil {
		sc.key = key
	}
	return sc, err
}

// writable refuses a write (create, update, import) while the namespace's
// access mode is changing (uds.Policy.Writable).
func (sc *scope) writable(now time.Time) error {
	return sc.policy.Writable(sc.key.Namespace, now)
}

// guard adds what the policy requires of a change to an existing item: in
// an owner-write namespace, that the caller created it.
func (sc *scope) guard(pre uds.Precondition) uds.Precondition {
	if sc.policy.Mode() == uds.AccessOwnerWrite {
		pre.Creator = sc.subject
	}
	return pre
}

// onlyCreator is the subject a delete-all must be limited to: the caller in
// an owner-write namespace, nobody otherwise.
func (sc *scope) onlyCreator() string {
	if sc.policy.Mode() == uds.AccessOwnerWrite {
		return sc.subject
	}
	return ""
}

// checkData validates data against the namespace's JSON Schema, if it
// has one: nil or a *uds.SchemaError.
func (a *API) checkData(sc *scope, data json.RawMessage) error {
	if sc.policy.Schema == nil {
		return nil
	}
	s, err := a.schemas.Schema(sc.policy.Schema)
	if err != nil {
		// The schema was checked when the policy was set.
		return fmt.Errorf("compile the schema of %s/%s: %w", sc.key.App, sc.key.Namespace, err)
	}
	return s.Check(data)
}

// scopeOperation applies the policy to a checked batch operation, in
// place, as the operation's single-item route would. A restore applies
// the rules of writes when it runs (restore), once it has read the
// version it writes back.
func (a *API) scopeOperation(ctx context.Context, op *batchOp) error {
	sc, err := a.scopeOf(ctx, op.Write.Subject, op.Write.Key)
	if err != nil {
		return err
	}
	op.Write.Key, op.Write.History, op.Write.Indexes, op.scope = sc.key, sc.policy.History, sc.policy.Indexes, sc
	if op.restores() {
		return nil
	}
	if op.Method == http.MethodPut || op.Method == http.MethodPatch || op.Method == http.MethodDelete {
		op.Write.IfMatch = sc.guard(op.Write.IfMatch)
	}
	switch op.Method {
	case http.MethodPost, http.MethodPut:
		if err := sc.writable(a.now()); err != nil {
			return err
		}
		return a.checkValue(&sc, &op.Write)
	case http.MethodPatch:
		// A patch's result is checked when it is made (patcher).
		return sc.writable(a.now())
	}
	return nil
}
