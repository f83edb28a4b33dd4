package uds

import (
	"fmt"
	"net/url"
	"strings"
)

// HeaderText is s (a subject or a class name, which may hold any
// character) as a header value: itself when it is printable ASCII without
// % or spaces at its ends, else percent-encoded as a URL path segment is
// (RFC 8187's encoding, without its charset prefix). Reads answer a binary
// value's fields so, and writes send its class name so.
func HeaderText(s string) string {
	plain := s == strings.TrimSpace(s)
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '%'
	}
	if plain {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > 0x20 && c < 0x7f && c != '%' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// ParseHeaderText reads a header value HeaderText wrote. A value with %
// is percent-encoded, since HeaderText never leaves a % as it is; it is
// not ok when a % begins no escape of two hex digits.
func ParseHeaderText(v string) (string, bool) {
	if !strings.Contains(v, "%") {
		return v, true
	}
	s, err := url.PathUnescape(v)
	return s, err == nil
}
