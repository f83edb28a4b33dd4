package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// A write is a plan. The verb (create.go, update.go, delete.go; a batch
// runs the same verbs' decisions for each of its operations, batch.go;
// a delete-all and a reclaim remove entries, deleteall.go) reads what it
// needs and decides what it does to its item: a change, with the action
// that writes the item. Each capability then adds its actions to the plan
// from its own file, through one signature (contributor) registered in
// capabilities below. One loop (commit.go) sends the plan, as a single
// call when it holds one action and as one transaction otherwise, and
// reads a refusal by the role of the action refused.

// role is what an action of a plan does, by which a refusal is read.
type role uint8

const (
	// roleItem is a verb's write of its item.
	roleItem role = iota
	// roleHistory keeps, prunes or lists versions (history.go).
	roleHistory
	// roleIndex puts or deletes an index entry (index.go).
	roleIndex
	// roleUsage changes an owner's usage record (usage.go).
	roleUsage
	// roleUpload claims the reservation of an upload, which its commit
	// turns into the item (upload.go).
	roleUpload
	// roleTally is what an erase's tally adds to its removals (erase.go):
	// its count of them, on its record, and their empty history heads'
	// removal.
	roleTally
)

// action is one write of a plan.
type action struct {
	role role
	// change is the plan's change the action serves (its position in
	// p.changes).
	change int
	// owner is, for roleUsage, the owner whose record it changes.
	owner ownerRef
	write types.TransactWriteItem
}

// changeKind is what a change does to its item.
type changeKind uint8

const (
	// createItem writes a new item on a free key, or on one that an
	// expired item holds (old), which it replaces and nothing keeps.
	createItem changeKind = iota
	// replaceItem writes a new value over a live item (old).
	replaceItem
	// removeItem deletes an item (old).
	removeItem
)

// change is what a write does to one item, as its verb decided it.
type change struct {
	kind changeKind
	key  uds.Key
	// w is the write's request: its value, subject and the namespace's
	// policy as the request read it (history, indexes).
	w *uds.Write
	// old is what the key held when it was read; nil for a create on a
	// free key.
	old *itemState
	// value is the new value (not for a removal).
	value encodedValue
	// item is the verb's action on the item.
	item types.TransactWriteItem
	// owner is who the new value is charged to.
	owner string
	// byQuotaMode marks a single write of an item (a create, an update, a
	// patch), which is counted as its app's quota mode says (usage.go,
	// quotaOf). Every other write (a batch, an upload's commit, a
	// restore, a removal) is counted in its own transaction.
	byQuotaMode bool
	// streamed is set by the usage capability when the stream charges the
	// new value; the transaction then releases only what it charged of
	// old.
	streamed bool
	// limits are the limits the verb holds the change's owner to (an
	// import: none); nil when the usage capability reads them.
	limits *uds.Limits
	// token is the request's write token when the change's item is to
	// carry it only if it is sent alone (a create: commitAlone); nil when
	// the item carries one whatever its plan (an update) or needs none.
	token *writeToken
	// head is the key's history head, read when w.History is on.
	head historyHead
	// numbered marks a create whose item carries its own version number
	// (an import's, which its ETags carry): history checks the head it
	// was read with rather than numbering the item after the key's last.
	numbered bool
	// expiredOnly marks a reclaim: the removal holds only while the item
	// is still the expired item read.
	expiredOnly bool
	// result is the item the write leaves (not for a removal).
	result uds.Item
	// pruned are the kept versions history removes with the change
	// (history.go), whose objects go once it commits (objects.go).
	pruned []keptVersion
}

// kept reports whether the change keeps its old item as a version.
func (c *change) kept() bool {
	return c.old != nil && c.kind != createItem && !c.expiredOnly && c.w != nil && c.w.History.On()
}

// plan is one attempt at a write: its changes and every capability's
// actions for them, and what is done once it commits.
type plan struct {
	// now is the instant the write is made at.
	now     time.Time
	changes []*change
	actions []action
	// owners is what the plan does to each owner's usage record, in the
	// order it first charged them. A plan charges one owner or a few (a
	// batch's writers and the owners of what it replaces), so a list
	// searched in order costs less than a map to make and hash into.
	owners []ownerCharge
	// streamDue is, per owner, what the stream is due to release
	// because of this plan (the streamed items it replaces or removes):
	// the limits hold for the usage once the stream has released it. It
	// is made by the first such item: most plans replace none.
	streamDue ownerDeltas
	// prunes bounds the versions each change removes (history.go,
	// maxPrunes).
	prunes int
	// erasing is the erase whose removals the plan's changes are, which
	// its tally counts (erase.go); nil for every other write.
	erasing *erasure
	// bytes is what the plan's items and kept versions carry, which one
	// transaction bounds.
	bytes int64
	// after runs once the plan committed: removals the bucket cannot
	// share a transaction with.
	after []func(context.Context)
	// undo runs when the write ends without the plan committed, and
	// without an attempt that may have: it removes what a contributor
	// made ready outside the transaction (a restore's copy of its value).
	undo []func(context.Context)
}

