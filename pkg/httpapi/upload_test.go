package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// upload reserves an upload of the item at path and sends body to it,
// declared as size bytes of contentType; it returns the upload's ID.
func (e *env) upload(path string, size int, contentType string, body []byte, headers ...string) string {
	e.t.Helper()
	r := e.do("POST", path+"?upload", `{"size": `+strconv.Itoa(size)+`, "contentType": "`+contentType+`"}`, headers...).expect(e.t, http.StatusCreated)
	up := presignedPost(r)
	if !strings.HasSuffix(r.body["commit"].(string), "?commit") || r.body["lapsesAt"] == nil {
		e.t.Fatalf("upload answer %s", r.raw)
	}
	res := blobtest.Post(e.t, up, body)
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		e.t.Fatalf("the S3 POST answered %d", res.StatusCode)
	}
	return r.body["uploadId"].(string)
}

// presignedPost is the S3 POST an upload's answer names.
func presignedPost(r response) blob.Upload {
	up := blob.Upload{URL: r.body["url"].(string), Fields: map[string]string{}}
	for k, v := range r.body["fields"].(map[string]any) {
		up.Fields[k] = v.(string)
	}
	return up
}

func (e *env) commit(path, id string, headers ...string) response {
	e.t.Helper()
	return e.do("POST", path+"?commit", `{"uploadId": "`+id+`"}`, headers...)
}

// objectGone reports whether the bucket no longer holds an upload's
// object, nor the copy its commit made.
func (e *env) objectGone(id string) bool {
	return e.absent(uds.ObjectName(app, id)) && e.absent(uds.ValueName(app, id))
}

// absent reports whether the bucket holds no object of that name.
func (e *env) absent(name string) bool {
	_, _, err := e.objects.Stat(context.Background(), name)
	return errors.Is(err, uds.ErrUploadPending)
}

// followed is what a GET of a large value answers, following its redirect,
// with the ETag of the API's answer.
func (e *env) followed(t *testing.T, path string) (body []byte, etag string) {
	t.Helper()
	r := e.send("GET", path, nil).expect(t, http.StatusFound)
	res, err := testClient.Get(r.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err = io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the redirect answered %d, %v", res.StatusCode, err)
	}
	return body, r.header.Get("ETag")
}

// repost sends body to the upload's form again, as a client retrying a
// POST whose answer it lost would; the engine takes it (the form is
// still valid).
func repost(t *testing.T, post blob.Upload, body []byte) {
	t.Helper()
	res := blobtest.Post(t, post, body)
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("the S3 POST answered %d", res.StatusCode)
	}
}

func TestLargeValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := base + "/videos/intro"
	video := bytes.Repeat([]byte("\x00\x01frame"), 100_000) // 700 kB: past what one request stores
	size := len(video)
	id := e.upload(path, size, "video/mp4", video, "X-Uds-Subject", "alice")
	itemBytes := int64(len(app) + len("|videos|intro") + size + len("video/mp4") + 100)

	t.Run("the reservation counts in the quota before the commit", func(t *testing.T) {
		if used, items := e.quota(app, "alice"); used != itemBytes || items != 1 {
			t.Fatalf("usage %d bytes %d items, want %d and 1", used, items, itemBytes)
		}
		e.do("GET", path, "").expect(t, http.StatusNotFound)
	})
	var etag string
	t.Run("the commit makes the item", func(t *testing.T) {
		r := e.commit(path, id, "X-Uds-Subject", "alice").expect(t, http.StatusCreated)
		if r.body["large"] != true || num(t, r.body["size"]) != int64(size) || r.body["contentType"] != "video/mp4" || num(t, r.body["version"]) != 1 {
			t.Fatalf("commit answered %s", r.raw)
		}
		etag = r.header.Get("ETag")
		again := e.commit(path, id).expect(t, http.StatusOK)
		if again.header.Get("ETag") != etag {
			t.Fatalf("a second commit answered ETag %s, the first %s", again.header.Get("ETag"), etag)
		}
		if used, items := e.quota(app, "alice"); used != itemBytes || items != 1 {
			t.Fatalf("usage %d bytes %d items after the commit, want %d and 1", used, items, itemBytes)
		}
	})
	t.Run("get redirects to the bucket", func(t *testing.T) {
		for _, method := range []string{"GET", "HEAD"} {
			r := e.send(method, path, nil).expect(t, http.StatusFound)
			if r.header.Get("ETag") != etag || r.header.Get("Uds-Version") != "1" || r.header.Get("Uds-Created-By-Subject") != "alice" ||
				r.header.Get("Uds-Content-Type") != "video/mp4" || r.header.Get("Uds-Size") != strconv.Itoa(size) {
				t.Fatalf("%s headers %v", method, r.header)
			}
			if method == "HEAD" {
				continue
			}
			if got, _ := e.followed(t, path); !bytes.Equal(got, video) {
				t.Fatalf("the redirect answered %d bytes", len(got))
			}
		}
	})
	t.Run("inline streams it with ranges", func(t *testing.T) {
		r := e.send("GET", path+"?inline", nil, "Range", "bytes=0-6").expect(t, http.StatusPartialContent)
		if !bytes.Equal(r.raw, video[:7]) || r.header.Get("Content-Type") != "video/mp4" {
			t.Fatalf("inline range %q %v", r.raw, r.header)
		}
	})
	t.Run("list pages show it as large", func(t *testing.T) {
		e.send("POST", base+"/videos/clips/a", nil, "Content-Type", "video/mp4").expect(t, http.StatusCreated)
		clip := e.upload(base+"/videos/clips/b", size, "video/mp4", video)
		e.commit(base+"/videos/clips/b", clip).expect(t, http.StatusCreated)
		page := e.do("GET", base+"/videos/clips/list", "").expect(t, http.StatusOK)
		b := page.body["list"].([]any)[1].(map[string]any)
		if b["large"] != true || b["dataBase64"] != nil || num(t, b["size"]) != int64(size) {
			t.Fatalf("page %s", page.raw)
		}
		e.do("DELETE", base+"/videos/clips/list", "").expect(t, http.StatusNoContent)
		if !e.objectGone(clip) {
			t.Fatal("delete-all left the large value's object")
		}
	})
	t.Run("a new upload replaces the value and its object", func(t *testing.T) {
		next := e.upload(path, 3, "video/mp4", []byte("new"), "X-Uds-Subject", "alice")
		r := e.commit(path, next).expect(t, http.StatusOK)
		if num(t, r.body["version"]) != 2 || num(t, r.body["size"]) != 3 {
			t.Fatalf("replacing commit answered %s", r.raw)
		}
		if !e.objectGone(id) {
			t.Fatal("the replaced value's object is still in the bucket")
		}
		e.commit(path, id).expect(t, http.StatusNotFound)
		id = next
	})
	t.Run("a small value replaces it and its object", func(t *testing.T) {
		e.send("PUT", path, []byte("tiny"), "Content-Type", "video/mp4").expect(t, http.StatusOK)
		if !e.objectGone(id) {
			t.Fatal("the replaced value's object is still in the bucket")
		}
		e.do("DELETE", path, "").expect(t, http.StatusNoContent)
		if used, items := e.quota(app, "alice"); used != 0 || items != 0 {
			t.Fatalf("usage %d bytes %d items after the delete", used, items)
		}
	})
	t.Run("an expired value's object goes when the item is reclaimed", func(t *testing.T) {
		r := e.do("POST", base+"/videos/short?upload", `{"size": 4, "contentType": "video/mp4", "ttl": 60}`).expect(t, http.StatusCreated)
		blobtest.Post(t, presignedPost(r), []byte("four")).Body.Close()
		id := r.body["uploadId"].(string)
		c := e.commit(base+"/videos/short", id).expect(t, http.StatusCreated)
		if c.body["expiresAt"] == nil {
			t.Fatalf("commit answered %s, without the upload's expiry", c.raw)
		}
		e.clock.Advance(61 * time.Second)
		e.send("GET", base+"/videos/short", nil).expect(t, http.StatusNotFound)
		e.send("POST", base+"/videos/short", []byte("next"), "Content-Type", "video/mp4").expect(t, http.StatusCreated)
		if !e.objectGone(id) {
			t.Fatal("the expired value's object is still in the bucket")
		}
	})
	t.Run("a delete removes the object", func(t *testing.T) {
		id := e.upload(path, 4, "video/mp4", []byte("four"))
		e.commit(path, id).expect(t, http.StatusCreated)
		e.do("DELETE", path, "").expect(t, http.StatusNoContent)
		if !e.objectGone(id) {
			t.Fatal("the deleted value's object is still in the bucket")
		}
	})
}

