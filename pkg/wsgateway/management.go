package wsgateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Management is API Gateway's Management API of one WebSocket stage: it
// posts a message to a connection and closes one. Its two calls are
// plain signed HTTP requests, made here with the SDK's SigV4 signer: the
// SDK's own client of that API would add a module for two calls.
type Management struct {
	// endpoint is the stage's callback URL:
	// https://{api}.execute-api.{region}.amazonaws.com/{stage}.
	endpoint *url.URL
	region   string
	creds    aws.CredentialsProvider
	client   *http.Client
	signer   *v4.Signer
}

// NewManagement calls the Management API at endpoint, signing for region
// with creds.
func NewManagement(endpoint, region string, creds aws.CredentialsProvider, client *http.Client) (*Management, error) {
	u, err := url.Parse(strings.TrimSuffix(endpoint, "/"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the Management API's endpoint %q is not a URL", endpoint)
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Management{endpoint: u, region: region, creds: creds, client: client, signer: v4.NewSigner()}, nil
}

// ErrGone is what a call about a connection that API Gateway has closed
// answers (the API's GoneException, 410).
var ErrGone = errors.New("the connection is gone")

// ErrTooLarge is what posting a message over API Gateway's 128 KB answers.
var ErrTooLarge = errors.New("the message is larger than API Gateway takes")

// managementAttempts bounds the tries of one call that API Gateway
// throttled or failed (429, 5xx).
const managementAttempts = 4

// Post sends msg to connection id as one text message.
func (m *Management) Post(ctx context.Context, id string, msg []byte) error {
	return m.call(ctx, http.MethodPost, id, msg)
}

// Close closes connection id; API Gateway then invokes $disconnect. A
// connection already gone is closed.
func (m *Management) Close(ctx context.Context, id string) error {
	if err := m.call(ctx, http.MethodDelete, id, nil); err != nil && !errors.Is(err, ErrGone) {
		return err
	}
	return nil
}

func (m *Management) call(ctx context.Context, method, id string, payload []byte) error {
	// The id goes in as one path segment: escaped in the URL, as it is.
	u := *m.endpoint
	u.RawPath = m.endpoint.EscapedPath() + "/@connections/" + url.PathEscape(id)
	u.Path += "/@connections/" + id
	sum := sha256.Sum256(payload)
	hash := hex.EncodeToString(sum[:])
	var last error
	for attempt := range managementAttempts {
		if attempt > 0 {
			if err := pause(ctx, time.Duration(25<<attempt)*time.Millisecond); err != nil {
				return err
			}
		}
		creds, err := m.creds.Retrieve(ctx)
		if err != nil {
			return fmt.Errorf("credentials for the Management API: %w", err)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(payload))
		if err != nil {
			return err
		}
		if err := m.signer.SignHTTP(ctx, creds, req, hash, "execute-api", m.region, time.Now()); err != nil {
			return fmt.Errorf("sign a Management API call: %w", err)
		}
		res, err := m.client.Do(req)
		if err != nil {
			last = fmt.Errorf("%s @connections: %w", method, err)
			continue
		}
		detail, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
		res.Body.Close()
		switch {
		case res.StatusCode/100 == 2:
			return nil
		case res.StatusCode == http.StatusGone:
			return ErrGone
		case res.StatusCode == http.StatusRequestEntityTooLarge:
			return ErrTooLarge
		case res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500:
			last = fmt.Errorf("%s @connections: status %d: %s", method, res.StatusCode, bytes.TrimSpace(detail))
			continue
		}
		return fmt.Errorf("%s @connections: status %d: %s", method, res.StatusCode, bytes.TrimSpace(detail))
	}
	return last
}
