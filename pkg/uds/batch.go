package uds

import "strconv"

// MaxBatchOps and MaxAtomicOps bound a batch: operations applied one by
// one, and operations applied all or none (one DynamoDB transaction, which
// also carries the owners' usage changes).
const (
	MaxBatchOps  = 100
	MaxAtomicOps = 50
)

// BatchOp is one write of an atomic batch: POST, PUT, PATCH or DELETE of
// Write.Key (Write.IfMatch for PUT, PATCH and DELETE), or a restore.
type BatchOp struct {
	Method string
	Write  Write
	// Patch makes a PATCH's value from the item as the batch reads it.
	Patch Patcher
	// Restore marks a restore of a kept version, whose data and class
	// name Write holds: it updates the item when it exists and creates it
	// again when it was deleted, unless Write.IfMatch names revisions
	// (then a deleted item is ErrNotFound). The batch sets Method to the
	// write the restore became, POST or PUT.
	Restore bool
}

// BatchError says which operation of a batch failed, and why.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string {
	return "operation " + strconv.Itoa(e.Index) + ": " + e.Err.Error()
}

// Unwrap returns the operation's error, so that errors.Is and errors.As
// see its kind.
func (e *BatchError) Unwrap() error { return e.Err }