func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := base + "/docs/report"
	// The engine, as S3, refuses a form of another size or type: these
	// objects arrive as a holder of the bucket's credentials may put them.
	t.Run("an object of another size is discarded", func(t *testing.T) {
		reserved := e.do("POST", path+"?upload", `{"size": 10, "contentType": "application/pdf"}`, "X-Uds-Subject", "bob").expect(t, http.StatusCreated)
		blobtest.Put(t, presignedPost(reserved), "application/pdf", []byte("twelve bytes"))
		id := reserved.body["uploadId"].(string)
		r := e.commit(path, id).expect(t, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.raw), "12 bytes") {
			t.Fatalf("mismatch answered %s", r.raw)
		}
		if used, items := e.quota(app, "bob"); used != 0 || items != 0 || !e.objectGone(id) {
			t.Fatalf("after a mismatch: usage %d bytes %d items, object gone %v", used, items, e.objectGone(id))
		}
		e.commit(path, id).expect(t, http.StatusNotFound)
	})
	t.Run("an object of another type is discarded", func(t *testing.T) {
		r := e.do("POST", path+"?upload", `{"size": 3, "contentType": "application/pdf"}`).expect(t, http.StatusCreated)
		blobtest.Put(t, presignedPost(r), "text/html", []byte("<p>"))
		e.commit(path, r.body["uploadId"].(string)).expect(t, http.StatusUnprocessableEntity)
	})
	t.Run("a commit before the object arrived", func(t *testing.T) {
		r := e.do("POST", path+"?upload", `{"size": 3, "contentType": "application/pdf"}`).expect(t, http.StatusCreated)
		e.commit(path, r.body["uploadId"].(string)).expect(t, http.StatusConflict)
		e.commit(base+"/docs/other", r.body["uploadId"].(string)).expect(t, http.StatusNotFound)
	})
	t.Run("a lapsed upload gives its bytes back", func(t *testing.T) {
		id := e.upload(base+"/docs/late", 3, "application/pdf", []byte("pdf"), "X-Uds-Subject", "carol")
		e.clock.Advance(uds.UploadWindow + uds.UploadGrace + time.Second)
		e.commit(base+"/docs/late", id).expect(t, http.StatusNotFound)
		if used, items := e.quota(app, "carol"); used != 0 || items != 0 || !e.objectGone(id) {
			t.Fatalf("after the lapse: usage %d bytes %d items, object gone %v", used, items, e.objectGone(id))
		}
	})
	t.Run("the quota refuses a reservation that does not fit", func(t *testing.T) {
		e.do("PUT", admin+"/apps/"+app+"/users/dave/quota", `{"limitBytes": 1000}`).expect(t, http.StatusOK)
		e.do("POST", path+"?upload", `{"size": 5000, "contentType": "application/pdf"}`, "X-Uds-Subject", "dave").expect(t, http.StatusForbidden)
	})
	e.do("PUT", admin+"/apps/"+app+"/namespaces/kept", `{"access": "shared", "history": {"versions": 3}}`).expect(t, http.StatusOK)
	e.do("PUT", admin+"/apps/"+app+"/namespaces/typed", `{"access": "shared", "schema": {"type": "object"}}`).expect(t, http.StatusOK)
	cases := []struct {
		name, path, body string
		status           int
		inBody           string
	}{
		{"a namespace with history", "/kept/x", `{"size": 3, "contentType": "a/b"}`, http.StatusBadRequest, "keeps history"},
		{"a namespace with a schema", "/typed/x", `{"size": 3, "contentType": "a/b"}`, http.StatusUnprocessableEntity, "JSON only"},
		{"no size", "/docs/x", `{"contentType": "a/b"}`, http.StatusBadRequest, "Invalid size"},
		{"a size past 5 GB", "/docs/x", `{"size": 5368709121, "contentType": "a/b"}`, http.StatusBadRequest, "Invalid size"},
		{"a size of minus zero", "/docs/x", `{"size": -0, "contentType": "a/b"}`, http.StatusBadRequest, "written without a sign, got -0"},
		{"a JSON type", "/docs/x", `{"size": 3, "contentType": "application/json"}`, http.StatusBadRequest, "Invalid contentType"},
		{"an unknown member", "/docs/x", `{"size": 3, "contentType": "a/b", "name": "x"}`, http.StatusBadRequest, "name"},
		{"upload and commit at once", "/docs/x?commit", `{"size": 3, "contentType": "a/b"}`, http.StatusBadRequest, "more than one"},
	}
	for _, tc := range cases {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			r := e.do("POST", base+tc.path+"?upload", tc.body)
			if strings.Contains(tc.path, "?") {
				r = e.do("POST", base+tc.path+"&upload", tc.body)
			}
			r.expect(t, tc.status)
			if !strings.Contains(string(r.raw), tc.inBody) {
				t.Fatalf("body %s does not say %q", r.raw, tc.inBody)
			}
		})
	}
	t.Run("the bytes sent in place of the declaration", func(t *testing.T) {
		r := e.send("POST", path+"?upload", []byte("\x89PNG\r\n"), "Content-Type", "video/mp4").expect(t, http.StatusBadRequest)
		if raw := string(r.raw); !strings.Contains(raw, `"error":"Invalid Content-Type"`) || !strings.Contains(raw, "the bytes go to the form") {
			t.Errorf("the file posted to ?upload: %s", r.raw)
		}
	})
	t.Run("a commit names an upload", func(t *testing.T) {
		for body, says := range map[string]string{`{}`: "is required", `{"uploadId": "x"}`: "32 lower-case hexadecimal digits",
			`{"uploadId": "0123456789ABCDEF0123456789ABCDEF"}`: "32 lower-case hexadecimal digits"} {
			if r := e.do("POST", path+"?commit", body).expect(t, http.StatusBadRequest); !strings.Contains(fmt.Sprint(r.body["details"]), says) {
				t.Errorf("commit %s: %s, want it to say %q", body, r.raw, says)
			}
		}
		e.do("POST", path+"?commit", `{"uploadId": "0123456789abcdef0123456789abcdef"}`).expect(t, http.StatusNotFound)
	})
}

