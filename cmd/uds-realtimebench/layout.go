package main

import "fmt"

// The layout: which namespaces there are, what each connection subscribes
// to, and what each write creates. Four namespaces, two shared and two
// private (namespace policies set before the connections open):
//
//   - news, shared: every connection subscribes to the whole namespace;
//     each write creates a key-value item, seen by all 100 connections;
//   - rooms, shared: 20 lists (room-00 to room-19); each connection
//     subscribes to 5 of them by key, so each list has a quarter of the
//     connections as subscribers; each write creates a list item in one;
//   - notes, private: every connection subscribes to the whole namespace,
//     which shows it its own items only; each write creates a key-value
//     item of its writer, seen by the writer's connection alone;
//   - drafts, private: every connection subscribes to 3 of its own lists
//     by key (draft-0 to draft-2); each write creates a list item in one
//     of its writer's, seen by the writer's connection alone.
//
// That is 10 subscriptions a connection: 1 + 5 + 1 + 3. Writes cycle over
// the four namespaces, each by the next connection's caller in turn, so at
// 100 writes a second each namespace gets 25 a second. Every write creates
// a new item (version 1): a subscription is never shown an item at a later
// version than the one written, which compaction could otherwise do, and
// each expected delivery is one (key, version) to wait for.

// The namespaces.
const (
	nsNews   = "rt-news"
	nsRooms  = "rt-rooms"
	nsNotes  = "rt-notes"
	nsDrafts = "rt-drafts"
)

// privateNamespaces are the namespaces set private before the run.
var privateNamespaces = []string{nsNotes, nsDrafts}

// rooms is the number of shared lists in nsRooms, roomsEach how many of
// them a connection subscribes to, drafts how many private lists of its
// own it subscribes to in nsDrafts.
const (
	rooms     = 20
	roomsEach = 5
	drafts    = 3
)

// subscriptionsEach is the number of subscriptions a connection makes.
const subscriptionsEach = 1 + roomsEach + 1 + drafts

// kind is what a subscription follows: a whole namespace or one list, in
// a shared or a private namespace. The report gives latencies per kind.
type kind int

const (
	sharedNamespace kind = iota
	sharedList
	privateNamespace
	privateList
	kinds
)

func (k kind) String() string {
	return [...]string{"shared namespace", "shared list", "private namespace", "private list"}[k]
}

// subscription is one subscription of a connection.
type subscription struct {
	// id is the client's name for it, unique on its connection.
	id        string
	namespace string
	// key narrows it to one list; empty, it follows the namespace.
	key  string
	kind kind
}

// subject is the caller of connection c (X-Uds-Subject on its upgrade and
// on its connection's writes).
func subject(c int) string { return fmt.Sprintf("rt-%04d", c) }

func roomID(r int) string  { return fmt.Sprintf("room-%02d", r) }
func draftID(d int) string { return fmt.Sprintf("draft-%d", d) }

// subscriptionsOf returns connection c's subscriptions. Its rooms are
// c, c+4, c+8, ... (mod 20): five distinct lists, and every list gets the
// same number of subscribers when the connections are a multiple of 20.
func subscriptionsOf(c int) []subscription {
	subs := []subscription{{namespace: nsNews, kind: sharedNamespace}}
	for k := range roomsEach {
		subs = append(subs, subscription{namespace: nsRooms, key: roomID((c + k*rooms/roomsEach) % rooms), kind: sharedList})
	}
	subs = append(subs, subscription{namespace: nsNotes, kind: privateNamespace})
	for d := range drafts {
		subs = append(subs, subscription{namespace: nsDrafts, key: draftID(d), kind: privateList})
	}
	for i := range subs {
		subs[i].id = fmt.Sprintf("s%d", i)
	}
	return subs
}

// write is one write of the run: the creation of one item.
type write struct {
	// n numbers the writes from 0, in the order they were sent.
	n int
	// writer is the connection whose caller writes it.
	writer    int
	namespace string
	// id is the item's id (a list's, for a list item); sortKey is empty
	// for a key-value item.
	id, sortKey string
}

// writeAt returns write n of a run with conns connections.
func writeAt(n, conns int) write {
	w := write{n: n, writer: n / 4 % conns}
	item := fmt.Sprintf("w%07d", n)
	switch n % 4 {
	case 0:
		w.namespace, w.id = nsNews, item
	case 1:
		w.namespace, w.id, w.sortKey = nsRooms, roomID(n/4%rooms), item
	case 2:
		w.namespace, w.id = nsNotes, item
	default:
		w.namespace, w.id, w.sortKey = nsDrafts, draftID(n/4%drafts), item
	}
	return w
}

// path is the write's POST path under the API's URL: a key-value item's,
// or a list item's (its sort key, then a slash).
func (w write) path(app string) string {
	p := "/data/" + app + "/" + w.namespace + "/" + w.id
	if w.sortKey != "" {
		p += "/" + w.sortKey + "/"
	}
	return p
}

// private says whether the write's namespace is private.
func (w write) private() bool { return w.namespace == nsNotes || w.namespace == nsDrafts }

// sees says whether subscription s of connection c is to be shown write
// w, by the protocol's rules: the same namespace, the same list when it
// names one, and in a private namespace the caller's own items only.
func (s subscription) sees(c int, w write) bool {
	return s.namespace == w.namespace && (s.key == "" || s.key == w.id) && (!w.private() || c == w.writer)
}
