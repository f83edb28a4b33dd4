package httpapi_test

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Cursors reveal nothing of where they stand: an index query's carries
// neither the last value nor the last id, a list's not the last sort key,
// an item history's not the last version, however their base64 is read.
// A cursor tampered with is still refused.
func TestCursorsRevealNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const value, id, sortKey = "confidential-status", "hidden-item-id", "private-sort-key"
	e.do("PUT", adminApps+"/namespaces/sealed", `{"access": "shared", "history": {"versions": 20},
		"indexes": [{"name": "byStatus", "path": "/status", "type": "string"}]}`).expect(t, 200)
	e.buildIndexes(t, "sealed")
	for _, item := range []string{id, id + "-2"} {
		e.do("POST", base+"/sealed/"+item, `{"data":{"status":"`+value+`"}}`).expect(t, 201)
	}
	for _, sk := range []string{sortKey, sortKey + "-2"} {
		e.do("POST", base+"/sealed/list/"+sk, `{"data":1}`).expect(t, 201)
	}
	// Version 12 is the last a page of one shows: its position, "12c",
	// is three bytes, which 64 bytes of ciphertext hold by chance with a
	// probability of about 4e-6.
	for n := 2; n <= 12; n++ {
		e.do("PUT", base+"/sealed/"+id, `{"data":{"status":"`+value+`"}}`).expect(t, 200)
	}
	for _, tc := range []struct {
		name, path, cursorOf string
		hidden               []string
	}{
		{"index query", "/sealed?index=byStatus&eq=" + value + "&limit=1", "items", []string{value, id}},
		{"list", "/sealed/list/list?limit=1", "list", []string{sortKey}},
		{"history", "/sealed/" + id + "?history&limit=1", "versions", []string{"12c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.on(t)
			r := e.do("GET", base+tc.path, "").expect(t, 200)
			c, _ := r.body["cursor"].(string)
			if c == "" || r.body[tc.cursorOf] == nil {
				t.Fatalf("no cursor: %s", r.raw)
			}
			for _, secret := range tc.hidden {
				if where := revealed(c, secret); where != "" {
					t.Errorf("cursor %q reveals %q: %s", c, secret, where)
				}
			}
			e.do("GET", base+tc.path+"&cursor="+url.QueryEscape(c), "").expect(t, 200)
			sealed, err := base64.RawURLEncoding.DecodeString(c)
			if err != nil {
				t.Fatalf("cursor %q is not base64url of one piece: %v", c, err)
			}
			sealed[len(sealed)/2] ^= 1
			r = e.do("GET", base+tc.path+"&cursor="+base64.RawURLEncoding.EncodeToString(sealed), "").expect(t, 400)
			if r.body["error"] != "Invalid cursor" {
				t.Errorf("a cursor tampered with: %s", r.raw)
			}
		})
	}
}

// revealed says where in cursor secret can be read, as it is or with each
// byte shifted by one (as index sort keys store strings): in any
// dot-separated part of it read as base64, and in any part of what that
// holds read as base64 again. It is "" when nowhere.
func revealed(cursor, secret string) string {
	shifted := []byte(secret)
	for i := range shifted {
		shifted[i]++
	}
	layers := []string{cursor}
	for depth := 0; depth < 3; depth++ {
		var next []string
		for _, layer := range layers {
			if strings.Contains(layer, secret) || strings.Contains(layer, string(shifted)) {
				return "in " + strconv.Quote(layer)
			}
			for _, part := range strings.Split(layer, ".") {
				for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.RawStdEncoding} {
					if b, err := enc.DecodeString(strings.TrimRight(part, "=")); err == nil {
						next = append(next, string(b))
					}
				}
			}
		}
		layers = next
	}
	return ""
}
