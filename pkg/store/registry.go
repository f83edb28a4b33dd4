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

// The registry gives apps names. An app's registration lives on its record
// in the apps table, beside its limits; a claim item per folded name keeps
// names unique, written in the same transaction as the record, so that two
// apps registering one name at once cannot both get it. Only registered
// records carry the keys of the sparse byName index, which lists them by
// name; the apps table's other items (rate buckets, release markers,
// claims) never appear there.

// WithCreatedContentApp reserves uds.CreatedContentName for app: no other
// app may register it.
func WithCreatedContentApp(app string) Option { return func(s *Store) { s.createdContentApp = app } }

// claimPrefix starts the key of a name's claim in the apps table. No app
// id (a UUID) and no other item of the table starts so.
const claimPrefix = "name#"

func appKey(app string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{schema.AttrApp: &types.AttributeValueMemberS{Value: app}}
}

// RegisterApp registers app under name with a description ("" for none),
// or changes its registration; it returns the registration. A name another
// app holds, compared case-insensitively, is a *uds.NameTakenError, as is
// the reserved uds.CreatedContentName for an app that is not the
// deployment's created-content app. Name and description must have been
// checked by the caller (uds.ParseAppName, uds.ParseAppDescription).
func (s *Store) RegisterApp(ctx context.Context, app, name, description string) (uds.AppRegistration, error) {
	op := "register app " + app
	folded := uds.FoldAppName(name)
	if folded == uds.CreatedContentName && s.createdContentApp != "" && app != s.createdContentApp {
		return uds.AppRegistration{}, &uds.NameTakenError{Name: name, App: s.createdContentApp, Reserved: true}
	}
	if err := s.foldRegistry(ctx); err != nil {
		return uds.AppRegistration{}, err
	}
	for range maxWriteAttempts {
		current, err := s.readRegistration(ctx, app)
		if err != nil {
			return uds.AppRegistration{}, err
		}
		registered := current.Name != ""
		if registered && current.Name == name && current.Description == description {
			return current, nil
		}
		now := s.writeTime()
		stamp := &types.AttributeValueMemberS{Value: FormatTime(now)}
		claim := claimName(s.tables.Apps, app, folded)
		record := &types.Update{
			TableName: aws.String(s.tables.Apps),
			Key:       appKey(app),
			UpdateExpression: aws.String("SET #n = :n, #r = :r, #k = :k, #u = :now, #reg = if_not_exists(#reg, :now)" +
				descriptionUpdate(description)),
			ExpressionAttributeNames: map[string]string{"#n": schema.AttrAppName, "#r": schema.AttrRegistry,
				"#k": schema.AttrAppNameKey, "#u": schema.AttrRegistryUpdate, "#reg": schema.AttrRegistered,
				"#d": schema.AttrAppDescription},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":n": &types.AttributeValueMemberS{Value: name}, ":r": &types.AttributeValueMemberS{Value: schema.RegistryPartition},
				":k": &types.AttributeValueMemberS{Value: folded}, ":now": stamp,
			},
		}
		if description != "" {
			record.ExpressionAttributeValues[":d"] = &types.AttributeValueMemberS{Value: description}
		}
		// The record must still be as read, so that a concurrent rename's
		// claim is the one released below, not left behind.
		sameRegistration(record, current)
		actions := []types.TransactWriteItem{claim, {Update: record}}
		if registered && current.NameKey != folded {
			actions = append(actions, releaseClaim(s.tables.Apps, app, current.NameKey))
		}
		refused, err := s.transact(ctx, op, actions...)
		switch {
		case err != nil:
			return uds.AppRegistration{}, err
		case refused == nil:
			reg := uds.AppRegistration{App: app, Name: name, Description: description, NameKey: folded,
				Created: current.Created, Updated: now, Limits: current.Limits}
			if !registered {
				reg.Created = now
			}
			return reg, nil
		case refused.conditionFailed(0):
			if holder := str(refused.item(0), schema.AttrClaimedBy); holder != "" {
				return uds.AppRegistration{}, &uds.NameTakenError{Name: name, App: holder}
			}
		case !refused.anyConditionFailed():
			return uds.AppRegistration{}, failed(op, errUnexpectedCancel(refused))
		}
		// The registration changed meanwhile: decide again.
	}
	return uds.AppRegistration{}, &uds.UnavailableError{Op: op, Err: errContended}
}

