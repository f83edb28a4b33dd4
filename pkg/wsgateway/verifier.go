package wsgateway

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Verifier checks the JWT a client brings to $connect against the issuer
// and audiences of the HTTP API's JWT authorizer, as that authorizer
// does: the issuer's signing keys come from the jwks_uri of its OpenID
// configuration, and are cached.
type Verifier struct {
	issuer    string
	audiences []string
	claim     string
	client    *http.Client
	now       func() time.Time

	mu      sync.Mutex
	keys    map[string]crypto.PublicKey
	fetched time.Time
}

// Key cache: the keys are fetched again an hour after they were, or when
// a token names a key they lack (an issuer rotating its keys), but not
// more often than once a minute whatever tokens arrive, so that tokens
// naming made-up keys cannot make every connect a fetch.
const (
	keysLife     = time.Hour
	keysRecheck  = time.Minute
	fetchTimeout = 5 * time.Second
	// maxDocumentBytes bounds the OpenID configuration and the key set.
	maxDocumentBytes = 1 << 20
)

// NewVerifier verifies tokens of issuer for any of audiences, whose
// caller is named by claim. client fetches the issuer's documents; nil
// is a client with a short timeout.
func NewVerifier(issuer string, audiences []string, claim string, client *http.Client) *Verifier {
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	return &Verifier{issuer: issuer, audiences: audiences, claim: claim, client: client, now: time.Now}
}

// errUnauthenticated marks a token refused for what it is, as opposed to
// a failure to fetch the issuer's keys.
var errUnauthenticated = errors.New("unauthenticated")

// Subject verifies a token and returns the caller it names. A refused
// token's error wraps errUnauthenticated and says why; any other error is
// the function's own (the issuer could not be reached).
func (v *Verifier) Subject(ctx context.Context, raw string) (string, error) {
	t, err := parseToken(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errUnauthenticated, err)
	}
	key, err := v.key(ctx, t.kid)
	if err != nil {
		return "", err
	}
	if key == nil {
		return "", fmt.Errorf("%w: the token's key %q is not among the issuer's", errUnauthenticated, t.kid)
	}
	if err := t.checkSignature(key); err != nil {
		return "", fmt.Errorf("%w: %v", errUnauthenticated, err)
	}
	subject, err := t.checkClaims(v.issuer, v.audiences, v.claim, v.now())
	if err != nil {
		return "", fmt.Errorf("%w: %v", errUnauthenticated, err)
	}
	return subject, nil
}

// key returns the issuer's key kid (nil if it has none of that id),
// fetching the keys when the cache is old or lacks it.
func (v *Verifier) key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	key, ok := v.keys[kid]
	stale := now.Sub(v.fetched) > keysLife
	if ok && !stale {
		return key, nil
	}
	if !stale && now.Sub(v.fetched) < keysRecheck {
		return nil, nil
	}
	keys, err := v.fetch(ctx)
	if err != nil {
		if v.keys != nil && ok {
			// The issuer is down, and the cached key is still the
			// issuer's as far as anyone knows.
			return key, nil
		}
		return nil, err
	}
	v.keys, v.fetched = keys, now
	return keys[kid], nil
}

// fetch reads the issuer's OpenID configuration and then its key set.
func (v *Verifier) fetch(ctx context.Context) (map[string]crypto.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	var discovery struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := v.getJSON(ctx, strings.TrimSuffix(v.issuer, "/")+"/.well-known/openid-configuration", &discovery); err != nil {
		return nil, err
	}
	if discovery.JWKSURI == "" {
		return nil, errors.New("the issuer's OpenID configuration names no jwks_uri")
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := v.getJSON(ctx, discovery.JWKSURI, &set); err != nil {
		return nil, err
	}
	keys := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		// A key meant for encryption only, or of a type this verifier
		// does not take, is left out.
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if pub, err := k.publicKey(); err == nil {
			keys[k.Kid] = pub
		}
	}
	return keys, nil
}

func (v *Verifier) getJSON(ctx context.Context, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("the issuer's document %s: %w", url, err)
	}
	res, err := v.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch the issuer's document %s: %w", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch the issuer's document %s: status %d", url, res.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, maxDocumentBytes)).Decode(into); err != nil {
		return fmt.Errorf("the issuer's document %s: %w", url, err)
	}
	return nil
}

// jwk is a public key of a JSON Web Key Set (RFC 7517), RSA or EC.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

func (k jwk) publicKey() (crypto.PublicKey, error) {
	switch k.Kty {
	case "RSA":
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			return nil, errors.New("a malformed RSA key")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < 2048 {
			return nil, errors.New("an RSA key shorter than 2048 bits")
		}
		return pub, nil
	case "EC":
		var curve elliptic.Curve
		switch k.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		default:
			return nil, errors.New("an EC key on a curve not taken")
		}
		x, err1 := base64.RawURLEncoding.DecodeString(k.X)
		y, err2 := base64.RawURLEncoding.DecodeString(k.Y)
		size := (curve.Params().BitSize + 7) / 8
		if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
			return nil, errors.New("a malformed EC key")
		}
		// The uncompressed point form, which ecdsa.ParseUncompressedPublicKey
		// checks is on the curve.
		point := append(append([]byte{4}, x...), y...)
		return ecdsa.ParseUncompressedPublicKey(curve, point)
	}
	return nil, errors.New("a key type not taken")
}
