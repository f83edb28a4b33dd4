package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// TestStartStreams: with the data tables' streams, what is written to
// them reaches the handler until the poller stops; without, or with
// UDS_LOCAL_STREAMS=off, the server goes on and says that streamed
// counting is off. Another value of UDS_LOCAL_STREAMS is an error.
func TestStartStreams(t *testing.T) {
	for _, tc := range []struct {
		name         string
		tables       func(t testing.TB) store.Tables
		localStreams string // UDS_LOCAL_STREAMS
		read         bool
		wantErr      string
	}{
		{"the data tables have streams: read", storetest.NewStreamedTables, "", true, ""},
		{"the data tables have streams, switched on: read", storetest.NewStreamedTables, "on", true, ""},
		{"the data tables have streams, switched off: off", storetest.NewStreamedTables, "off", false, ""},
		{"another value: an error", storetest.NewStreamedTables, "no", false, `UDS_LOCAL_STREAMS: want on or off, got "no"`},
		// A seed deployment's data tables, as an old .data/dynamodb
		// may hold them: no streams.
		{"the data tables have none: off", storetest.NewSeedTables, "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envLocalStreams, tc.localStreams)
			cfg := config.Config{Tables: tc.tables(t), Endpoint: os.Getenv(config.EnvDynamoDBEndpoint), LogFormat: "text"}
			var out lockedBuffer
			var mu sync.Mutex
			var got []events.DynamoDBEventRecord
			stop, err := startStreams(t.Context(), storetest.Client(t), cfg, newLogger(&out, cfg), "streamed counting",
				[]string{cfg.Tables.Data, cfg.Tables.List, cfg.Tables.History},
				func(_ context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, ev.Records...)
					return events.DynamoDBTimeWindowEventResponse{
						TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{State: map[string]string{}},
					}, nil
				})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			if _, err := storetest.Client(t).PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(cfg.Tables.List),
				Item: map[string]types.AttributeValue{
					schema.AttrDataKey: &types.AttributeValueMemberS{Value: "a|n|i"}, schema.AttrSortKey: &types.AttributeValueMemberS{Value: "s"},
				},
			}); err != nil {
				t.Fatal(err)
			}
			read := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(got)
			}
			wait := 2 * time.Second
			if tc.read {
				wait = 10 * time.Second
			}
			for deadline := time.Now().Add(wait); read() == 0 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			stop()
			if n := read(); (n == 1) != tc.read || n > 1 {
				t.Errorf("%d records handed over", n)
			}
			if off := strings.Contains(out.String(), `msg="streamed counting is off`); off == tc.read {
				t.Errorf("said counting is off: %v\n%s", off, out.String())
			}
		})
	}
}

// TestRunReadsStreams: the server hands the data tables' records to the
// expiry function's handler, which logs its batches (at DEBUG, as this one
// counts and releases nothing), and stops reading before its last line.
func TestRunReadsStreams(t *testing.T) {
	tables := storetest.NewStreamedTables(t)
	if _, err := storetest.Client(t).PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(tables.Data),
		Item: map[string]types.AttributeValue{schema.AttrDataKey: &types.AttributeValueMemberS{Value: "a|n|i"}},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{Tables: tables, Endpoint: os.Getenv(config.EnvDynamoDBEndpoint),
		ListenAddr: "127.0.0.1:0", S3ListenAddr: "127.0.0.1:0", LogFormat: "text", LogLevel: slog.LevelDebug, CursorSecret: []byte("k")}
	var out lockedBuffer
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, "", newLogger(&out, cfg), &out) }()
	batch := `msg="expiry batch" records=1 `
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), batch) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if got := out.String(); !strings.Contains(got, batch) || !strings.HasSuffix(got, "msg=\"UDS stopped\"\n") || strings.Contains(got, "counting is off") {
		t.Errorf("no batch of the record, or not stopped last:\n%s", got)
	}
}