// TestUploadCommittedByTheBucketEvent commits as the expiry function does
// on the bucket's event, racing the client's commit: the item is committed
// once, whoever comes first.
func TestUploadCommittedByTheBucketEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := store.New(e.client, e.tables, store.WithClock(e.clock.Now), store.WithObjects(e.objects))
	for i := range 4 {
		path := base + "/photos/p" + strconv.Itoa(i)
		id := e.upload(path, 5, "image/png", []byte("pixel"), "X-Uds-Subject", "erin")
		done := make(chan error, 1)
		go func() {
			_, _, err := st.CommitUpload(context.Background(), app, id, nil)
			done <- err
		}()
		r := e.commit(path, id)
		if r.status != http.StatusCreated && r.status != http.StatusOK {
			t.Fatalf("client commit answered %d %s", r.status, r.raw)
		}
		if err := <-done; err != nil && !errors.Is(err, uds.ErrNotFound) {
			t.Fatalf("event commit: %v", err)
		}
		g := e.send("GET", path+"?inline", nil).expect(t, http.StatusOK)
		if string(g.raw) != "pixel" || g.header.Get("Uds-Version") != "1" {
			t.Fatalf("item after two commits: %q version %s", g.raw, g.header.Get("Uds-Version"))
		}
	}
	r := e.do("POST", admin+"/apps/"+app+"/users/erin/quota/recompute", "").expect(t, http.StatusOK)
	drift := r.body["drift"].(map[string]any)
	if num(t, drift["bytes"]) != 0 || num(t, drift["items"]) != 0 {
		t.Fatalf("drift after racing commits: %s", r.raw)
	}
}

