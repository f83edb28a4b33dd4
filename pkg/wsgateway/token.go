package wsgateway

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// maxTokenBytes bounds a token before anything of it is decoded: an
// identity provider's access token is a few kilobytes at most.
const maxTokenBytes = 16 << 10

// clockSkew is how far a token's exp and nbf may be off the function's
// clock, as API Gateway's JWT authorizer allows for.
const clockSkew = time.Minute

// token is a JWT as it arrived: its header, its claims and what its
// signature covers.
type token struct {
	alg, kid string
	claims   map[string]json.RawMessage
	signed   []byte
	sig      []byte
}

// parseToken splits and decodes a compact JWS (RFC 7515) carrying JSON
// claims. It checks the shape only; verify checks the signature and the
// claims.
func parseToken(s string) (*token, error) {
	if len(s) > maxTokenBytes {
		return nil, fmt.Errorf("the token is %d bytes; at most %d", len(s), maxTokenBytes)
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return nil, errors.New("the token is not a JWT of three parts")
	}
	rawHeader, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, errors.New("the token's header is not base64url")
	}
	var header struct {
		Alg  string `json:"alg"`
		Kid  string `json:"kid"`
		Crit []any  `json:"crit"`
	}
	if err := json.Unmarshal(rawHeader, &header); err != nil {
		return nil, errors.New("the token's header is not a JSON object")
	}
	// RFC 7515 §4.1.11: an extension the verifier does not understand
	// makes the token invalid.
	if header.Crit != nil {
		return nil, errors.New("the token names critical extensions")
	}
	rawClaims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("the token's claims are not base64url")
	}
	var claims map[string]json.RawMessage
	if err := json.Unmarshal(rawClaims, &claims); err != nil || claims == nil {
		return nil, errors.New("the token's claims are not a JSON object")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, errors.New("the token's signature is not base64url")
	}
	return &token{
		alg: header.Alg, kid: header.Kid, claims: claims,
		signed: []byte(s[:len(parts[0])+1+len(parts[1])]), sig: sig,
	}, nil
}

// algorithms are the signature algorithms a token may use: the RSA ones
// API Gateway's JWT authorizer takes, and ECDSA beside them for issuers
// that sign with it. "none" and the HMAC algorithms are never accepted:
// a public key is not a shared secret.
var algorithms = map[string]struct {
	hash crypto.Hash
	new  func() hash.Hash
	ec   bool
}{
	"RS256": {crypto.SHA256, sha256.New, false},
	"RS384": {crypto.SHA384, sha512.New384, false},
	"RS512": {crypto.SHA512, sha512.New, false},
	"ES256": {crypto.SHA256, sha256.New, true},
	"ES384": {crypto.SHA384, sha512.New384, true},
}

// checkSignature verifies the token's signature with key.
func (t *token) checkSignature(key crypto.PublicKey) error {
	alg, ok := algorithms[t.alg]
	if !ok {
		return fmt.Errorf("the token's algorithm %q is not accepted", uds.Truncate(t.alg, 16))
	}
	h := alg.new()
	h.Write(t.signed)
	digest := h.Sum(nil)
	switch k := key.(type) {
	case *rsa.PublicKey:
		if !alg.ec && rsa.VerifyPKCS1v15(k, alg.hash, digest, t.sig) == nil {
			return nil
		}
	case *ecdsa.PublicKey:
		// A JWS ECDSA signature is r and s side by side, each as long as
		// the curve's order (RFC 7518 §3.4).
		size := (k.Curve.Params().BitSize + 7) / 8
		if alg.ec && len(t.sig) == 2*size {
			r := new(big.Int).SetBytes(t.sig[:size])
			s := new(big.Int).SetBytes(t.sig[size:])
			if ecdsa.Verify(k, digest, r, s) {
				return nil
			}
		}
	}
	return errors.New("the token's signature does not verify")
}

// checkClaims checks what API Gateway's JWT authorizer checks: the
// issuer, the audience (aud, or client_id when the token has no aud, as
// Cognito's access tokens), and the token's lifetime (exp required, nbf
// when present). It returns the caller named by claim.
func (t *token) checkClaims(issuer string, audiences []string, claim string, now time.Time) (string, error) {
	var iss string
	if json.Unmarshal(t.claims["iss"], &iss) != nil || iss != issuer {
		return "", errors.New("the token's issuer is not this API's")
	}
	aud := stringsClaim(t.claims["aud"])
	if len(aud) == 0 {
		aud = stringsClaim(t.claims["client_id"])
	}
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(audiences, a) }) {
		return "", errors.New("the token is not for this API's audience")
	}
	exp, ok := numericDate(t.claims["exp"])
	if !ok {
		return "", errors.New("the token has no expiry (exp)")
	}
	if now.After(exp.Add(clockSkew)) {
		return "", errors.New("the token has expired")
	}
	if raw, present := t.claims["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok || now.Add(clockSkew).Before(nbf) {
			return "", errors.New("the token is not valid yet (nbf)")
		}
	}
	// The HTTP API's functions read the claim as API Gateway hands it
	// over, a string; a claim of another type names nobody.
	var subject string
	if json.Unmarshal(t.claims[claim], &subject) != nil || subject == "" {
		return "", fmt.Errorf("the token has no %q claim to name the caller", claim)
	}
	return subject, nil
}

// stringsClaim reads a claim that is a string or an array of strings
// (aud, RFC 7519 §4.1.3); anything else reads as none.
func stringsClaim(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}

// numericDate reads a NumericDate claim: seconds since the epoch, which
// may have a fraction.
func numericDate(raw json.RawMessage) (time.Time, bool) {
	var secs float64
	if json.Unmarshal(raw, &secs) != nil || secs < 0 || secs > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(0, 0).Add(time.Duration(secs * float64(time.Second))), true
}
