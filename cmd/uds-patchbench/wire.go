package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// itemCounts is what the patched item cost at the wire: its writes that
// committed, those refused because the item was no longer at the
// revision read (a lost race), those refused otherwise or failed, and the
// calls that read it.
type itemCounts struct {
	Committed, Raced, Failed, Reads int
}

func (c itemCounts) minus(before itemCounts) itemCounts {
	return itemCounts{Committed: c.Committed - before.Committed, Raced: c.Raced - before.Raced,
		Failed: c.Failed - before.Failed, Reads: c.Reads - before.Reads}
}

// itemCounter counts, at a proxy between the server and the DynamoDB
// engine (localbench.Proxy), the calls that name one item: by its data
// key, which appears in a call's JSON as it is (package store writes the
// item alone as an UpdateItem, or with its owner's usage in a
// TransactWriteItems).
type itemCounter struct {
	key []byte

	mu     sync.Mutex
	counts itemCounts
}

func newItemCounter(dataKey string) *itemCounter {
	// The key as a DynamoDB string value: {"S":"<key>"}.
	quoted, _ := json.Marshal(dataKey)
	return &itemCounter{key: quoted}
}

// snapshot returns the counts so far.
func (c *itemCounter) snapshot() itemCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts
}

// count adds one call to the counts when it reads or writes the item.
// The changes feed's rows name it too, written by BatchWriteItem: not
// counted.
func (c *itemCounter) count(target string, call []byte, status int, answer []byte) {
	if !bytes.Contains(call, c.key) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch target {
	case "DynamoDB_20120810.GetItem", "DynamoDB_20120810.BatchGetItem", "DynamoDB_20120810.Query":
		c.counts.Reads++
		return
	case "DynamoDB_20120810.PutItem", "DynamoDB_20120810.UpdateItem", "DynamoDB_20120810.DeleteItem", "DynamoDB_20120810.TransactWriteItems":
	default:
		return
	}
	switch {
	case status == http.StatusOK:
		c.counts.Committed++
	case raced(answer):
		c.counts.Raced++
	default:
		c.counts.Failed++
	}
}

// raced reports whether a write's error answer is a condition that
// failed: the single write's ConditionalCheckFailedException, or a
// transaction cancelled for a ConditionalCheckFailed reason (the item's;
// no limit refuses these patches). A transaction cancelled for a conflict
// alone is no lost race: the store sends it again as it was.
func raced(answer []byte) bool {
	var res struct {
		Type    string `json:"__type"`
		Reasons []struct {
			Code string
		} `json:"CancellationReasons"`
	}
	if json.Unmarshal(answer, &res) != nil {
		return false
	}
	_, kind, _ := strings.Cut(res.Type, "#")
	switch kind {
	case "ConditionalCheckFailedException":
		return true
	case "TransactionCanceledException":
		for _, r := range res.Reasons {
			if r.Code == "ConditionalCheckFailed" {
				return true
			}
		}
	}
	return false
}
