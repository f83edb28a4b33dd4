package blob

import (
	"bytes"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// formMemory is how much of a POST form the engine holds in memory, as
// gofakes3 does; larger files go to temporary files.
const formMemory = 24 << 20

// checkForm checks a POST form (a browser upload) as S3 does: the policy
// signed with the engine's credentials and not expired, and the form
// within every condition of it, with no field the policy does not cover.
// gofakes3 then stores the form it parsed.
func (e *localEngine) checkForm(r *http.Request) *engineError {
	if err := r.ParseMultipartForm(formMemory); err != nil {
		return &engineError{http.StatusBadRequest, "MalformedPOSTRequest", "The body of your POST request is not well-formed multipart/form-data."}
	}
	fields := make(map[string]string, len(r.MultipartForm.Value))
	for name, values := range r.MultipartForm.Value {
		lower := strings.ToLower(name)
		if _, twice := fields[lower]; twice || len(values) != 1 {
			return invalidArgument("the form has field " + strconv.Quote(name) + " more than once")
		}
		fields[lower] = values[0]
	}
	files := r.MultipartForm.File["file"]
	if len(files) != 1 {
		return &engineError{http.StatusBadRequest, "IncorrectNumberOfFilesInPostRequest", "POST requires exactly one file upload per request."}
	}
	if fields["x-amz-algorithm"] != sigV4Algorithm || fields["policy"] == "" {
		return accessDenied("anonymous access: the form is not signed (no x-amz-algorithm " + sigV4Algorithm + " and policy), and the bucket is private")
	}
	scope, fail := e.scope(fields["x-amz-credential"], fields["x-amz-date"])
	if fail != nil {
		return fail
	}
	want := postSignature(e.creds.SecretAccessKey, scope.at.Format("20060102"), scope.region, fields["policy"])
	if !hmac.Equal([]byte(want), []byte(fields["x-amz-signature"])) {
		return signatureMismatch()
	}
	policy, err := parsePolicy(fields["policy"])
	if err != nil {
		return &engineError{http.StatusBadRequest, "InvalidPolicyDocument", "Invalid Policy: " + err.Error()}
	}
	if e.now().After(policy.Expiration) {
		return accessDenied("Invalid according to Policy: Policy expired.")
	}
	bucket, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return policy.admit(bucket, fields, files[0].Size)
}

// postPolicy is a POST form's policy: until when it holds, and the
// conditions every form must meet.
type postPolicy struct {
	Expiration time.Time
	Conditions []condition
}

// condition is one of a policy's conditions: a field equal to a value or
// starting with one (field names are lower case; "bucket" is the bucket
// posted to), or the file's size within a range.
type condition struct {
	op, field, value string
	min, max         int64
}

const (
	opEq         = "eq"
	opStartsWith = "starts-with"
	opLength     = "content-length-range"
)

// parsePolicy reads a policy as S3 does: base64 of a JSON document of an
// expiration and conditions, each {"field": "value"}, ["eq" or
// "starts-with", "$field", "value"] or ["content-length-range", min, max].
func parsePolicy(encoded string) (postPolicy, error) {
	doc, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return postPolicy{}, fmt.Errorf("the policy is not base64")
	}
	var raw struct {
		Expiration *time.Time        `json:"expiration"`
		Conditions []json.RawMessage `json:"conditions"`
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil || raw.Expiration == nil {
		return postPolicy{}, fmt.Errorf("the policy is not a JSON document with an expiration and conditions")
	}
	p := postPolicy{Expiration: *raw.Expiration}
	for _, c := range raw.Conditions {
		cond, err := parseCondition(c)
		if err != nil {
			return postPolicy{}, fmt.Errorf("condition %s: %w", c, err)
		}
		p.Conditions = append(p.Conditions, cond)
	}
	return p, nil
}

func parseCondition(c json.RawMessage) (condition, error) {
	var exact map[string]string
	if json.Unmarshal(c, &exact) == nil {
		if len(exact) != 1 {
			return condition{}, fmt.Errorf("an exact match names one field")
		}
		for field, value := range exact {
			return condition{op: opEq, field: strings.ToLower(field), value: value}, nil
		}
	}
	var list []json.RawMessage
	var op string
	if json.Unmarshal(c, &list) != nil || len(list) != 3 || json.Unmarshal(list[0], &op) != nil {
		return condition{}, fmt.Errorf("not an object of one field or a list of three")
	}
	switch op = strings.ToLower(op); op {
	case opEq, opStartsWith:
		var field, value string
		if json.Unmarshal(list[1], &field) != nil || json.Unmarshal(list[2], &value) != nil || !strings.HasPrefix(field, "$") {
			return condition{}, fmt.Errorf("want [%q, \"$field\", \"value\"]", op)
		}
		return condition{op: op, field: strings.ToLower(field[1:]), value: value}, nil
	case opLength:
		var lo, hi int64
		if json.Unmarshal(list[1], &lo) != nil || json.Unmarshal(list[2], &hi) != nil || lo < 0 || hi < lo {
			return condition{}, fmt.Errorf("want [%q, min, max], 0 <= min <= max", op)
		}
		return condition{op: op, min: lo, max: hi}, nil
	}
	return condition{}, fmt.Errorf("unknown operator %q", op)
}

// admit checks a form posted to bucket, its fields (lower-case names) and
// its file's size, against the policy's conditions, as S3 answers them.
func (p postPolicy) admit(bucket string, fields map[string]string, size int64) *engineError {
	covered := map[string]bool{}
	for _, c := range p.Conditions {
		if c.op == opLength {
			if size < c.min {
				return &engineError{http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size"}
			}
			if size > c.max {
				return &engineError{http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size"}
			}
			continue
		}
		value, present := fields[c.field]
		if c.field == "bucket" {
			value, present = bucket, true
		}
		matches := value == c.value
		if c.op == opStartsWith {
			matches = strings.HasPrefix(value, c.value)
		}
		if !present || !matches {
			return accessDenied(fmt.Sprintf("Invalid according to Policy: Policy Condition failed: [%q, \"$%s\", %q]", c.op, c.field, c.value))
		}
		covered[c.field] = true
	}
	for name := range fields {
		if !covered[name] && !uncoveredField(name) {
			return accessDenied("Invalid according to Policy: Extra input fields: " + name)
		}
	}
	return nil
}

// uncoveredField is a form field no condition needs to name: the policy
// and its signature, and the fields S3 ignores.
func uncoveredField(name string) bool {
	return name == "policy" || name == "x-amz-signature" || strings.HasPrefix(name, "x-ignore-")
}
