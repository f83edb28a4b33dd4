package uds

import (
	"encoding/json"
	"errors"
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
	return "", Invalid("access", `must be "shared", "private" or "owner-write", got %q`, truncate(s, 64))
}

// Policy is a namespace's access mode and the JSON Schema its items' data
// must match. The zero Policy (shared, no schema) is what a namespace
// without a policy has.
type Policy struct {
	Access Access
	// Schema is the JSON Schema text, compacted; nil means none.
	Schema json.RawMessage
	// Version counts the changes of the namespace's policy; 0 for one never
	// set.
	Version int64
	Updated time.Time
}

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
// becomes the last part of the stored key.
func (k Key) InSpaceOf(subject string) (Key, error) {
	k.Owner = subject
	if n := len(k.DataKey()); n > MaxDataKeyBytes {
		return Key{}, Invalid("id", "applicationUuid, namespace, id and the caller's identity together take %d bytes in a private namespace; at most %d fit a DynamoDB partition key", n, MaxDataKeyBytes)
	}
	return k, nil
}

// ErrForbidden: the caller may not do this to the item (an owner-write
// namespace's item of another creator). A *ForbiddenError may say why.
var ErrForbidden = errors.New("forbidden")

// ForbiddenError is a refusal with a reason safe to show the caller.
type ForbiddenError struct {
	Reason string
}

func (e *ForbiddenError) Error() string { return "forbidden: " + e.Reason }

// Is makes errors.Is(err, ErrForbidden) hold.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// ErrInUse: a policy change that would move the namespace's items to
// another key space was refused because the namespace holds data.
var ErrInUse = errors.New("namespace holds data")

// ErrSchema: the data does not match the namespace's JSON Schema; a
// *SchemaError lists the violations.
var ErrSchema = errors.New("schema validation failed")

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