// descriptionUpdate sets the description, or removes it when empty.
func descriptionUpdate(description string) string {
	if description == "" {
		return " REMOVE #d"
	}
	return ", #d = :d"
}

// sameRegistration conditions an update of an app's record on its
// registration's name key being the one current was read with. An app
// that is not registered may be in the catalogue's held partition
// (catalog.go), keyed by its id.
func sameRegistration(u *types.Update, current uds.AppRegistration) {
	u.ExpressionAttributeNames["#k"] = schema.AttrAppNameKey
	u.ExpressionAttributeNames["#rp"] = schema.AttrRegistry
	if current.Name == "" {
		u.ConditionExpression = aws.String("attribute_not_exists(#rp) OR #rp = :heldPartition")
		u.ExpressionAttributeValues[":heldPartition"] = &types.AttributeValueMemberS{Value: schema.HeldPartition}
		return
	}
	u.ConditionExpression = aws.String("#rp = :registry AND #k = :was")
	u.ExpressionAttributeValues[":registry"] = &types.AttributeValueMemberS{Value: schema.RegistryPartition}
	u.ExpressionAttributeValues[":was"] = &types.AttributeValueMemberS{Value: current.NameKey}
}

// claimName puts the claim of the folded name key for app, unless
// another app holds it.
func claimName(table, app, key string) types.TransactWriteItem {
	appS := &types.AttributeValueMemberS{Value: app}
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			schema.AttrApp:       &types.AttributeValueMemberS{Value: claimPrefix + key},
			schema.AttrClaimedBy: appS,
		},
		ConditionExpression:                 aws.String("attribute_not_exists(#app) OR #by = :app"),
		ExpressionAttributeNames:            map[string]string{"#app": schema.AttrApp, "#by": schema.AttrClaimedBy},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":app": appS},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// releaseClaim deletes the claim of the folded name key, if app holds it.
func releaseClaim(table, app, key string) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 aws.String(table),
		Key:                       appKey(claimPrefix + key),
		ConditionExpression:       aws.String("attribute_not_exists(#app) OR #by = :app"),
		ExpressionAttributeNames:  map[string]string{"#app": schema.AttrApp, "#by": schema.AttrClaimedBy},
		ExpressionAttributeValues: map[string]types.AttributeValue{":app": &types.AttributeValueMemberS{Value: app}},
	}}
}

// App returns an app's registration, or uds.ErrNotFound when the app is
// not registered.
func (s *Store) App(ctx context.Context, app string) (uds.AppRegistration, error) {
	reg, err := s.readRegistration(ctx, app)
	if err == nil && reg.Name == "" {
		return uds.AppRegistration{}, uds.ErrNotFound
	}
	return reg, err
}

// readRegistration reads an app's record strongly consistent: its
// registration (no Name when it has none) and its default limits.
func (s *Store) readRegistration(ctx context.Context, app string) (uds.AppRegistration, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Apps),
		Key:            appKey(app),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return uds.AppRegistration{}, failed("read the registration of app "+app, err)
	}
	reg := decodeRegistration(out.Item)
	reg.App = app
	return reg, nil
}

func decodeRegistration(av map[string]types.AttributeValue) uds.AppRegistration {
	reg := uds.AppRegistration{App: str(av, schema.AttrApp), Limits: limitsOf(av), HeldSince: parseTime(str(av, schema.AttrHeldSince))}
	if str(av, schema.AttrRegistry) != schema.RegistryPartition {
		return reg
	}
	reg.Name, reg.Description = str(av, schema.AttrAppName), str(av, schema.AttrAppDescription)
	reg.NameKey = str(av, schema.AttrAppNameKey)
	reg.Created, _ = time.Parse(timeLayout, str(av, schema.AttrRegistered))
	reg.Updated, _ = time.Parse(timeLayout, str(av, schema.AttrRegistryUpdate))
	return reg
}

