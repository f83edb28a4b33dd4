package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// An upload's commit is a write made when it is committed, judged by the
// namespace's policy in effect then, not by the one its reservation met.

// A commit while the namespace changes into private waits, as writes do,
// so that it cannot land in the key space being left and keep the change
// from completing. Once the change completed, the upload's commit finds
// its key space gone, whether the bucket's event sends it or the uploader
// (who names the item in its new key space, where no make run has a bucket
// event): it writes nothing there and discards the upload, whose bytes go
// back to the uploader. Another caller naming that item leaves the upload
// alone.
func TestUploadCommitDuringAccessChange(t *testing.T) {
	t.Parallel()
	for _, committer := range []string{"the bucket's event", "the uploader"} {
		t.Run(committer, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			path := base + "/moving/doc"
			id := e.upload(path, 5, "text/plain", []byte("notes"), "X-Uds-Subject", "alice")
			e.do("PUT", admin+"/apps/"+app+"/namespaces/moving", `{"access": "private"}`).expect(t, http.StatusAccepted)
			r := e.commit(path, id, "X-Uds-Subject", "alice").expect(t, http.StatusServiceUnavailable)
			if r.header.Get("Retry-After") == "" {
				t.Errorf("the 503 of a commit during the change has no Retry-After: %v", r.header)
			}
			e.setPolicy(t, "moving", `{"access": "private"}`)

			if committer == "the uploader" {
				e.commit(path, id, "X-Uds-Subject", "mallory").expect(t, http.StatusNotFound)
				if used, items := e.quota(app, "alice"); used == 0 || items != 1 || e.absent(uds.ObjectName(app, id)) {
					t.Fatalf("another caller's commit discarded alice's upload: usage %d bytes %d items", used, items)
				}
				e.commit(path, id, "X-Uds-Subject", "alice").expect(t, http.StatusNotFound)
			} else {
				event := store.New(e.client, e.tables, store.WithClock(e.clock.Now), store.WithObjects(e.objects))
				if _, _, err := event.CommitUpload(context.Background(), app, id, nil); !errors.Is(err, uds.ErrNotFound) {
					t.Fatalf("the bucket event's commit after the change: %v, want not found", err)
				}
			}
			if used, items := e.quota(app, "alice"); used != 0 || items != 0 || !e.objectGone(id) {
				t.Errorf("after %s's commit: usage %d bytes %d items, object gone %v", committer, used, items, e.objectGone(id))
			}
			e.commit(path, id, "X-Uds-Subject", "alice").expect(t, http.StatusNotFound)
			e.send("GET", path, nil, "X-Uds-Subject", "alice").expect(t, http.StatusNotFound)
		})
	}
}

// An upload whose item's expiry, set when it was reserved, passed before
// its commit would make an item gone as it is made: the commit refuses it
// (400 naming expiresAt, as a write with an expiry in the past) and
// discards the upload.
func TestUploadCommitAfterItsItemsExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := base + "/ns/brief"
	r := e.do("POST", path+"?upload", `{"size": 5, "contentType": "text/plain", "ttl": 60}`, "X-Uds-Subject", "alice").expect(t, http.StatusCreated)
	blobtest.Post(t, presignedPost(r), []byte("notes")).Body.Close()
	id := r.body["uploadId"].(string)
	e.clock.Advance(61 * time.Second)
	r = e.commit(path, id, "X-Uds-Subject", "alice").expect(t, http.StatusBadRequest)
	if d, _ := r.body["details"].(string); r.body["error"] != "Invalid expiresAt" || !strings.Contains(d, "passed before its upload was committed") {
		t.Errorf("the commit answered %s, want a 400 saying the item's expiry passed", r.raw)
	}
	if used, items := e.quota(app, "alice"); used != 0 || items != 0 || !e.objectGone(id) {
		t.Errorf("after the refused commit: usage %d bytes %d items, object gone %v", used, items, e.objectGone(id))
	}
	e.commit(path, id, "X-Uds-Subject", "alice").expect(t, http.StatusNotFound)
}

// A binary rule set after the reservation refuses the commit of a value it
// does not accept, with the rule's answer, and the upload is discarded as
// an upload that does not match its declaration is.
func TestUploadCommitMeetsTodaysBinaryRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := base + "/pictures/cat"
	id := e.upload(path, 4, "image/jpeg", []byte("jpeg"), "X-Uds-Subject", "bob")
	e.do("PUT", admin+"/apps/"+app+"/namespaces/pictures", `{"access": "shared", "binary": {"contentTypes": ["image/png"]}}`).expect(t, http.StatusOK)
	e.commit(path, id, "X-Uds-Subject", "bob").expect(t, http.StatusUnprocessableEntity)
	if used, items := e.quota(app, "bob"); used != 0 || items != 0 || !e.objectGone(id) {
		t.Errorf("after the refused commit: usage %d bytes %d items, object gone %v", used, items, e.objectGone(id))
	}
	e.send("GET", path, nil).expect(t, http.StatusNotFound)
	e.commit(path, id, "X-Uds-Subject", "bob").expect(t, http.StatusNotFound)
}

// History turned on after the reservation keeps the value the commit
// replaces, as any write's replacement does then.
func TestUploadCommitKeepsTodaysHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := base + "/drafts/doc"
	e.as("carol", "POST", path, `{"data":{"n":1}}`).expect(t, http.StatusCreated)
	id := e.upload(path, 5, "text/plain", []byte("draft"), "X-Uds-Subject", "carol")
	e.setPolicy(t, "drafts", `{"access": "shared", "history": {"versions": 3}}`)
	if r := e.commit(path, id, "X-Uds-Subject", "carol").expect(t, http.StatusOK); num(t, r.body["version"]) != 2 {
		t.Fatalf("commit answered %s", r.raw)
	}
	if got := e.history(t, path); got != "2* 1" {
		t.Fatalf("history after the commit %q, want 2* 1", got)
	}
	v1 := e.do("GET", path+"?version=1", "").expect(t, http.StatusOK)
	if string(mustField(t, v1.raw, "data")) != `{"n":1}` {
		t.Errorf("version 1 reads %s", v1.raw)
	}
}
