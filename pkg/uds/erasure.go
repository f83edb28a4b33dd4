package uds

import "time"

// ErrErasing: the writer's data, or the owner's the write would charge,
// is being erased, or was and the erase holds it erased a while longer
// (Erasure.HoldUntil): nothing is written behind an erase.
var ErrErasing = NewError(CodeErasing, "an erase of this user's data is running, or holds their writes for a while after it ended; their writes are refused until then")

// ErasureState is where an erase of a user's data stands.
type ErasureState string

const (
	// ErasureSettling: the erase refuses the user's writes and waits until
	// every process applies that (the limits cache) and every request that
	// began before has ended, so that nothing lands behind it.
	ErasureSettling ErasureState = "settling"
	// ErasureErasing: the erase removes the user's data, app by app.
	ErasureErasing ErasureState = "erasing"
	// ErasureDone: nothing of the user is left; the receipt says what went.
	ErasureDone ErasureState = "done"
)

// Erasure is an erase of one user's data in every app: its state and,
// once done, its receipt. It holds the user's name and counts, never their
// data.
type Erasure struct {
	User  string
	State ErasureState
	// Started is when it was asked for; DeletesFrom, when its removals
	// begin (the settling ends); Ended, when it was done.
	Started, DeletesFrom, Ended time.Time
	// HoldUntil is when the user's writes are taken again (Ended for
	// none held); BackupsUntil, when the tables' point-in-time backups
	// no longer hold any of what was erased.
	HoldUntil, BackupsUntil time.Time
	// HoldDays is how long after the end the user's writes stay refused.
	HoldDays int
	// Erased counts what went, per app and kind (ErasedKinds).
	Erased map[string]map[string]int64
	// Pseudonym is what the audit fields of items that others own, which
	// named the user, name instead.
	Pseudonym string
	// Previous are the receipts of the user's earlier erases, oldest
	// first: an erase asked for once the last one's hold is over (the
	// person wrote again) starts anew and keeps them.
	Previous []Erasure
}

// The kinds an erase counts.
const (
	ErasedItems     = "items"     // key-value items, large values with their objects
	ErasedListItems = "listItems" // list items
	ErasedVersions  = "versions"  // kept versions, with their objects
	ErasedMarkers   = "markers"   // delete markers
	ErasedUploads   = "uploads"   // uploads not committed, with their objects
	ErasedRecords   = "records"   // usage records, with the quota and rate overrides they hold
	ErasedAudit     = "audit"     // items others own whose audit fields named the user
)

// MaxHoldDays bounds how long an erase keeps refusing the user's writes.
const MaxHoldDays = 3650
