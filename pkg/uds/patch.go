package uds

import (
	"strconv"
)

// ErrPatchConflict matches every PatchConflictError.
var ErrPatchConflict = NewError(CodeConflict, "patch does not apply")

// PatchConflictError refuses a patch that does not apply to the item as it
// is: a JSON Patch test that failed, a path an operation needs that is
// missing, or a value that cannot be patched (binary or large). Nothing was
// written.
type PatchConflictError struct {
	// Index is the operation's index in a JSON Patch, -1 for the patch
	// as a whole; Op and Path are the operation's.
	Index    int
	Op, Path string
	Reason   string
}

func (e *PatchConflictError) Error() string {
	if e.Index < 0 {
		return e.Reason
	}
	return "operation " + strconv.Itoa(e.Index) + " (" + e.Op + " " + strconv.Quote(e.Path) + "): " + e.Reason
}

func (e *PatchConflictError) Is(target error) bool { return target == ErrPatchConflict }

// Code is CodeConflict: the item's state refuses the patch, as a create
// of an item that exists is refused.
func (e *PatchConflictError) Code() Code { return CodeConflict }

// A Patcher decides what a patch writes over an item: given the item as it
// is, it fills w's value (Data), and its class name and expiry where the
// request keeps the item's, or refuses (a patch that does not apply, a
// result the namespace's schema or size refuses). The store calls it again
// each time the item changed under an attempt, so it must not keep state
// between calls.
type Patcher func(current *Item, w *Write) error