// newPlan starts a plan made at now of changes, each with its item's
// action.
func newPlan(now time.Time, prunes int, changes ...*change) *plan {
	// Room for the item's action and its owner's usage change, which
	// nearly every change has.
	p := &plan{now: now, changes: changes, actions: make([]action, 0, 2*len(changes)), prunes: prunes}
	for i, c := range changes {
		p.add(roleItem, i, c.item)
		p.bytes += c.value.itemBytes
	}
	return p
}

// add appends an action serving change i.
func (p *plan) add(r role, i int, w types.TransactWriteItem) {
	p.actions = append(p.actions, action{role: r, change: i, write: w})
}

// charge moves owner's usage by u because of change i.
func (p *plan) charge(app, owner string, u uds.Usage, i int) {
	p.chargeOwner(ownerRef{app, owner}, u, i)
}

// chargeOwner is charge to owner k.
func (p *plan) chargeOwner(k ownerRef, u uds.Usage, i int) {
	oc := p.owner(k)
	oc.delta = oc.delta.Plus(u)
	if !oc.grown && u.Grows() {
		oc.growth, oc.grown = i, true
	}
}

// ownerCharge is what a plan does to one owner's usage record: the usage
// it moves by; the first change that grows it (growth, once grown), which
// a batch names when the owner's limit refuses it; and the limits the
// growth is checked against (once known).
type ownerCharge struct {
	who    ownerRef
	delta  uds.Usage
	growth int
	grown  bool
	limits uds.Limits
	known  bool
}

// owner is the charge of owner k, made on first use. It points into the
// plan's list, so it holds only until the next owner is added.
func (p *plan) owner(k ownerRef) *ownerCharge {
	for i := range p.owners {
		if p.owners[i].who == k {
			return &p.owners[i]
		}
	}
	p.owners = append(p.owners, ownerCharge{who: k})
	return &p.owners[len(p.owners)-1]
}

// chargeOf is the charge of owner k, or none.
func (p *plan) chargeOf(k ownerRef) ownerCharge {
	for _, oc := range p.owners {
		if oc.who == k {
			return oc
		}
	}
	return ownerCharge{}
}

// charged are the charges that change their owner's usage, in the order
// of their owners (compareOwners). They point into the plan's list, so
// they hold while no owner is added.
func (p *plan) charged() []*ownerCharge {
	charged := make([]*ownerCharge, 0, len(p.owners))
	for i := range p.owners {
		if p.owners[i].delta != (uds.Usage{}) {
			charged = append(charged, &p.owners[i])
		}
	}
	slices.SortFunc(charged, func(a, b *ownerCharge) int { return compareOwners(a.who, b.who) })
	return charged
}

// afterCommit adds what runs once the plan committed.
func (p *plan) afterCommit(fn func(context.Context)) { p.after = append(p.after, fn) }

// onAbandon adds what runs when the write ends and the plan never
// committed.
func (p *plan) onAbandon(fn func(context.Context)) { p.undo = append(p.undo, fn) }

// abandoned runs what undoes the plan's preparations, to the end when the
// request is cancelled meanwhile: the write ends because its time ran out
// as often as for any other reason, and a preparation left behind (a copy
// of an object) would stay in the bucket with nothing naming it.
func (p *plan) abandoned(ctx context.Context) { settle(ctx, p.undo...) }

// committed runs what waits for the plan's commit. It runs to the end
// when the request is cancelled meanwhile (its caller gone, its time up):
// the commit is done, and what it leaves behind (the objects of values it
// removed) would otherwise stay in the bucket with nothing naming them.
func (p *plan) committed(ctx context.Context) { settle(ctx, p.after...) }

// settle runs what a write does once its outcome is known, under ctx's
// values but not its cancellation, within settleBudget.
func settle(ctx context.Context, fns ...func(context.Context)) {
	if len(fns) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleBudget)
	defer cancel()
	for _, fn := range fns {
		fn(ctx)
	}
}

// settleBudget bounds what runs once a write's outcome is known, after
// its request is cancelled: a few deletes of objects.
const settleBudget = 10 * time.Second

