package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// uploadLapse is how long the workload's uploads wait for their commit:
// abandoned ones lapse, and are reclaimed, while the workers write.
const uploadLapse = 3 * time.Second

// uploadStep sends one of the worker's key-value items as a large value:
// it reserves an upload, and then abandons it, or sends the bytes (one
// in eight of another size than declared), sometimes writes the item
// while the upload is on its way, and commits, sometimes twice; a
// committed upload's form is sometimes posted again (formAfterCommit).
// The model follows each answer; a reservation changes nothing it knows.
func (w *worker) uploadStep(kill time.Duration, i int) {
	killed := kill > 0
	m := &w.items[i]
	path := w.itemPath(i)
	size := 10 + w.rng.IntN(500)
	reserved := time.Now()
	st, answer := w.env.send(kill, "POST", path+"?upload", w.owner, fmt.Sprintf(`{"size":%d,"contentType":"application/octet-stream"}`, size), "")
	if !w.expect("POST ?upload", st, killed, 201, 403) || st != 201 {
		return
	}
	var up struct {
		UploadID, URL string
		Fields        map[string]string
	}
	if err := json.Unmarshal([]byte(answer[:strings.LastIndexByte(answer, 0)]), &up); err != nil {
		w.t.Errorf("upload answered %s", answer)
		return
	}
	if w.rng.IntN(8) == 0 {
		return // abandoned: the reservation lapses
	}
	body := w.bytesValue()
	for len(body) <= size {
		body += body
	}
	form := blob.Upload{URL: up.URL, Fields: up.Fields}
	mismatched := w.rng.IntN(8) == 0
	if mismatched {
		// An object of another size, which the engine, as S3, refuses
		// from the form: the commit must refuse it too.
		blobtest.Put(w.t, form, "application/octet-stream", []byte(body[:size+1]))
	} else {
		blobtest.Post(w.t, form, []byte(body[:size])).Body.Close()
	}
	if w.rng.IntN(4) == 0 {
		// Replaced while uploading: the commit replaces what this write
		// leaves, whatever it is.
		contentType, value := w.anyValue()
		st, _ := w.env.sendAs(0, "PUT", path, w.owner, contentType, value, "")
		// Learnt again if the commit does not tell.
		w.leaveOpen(i, "PUT while uploading", !w.expect("PUT while uploading", st, false, 200, 403, 404))
	}
	committed := false
	for commit := range 1 + w.rng.IntN(2) {
		k := kill
		if commit > 0 {
			k = 0
		}
		st, answer := w.env.send(k, "POST", path+"?commit", w.owner, `{"uploadId":"`+up.UploadID+`"}`, "")
		allowed := []int{201, 200}
		switch {
		case mismatched && commit == 0:
			allowed = []int{422}
		case mismatched:
			allowed = []int{404}
		}
		if time.Since(reserved) > uploadLapse/2 {
			// On a loaded machine the reservation may lapse before the
			// commit: then nothing is committed.
			allowed = append(allowed, 404)
		}
		if !w.expect("POST ?commit", st, k > 0, allowed...) {
			w.leaveOpen(i, "POST ?commit", true)
			return
		}
		if st == 200 || st == 201 {
			*m = model{known: true, exists: true, etag: answer[strings.LastIndexByte(answer, 0)+1:]}
			committed = true
			if commit == 0 {
				w.env.uploads.Add(1)
			}
		}
	}
	if committed && w.rng.IntN(2) == 0 {
		w.formAfterCommit(i, form, up.UploadID, body[:size])
	}
}

// formAfterCommit posts a committed upload's form again, with other bytes
// of the same size, as a client retrying a POST whose answer it lost
// would: the item still answers the committed bytes and ETag, and the
// bucket's event for the POST removes what it sent. One time in two the
// item is then deleted and the form posted again, which leaves nothing
// either once its event has come.
func (w *worker) formAfterCommit(i int, form blob.Upload, uploadID, value string) {
	m := &w.items[i]
	path := w.itemPath(i)
	other := []byte(value)
	for j := range other {
		other[j] ^= 0xff
	}
	w.repost(form, uploadID, other)
	st, answer := w.env.send(0, "GET", path+"?inline", w.owner, "", "")
	if w.expect("GET ?inline after a POST after the commit", st, false, 200) {
		cut := strings.LastIndexByte(answer, 0)
		if answer[:cut] != value || answer[cut+1:] != m.etag {
			w.t.Errorf("worker %d: %s after a POST to its committed upload's form answers %d bytes (the committed ones: %t) with ETag %s, the commit's %s",
				w.id, path, cut, answer[:cut] == value, answer[cut+1:], m.etag)
		}
	}
	if w.rng.IntN(2) == 0 {
		return
	}
	st, _ = w.env.send(0, "DELETE", path, w.owner, "", "")
	if !w.expect("DELETE of a committed upload", st, false, 204) {
		w.leaveOpen(i, "DELETE of a committed upload", true)
		return
	}
	*m = model{known: true}
	w.repost(form, uploadID, other)
}

// repost sends body to a committed upload's form and delivers the bucket's
// event for it, as S3 would, which must remove the object: no reservation
// awaits it.
func (w *worker) repost(form blob.Upload, uploadID string, body []byte) {
	res := blobtest.Post(w.t, form, body)
	res.Body.Close()
	w.env.reposts.Add(1)
	name := uds.ObjectName(app, uploadID)
	if _, _, err := w.env.bucketEvents.CommitUpload(context.Background(), app, uploadID, nil); !errors.Is(err, uds.ErrNotFound) {
		w.t.Errorf("worker %d: the bucket's event for a POST after the commit of %s: %v", w.id, name, err)
	}
	if _, _, err := w.env.objects.Stat(context.Background(), name); !errors.Is(err, uds.ErrUploadPending) {
		w.t.Errorf("worker %d: the object posted after the commit of %s is still in the bucket: %v", w.id, name, err)
	}
}

// checkObjects checks, once quiet, that every large value stored names an
// object the bucket holds, of the value's size: no removal of an object
// ever runs ahead of its item's; and that no item is larger than the
// overshoot's bound takes one to be (maxWorkloadItemBytes). It returns how
// many large values there are.
func (e *workloadEnv) checkObjects(t *testing.T) int {
	t.Helper()
	n := 0
	for _, table := range []string{e.tables.Data, e.tables.List} {
		in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
		for {
			out, err := e.plain.Scan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range out.Items {
				if size, ok := it[schema.AttrItemSize].(*types.AttributeValueMemberN); ok && len(size.Value) > 0 {
					if n, _ := strconv.Atoi(size.Value); n > maxWorkloadItemBytes {
						t.Errorf("an item of %d bytes: the overshoot's bound takes items to be at most %d", n, maxWorkloadItemBytes)
					}
				}
				name, ok := it[schema.AttrDataObject].(*types.AttributeValueMemberS)
				if !ok {
					continue
				}
				n++
				size, _, err := e.objects.Stat(context.Background(), name.Value)
				want := it[schema.AttrObjectSize].(*types.AttributeValueMemberN).Value
				if err != nil || fmt.Sprint(size) != want {
					t.Errorf("large value %s: its object answers %d bytes, %v; the item says %s", name.Value, size, err, want)
				}
			}
			if out.LastEvaluatedKey == nil {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	return n
}
