package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob/blobtest"
)

// An expired large value that its owner's next write reclaims, to make
// room under the owner's limit, leaves the bucket with its item: the
// owner index through which the write finds it does not name the object,
// so the reclaim reads the item again before removing it.
func TestReclaimRemovesLargeValueObjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("PUT", admin+"/apps/"+app+"/users/zed/quota", `{"limitItems": 1}`).expect(t, http.StatusOK)
	r := e.do("POST", base+"/clips/first?upload", `{"size": 4, "contentType": "video/mp4", "ttl": 60}`, "X-Uds-Subject", "zed").expect(t, http.StatusCreated)
	blobtest.Post(t, presignedPost(r), []byte("four")).Body.Close()
	first := r.body["uploadId"].(string)
	e.commit(base+"/clips/first", first, "X-Uds-Subject", "zed").expect(t, http.StatusCreated)
	e.clock.Advance(61 * time.Second)
	e.do("POST", base+"/clips/second?upload", `{"size": 4, "contentType": "video/mp4"}`, "X-Uds-Subject", "zed").expect(t, http.StatusCreated)
	if !e.objectGone(first) {
		t.Error("the reclaimed value's object is still in the bucket")
	}
	if used, items := e.quota(app, "zed"); items != 1 || used <= 0 {
		t.Errorf("usage %d bytes %d items, want the second upload's reservation alone", used, items)
	}
}
