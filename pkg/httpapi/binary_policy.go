package httpapi

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/udsproject/uds/pkg/uds"
)

// binaryRuleJSON is a namespace's binary rule as the admin routes show it.
type binaryRuleJSON struct {
	ContentTypes []string `json:"contentTypes"`
	MaxBytes     int64    `json:"maxBytes,omitempty"`
}

func binaryRuleShown(r *uds.BinaryRule) *binaryRuleJSON {
	if r == nil {
		return nil
	}
	return &binaryRuleJSON{ContentTypes: r.ContentTypes, MaxBytes: r.MaxBytes}
}

// binaryRuleBody is a policy body's binary member. maxBytes is read as
// sent, as the history's numbers are (historyNumber).
type binaryRuleBody struct {
	ContentTypes *[]string       `json:"contentTypes"`
	MaxBytes     json.RawMessage `json:"maxBytes"`
}

// parse checks a binary rule: at least one content type, at most
// uds.MaxBinaryTypes, each a media type or a whole type; maxBytes optional,
// a whole number from 1 to uds.MaxObjectBytes.
func (b *binaryRuleBody) parse() (*uds.BinaryRule, error) {
	if b.ContentTypes == nil || len(*b.ContentTypes) == 0 {
		return nil, uds.Invalid("binary.contentTypes", `is required: the media types the namespace accepts, such as ["image/png", "image/*"]`)
	}
	if len(*b.ContentTypes) > uds.MaxBinaryTypes {
		return nil, uds.Invalid("binary.contentTypes", "may name at most %d types, got %d", uds.MaxBinaryTypes, len(*b.ContentTypes))
	}
	rule := &uds.BinaryRule{}
	for i, t := range *b.ContentTypes {
		parsed, err := uds.ParseBinaryType(fmt.Sprintf("binary.contentTypes[%d]", i), t)
		if err != nil {
			return nil, err
		}
		rule.ContentTypes = append(rule.ContentTypes, parsed)
	}
	if present(b.MaxBytes) {
		n, err := strconv.ParseInt(string(b.MaxBytes), 10, 64)
		if err != nil || n < 1 || n > uds.MaxObjectBytes {
			return nil, uds.Invalid("binary.maxBytes", "must be a whole number of bytes from 1 to %d, got %s", int64(uds.MaxObjectBytes), uds.Truncate(string(b.MaxBytes), 64))
		}
		rule.MaxBytes = n
	}
	return rule, nil
}