// UnregisterApp removes an app's name and description, and frees the
// name. The app's data, limits, rate limits and policies stay; an app
// that is not registered is left as it is. An app the catalogue marked as
// holding data goes back to the byName index's held partition, under its
// id (catalog.go).
func (s *Store) UnregisterApp(ctx context.Context, app string) error {
	op := "unregister app " + app
	for range maxWriteAttempts {
		current, err := s.readRegistration(ctx, app)
		if err != nil || current.Name == "" {
			return err
		}
		record := &types.Update{
			TableName:                 aws.String(s.tables.Apps),
			Key:                       appKey(app),
			UpdateExpression:          aws.String("REMOVE #n, #d, #r, #k, #u, #reg"),
			ExpressionAttributeNames:  map[string]string{"#n": schema.AttrAppName, "#d": schema.AttrAppDescription, "#r": schema.AttrRegistry, "#u": schema.AttrRegistryUpdate, "#reg": schema.AttrRegistered},
			ExpressionAttributeValues: map[string]types.AttributeValue{},
		}
		if !current.HeldSince.IsZero() {
			record.UpdateExpression = aws.String("SET #r = :held, #k = :app REMOVE #n, #d, #u, #reg")
			record.ExpressionAttributeValues[":held"] = &types.AttributeValueMemberS{Value: schema.HeldPartition}
			record.ExpressionAttributeValues[":app"] = &types.AttributeValueMemberS{Value: app}
		}
		sameRegistration(record, current)
		// Where the app goes was decided by its mark as read: a mark made
		// since (its first data) refuses the update, which decides again.
		if current.HeldSince.IsZero() {
			record.ExpressionAttributeNames["#hs"] = schema.AttrHeldSince
			record.ConditionExpression = aws.String("(" + *record.ConditionExpression + ") AND attribute_not_exists(#hs)")
		}
		refused, err := s.transact(ctx, op, types.TransactWriteItem{Update: record}, releaseClaim(s.tables.Apps, app, current.NameKey))
		switch {
		case err != nil:
			return err
		case refused == nil:
			return nil
		case !refused.anyConditionFailed():
			return failed(op, errUnexpectedCancel(refused))
		}
	}
	return &uds.UnavailableError{Op: op, Err: errContended}
}

// AppByName returns the registration of the app named name, compared
// case-insensitively, or uds.ErrNotFound. It reads the name's claim, then
// the app's record, both strongly consistent.
func (s *Store) AppByName(ctx context.Context, name string) (uds.AppRegistration, error) {
	if err := s.foldRegistry(ctx); err != nil {
		return uds.AppRegistration{}, err
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Apps),
		Key:            appKey(claimPrefix + uds.FoldAppName(name)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return uds.AppRegistration{}, failed("look up app name "+name, err)
	}
	holder := str(out.Item, schema.AttrClaimedBy)
	if holder == "" {
		return uds.AppRegistration{}, uds.ErrNotFound
	}
	reg, err := s.App(ctx, holder)
	if err == nil && uds.FoldAppName(reg.Name) != uds.FoldAppName(name) {
		// The app was renamed between the two reads.
		return uds.AppRegistration{}, uds.ErrNotFound
	}
	return reg, err
}

// Apps lists registered apps by name (case folded), after the
// registration given (its App and NameKey; the zero one: from the start),
// at most limit; more
// reports whether others follow. It queries the byName index, which
// DynamoDB keeps eventually consistent: a registration shows in the list
// within a second or so of its write.
func (s *Store) Apps(ctx context.Context, after uds.AppRegistration, limit int) (page []uds.AppRegistration, more bool, err error) {
	return s.appsIn(ctx, schema.RegistryPartition, after.App, after.NameKey, limit)
}

