package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

const otherApp = "0f7b6a52-3c1d-4e8f-9a2b-5c6d7e8f9a0b"

func TestRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if err := s.SetAppLimits(ctx, app, uds.Limits{Bytes: 1 << 20, Items: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.App(ctx, app); !errors.Is(err, uds.ErrNotFound) {
		t.Fatalf("an app with limits and no name: %v, want not found", err)
	}

	reg, err := s.RegisterApp(ctx, app, "Math Tutor", "Practice problems")
	if err != nil {
		t.Fatal(err)
	}
	if reg.Name != "Math Tutor" || reg.Description != "Practice problems" || reg.Created.IsZero() || !reg.Updated.Equal(reg.Created) ||
		reg.Limits != (uds.Limits{Bytes: 1 << 20, Items: 100}) {
		t.Errorf("registered %+v", reg)
	}
	t.Run("read back", func(t *testing.T) {
		got, err := s.App(ctx, app)
		if err != nil || got != reg {
			t.Errorf("App: %+v, %v; want %+v", got, err, reg)
		}
		byName, err := s.AppByName(ctx, "MATH tutor")
		if err != nil || byName != reg {
			t.Errorf("AppByName: %+v, %v; want %+v", byName, err, reg)
		}
	})
	t.Run("a name taken in another case", func(t *testing.T) {
		_, err := s.RegisterApp(ctx, otherApp, "math TUTOR", "")
		var taken *uds.NameTakenError
		if !errors.As(err, &taken) || taken.App != app || !errors.Is(err, uds.ErrConflict) {
			t.Errorf("RegisterApp: %v, want the name taken by %s", err, app)
		}
	})
	t.Run("the same registration again writes nothing", func(t *testing.T) {
		again, err := s.RegisterApp(ctx, app, "Math Tutor", "Practice problems")
		if err != nil || again != reg {
			t.Errorf("again: %+v, %v; want %+v", again, err, reg)
		}
	})
	t.Run("a rename frees the old name", func(t *testing.T) {
		renamed, err := s.RegisterApp(ctx, app, "Algebra", "")
		if err != nil {
			t.Fatal(err)
		}
		if renamed.Description != "" || !renamed.Created.Equal(reg.Created) || renamed.Updated.Before(reg.Updated) {
			t.Errorf("renamed %+v (was %+v)", renamed, reg)
		}
		if _, err := s.AppByName(ctx, "math tutor"); !errors.Is(err, uds.ErrNotFound) {
			t.Errorf("old name: %v, want not found", err)
		}
		if _, err := s.RegisterApp(ctx, otherApp, "Math Tutor", ""); err != nil {
			t.Errorf("the freed name: %v", err)
		}
	})
	t.Run("unregister", func(t *testing.T) {
		for range 2 { // idempotent
			if err := s.UnregisterApp(ctx, otherApp); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.App(ctx, otherApp); !errors.Is(err, uds.ErrNotFound) {
			t.Errorf("unregistered: %v", err)
		}
		if _, err := s.AppByName(ctx, "Math Tutor"); !errors.Is(err, uds.ErrNotFound) {
			t.Errorf("unregistered name: %v", err)
		}
		// The limits stay with the app.
		if l, err := s.AppLimits(ctx, app); err != nil || l.Items != 100 {
			t.Errorf("limits after renames: %+v, %v", l, err)
		}
	})
}

func TestRegistryReservedName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t, store.WithCreatedContentApp(app))
	_, err := s.RegisterApp(ctx, otherApp, "HMH", "")
	var taken *uds.NameTakenError
	if !errors.As(err, &taken) || !taken.Reserved || taken.App != app {
		t.Fatalf("another app taking the reserved name: %v", err)
	}
	if _, err := s.RegisterApp(ctx, app, "hmh", "Created content"); err != nil {
		t.Fatalf("the created-content app taking it: %v", err)
	}
	// Without a created-content app, the name is an ordinary one.
	plain, _ := newStore(t)
	if _, err := plain.RegisterApp(ctx, otherApp, "hmh", ""); err != nil {
		t.Errorf("hmh where no app is named: %v", err)
	}
}

