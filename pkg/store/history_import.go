package store

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// importKept writes kept versions and delete markers back into their
// items' histories, item by item, each item's in rounds (importKeptGroup):
// each round is one transaction of its new entries, their owners' usage
// (kept bytes count in bytes and history) and the item's head, written on
// the revision read. An entry the head already lists is skipped when it is
// the same (an import run again) and a conflict otherwise. Limits are
// not applied, as for items.
func (s *Store) importKept(ctx context.Context, app string, entries []importEntry, res *uds.ImportResult) error {
	groups := map[string][]importEntry{}
	var order []string
	for _, e := range entries {
		hk := historyKey(e.rec.Key)
		if groups[hk] == nil {
			order = append(order, hk)
		}
		groups[hk] = append(groups[hk], e)
	}
	// The keys whose item's record conflicted hold another item: the
	// history exported with the record is not that item's.
	conflicted := make(map[string]bool, len(res.Conflicts))
	for _, c := range res.Conflicts {
		conflicted[historyKey(c.Key)] = true
	}
	for _, hk := range order {
		group := groups[hk]
		if conflicted[hk] {
			leaveOut(res, group, conflictedReason)
			continue
		}
		group, err := s.belowLiveVersion(ctx, group, res)
		if err != nil {
			return err
		}
		if len(group) == 0 {
			continue
		}
		if err := s.importKeptGroup(ctx, app, group, res); err != nil {
			return err
		}
	}
	return nil
}

