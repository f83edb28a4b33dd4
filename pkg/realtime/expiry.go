package realtime

import (
	"container/heap"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// A session shows an item's expiry when it comes, for every item it has
// shown with one: the feed's row at the expiry was written in advance,
// and the hub leaves such rows out (Hub.Landed). When the time comes the
// item is read: gone, its tombstone is sent; still there (written again
// since, with another expiry or none), the change that did that has been
// or will be shown.

// expiry is an item a session has shown that expires at at.
type expiry struct {
	at      time.Time
	sub     *subscription
	key     uds.Key
	version int64
}

// expiryHeap orders the expiries a session watches, the soonest first.
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// arm sets the session's timer for its soonest expiry.
func (s *session) arm() {
	if len(s.expiries) == 0 {
		return
	}
	wait := s.expiries[0].at.Sub(s.hub.now())
	if s.timer == nil {
		s.timer = time.NewTimer(max(wait, 0))
		return
	}
	s.timer.Reset(max(wait, 0))
}

// expire sends the tombstones of the watched items that have expired.
func (s *session) expire() error {
	now := s.hub.now()
	var due []expiry
	for len(s.expiries) > 0 && !s.expiries[0].at.After(now) {
		x := heap.Pop(&s.expiries).(expiry)
		if s.subs[x.sub.id] == x.sub {
			due = append(due, x)
		}
	}
	defer s.arm()
	if len(due) == 0 {
		return nil
	}
	rows := make([]store.FeedRow, len(due))
	for i, x := range due {
		rows[i] = store.FeedRow{Key: x.key, Version: x.version, At: x.at}
	}
	s.renderedAt = s.hub.now()
	entries, err := s.hub.feed.Current(s.ctx, rows)
	if err != nil {
		return err
	}
	for i, x := range due {
		if !entries[i].Removed {
			continue
		}
		if err := s.send(changeMessage(x.sub.id, entries[i].JSON, x.sub.cursor)); err != nil {
			return err
		}
	}
	return nil
}
