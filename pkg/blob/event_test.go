package blob_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/uds"
)

const eventBucket = "uds-values"

// Object names of uploads, as UDS makes them (uds.ObjectName).
const (
	idA = "d53065bd-f932-4841-83fb-849717d8df0f/0123456789abcdef0123456789abcdef"
	idB = "app-2/fedcba9876543210fedcba9876543210"
)

// s3Record is one record of an S3 event notification as S3 writes it
// (the example of the S3 user guide, with the fields UDS reads set).
func s3Record(name, bucket, key string) string {
	r, _ := json.Marshal(map[string]any{
		"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "eu-west-1",
		"eventTime": "2025-05-01T12:00:00.000Z", "eventName": name,
		"userIdentity":      map[string]string{"principalId": "AWS:AIDAEXAMPLE"},
		"requestParameters": map[string]string{"sourceIPAddress": "203.0.113.5"},
		"responseElements":  map[string]string{"x-amz-request-id": "C3D13FE58DE4C810"},
		"s3": map[string]any{
			"s3SchemaVersion": "1.0", "configurationId": "uploads",
			"bucket": map[string]any{"name": bucket, "arn": "arn:aws:s3:::" + bucket},
			"object": map[string]any{"key": key, "size": 1024, "eTag": "d41d8cd98f00b204e9800998ecf8427e", "sequencer": "0055AED6DCD90281E5"},
		},
	})
	return string(r)
}

func s3Event(records ...string) string {
	return `{"Records":[` + strings.Join(records, ",") + `]}`
}

var eventCases = []struct {
	name, event string
	want        []string
}{
	{name: "a POST upload", event: s3Event(s3Record("ObjectCreated:Post", eventBucket, "uploads/"+idA)), want: []string{idA}},
	{name: "a PUT and a multipart upload, in order", event: s3Event(
		s3Record("ObjectCreated:Put", eventBucket, "uploads/"+idB),
		s3Record("ObjectCreated:CompleteMultipartUpload", eventBucket, "uploads/"+idA)), want: []string{idB, idA}},
	{name: "one upload twice", event: s3Event(
		s3Record("ObjectCreated:Post", eventBucket, "uploads/"+idA),
		s3Record("ObjectCreated:Post", eventBucket, "uploads/"+idA)), want: []string{idA}},
	{name: "a key written encoded", event: s3Event(s3Record("ObjectCreated:Post", eventBucket, "uploads%2F"+idA)), want: []string{idA}},
	{name: "a removal", event: s3Event(s3Record("ObjectRemoved:Delete", eventBucket, "uploads/"+idA))},
	{name: "a lifecycle expiry", event: s3Event(s3Record("LifecycleExpiration:Delete", eventBucket, "uploads/"+idA))},
	{name: "another bucket", event: s3Event(s3Record("ObjectCreated:Post", "someone-else", "uploads/"+idA))},
	{name: "another prefix", event: s3Event(s3Record("ObjectCreated:Put", eventBucket, "exports/"+idA))},
	{name: "under uploads/ but not an upload ID", event: s3Event(
		s3Record("ObjectCreated:Put", eventBucket, "uploads/cat+picture.png"),
		s3Record("ObjectCreated:Put", eventBucket, "uploads/"+idA+"/more"),
		s3Record("ObjectCreated:Put", eventBucket, "uploads/"),
		s3Record("ObjectCreated:Put", eventBucket, "uploads/"+idA[:21]+"B"))},
	{name: "among records to ignore", event: s3Event(
		s3Record("ObjectRemoved:Delete", eventBucket, "uploads/"+idB),
		s3Record("ObjectCreated:Post", eventBucket, "uploads/"+idA)), want: []string{idA}},
	{name: "not from S3", event: strings.Replace(s3Event(s3Record("ObjectCreated:Post", eventBucket, "uploads/"+idA)), `"aws:s3"`, `"aws:sqs"`, 1)},
	{name: "the test event S3 sends when notifications are set up",
		event: `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2025-05-01T12:00:00.000Z","Bucket":"uds-values","RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}`},
	{name: "no records", event: `{"Records":[]}`},
}

func TestCreatedUploads(t *testing.T) {
	for _, tc := range eventCases {
		t.Run(tc.name, func(t *testing.T) {
			var ev events.S3Event
			if err := json.Unmarshal([]byte(tc.event), &ev); err != nil {
				t.Fatal(err)
			}
			if got := blob.CreatedUploads(ev, eventBucket); !slices.Equal(got, tc.want) {
				t.Errorf("uploads %q, want %q", got, tc.want)
			}
		})
	}
	// A key S3 could not have encoded is skipped, not a failure of the
	// event (a record made in code: from JSON, the SDK's own decoding
	// refuses the whole event).
	ev := events.S3Event{Records: []events.S3EventRecord{{EventSource: "aws:s3", EventName: "ObjectCreated:Post",
		S3: events.S3Entity{Bucket: events.S3Bucket{Name: eventBucket}, Object: events.S3Object{Key: "uploads/%zz"}}}}}
	if got := blob.CreatedUploads(ev, eventBucket); got != nil {
		t.Errorf("a malformed key: uploads %q", got)
	}
}

func TestUploadKeys(t *testing.T) {
	for i := range 100 {
		id := newName()
		if back, ok := blob.ParseUploadKey(blob.UploadKey(id)); !ok || back != id {
			t.Fatalf("name %d: %q parses back as %q, %v", i, id, back, ok)
		}
	}
	for _, tc := range []struct{ name, key string }{
		{"no prefix", idA},
		{"another prefix", "exports/" + idA},
		{"empty", "uploads/"},
		{"an upload ID too short", "uploads/" + idA[:len(idA)-1]},
		{"an upload ID too long", "uploads/" + idA + "0"},
		{"upper-case hex", "uploads/app/0123456789ABCDEF0123456789abcdef"},
		{"no app", "uploads//0123456789abcdef0123456789abcdef"},
		{"no upload ID", "uploads/app/"},
		{"a path", "uploads/../" + idA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if id, ok := blob.ParseUploadKey(tc.key); ok {
				t.Errorf("parsed as upload %q", id)
			}
		})
	}
}

// FuzzCreatedUploads reads any JSON as an S3 event notification: every
// upload ID found is one a created object's record in the bucket names,
// under uploads/, an object name UDS makes, and found once; and every such
// record is found.
func FuzzCreatedUploads(f *testing.F) {
	for _, tc := range eventCases {
		f.Add([]byte(tc.event))
	}
	f.Add([]byte(`{"Records":[{"eventSource":"aws:s3","eventName":"ObjectCreated:","s3":{"bucket":{"name":"uds-values"},"object":{"key":"uploads%2f` + idA + `"}}}]}`))
	f.Add([]byte(`{"Records":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev events.S3Event
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		got := blob.CreatedUploads(ev, eventBucket)
		want := make(map[string]bool)
		for _, r := range ev.Records {
			key, err := url.QueryUnescape(r.S3.Object.Key)
			id, isUpload := strings.CutPrefix(key, "uploads/")
			_, _, valid := uds.ParseObjectName(id)
			if err == nil && isUpload && valid && r.EventSource == "aws:s3" &&
				strings.HasPrefix(r.EventName, "ObjectCreated:") && r.S3.Bucket.Name == eventBucket {
				want[id] = true
			}
		}
		if len(got) != len(want) {
			t.Fatalf("uploads %q, want those of %v", got, want)
		}
		for _, id := range got {
			if !want[id] {
				t.Fatalf("upload %q among %q: not one a created object's record names", id, got)
			}
			delete(want, id) // a second time would now fail
		}
	})
}