func TestUploadAccessModes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("PUT", admin+"/apps/"+app+"/namespaces/owned", `{"access": "owner-write"}`).expect(t, http.StatusOK)
	e.setPolicy(t, "mine", `{"access": "private"}`)
	t.Run("owner-write: only the creator uploads over an item", func(t *testing.T) {
		path := base + "/owned/doc"
		e.send("POST", path, []byte("v1"), "Content-Type", "text/plain", "X-Uds-Subject", "alice").expect(t, http.StatusCreated)
		e.do("POST", path+"?upload", `{"size": 2, "contentType": "text/plain"}`, "X-Uds-Subject", "bob").expect(t, http.StatusForbidden)
		id := e.upload(path, 2, "text/plain", []byte("v2"), "X-Uds-Subject", "alice")
		if r := e.commit(path, id, "X-Uds-Subject", "alice").expect(t, http.StatusOK); num(t, r.body["version"]) != 2 {
			t.Fatalf("commit answered %s", r.raw)
		}
	})
	t.Run("private: the upload lands in the uploader's key space", func(t *testing.T) {
		path := base + "/mine/notes"
		id := e.upload(path, 5, "text/plain", []byte("notes"), "X-Uds-Subject", "carol")
		e.commit(path, id, "X-Uds-Subject", "dave").expect(t, http.StatusNotFound)
		e.commit(path, id, "X-Uds-Subject", "carol").expect(t, http.StatusCreated)
		e.send("GET", path, nil, "X-Uds-Subject", "dave").expect(t, http.StatusNotFound)
		e.send("GET", path, nil, "X-Uds-Subject", "carol").expect(t, http.StatusFound)
	})
}

// TestUploadFormAfterCommit posts an upload's form again after its commit,
// with other bytes of the same size and type, as the client's retry of a
// POST whose answer it lost would: the form is valid for its whole window,
// but the committed value is a copy no form names. Nothing it sends is
// served or counted, and the bucket's event for it removes it.
func TestUploadFormAfterCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// event commits as the expiry function does on the bucket's event
	// for an upload's object.
	st := store.New(e.client, e.tables, store.WithClock(e.clock.Now), store.WithObjects(e.objects))
	event := func(t *testing.T, id string) {
		t.Helper()
		if _, _, err := st.CommitUpload(context.Background(), app, id, nil); !errors.Is(err, uds.ErrNotFound) {
			t.Fatalf("the event's commit of an upload no reservation awaits: %v", err)
		}
	}
	path := base + "/photos/form"
	r := e.do("POST", path+"?upload", `{"size": 9, "contentType": "image/png"}`, "X-Uds-Subject", "alice").expect(t, http.StatusCreated)
	post, id := presignedPost(r), r.body["uploadId"].(string)
	repost(t, post, []byte("committed"))
	etag := e.commit(path, id).expect(t, http.StatusCreated).header.Get("ETag")
	used, items := e.quota(app, "alice")

	// answers checks that the item still answers the committed bytes and
	// ETag, redirected and inline, and that usage has not moved.
	answers := func(t *testing.T) {
		t.Helper()
		if got, tag := e.followed(t, path); string(got) != "committed" || tag != etag {
			t.Fatalf("GET answered %q with ETag %s, want the committed bytes with %s", got, tag, etag)
		}
		in := e.send("GET", path+"?inline", nil).expect(t, http.StatusOK)
		if string(in.raw) != "committed" || in.header.Get("ETag") != etag {
			t.Fatalf("GET ?inline answered %q with ETag %s, want the committed bytes with %s", in.raw, in.header.Get("ETag"), etag)
		}
		if u, n := e.quota(app, "alice"); u != used || n != items {
			t.Fatalf("usage %d bytes %d items, want %d and %d as committed", u, n, used, items)
		}
	}
	t.Run("the commit leaves nothing at the form's key", func(t *testing.T) {
		if !e.absent(uds.ObjectName(app, id)) {
			t.Fatal("the upload's object is still at the key its form names")
		}
		answers(t)
	})
	t.Run("a POST after the commit changes nothing", func(t *testing.T) {
		repost(t, post, []byte("rewritten"))
		answers(t)
		e.commit(path, id).expect(t, http.StatusOK)
		answers(t)
	})
	t.Run("the bucket's event for it removes it", func(t *testing.T) {
		event(t, id)
		if !e.absent(uds.ObjectName(app, id)) {
			t.Fatal("the object posted after the commit is still in the bucket")
		}
		answers(t)
	})
	t.Run("a POST after the delete is served and counted nowhere, and removed", func(t *testing.T) {
		e.do("DELETE", path, "").expect(t, http.StatusNoContent)
		if !e.objectGone(id) {
			t.Fatal("the deleted value's object is still in the bucket")
		}
		repost(t, post, []byte("afterward"))
		e.send("GET", path, nil).expect(t, http.StatusNotFound)
		e.commit(path, id).expect(t, http.StatusNotFound)
		if u, n := e.quota(app, "alice"); u != 0 || n != 0 {
			t.Fatalf("usage %d bytes %d items after the delete", u, n)
		}
		event(t, id)
		if !e.objectGone(id) {
			t.Fatal("the object posted after the delete is still in the bucket")
		}
	})
}

