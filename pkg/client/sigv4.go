package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Signer signs requests for API Gateway's IAM authorization (service
// execute-api), with credentials fetched per request so that temporary
// ones are refreshed by their provider. The client signs with one
// (WithSigV4); `uds console` signs the admin calls it carries for the page.
type Signer struct {
	credentials aws.CredentialsProvider
	region      string
	signer      *v4.Signer
}

// WithSigV4 signs every request with SigV4 for the execute-api service in
// region, with cfg's credentials: the admin routes of a deployed stack
// take IAM authorization.
func WithSigV4(cfg aws.Config, region string) Option {
	s := NewSigner(cfg, region)
	return func(c *Client) { c.signer = s }
}

// NewSigner signs for the execute-api service in region (cfg's region
// when empty) with cfg's credentials.
func NewSigner(cfg aws.Config, region string) *Signer {
	if region == "" {
		region = cfg.Region
	}
	return &Signer{credentials: cfg.Credentials, region: region, signer: v4.NewSigner()}
}

// DefaultSigV4 signs with the default AWS credential chain (environment,
// shared files, SSO, container and instance roles) and region (region ""
// takes AWS_REGION or the profile's).
func DefaultSigV4(ctx context.Context, region string) (Option, error) {
	s, err := DefaultSigner(ctx, region)
	if err != nil {
		return nil, err
	}
	return func(c *Client) { c.signer = s }, nil
}

// DefaultSigner is the Signer of DefaultSigV4: the default AWS credential
// chain and region.
func DefaultSigner(ctx context.Context, region string) (*Signer, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if region == "" && cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: set AWS_REGION or pass one")
	}
	return NewSigner(cfg, region), nil
}

// Sign adds req's SigV4 headers for body, its whole payload.
func (s *Signer) Sign(ctx context.Context, req *http.Request, body []byte) error {
	if s.credentials == nil {
		return fmt.Errorf("SigV4 without credentials")
	}
	creds, err := s.credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("AWS credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	return s.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", s.region, time.Now())
}
