package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/schema"
)

// uploadLapse is how long the workload's uploads wait for their commit:
// abandoned ones lapse, and are reclaimed, while the workers write.
const uploadLapse = 3 * time.Second

// uploadStep sends one of the worker's key-value items as a large value:
// it reserves an upload, and then abandons it, or sends the bytes (one
// in eight of another size than declared), sometimes writes the item
// while the upload is on its way, and commits, sometimes twice. The
// model follows each answer; a reservation changes nothing it knows.
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
	mismatched := w.rng.IntN(8) == 0
	if mismatched {
		// An object of another size, which the engine, as S3, refuses
		// from the form: the commit must refuse it too.
		blobtest.Put(w.t, blob.Upload{URL: up.URL, Fields: up.Fields}, "application/octet-stream", []byte(body[:size+1]))
	} else {
		blobtest.Post(w.t, blob.Upload{URL: up.URL, Fields: up.Fields}, []byte(body[:size])).Body.Close()
	}
	if w.rng.IntN(4) == 0 {
		// Replaced while uploading: the commit replaces what this write
		// leaves, whatever it is.
		contentType, value := w.anyValue()
		st, _ := w.env.sendAs(0, "PUT", path, w.owner, contentType, value, "")
		// Learnt again if the commit does not tell.
		w.leaveOpen(i, "PUT while uploading", !w.expect("PUT while uploading", st, false, 200, 403, 404))
	}
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
			if commit == 0 {
				w.env.uploads.Add(1)
			}
		}
	}
}

// checkObjects checks, once quiet, that every large value stored names an
// object the bucket holds, of the value's size: no removal of an object
// ever runs ahead of its item's. It returns how many large values there
// are.
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