// HeldApps lists the apps that hold data and are not registered (the
// catalogue's held partition, catalog.go) by id, after the app given
// ("": from the start), at most limit; more reports whether others
// follow. Like Apps, it reads the byName index, eventually consistent.
// The index does not carry the apps' marks: HeldSince is left zero.
func (s *Store) HeldApps(ctx context.Context, after string, limit int) (page []uds.AppRegistration, more bool, err error) {
	return s.appsIn(ctx, schema.HeldPartition, after, after, limit)
}

// appsIn lists a partition of the byName index after the app given and
// its key there.
func (s *Store) appsIn(ctx context.Context, partition, afterApp, afterKey string, limit int) (page []uds.AppRegistration, more bool, err error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.Apps),
		IndexName:                 aws.String(schema.IndexByName),
		KeyConditionExpression:    aws.String("#r = :r"),
		ExpressionAttributeNames:  map[string]string{"#r": schema.AttrRegistry},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: partition}},
		Limit:                     aws.Int32(int32(limit + 1)),
	}
	if afterApp != "" {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			schema.AttrApp:        &types.AttributeValueMemberS{Value: afterApp},
			schema.AttrRegistry:   &types.AttributeValueMemberS{Value: partition},
			schema.AttrAppNameKey: &types.AttributeValueMemberS{Value: afterKey},
		}
	}
	for {
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, false, failed("list the apps of the registry's "+partition+" partition", err)
		}
		for _, it := range out.Items {
			page = append(page, decodeRegistration(it))
		}
		if len(page) > limit {
			return page[:limit], true, nil
		}
		if out.LastEvaluatedKey == nil {
			return page, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// foldedMarker is the key of the apps table's item that marks the
// registry's claims as keyed by uds.FoldAppName (foldRegistry).
const foldedMarker = "registry#folded"

// foldRegistry moves the claims of registrations made when names were
// keyed by their lower case, and whose name's fold differs from it (a name
// with ſ, ς, µ and the like), to their folded key, once for the registry:
// before it, such a registration blocked neither its fold-equal twins nor
// was found by them. A registration whose folded key another app holds
// (two such apps, registered before, whose names fold alike) keeps its old
// key: its name resolves to the other app, and it is renamed, or
// unregistered, as any other. A marker item records that the registry was
// folded, and the store remembers it, so that this costs one read per
// process afterwards.
func (s *Store) foldRegistry(ctx context.Context) error {
	if s.registryFolded.Load() {
		return nil
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Apps), Key: appKey(foldedMarker), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return failed("read the registry's fold marker", err)
	}
	if out.Item == nil {
		var after uds.AppRegistration
		for more := true; more; {
			var page []uds.AppRegistration
			if page, more, err = s.Apps(ctx, after, 1000); err != nil {
				return err
			}
			for _, reg := range page {
				if err := s.refoldClaim(ctx, reg); err != nil {
					return err
				}
				after = reg
			}
		}
		if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.Apps), Item: appKey(foldedMarker)}); err != nil {
			return failed("mark the registry folded", err)
		}
	}
	s.registryFolded.Store(true)
	return nil
}

// refoldClaim moves reg's claim to its folded key, unless it is there, or
// another app holds that key.
func (s *Store) refoldClaim(ctx context.Context, reg uds.AppRegistration) error {
	folded := uds.FoldAppName(reg.Name)
	if reg.NameKey == folded {
		return nil
	}
	record := &types.Update{
		TableName:                 aws.String(s.tables.Apps),
		Key:                       appKey(reg.App),
		UpdateExpression:          aws.String("SET #k = :k"),
		ExpressionAttributeNames:  map[string]string{},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: folded}},
	}
	sameRegistration(record, reg)
	_, err := s.transact(ctx, "fold the name claim of app "+reg.App,
		claimName(s.tables.Apps, reg.App, folded), types.TransactWriteItem{Update: record}, releaseClaim(s.tables.Apps, reg.App, reg.NameKey))
	// A refusal (the folded key is another app's, or the registration
	// changed meanwhile, which moved its claim) leaves the claim as it is.
	return err
}
