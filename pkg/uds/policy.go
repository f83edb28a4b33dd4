package uds

import (
	"encoding/json"
	"time"
)

// Access says who may read and write a namespace's items.
type Access string

// Access modes of a namespace.
const (
	// AccessShared lets any caller read and write any item (the default).
	AccessShared Access = "shared"
	// AccessPrivate gives every caller a key space of their own: the
	// caller's subject is part of each stored key, so no read, list or
	// delete-all can reach another caller's items.
	AccessPrivate Access = "private"
	// AccessOwnerWrite lets any caller read, and only an item's creator
	// change or delete it.
	AccessOwnerWrite Access = "owner-write"
)

// ParseAccess validates an access mode.
func ParseAccess(s string) (Access, error) {
	switch a := Access(s); a {
	case AccessShared, AccessPrivate, AccessOwnerWrite:
		return a, nil
	}
	return "", Invalid("access", `must be "shared", "private" or "owner-write", got %q`, Truncate(s, 64))
}

// Policy is a namespace's access mode and the JSON Schema its items' data
// must match. The zero Policy (shared, no schema) is what a namespace
// without a policy has.
type Policy struct {
	Access Access
	// Schema is the JSON Schema text, compacted; nil means none.
	Schema json.RawMessage
	// History is what the namespace keeps of replaced versions. It takes
	// effect at once (kept versions stay where they are whatever the
	// access mode), so a change carries it outside Pending.
	History History
	// Indexes are the fields the namespace's items are queried by; like
	// the history, they change at once. IndexBuild is the work their
	// last change left, nil when none is left.
	Indexes    []Index
	IndexBuild *IndexBuild
	// Binary is what the namespace accepts of binary values (nil: the
	// default). Like the history, it changes at once.
	Binary *BinaryRule
	// Version counts the changes of the namespace's policy; 0 for one never
	// set.
	Version int64
	Updated time.Time
	// Pending is a change into or out of private under way, nil if none:
	// the policy above stays in effect until it completes.
	Pending *PolicyChange
	// HeldSince is when the namespace first held data, as the catalogue
	// marked it (zero: not marked). It is no part of the policy: a
	// namespace may hold data without one, and a policy removed leaves it.
	HeldSince time.Time
	// Set reports whether the namespace has a policy of its own: an
	// access mode, a history or a binary rule stored.
	Set bool
}

// PolicyChange is a change of a namespace's policy into or out of private,
// which moves the namespace to another key space. Every function caches
// policies for a while and a write may take its whole budget, so a write
// that read the policy before the change was announced can still commit
// up to SettlesAt. Until the change completes, the namespace takes no
// writes (they are refused with a retriable 503), so that none lands in
// the key space being left after it was found empty. From SettlesAt an
// administrator completes it (repeating the change) by LapsesAt, or it
// lapses and the namespace takes writes again under the old policy.
type PolicyChange struct {
	// Access and Schema are the policy the change sets.
	Access                     Access
	Schema                     json.RawMessage
	Since, SettlesAt, LapsesAt time.Time
}

// Target is the policy the change sets.
func (c *PolicyChange) Target() Policy { return Policy{Access: c.Access, Schema: c.Schema} }

// Changing is the change under way at now, or nil (none, or lapsed).
func (p Policy) Changing(now time.Time) *PolicyChange {
	if p.Pending == nil || !now.Before(p.Pending.LapsesAt) {
		return nil
	}
	return p.Pending
}

// Writable refuses a write to namespace (create, update, import, an
// upload's commit) while its access mode is changing, with a
// *ChangingError that says when to send it again: a write that lands in
// the key space being left after the namespace was found empty could
// never be read again. Reads and deletes go on under the policy in
// effect; a delete only ever empties the namespace.
func (p Policy) Writable(namespace string, now time.Time) error {
	c := p.Changing(now)
	if c == nil {
		return nil
	}
	wait := c.SettlesAt.Sub(now)
	if wait < time.Second {
		// Settled: the change completes when an administrator repeats it,
		// or lapses; either way soon.
		wait = 5 * time.Second
	}
	return &ChangingError{Namespace: namespace, From: p.Mode(), To: c.Target().Mode(), RetryAfter: wait}
}