// needs is what a verb reads of its item before it decides, beyond the
// item's state, because a capability the write meets asks for it.
type needs struct {
	// whole is the item's value: history keeps it as a version, and the
	// index entries it has are named by it.
	whole bool
	// head is the key's history head.
	head bool
}

// contributor adds a capability's actions for a plan's changes. Each
// lives in its capability's file.
type contributor func(s *Store, ctx context.Context, p *plan) error

// capability is what the write engine knows of a capability: what a write
// that meets it reads of its item (nil: nothing more than the state), what
// it adds to the removal of one item of a list (nil: nothing), and how it
// adds to a plan. Each lives in its capability's file; a new one is a line
// in capabilities.
type capability struct {
	needs   func(w *uds.Write) needs
	removes func(w *uds.Write) share
	plan    contributor
}

// share is what a capability adds to a transaction for each item a
// removal of listed items removes, beside the item's own action and its
// owner's usage change: its actions, and the copies of the item's bytes
// they carry (a kept version). A delete-all cuts its removals into
// transactions by it (deleteall.go).
type share struct {
	actions int
	copies  int64
}

// removalShare is what removing one listed item of w's list takes of a
// transaction with every capability's share: the item's action and the
// capabilities', and its bytes as many times as they are carried.
func removalShare(w *uds.Write) share {
	total := share{actions: 1, copies: 1}
	for _, c := range capabilities {
		if c.removes == nil {
			continue
		}
		add := c.removes(w)
		total.actions, total.copies = total.actions+add.actions, total.copies+add.copies
	}
	return total
}

// capabilities are the capabilities every write meets, in the order they
// add to a plan: usage comes last, as it charges what the others move
// (the versions history keeps).
var capabilities = []capability{
	{nil, nil, (*Store).planErasure},                     // erase_guard.go: no write of a user whose data an erase removes
	{nil, nil, (*Store).planEraseTally},                  // erase.go: an erase's count of what it removes, the empty heads it leaves
	{historyNeeds, historyRemoves, (*Store).planHistory}, // history.go: versions kept and pruned, the head
	{indexNeeds, indexRemoves, (*Store).planIndexes},     // index.go: the entries the values name
	{nil, nil, (*Store).planObjects},                     // objects.go: large values' objects released
	{nil, nil, (*Store).planCatalogue},                   // catalog.go: the namespaces that hold data marked
	{nil, nil, (*Store).planUsage},                       // usage.go: each owner's usage, under limits
}

// needsOf is what a write of w reads of its item.
func needsOf(w *uds.Write) needs {
	var n needs
	for _, c := range capabilities {
		if c.needs == nil {
			continue
		}
		m := c.needs(w)
		n.whole, n.head = n.whole || m.whole, n.head || m.head
	}
	return n
}

// contribute lets every capability add to p.
func (s *Store) contribute(ctx context.Context, p *plan) error {
	for _, c := range capabilities {
		if err := c.plan(s, ctx, p); err != nil {
			return err
		}
	}
	if len(p.actions) > maxTxActions {
		return &planTooLarge{uds.Invalid("operations", "with the versions its writes keep, their history heads, index entries and usage changes, this write needs %d actions; one DynamoDB transaction takes %d: split it or use \"atomic\": false", len(p.actions), maxTxActions)}
	}
	if p.bytes > maxTxBytes {
		return &planTooLarge{&uds.TooLargeError{Reason: "with the versions its writes keep, this atomic batch holds more than about 3.5 MB (one DynamoDB transaction); split it or use \"atomic\": false"}}
	}
	return nil
}

// planTooLarge is a plan with more actions than one transaction takes:
// to a client, an invalid batch; to a removal of listed items, a batch to
// split.
type planTooLarge struct{ err error }

func (e *planTooLarge) Error() string { return e.err.Error() }
func (e *planTooLarge) Unwrap() error { return e.err }

// inHalves sends entries as one plan (send, which reports how many it
// wrote and, when it failed, the entries its verb still held) and, while
// that plan needs more than one transaction, each half of what was left:
// what a verb adds once it reads what it meets (an expired item replaced,
// an item refreshed) is known only then.
func inHalves[T any](entries []T, send func([]T) (sent int, left []T, err error)) (int, error) {
	n, left, err := send(entries)
	if !errors.As(err, new(*planTooLarge)) || len(left) < 2 {
		return n, err
	}
	half := len(left) / 2
	first, err := inHalves(left[:half], send)
	if err != nil {
		return first, err
	}
	second, err := inHalves(left[half:], send)
	return first + second, err
}