// TestRegistryRace registers one name from many apps at once: exactly one
// gets it, the others learn which, and no claim is left behind.
func TestRegistryRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	const apps = 8
	var wg sync.WaitGroup
	errs := make([]error, apps)
	for i := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.RegisterApp(ctx, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), "Contested", "")
		}()
	}
	wg.Wait()
	winner := ""
	for i, err := range errs {
		var taken *uds.NameTakenError
		switch {
		case err == nil && winner == "":
			winner = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		case err == nil:
			t.Errorf("two apps got the name: %s and %d", winner, i)
		case !errors.As(err, &taken):
			t.Errorf("app %d: %v", i, err)
		}
	}
	got, err := s.AppByName(ctx, "contested")
	if err != nil || got.App != winner {
		t.Errorf("AppByName: %+v, %v; want %s", got, err, winner)
	}
}

func TestRegistryList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	names := []string{"delta", "Alpha", "charlie", "Bravo", "echo"}
	for i, name := range names {
		if _, err := s.RegisterApp(ctx, fmt.Sprintf("10000000-0000-4000-8000-%012d", i), name, "app "+name); err != nil {
			t.Fatal(err)
		}
	}
	// Apps with limits and rate limits but no name are not listed.
	if err := s.SetAppLimits(ctx, otherApp, uds.Limits{Items: 5}); err != nil {
		t.Fatal(err)
	}
	var listed []string
	var after uds.AppRegistration
	for pages := 0; ; pages++ {
		page, more, err := s.Apps(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, reg := range page {
			listed = append(listed, reg.Name)
			if reg.Description != "app "+reg.Name || reg.App == "" {
				t.Errorf("listed %+v", reg)
			}
		}
		if !more {
			break
		}
		after = page[len(page)-1]
		if pages > 3 {
			t.Fatal("the listing does not end")
		}
	}
	if fmt.Sprint(listed) != "[Alpha Bravo charlie delta echo]" {
		t.Errorf("listed %v, want by name whatever the case", listed)
	}
}

// TestRegistryFoldsLegacyClaims meets registrations made when names were
// keyed by their lower case: one whose name folds otherwise moves to its
// folded key, so that its fold-equal twins are refused and find it; of two
// that fold alike, the one already at the folded key keeps it, and the
// other keeps its old key until it is renamed.
func TestRegistryFoldsLegacyClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, tables := storetest.Client(t), storetest.NewTables(t)
	odos, stats, longS := "20000000-0000-4000-8000-000000000001", "20000000-0000-4000-8000-000000000002", "20000000-0000-4000-8000-000000000003"
	for _, legacy := range []struct{ app, name string }{{odos, "οδος"}, {stats, "stats"}, {longS, "ſtats"}} {
		key := strings.ToLower(legacy.name) // the key before names were folded
		for _, item := range []map[string]types.AttributeValue{{
			schema.AttrApp: &types.AttributeValueMemberS{Value: legacy.app}, schema.AttrAppName: &types.AttributeValueMemberS{Value: legacy.name},
			schema.AttrRegistry: &types.AttributeValueMemberS{Value: schema.RegistryPartition}, schema.AttrAppNameKey: &types.AttributeValueMemberS{Value: key},
			schema.AttrRegistered: &types.AttributeValueMemberS{Value: "2025-01-01T00:00:00.000Z"}, schema.AttrRegistryUpdate: &types.AttributeValueMemberS{Value: "2025-01-01T00:00:00.000Z"},
		}, {
			schema.AttrApp: &types.AttributeValueMemberS{Value: "name#" + key}, schema.AttrClaimedBy: &types.AttributeValueMemberS{Value: legacy.app},
		}} {
			if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.Apps), Item: item}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := store.New(client, tables)
	var taken *uds.NameTakenError
	if _, err := s.RegisterApp(ctx, otherApp, "ΟΔΟΣ", ""); !errors.As(err, &taken) || taken.App != odos {
		t.Errorf("ΟΔΟΣ beside the older οδος: %v, want the name taken by %s", err, odos)
	}
	for name, want := range map[string]string{"ΟΔΟΣ": odos, "οδος": odos, "STATS": stats, "ſtats": stats} {
		if reg, err := s.AppByName(ctx, name); err != nil || reg.App != want {
			t.Errorf("AppByName(%q) = %+v, %v; want app %s", name, reg, err, want)
		}
	}
	// The app left at its old key is renamed as any other, which frees
	// that key.
	if _, err := s.RegisterApp(ctx, longS, "Long S", ""); err != nil {
		t.Fatalf("renaming the app left at its old key: %v", err)
	}
	if reg, err := s.AppByName(ctx, "long s"); err != nil || reg.App != longS {
		t.Errorf("the renamed app: %+v, %v", reg, err)
	}
	if _, err := s.RegisterApp(ctx, longS, "ſtats", ""); !errors.As(err, &taken) || taken.App != stats {
		t.Errorf("ſtats again: %v, want the name taken by %s", err, stats)
	}
}

