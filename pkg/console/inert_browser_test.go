package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/console"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// scriptRan is the title a stored value's script gives the page it runs in.
const scriptRan = "stored script ran"

// TestStoredValuesAreInertInBrowser opens stored values in headless
// Chromium, on the console's origin as make run serves it: an HTML page
// and an SVG image whose scripts would retitle the page they run in do not
// run when their item's URL is opened; and the console's page cannot load
// a stored value the API answers as JavaScript or CSS, which would run in
// the page with its rights.
func TestStoredValuesAreInertInBrowser(t *testing.T) {
	chromium := findChromium(t)
	api, err := url.Parse(apitest.Server(t, apitest.Budget))
	must(t, err)
	srv := httptest.NewServer(console.Mount(httputil.NewSingleHostReverseProxy(api), console.Config{SubjectHeader: true}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	c, err := client.New(api.String(), client.WithSubject("mallory"))
	must(t, err)
	store := func(id, contentType, body string) string {
		t.Helper()
		k := client.Key{App: app, Namespace: "pages", ID: id}
		_, err := c.PutBytes(ctx, k, strings.NewReader(body), int64(len(body)), contentType)
		must(t, err)
		return srv.URL + "/rest/api/v1/data/" + app + "/pages/" + id
	}
	retitle := `document.title = "` + scriptRan + `"`
	b := newBrowser(t, chromium, srv.URL)
	// openInert opens url in the tab as a person following a link would,
	// and fails the test if a stored value's script ran. A value answered
	// as an attachment is saved, not shown: the navigation ends there
	// (net::ERR_ABORTED) and the tab keeps the page it had.
	openInert := func(t *testing.T, url string) {
		t.Helper()
		nav, cancel := context.WithTimeout(b.ctx, time.Minute)
		_, err := chromedp.Run(nav, chromedp.Navigate(url))
		cancel()
		if err != nil && !strings.Contains(err.Error(), "ERR_ABORTED") {
			t.Fatalf("opening %s: %v", url, err)
		}
		if title := eval[string](b, "document.title"); title == scriptRan {
			t.Errorf("a stored value's script ran at %s, opened from %s", eval[string](b, "location.href"), url)
		}
	}

	for _, tc := range []struct{ name, contentType, body string }{
		{"html", "text/html", `<!doctype html><title>stored</title><script>` + retitle + `</script><p>stored page</p>`},
		{"svg", "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"><script>` + retitle + `</script></svg>`},
	} {
		b.run(t, "opening a stored "+tc.name+" value", func(t *testing.T) {
			openInert(t, store(tc.name, tc.contentType, tc.body))
		})
	}

	b.run(t, "the console's link to a stored HTML value's bytes does not show them as a page", func(t *testing.T) {
		store("linked", "text/html", `<!doctype html><title>stored</title><script>`+retitle+`</script>`)
		b.open("#/apps/" + app + "/data?ns=pages&id=linked")
		b.until(`document.querySelector("#item-binary a")?.href.startsWith("blob:")`)
		// The link is a blob: URL of the page's own origin, which carries
		// no header of the API's answer: opened as a page (a new tab, or
		// a middle click) it must not be a document of the console's
		// origin whose script could call the admin routes.
		openInert(t, eval[string](b, `document.querySelector("#item-binary a").href`))
	})

	b.run(t, "the console page loads no stored script or style", func(t *testing.T) {
		script := store("script", "application/javascript", `window.storedScriptRan = true`)
		style := store("style", "text/css", `body { --stored-style: applied }`)
		b.do(chromedp.Navigate(srv.URL + console.Path + "#/apps"))
		b.ready()
		// The browser reports each refusal below as an error of the page.
		b.tolerate("violates the following Content Security Policy directive")
		// Each element is added as an injected script would add it; the
		// promise ends when the browser has loaded or refused it.
		load := func(tag, attr, src string) string {
			return eval[string](b, fmt.Sprintf(`new Promise((done) => {
				const el = document.createElement(%[1]q);
				if (%[1]q === "link") el.rel = "stylesheet";
				el[%[2]q] = %[3]q;
				el.onload = () => done("loaded");
				el.onerror = () => done("refused");
				document.head.append(el);
			})`, tag, attr, src), chromedp.EvalAwaitPromise)
		}
		if got := load("script", "src", script); got != "refused" || eval[bool](b, "window.storedScriptRan === true") {
			t.Errorf("a stored value as the page's script: %s, and it ran: %v", got, eval[bool](b, "window.storedScriptRan === true"))
		}
		if got := load("link", "href", style); got != "refused" || eval[string](b, `getComputedStyle(document.body).getPropertyValue("--stored-style")`) != "" {
			t.Errorf("a stored value as the page's style sheet: %s", got)
		}
		// The page's own modules and style still apply under the policy.
		if eval[string](b, `getComputedStyle(document.querySelector("header.top")).display`) == "inline" {
			t.Error("the page's own style sheet did not apply")
		}
	})
}
