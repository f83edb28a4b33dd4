package store

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// TestParseTimeAgreesWithTimeParse checks the hand-written reading of
// stored timestamps against time.Parse, on the layout and around it.
func TestParseTimeAgreesWithTimeParse(t *testing.T) {
	t.Parallel()
	cases := []string{
		"2024-01-15T10:30:00.000Z", "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z",
		"2024-02-29T00:00:00.000Z", "2023-02-29T00:00:00.000Z", "2024-04-31T00:00:00.000Z",
		"2024-13-01T00:00:00.000Z", "2024-00-10T00:00:00.000Z", "2024-01-15T24:00:00.000Z",
		"2024-01-15T10:60:00.000Z", "2024-01-15T10:30:60.000Z", "2024-01-15T10:30:00.00Z",
		"2024-01-15T10:30:00Z", "2024-01-15T10:30:00.123456Z", "2024-01-15T10:30:00.000+01:00",
		"2024-1-15T10:30:00.000Z", "2024-01-15 10:30:00.000Z", "2024-01-15T10:30:00.0a0Z", "", "garbage",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		at := time.UnixMilli(rng.Int64N(400 * 365 * 24 * 3600 * 1000)).UTC()
		cases = append(cases, FormatTime(at))
	}
	for _, s := range cases {
		want := time.Time{}
		if p, err := time.Parse(time.RFC3339Nano, s); err == nil {
			want = p.UTC()
		}
		if got := parseTime(s); !got.Equal(want) {
			t.Errorf("parseTime(%q) = %v, time.Parse gives %v", s, got, want)
		}
	}
	for range 2000 {
		at := time.Unix(rng.Int64N(1<<38)-1<<37, rng.Int64N(1e9))
		if got, want := FormatTime(at), at.UTC().Format(timeLayout); got != want {
			t.Errorf("FormatTime(%v) = %s, t.Format gives %s", at, got, want)
		}
	}
}

// TestDecompress checks that stored values expand exactly, and that
// corrupt or oversized ones are refused.
func TestDecompress(t *testing.T) {
	t.Parallel()
	value := []byte(`{"s":"` + strings.Repeat("compressible text ", 2000) + `"}`)
	z := compress(value)
	if got, err := decompress(z); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("decompress gave %d bytes, %v; want the %d stored", len(got), err, len(value))
	}
	for _, tc := range []struct {
		name string
		z    func() []byte
	}{
		{"truncated", func() []byte { return z[:len(z)/2] }},
		{"too short", func() []byte { return z[:10] }},
		{"size too small", func() []byte {
			c := bytes.Clone(z)
			binary.LittleEndian.PutUint32(c[len(c)-4:], uint32(len(value)-1))
			return c
		}},
		{"size too large", func() []byte {
			c := bytes.Clone(z)
			binary.LittleEndian.PutUint32(c[len(c)-4:], uint32(len(value)+1))
			return c
		}},
		{"claims more than UDS stores", func() []byte {
			c := bytes.Clone(z)
			binary.LittleEndian.PutUint32(c[len(c)-4:], uds.MaxDataBytes+1)
			return c
		}},
		{"bad checksum", func() []byte {
			c := bytes.Clone(z)
			c[len(c)-8] ^= 0xff
			return c
		}},
		{"not gzip", func() []byte { return bytes.Repeat([]byte("x"), 40) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := decompress(tc.z()); err == nil {
				t.Errorf("decompress accepted it: %d bytes", len(got))
			}
		})
	}
}

// TestDecodeItemChecksValuesUDSDidNotWrite checks that a stored value
// without a version (written before UDS) is validated on the way out,
// while one UDS wrote goes out as stored.
func TestDecodeItemChecksValuesUDSDidNotWrite(t *testing.T) {
	t.Parallel()
	key := uds.Key{App: "d53065bd-f932-4841-83fb-849717d8df0f", Namespace: "ns", ID: "id"}
	item := func(value, version string) map[string]types.AttributeValue {
		av := map[string]types.AttributeValue{
			schema.AttrDataKey:   &types.AttributeValueMemberS{Value: key.DataKey()},
			schema.AttrDataValue: &types.AttributeValueMemberS{Value: value},
		}
		if version != "" {
			av[schema.AttrVersion] = &types.AttributeValueMemberN{Value: version}
		}
		return av
	}
	for _, tc := range []struct {
		name, value, version string
		ok                   bool
	}{
		{"legacy, valid", `{"a":1}`, "", true},
		{"legacy, not JSON", `{"a":`, "", false},
		{"legacy, empty", ``, "", false},
		{"written by UDS", `{"a":1}`, "3", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, err := decodeItem(key, item(tc.value, tc.version))
			if (err == nil) != tc.ok {
				t.Fatalf("decodeItem: %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && string(it.Data) != tc.value {
				t.Errorf("data %s, want %s", it.Data, tc.value)
			}
		})
	}
}