// TestUploadCommittedInPlace reads, commits again and deletes an item
// committed before commits copied values, whose item names its upload's
// object where the form sent it.
func TestUploadCommittedInPlace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	path := base + "/photos/old"
	id := e.upload(path, 3, "image/png", []byte("old"))
	e.commit(path, id).expect(t, http.StatusCreated)
	upload, value := uds.ObjectName(app, id), uds.ValueName(app, id)
	// Made as such an item was: its object at the upload's key, named so
	// by the item.
	if err := e.objects.Copy(ctx, value, upload); err != nil {
		t.Fatal(err)
	}
	if err := e.objects.Remove(ctx, value); err != nil {
		t.Fatal(err)
	}
	key, err := uds.NewKey(app, "photos", "old")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.tables.Data),
		Key:                       map[string]types.AttributeValue{schema.AttrDataKey: &types.AttributeValueMemberS{Value: key.DataKey()}},
		UpdateExpression:          aws.String("SET #o = :o"),
		ExpressionAttributeNames:  map[string]string{"#o": schema.AttrDataObject},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberS{Value: upload}},
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.followed(t, path); string(got) != "old" {
		t.Fatalf("GET answered %q", got)
	}
	if in := e.send("GET", path+"?inline", nil).expect(t, http.StatusOK); string(in.raw) != "old" {
		t.Fatalf("GET ?inline answered %q", in.raw)
	}
	e.commit(path, id).expect(t, http.StatusOK)
	e.do("DELETE", path, "").expect(t, http.StatusNoContent)
	if !e.absent(upload) {
		t.Fatal("the deleted value's object is still in the bucket")
	}
}

// TestNotModifiedLargeValueRedirects: a 304 to a GET of a large value
// that names its ETag carries a fresh presigned Location and the 302's
// Cache-Control, so that a cache revalidating the 302 it keeps takes the
// new URL and its lifetime rather than serving the expired one again.
// Before, the 304 had neither.
func TestNotModifiedLargeValueRedirects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := base + "/videos/cached"
	body := bytes.Repeat([]byte("v"), 1000)
	id := e.upload(path, len(body), "video/mp4", body)
	e.commit(path, id).expect(t, http.StatusCreated)
	found := e.send("GET", path, nil).expect(t, http.StatusFound)
	again := e.send("GET", path, nil, "If-None-Match", found.header.Get("ETag")).expect(t, http.StatusNotModified)
	if again.header.Get("Location") == "" {
		t.Errorf("the 304 has no Location")
	}
	if cc := again.header.Get("Cache-Control"); cc != found.header.Get("Cache-Control") {
		t.Errorf("the 304's Cache-Control %q, the 302's %q", cc, found.header.Get("Cache-Control"))
	}
	res, err := testClient.Get(again.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		t.Errorf("the 304's URL answered %d, %d bytes", res.StatusCode, len(got))
	}
}