// TestUpgradeTables gives an apps table made before the registry its
// byName index, as the local server does at start.
func TestUpgradeTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := storetest.Client(t)
	streamed := storetest.NewStreamedTables(t)
	// Each try makes an old apps table of its own (upgradeInTries).
	tables := upgradeInTries(t, func(try int) store.Tables {
		tables := streamed
		tables.Apps = fmt.Sprintf("%s_old%d", streamed.Apps, try)
		t.Cleanup(func() {
			_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(tables.Apps)})
		})
		_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(tables.Apps),
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(schema.AttrApp), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(schema.AttrApp), AttributeType: types.ScalarAttributeTypeS}},
			BillingMode:          types.BillingModePayPerRequest,
		})
		if err != nil {
			t.Fatal(err)
		}
		return tables
	})
	s := store.New(c, tables)
	if _, err := s.RegisterApp(ctx, app, "Upgraded", ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, _, err := s.Apps(ctx, uds.AppRegistration{}, 10)
		if err == nil && len(page) == 1 && page[0].Name == "Upgraded" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("listing after the upgrade: %v, %v", page, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBehaviorAppPrivate checks that the reserved app's namespaces are
// private until a policy says otherwise, and that removing a policy there
// makes them private again.
func TestBehaviorAppPrivate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	p, err := s.Policy(ctx, uds.BehaviorApp, "scores")
	if err != nil || p.Mode() != uds.AccessPrivate {
		t.Fatalf("default policy of the behavior app: %+v, %v", p, err)
	}
	if p, err := s.Policy(ctx, app, "scores"); err != nil || p.Mode() != uds.AccessShared {
		t.Errorf("default policy of another app: %+v, %v", p, err)
	}
	// A policy without an access mode keeps the default: nothing moves.
	set, err := s.SetPolicy(ctx, uds.BehaviorApp, "scores", uds.Policy{History: uds.History{Versions: 3}})
	if err != nil || set.Pending != nil || set.Mode() != uds.AccessPrivate {
		t.Errorf("history only: %+v, %v", set, err)
	}
	// Shared is a change out of private, announced first.
	set, err = s.SetPolicy(ctx, uds.BehaviorApp, "scores", uds.Policy{Access: uds.AccessShared})
	if err != nil || set.Pending == nil || set.Pending.Access != uds.AccessShared || set.Mode() != uds.AccessPrivate {
		t.Errorf("to shared: %+v, %v", set, err)
	}
	// Removing the policy cancels it: private again.
	set, err = s.SetPolicy(ctx, uds.BehaviorApp, "scores", uds.Policy{})
	if err != nil || set.Pending != nil || set.Mode() != uds.AccessPrivate {
		t.Errorf("removed: %+v, %v", set, err)
	}
	stored, err := s.StoredPolicy(ctx, uds.BehaviorApp, "scores")
	if err != nil || stored.Mode() != uds.AccessPrivate || stored.Pending != nil {
		t.Errorf("stored: %+v, %v", stored, err)
	}
}