// numbersFree reads, for an import's items in namespaces that keep
// history, each key's history head and what the key holds (in one
// BatchGetItem), and leaves out of the group each record whose key is
// free and whose version is not above the last its key used: a key whose
// item was deleted keeps that item's versions and delete marker, and the
// item imported under its old number would share it with them (a create
// continues after the last instead; an import keeps the record's number,
// which its ETags carry). A key that holds an item is left to the put,
// which finds it and sorts the record as skipped or a conflict. It
// returns the heads read, by the records' places in the group left, which
// the history capability holds the puts to (planHistory).
func (s *Store) numbersFree(ctx context.Context, iv *importVerb) (map[int]historyHead, error) {
	var keys []uds.Key
	for _, e := range iv.group {
		if needsOf(e.write).head {
			keys = append(keys, e.rec.Key)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	items, read, err := s.readItemsAndHeads(ctx, keys, metaRead, keys)
	if err != nil {
		return nil, err
	}
	now := s.now()
	heads := make(map[int]historyHead, len(keys))
	rest := iv.group[:0:0]
	for _, e := range iv.group {
		if !needsOf(e.write).head {
			rest = append(rest, e)
			continue
		}
		head := read[historyKey(e.rec.Key)]
		if stored, held := items[itemID(e.rec.Key)]; (!held || expired(stored, now)) && head.last >= e.rec.Version {
			leaveOut(iv.res, []importEntry{e}, "an item numbered "+strconv.FormatInt(e.rec.Version, 10)+" where its key's history has used the numbers up to "+
				strconv.FormatInt(head.last, 10)+" (versions of an item deleted since, whose numbers a key never uses again): write the value anew, which numbers it after them")
			continue
		}
		heads[len(rest)] = head
		rest = append(rest, e)
	}
	iv.group = rest
	return heads, nil
}

// conflictedReason is why an import leaves out the kept versions and
// delete markers of a key whose item's record conflicted.
const conflictedReason = "a kept version of an item whose record conflicted: the key holds another item, whose history this is not"

// leaveOut reports entries as not imported, for reason.
func leaveOut(res *uds.ImportResult, entries []importEntry, reason string) {
	for _, e := range entries {
		res.Left = append(res.Left, uds.ImportLeft{Index: e.index, Key: e.rec.Key, Reason: reason})
	}
}

// belowLiveVersion is the entries of one key numbered below the version of
// the item the key holds (all of them when it holds none): a version is
// kept as its item moves past it, so one at or above the item's own
// number was never that item's, and listed it would be numbered twice
// once the item moves on. It reports the others as not imported.
func (s *Store) belowLiveVersion(ctx context.Context, group []importEntry, res *uds.ImportResult) ([]importEntry, error) {
	live, err := s.readMeta(ctx, group[0].rec.Key, false)
	if err != nil || live == nil || expired(live, s.now()) {
		return group, err
	}
	version := num(live, schema.AttrVersion)
	var above []importEntry
	group = slices.DeleteFunc(group, func(e importEntry) bool {
		if e.rec.Version >= version {
			above = append(above, e)
			return true
		}
		return false
	})
	leaveOut(res, above, "a kept version numbered at or above its item's: the key's item is at version "+strconv.FormatInt(version, 10)+", and a version is kept only below its item's number")
	return group, nil
}

// refuseErasingNamed asks the erase guard about everyone an import's
// records name: the owners of its kept entries, which are written apart
// from the commit loop (an item's owner the commit loop asks about,
// planErasure), and the writers its audit fields name beside them. A record of an
// owner whose data an erase removes would give them data again, and one
// whose createdBySubject or updatedBySubject names them would bring back
// the name the erase replaced by a pseudonym: either refuses the import,
// as a write of theirs is refused. Import asks before it writes anything,
// so that the refusal leaves none of the records written.
func (s *Store) refuseErasingNamed(ctx context.Context, app string, records []uds.Record) error {
	// An item's owner is left to the commit loop (planErasure), also
	// where the owner wrote the item, so that no one is looked up twice.
	asked := map[string]bool{}
	for i := range records {
		rec := &records[i]
		names := []string{rec.CreatedBy, rec.UpdatedBy}
		if rec.Kept() {
			names = append(names, rec.Owner)
		}
		for _, who := range names {
			if asked[who] || who == rec.Owner && !rec.Kept() {
				continue
			}
			asked[who] = true
			if err := s.refuseErasing(ctx, app, who); err != nil {
				return err
			}
		}
	}
	return nil
}

// importKeptGroup writes one item's kept entries, in rounds of as many
// as fit one transaction (roundRoom) with the head and a usage change for
// each owner they charge (historyRewrite). It takes them newest first,
// and leaves out those the head has no room left for
// (maxHeadEntriesBytes): a history keeps its newest versions that fit,
// and the head that lists them could not be written past its item's
// 400 KB. That happens only when the key's history already lists other
// versions: an export's history fit the head it came from.
func (s *Store) importKeptGroup(ctx context.Context, app string, group []importEntry, res *uds.ImportResult) error {
	key := group[0].rec.Key
	policy, err := s.Policy(ctx, app, key.Namespace)
	if err != nil {
		return err
	}
	slices.SortStableFunc(group, func(a, b importEntry) int { return cmp.Compare(b.rec.Version, a.rec.Version) })
	r := &historyRewrite{s: s, key: key}
	r.round = func(_ context.Context, head historyHead, p *plan) (bool, error) {
		listed := make(map[int64]keptVersion, len(head.kept))
		headBytes := 0
		for _, k := range head.kept {
			listed[k.version] = k
			headBytes += k.headBytes()
		}
		kept := keptByPolicy(app, policy.History, head, group, p.now)
		var conflicts []uds.ImportConflict
		var left []uds.ImportLeft
		list, last, added, skipped, taken := slices.Clone(head.kept), head.last, 0, 0, 0
		room := newRoundRoom(1) // the head
		for _, e := range group {
			k := keptOf(app, e)
			if have, ok := listed[k.version]; ok {
				if have == k {
					skipped++
				} else {
					conflicts = append(conflicts, uds.ImportConflict{Index: e.index, Key: e.rec.Key, Version: k.version})
				}
				taken++
				continue
			}
			if headBytes+k.headBytes() > maxHeadEntriesBytes {
				left = append(left, uds.ImportLeft{Index: e.index, Key: e.rec.Key, Reason: headFullReason})
				taken++
				continue
			}
			if !kept[k.version] {
				left = append(left, uds.ImportLeft{Index: e.index, Key: e.rec.Key, Reason: notKeptReason(policy.History)})
				taken++
				continue
			}
			owner := ownerRefOf(k.owner)
			need := 1
			if k.charged() && p.chargeOf(owner).who != owner {
				need++ // the first of the owner's versions: their usage change
			}
			if !room.take(need, k.rowBytes()) {
				break
			}
			if k.deleted {
				p.add(roleHistory, 0, s.markerPut(key, k))
			} else {
				p.add(roleHistory, 0, s.keptPut(app, e, k))
			}
			if k.charged() {
				// The usage capability charges the version to its owner,
				// without their limits, as an import's items are.
				p.chargeOwner(owner, uds.Usage{Bytes: k.size, History: k.size}, 0)
				oc := p.owner(owner)
				oc.limits, oc.known = noLimits, true
			}
			list, last, added, taken = append(list, k), max(last, k.version), added+1, taken+1
			headBytes += k.headBytes()
		}
		if added > 0 {
			slices.SortFunc(list, func(a, b keptVersion) int { return cmp.Compare(b.version, a.version) })
			p.add(roleHistory, 0, s.headPut(key, head, list, last))
		}
		p.afterCommit(func(context.Context) {
			res.Imported += added
			res.Skipped += skipped
			res.Conflicts = append(res.Conflicts, conflicts...)
			res.Left = append(res.Left, left...)
			group = group[taken:]
		})
		return taken < len(group), nil
	}
	return s.rewriteHistory(ctx, "import the history of "+key.DataKey(), r)
}

// keptByPolicy is which of an import's entries not yet listed the item's
// history keeps once they are, as any write's history keeps them
// (splitHistory): the newest versions and markers the namespace's policy
// keeps, at most its number of versions, while they are younger than its
// days. An import leaves the others out rather than store what the next
// write would remove, counted in their owners' usage until then.
func keptByPolicy(app string, h uds.History, head historyHead, group []importEntry, now time.Time) map[int64]bool {
	if !h.On() {
		// splitHistory keeps a young newest delete marker, the state of
		// a deleted item, for a history being pruned; a namespace that
		// keeps no history takes none of it.
		return nil
	}
	list := slices.Clone(head.kept)
	for _, e := range group {
		list = append(list, keptOf(app, e))
	}
	slices.SortStableFunc(list, func(a, b keptVersion) int { return cmp.Compare(b.version, a.version) })
	list = slices.CompactFunc(list, func(a, b keptVersion) bool { return a.version == b.version })
	keep, _ := splitHistory(h, list, now)
	out := make(map[int64]bool, len(keep))
	for _, k := range keep {
		out[k.version] = true
	}
	return out
}

// notKeptReason is why an import leaves out a kept version or delete
// marker its namespace's history policy h does not keep.
func notKeptReason(h uds.History) string {
	if !h.On() {
		return "a kept version or delete marker, and the namespace keeps no history: set its policy's history before the import to keep it"
	}
	versions := strconv.Itoa(h.Versions) + " versions"
	if h.Versions == 1 {
		versions = "1 version"
	}
	if h.Days > 0 {
		versions += " for " + strconv.Itoa(h.Days) + " days"
	}
	return "a kept version older than those the item's history keeps: the namespace keeps " + versions +
		"; set its policy's history before the import to keep more"
}

// headFullReason is why an import leaves out a kept version its key's
// history head has no room for.
const headFullReason = "a kept version older than those the item's history lists: its head lists the newest versions whose entries fit its 400 KB item, which other versions of the item fill"

// keptOf is what an item's head says of an imported kept entry.
func keptOf(app string, e importEntry) keptVersion {
	rec := e.rec
	k := keptVersion{
		version: rec.Version, size: e.value.size, owner: ownerKey(app, rec.Owner), keptAt: rec.KeptAt.UnixMilli(),
		updatedDate: FormatTime(rec.UpdatedDate), updatedBy: rec.UpdatedBy, deleted: rec.Deleted,
	}
	if !rec.ExpiresAt.IsZero() {
		k.expiresAt = rec.ExpiresAt.UnixMilli()
	}
	if rec.CreatedBy != rec.Owner {
		k.creator = rec.CreatedBy
	}
	// No imported version names an object: an import takes no large
	// value, whose object is in the exporting deployment's bucket.
	return k
}

// keptPut writes an imported kept version's entry, charged to the
// record's owner.
func (s *Store) keptPut(app string, e importEntry, k keptVersion) types.TransactWriteItem {
	row := s.importPut(app, e).Item
	for name, v := range keptRow(e.rec.Key, k.version) {
		row[name] = v
	}
	row[schema.AttrKeptAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(k.keptAt, 10)}
	return s.putKept(row)
}
