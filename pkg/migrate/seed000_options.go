package migrate

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/uds"
)

// Migration from seed 000's tables: an apps table of app names,
// appDataJson and appDataBlob (hash key app name + user, range key the
// key, a GSI on the user) and calculatedBehavior (hash key user, range key
// the key). Every record becomes an item of a private namespace owned by
// its user: an app's data in the app's namespace, created content (the
// reserved app name "hmh") in the created-content app, calculated
// behavior in uds.BehaviorApp. Seed000 is the run; docs/decisions/migration.md
// ("Migration from seed 000's tables") gives the reasons.

// Seed000Tables names the seed's tables; an empty name is a table not
// migrated.
type Seed000Tables struct {
	Apps, JSON, Blob, Behavior string
}

// Seed000Names are the attribute names of the seed's tables. Seed 000
// names only what its keys mean, so each is configurable; the defaults
// are DefaultSeed000Names.
type Seed000Names struct {
	// App is the apps table's hash key (the app name), Description its
	// optional description.
	App, Description string
	// AppUser is the data tables' hash key (app name, Separator, user),
	// Key the range key of every data table, User the user (the hash key
	// of calculatedBehavior and of the ByUser index).
	AppUser, Key, User string
	// Value holds the value: JSON text or a native document in
	// appDataJson and calculatedBehavior, bytes in appDataBlob, whose
	// ContentType is optional.
	Value, ContentType string
	// Created and Updated are optional RFC 3339 instants.
	Created, Updated string
	// ByUser is the data tables' keys-only index on the user, which
	// discovery scans to find the apps that hold data.
	ByUser    string
	Separator string
}

// DefaultSeed000Names are the names docs/export-and-migration.md documents.
func DefaultSeed000Names() Seed000Names {
	return Seed000Names{
		App: "app", Description: "description",
		AppUser: "appUser", Key: "key", User: "user",
		Value: "value", ContentType: "contentType",
		Created: "createdDate", Updated: "updatedDate",
		ByUser: "byUser", Separator: "#",
	}
}

// Default namespaces of the three families.
const (
	DefaultAppNamespace      = "data"
	DefaultContentNamespace  = "content"
	DefaultBehaviorNamespace = "behavior"
)

// DefaultBlobType is the content type of a blob that names none.
const DefaultBlobType = "application/octet-stream"

// DefaultSeed000Date is the createdDate and updatedDate of a record whose
// source has neither: a fixed instant rather than the time of the run, so
// that every run writes the same record and a second run finds it
// identical.
var DefaultSeed000Date = time.Unix(0, 0).UTC()

// AppNameSpace is the UUID namespace of the application ids derived from
// app names (AppIDOf). It is fixed, so every run and every deployment
// derives the same id from the same name.
const AppNameSpace = "1c288d77-83d1-4b3a-8e23-7b690f63c2e5"

// AppIDOf is the application id a seed app name gets when neither the
// registry nor the -app-ids file gives one: the UUID version 5 (SHA-1,
// RFC 9562) of the exact name in AppNameSpace.
func AppIDOf(name string) string {
	return uuidV5(AppNameSpace, name)
}

func uuidV5(namespace, name string) string {
	ns, err := hex.DecodeString(namespace[0:8] + namespace[9:13] + namespace[14:18] + namespace[19:23] + namespace[24:])
	if err != nil || len(ns) != 16 {
		panic("uuidV5: bad namespace " + namespace)
	}
	h := sha1.New()
	h.Write(ns)
	h.Write([]byte(name))
	u := h.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // the RFC's variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// LoadAppIDs reads an -app-ids file: a JSON object from app name to
// application UUID.
func LoadAppIDs(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ids map[string]string
	if err := json.Unmarshal(b, &ids); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object of app names to application UUIDs: %w", path, err)
	}
	for name, id := range ids {
		app, err := uds.ParseApp(id)
		if err != nil {
			return nil, fmt.Errorf("%s: app %q: %w", path, name, err)
		}
		ids[name] = app
	}
	return ids, nil
}

// Source is what the migration reads of the seed's tables: their
// descriptions, scans, and (for a blob whose key also holds a JSON value)
// the JSON table's items by key.
type Source interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Seed000Options configure a run.
type Seed000Options struct {
	Tables Seed000Tables
	Names  Seed000Names
	// UDSApps is the deployment's own apps table. When Tables.Apps names
	// it, the records UDS keeps there (application ids, the registry's
	// name claims, rate limit buckets, release markers) are not seed apps:
	// they are ignored and counted.
	UDSApps string
	// AppNamespace holds an app's data, ContentNamespace the created
	// content (app name "hmh") and BehaviorNamespace the calculated
	// behavior, in uds.BehaviorApp.
	AppNamespace, ContentNamespace, BehaviorNamespace string
	// CreatedContentApp is the app that holds created content; empty, the
	// app the registry names "hmh", else one derived like any app's.
	CreatedContentApp string
	// AppIDs gives the ids of app names the registry does not know
	// (-app-ids); the rest are derived (AppIDOf).
	AppIDs map[string]string
	// Date is the createdDate and updatedDate of records whose source has
	// neither (DefaultSeed000Date).
	Date time.Time
	// Segments is how many parallel scan segments read each table;
	// PageItems bounds a scan page (0: DynamoDB's 1 MB).
	Segments, PageItems int
	// WriteUnits bounds the write capacity the copy consumes per second
	// (0: no limit).
	WriteUnits float64
	// Checkpoint is the file that records progress; a run resumes from it.
	Checkpoint string
	// DryRun reports what would change and changes nothing.
	DryRun bool
	// Progress receives the progress: a line per page and per step, or,
	// when Live (a terminal), one line rewritten in place.
	Progress io.Writer
	Live     bool
	// Skipped receives a line per record skipped, per conflict and per
	// app name refused: the table, the source key and the reason.
	Skipped io.Writer
}
