package wsgateway

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// issuer is an OpenID issuer in a test server: its configuration, its
// key set (an RSA key and an EC key) and a signer of tokens.
type issuer struct {
	*httptest.Server
	rsaKey  *rsa.PrivateKey
	ecKey   *ecdsa.PrivateKey
	fetches atomic.Int32
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := &issuer{rsaKey: rk, ecKey: ek}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss.URL, "jwks_uri": iss.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		iss.fetches.Add(1)
		b64 := base64.RawURLEncoding.EncodeToString
		ecPoint, _ := ek.PublicKey.Bytes()
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{
			{"kty": "RSA", "kid": "r1", "use": "sig", "n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes())},
			{"kty": "EC", "kid": "e1", "crv": "P-256", "x": b64(ecPoint[1:33]), "y": b64(ecPoint[33:])},
			{"kty": "RSA", "kid": "enc", "use": "enc", "n": b64(rk.N.Bytes()), "e": "AQAB"},
		}})
	})
	iss.Server = httptest.NewTLSServer(mux)
	t.Cleanup(iss.Close)
	return iss
}

// sign makes a token of claims under header alg and kid.
func (iss *issuer) sign(t *testing.T, alg, kid string, claims map[string]any) string {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signed := b64(h) + "." + b64(c)
	digest := sha256.Sum256([]byte(signed))
	var sig []byte
	switch alg {
	case "RS256":
		s, err := rsa.SignPKCS1v15(rand.Reader, iss.rsaKey, crypto.SHA256, digest[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = s
	case "ES256":
		r, s, err := ecdsa.Sign(rand.Reader, iss.ecKey, digest[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	default:
		sig = []byte("not a signature")
	}
	return signed + "." + b64(sig)
}

func (iss *issuer) claims(extra map[string]any) map[string]any {
	c := map[string]any{"iss": iss.URL, "aud": "uds-api", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

func TestVerifier(t *testing.T) {
	iss := newIssuer(t)
	v := NewVerifier(iss.URL, []string{"other", "uds-api"}, "sub", iss.Client())
	ctx := context.Background()
	for _, tc := range []struct {
		name, alg, kid string
		claims         map[string]any
		token          string
		want           string
		refused        string
	}{
		{name: "RS256", alg: "RS256", kid: "r1", want: "alice"},
		{name: "ES256", alg: "ES256", kid: "e1", want: "alice"},
		{name: "an audience among several", alg: "RS256", kid: "r1", claims: map[string]any{"aud": []string{"x", "uds-api"}}, want: "alice"},
		{name: "client_id where there is no aud (Cognito's access tokens)", alg: "RS256", kid: "r1",
			claims: map[string]any{"aud": nil, "client_id": "uds-api"}, want: "alice"},
		{name: "expired a little, within the skew", alg: "RS256", kid: "r1", claims: map[string]any{"exp": time.Now().Add(-30 * time.Second).Unix()}, want: "alice"},
		{name: "another claim names the caller", alg: "RS256", kid: "r1", claims: map[string]any{"sub": 7}, refused: `no "sub" claim`},
		{name: "expired", alg: "RS256", kid: "r1", claims: map[string]any{"exp": time.Now().Add(-2 * time.Minute).Unix()}, refused: "expired"},
		{name: "no exp", alg: "RS256", kid: "r1", claims: map[string]any{"exp": nil}, refused: "no expiry"},
		{name: "not yet valid", alg: "RS256", kid: "r1", claims: map[string]any{"nbf": time.Now().Add(5 * time.Minute).Unix()}, refused: "not valid yet"},
		{name: "another issuer", alg: "RS256", kid: "r1", claims: map[string]any{"iss": "https://evil.example"}, refused: "issuer"},
		{name: "another audience", alg: "RS256", kid: "r1", claims: map[string]any{"aud": "someone-else"}, refused: "audience"},
		{name: "no audience", alg: "RS256", kid: "r1", claims: map[string]any{"aud": nil}, refused: "audience"},
		{name: "an unknown key", alg: "RS256", kid: "nope", refused: "not among the issuer's"},
		{name: "a key for encryption only", alg: "RS256", kid: "enc", refused: "not among the issuer's"},
		{name: "alg none", alg: "none", kid: "r1", refused: "not accepted"},
		{name: "HS256 with the public key as secret", alg: "HS256", kid: "r1", refused: "not accepted"},
		{name: "an RSA key under an EC algorithm", alg: "ES256", kid: "r1", refused: "does not verify"},
		{name: "not a JWT", token: "abc", refused: "three parts"},
		{name: "a tampered payload", alg: "RS256", kid: "r1", token: "tamper", refused: "does not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token
			switch tok {
			case "":
				tok = iss.sign(t, tc.alg, tc.kid, iss.claims(tc.claims))
			case "tamper":
				tok = iss.sign(t, tc.alg, tc.kid, iss.claims(nil))
				parts := strings.Split(tok, ".")
				c, _ := json.Marshal(iss.claims(map[string]any{"sub": "mallory"}))
				tok = parts[0] + "." + base64.RawURLEncoding.EncodeToString(c) + "." + parts[2]
			}
			got, err := v.Subject(ctx, tok)
			if tc.refused != "" {
				if !errors.Is(err, errUnauthenticated) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("Subject: %q, %v; want a refusal saying %q", got, err, tc.refused)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Subject: %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestVerifierKeyCache checks that the keys are fetched once while they
// serve, again for a key they lack but not more than once a minute, and
// again once an hour old.
func TestVerifierKeyCache(t *testing.T) {
	iss := newIssuer(t)
	v := NewVerifier(iss.URL, []string{"uds-api"}, "sub", iss.Client())
	now := time.Now()
	v.now = func() time.Time { return now }
	ctx := context.Background()
	good := iss.sign(t, "RS256", "r1", iss.claims(nil))
	unknown := iss.sign(t, "RS256", "rotated", iss.claims(nil))
	for range 3 {
		if _, err := v.Subject(ctx, good); err != nil {
			t.Fatal(err)
		}
	}
	if n := iss.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches of the keys for three tokens, want 1", n)
	}
	for range 3 {
		_, _ = v.Subject(ctx, unknown)
	}
	if n := iss.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches after unknown keys within the minute, want 1", n)
	}
	now = now.Add(2 * time.Minute)
	_, _ = v.Subject(ctx, unknown)
	if n := iss.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after an unknown key a minute later, want 2", n)
	}
	now = now.Add(2 * time.Hour)
	if _, err := v.Subject(ctx, iss.sign(t, "RS256", "r1", iss.claims(map[string]any{"exp": now.Add(time.Hour).Unix()}))); err != nil {
		t.Fatal(err)
	}
	if n := iss.fetches.Load(); n != 3 {
		t.Fatalf("%d fetches after an hour, want 3", n)
	}
}

// TestVerifierIssuerDown checks that an issuer that cannot be reached is
// the function's failure, not the caller's.
func TestVerifierIssuerDown(t *testing.T) {
	iss := newIssuer(t)
	tok := iss.sign(t, "RS256", "r1", iss.claims(nil))
	v := NewVerifier(iss.URL, []string{"uds-api"}, "sub", iss.Client())
	iss.Close()
	if _, err := v.Subject(context.Background(), tok); err == nil || errors.Is(err, errUnauthenticated) {
		t.Fatalf("Subject with the issuer down: %v; want a failure that is not a refusal", err)
	}
}

// FuzzParseToken feeds the token parser what a client may send: it must
// never panic, and what it accepts must be three base64url parts whose
// header and claims are JSON objects.
func FuzzParseToken(f *testing.F) {
	b64 := base64.RawURLEncoding.EncodeToString
	for _, seed := range []string{
		b64([]byte(`{"alg":"RS256","kid":"k"}`)) + "." + b64([]byte(`{"sub":"a","exp":1}`)) + "." + b64([]byte("sig")),
		b64([]byte(`{"alg":"none"}`)) + "." + b64([]byte(`{}`)) + ".",
		b64([]byte(`{"alg":"RS256","crit":["b64"]}`)) + "." + b64([]byte(`{}`)) + ".c2ln",
		b64([]byte(`[]`)) + "." + b64([]byte(`null`)) + ".x",
		"a.b.c", "..", "", "a.b", "a.b.c.d", "%%%.%%%.%%%",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := parseToken(s)
		if err != nil {
			return
		}
		if strings.Count(s, ".") != 2 || tok.claims == nil || !strings.HasPrefix(s, string(tok.signed)+".") {
			t.Fatalf("parseToken(%q) accepted %+v", s, tok)
		}
		// Checking what was parsed must not panic either.
		_ = tok.checkSignature(nil)
		_, _ = tok.checkClaims("https://issuer", []string{"aud"}, "sub", time.Now())
	})
}