// CrossesPrivate reports whether going from p to next moves the
// namespace's items to another key space: into or out of private.
func (p Policy) CrossesPrivate(next Policy) bool {
	return (p.Mode() == AccessPrivate) != (next.Mode() == AccessPrivate)
}

// ChangingError refuses a write to a namespace whose access mode is
// changing: nothing was written, and the write may be sent again after
// RetryAfter.
type ChangingError struct {
	Namespace  string
	From, To   Access
	RetryAfter time.Duration
}

func (e *ChangingError) Error() string {
	return "namespace " + e.Namespace + " is changing its access mode from " + string(e.From) + " to " + string(e.To)
}

// Is makes errors.Is(err, ErrUnavailable) hold: the refusal is transient.
func (e *ChangingError) Is(target error) bool { return target == ErrUnavailable }

// Code returns CodePolicyPending: unlike a data store that did not answer,
// nothing was written, and the wait is known.
func (e *ChangingError) Code() Code { return CodePolicyPending }

// Mode is the access mode in effect: shared when none is set.
func (p Policy) Mode() Access {
	if p.Access == "" {
		return AccessShared
	}
	return p.Access
}

// NamespacePolicy is a policy and the namespace it governs.
type NamespacePolicy struct {
	App, Namespace string
	Policy
}

// InSpaceOf returns the key in subject's private key space: the subject
// becomes the last part of the stored key. A key without an id names the
// key space itself (a query of the namespace, its changes feed), which is
// refused when no item's key in it would fit: its changes feed's
// partition takes as many bytes as the key of an item with a one-byte id.
func (k Key) InSpaceOf(subject string) (Key, error) {
	k.Owner = subject
	if k.ID == "" {
		if n := k.DataKeyLen() + 1; n > MaxDataKeyBytes {
			return Key{}, Invalid("namespace", "applicationUuid, namespace and the caller's identity together take %d bytes in a private namespace with the shortest id; at most %d fit a DynamoDB partition key, so the caller has no items here", n, MaxDataKeyBytes)
		}
		return k, nil
	}
	if n := k.DataKeyLen(); n > MaxDataKeyBytes {
		return Key{}, Invalid("id", "applicationUuid, namespace, id and the caller's identity together take %d bytes in a private namespace; at most %d fit a DynamoDB partition key", n, MaxDataKeyBytes)
	}
	return k, nil
}

// ErrForbidden: the caller may not do this to the item (an owner-write
// namespace's item of another creator). A *ForbiddenError may say why.
var ErrForbidden = NewError(CodeForbidden, "forbidden")

// ForbiddenError is a refusal with a reason safe to show the caller.
type ForbiddenError struct {
	Reason string
}

func (e *ForbiddenError) Error() string { return "forbidden: " + e.Reason }

// Is makes errors.Is(err, ErrForbidden) hold.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// Code returns CodeForbidden.
func (e *ForbiddenError) Code() Code { return CodeForbidden }

// ErrInUse: a policy change that would move the namespace's items to
// another key space was refused because the namespace holds data.
var ErrInUse = NewError(CodeInUse, "namespace holds data")

// ErrSchema: the data does not match the namespace's JSON Schema; a
// *SchemaError lists the violations.
var ErrSchema = NewError(CodeSchemaViolation, "schema validation failed")

// Violation is one way data fails a JSON Schema, located by JSON pointers
// into the data and into the schema.
type Violation struct {
	InstanceLocation string
	KeywordLocation  string
	Message          string
}

// SchemaError is data refused by a namespace's JSON Schema.
type SchemaError struct {
	Violations []Violation
}

func (e *SchemaError) Error() string { return "data does not match the namespace's JSON Schema" }

// Is makes errors.Is(err, ErrSchema) hold.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

// Code returns CodeSchemaViolation.
func (e *SchemaError) Code() Code { return CodeSchemaViolation }
