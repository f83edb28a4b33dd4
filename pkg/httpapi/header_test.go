package httpapi

import (
	"net/http"
	"testing"
)

// TestHeaderNamesCanonical keeps the names answers set by key in the
// form http.Header keeps them: a name in another form would sit beside
// the canonical one, unseen by Header.Get.
func TestHeaderNamesCanonical(t *testing.T) {
	for _, name := range []string{headerContentType, headerContentLength, headerContentRange, headerETag, headerLocation, headerNoSniff} {
		if c := http.CanonicalHeaderKey(name); c != name {
			t.Errorf("header name %q is kept as %q", name, c)
		}
	}
}
