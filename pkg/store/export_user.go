package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// ExportUser reads everything one person owns in every app, app by app in
// app order: in each app, what an app's export gives of that owner (items,
// list items, kept versions and delete markers). The apps are those of the
// user's usage records, one query of the user's partition of the usage
// table, which also holds what the export says beside the records: the
// user's usage in each app and the limits and rate set for them there.

// UserExportPosition is where a user's export page ended: the app, and the
// place among the user's records there. The zero position is the start.
type UserExportPosition struct {
	App string `json:"a,omitempty"`
	ExportPosition
}

// UserExportQuery selects one page of a user's records.
type UserExportQuery struct {
	User  string
	After UserExportPosition
	// Limit, MaxBytes, RecordBytes and Deadline bound the page as they
	// bound an app's export page (ExportQuery); the deadline ends the
	// page at the next app.
	Limit       int
	MaxBytes    int
	RecordBytes func(*uds.Record) int
	Deadline    time.Time
}

// UserExportPage is one page of a user's export: the apps the page begins
// (each with what the user's usage record there holds) and the records,
// in app order; Next is nil on the last page.
type UserExportPage struct {
	Apps    []UserAppState
	Records []uds.Record
	Next    *UserExportPosition
}

// UserAppState is what a user's usage record in one app holds: the usage
// and the overrides an operator set for them (zero where none is).
type UserAppState struct {
	App    string
	Usage  uds.Usage
	Limits uds.Limits
	Rate   uds.Rate
}

// userExportAppsPerRead is how many of the user's apps one read of the
// usage table brings; a person has data in few.
const userExportAppsPerRead = 100

// ExportUser reads one page of the user's records after q.After.
func (s *Store) ExportUser(ctx context.Context, q UserExportQuery) (UserExportPage, error) {
	var out UserExportPage
	bytes := 0
	// inApp adds the user's records in app from pos on, to the page, and
	// reports whether the page is full.
	inApp := func(app string, pos ExportPosition) (bool, error) {
		pager := exportPager{s: s, q: ExportQuery{App: app, Limit: q.Limit, MaxBytes: q.MaxBytes, RecordBytes: q.RecordBytes, History: true},
			records: out.Records, bytes: bytes}
		err := pager.owner(ctx, pos)
		out.Records, bytes = pager.records, pager.bytes
		if pager.full {
			out.Next = &UserExportPosition{App: app, ExportPosition: pager.last}
		}
		return pager.full, err
	}
	after := q.After.App
	if after != "" && !q.After.Done {
		// Finish the app the previous page stopped in.
		if full, err := inApp(after, q.After.ExportPosition); err != nil || full {
			return out, err
		}
	}
	for {
		apps, more, err := s.userAppStates(ctx, q.User, after)
		if err != nil {
			return UserExportPage{}, err
		}
		for _, st := range apps {
			if !q.Deadline.IsZero() && time.Now().After(q.Deadline) && len(out.Apps)+len(out.Records) > 0 {
				// The page got somewhere: it ends after the last app
				// it finished.
				out.Next = &UserExportPosition{App: after, ExportPosition: ExportPosition{Owner: q.User, Done: true}}
				return out, nil
			}
			out.Apps = append(out.Apps, st)
			if full, err := inApp(st.App, ExportPosition{Owner: q.User}); err != nil || full {
				return out, err
			}
			after = st.App
		}
		if !more {
			return out, nil
		}
	}
}

// userAppStates reads the user's usage records after the app named, in app
// order, userExportAppsPerRead at most: those of the apps the user has
// data in and those that only hold an override.
func (s *Store) userAppStates(ctx context.Context, user, after string) ([]UserAppState, bool, error) {
	if after == "" {
		// The user's erase record sorts before every app (a UUID).
		after = schema.EraseRecord
	}
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.tables.Usage),
		KeyConditionExpression:   aws.String("#u = :u AND #a > :a"),
		ExpressionAttributeNames: map[string]string{"#u": schema.AttrUser, "#a": schema.AttrApp},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": &types.AttributeValueMemberS{Value: user},
			":a": &types.AttributeValueMemberS{Value: after},
		},
		ConsistentRead: aws.Bool(true),
		Limit:          aws.Int32(userExportAppsPerRead),
	}
	res, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, false, failed("list the apps of "+user, err)
	}
	out := make([]UserAppState, len(res.Items))
	for i, it := range res.Items {
		out[i] = UserAppState{App: str(it, schema.AttrApp), Usage: usageOf(it), Limits: limitsOf(it), Rate: callerRate(it)}
	}
	return out, res.LastEvaluatedKey != nil, nil
}
