package store

import (
	"encoding/json"

	"github.com/udsproject/uds/pkg/uds"
)

// storedBinaryRule is a namespace's binary rule as its policy record holds
// it (schema.AttrBinaryRule, JSON text).
type storedBinaryRule struct {
	ContentTypes []string `json:"contentTypes"`
	MaxBytes     int64    `json:"maxBytes,omitempty"`
}

// encodeBinaryRule is the text of a rule: empty for none, which removes
// the attribute.
func encodeBinaryRule(r *uds.BinaryRule) string {
	if r == nil {
		return ""
	}
	b, _ := json.Marshal(storedBinaryRule{ContentTypes: r.ContentTypes, MaxBytes: r.MaxBytes})
	return string(b)
}

// decodeBinaryRule reads a rule's text; nil for none.
func decodeBinaryRule(text string) *uds.BinaryRule {
	var r storedBinaryRule
	if text == "" || json.Unmarshal([]byte(text), &r) != nil {
		return nil
	}
	return &uds.BinaryRule{ContentTypes: r.ContentTypes, MaxBytes: r.MaxBytes}
}
