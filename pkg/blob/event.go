package blob

import (
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// CreatedUploads are the upload IDs of the objects that an S3 event
// notification says were created in bucket, in the order of its records,
// each once. Every other record is ignored: another event (a removal, a
// restore), another bucket (a notification wired to the wrong function),
// and keys that are not uploads' (written by hand, or under another
// prefix). An event is outside input, so nothing in it is trusted beyond
// what it is checked to be.
func CreatedUploads(ev events.S3Event, bucket string) []string {
	var ids []string
	seen := make(map[string]bool)
	for _, r := range ev.Records {
		if r.EventSource != "aws:s3" || !strings.HasPrefix(r.EventName, "ObjectCreated:") || r.S3.Bucket.Name != bucket {
			continue
		}
		// S3 writes the key form-encoded (a space is "+"). Decoding it
		// here rather than taking URLDecodedKey holds for records made
		// in code as well as for those read from JSON.
		key, err := url.QueryUnescape(r.S3.Object.Key)
		if err != nil {
			continue
		}
		if id, ok := ParseUploadKey(key); ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}
