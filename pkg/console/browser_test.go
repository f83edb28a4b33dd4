package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/console"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/uds"
)

const (
	app = "d53065bd-f932-4841-83fb-849717d8df0f"
	// otherApp is a second app a person stores data in.
	otherApp = "0b4e7c4e-6f0a-4b43-9d53-2f6c1e0f6a11"
	// EnvChromium names the browser to drive (scripts/chromium.sh prints
	// it); without it, chromium is looked for on the PATH.
	envChromium = "CHROMIUM"
	// envScreenshots names the directory the screenshots go to: the test's
	// own temporary directory is removed when it ends.
	envScreenshots = "CONSOLE_SCREENSHOTS"
)

// findChromium finds the browser, or fails the test saying how to install it:
// a machine without it must not pass the console's tests by skipping them.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("chromium is not installed: the console's browser tests drive it. scripts/chromium.sh installs Debian's package " +
		"(apt-get install -y chromium, as root), and make test-console runs it; or set " + envChromium + " to a Chromium binary")
	return ""
}

// screenshots is the directory the screenshots go to: $CONSOLE_SCREENSHOTS,
// or build/console-screenshots at the module's root.
func screenshots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "build", "console-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one tab of a headless Chromium on the console of srv.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string

	mu sync.Mutex
	// errs are the page's errors not yet failed a test for: its uncaught
	// exceptions and unhandled rejections, its console.error calls (which
	// the page makes for any failure of its own code it catches), and the
	// browser's own errors but the network's (a 404 the page asked for
	// and shows is no fault of the page).
	errs []string
	// tolerated are texts of errors a test provokes on purpose.
	tolerated []string
}

// listen collects the page's errors from the browser's console events,
// from before the first page is loaded.
func (b *browser) listen() {
	messages := chromedp.Console(b.ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type != chromedp.ConsoleException && m.Type != chromedp.ConsoleError || m.Source == "network" {
				continue
			}
			b.mu.Lock()
			b.errs = append(b.errs, fmt.Sprintf("%s at %s:%d", m, m.URL, m.Line+1))
			b.mu.Unlock()
		}
	}()
}

// pageErrors fails the test for each error the page reported since the
// last call, but those it tolerates.
func (b *browser) pageErrors() {
	b.t.Helper()
	b.mu.Lock()
	errs := b.errs
	b.errs = nil
	tolerated := b.tolerated
	b.mu.Unlock()
next:
	for _, e := range errs {
		for _, want := range tolerated {
			if strings.Contains(e, want) {
				continue next
			}
		}
		b.t.Errorf("the page reported an error: %s", e)
	}
}

// tolerate lets the page report errors that say text, which the part of a
// test that calls it (b.run) provokes on purpose.
func (b *browser) tolerate(text string) {
	b.mu.Lock()
	b.tolerated = append(b.tolerated, text)
	b.mu.Unlock()
}

// run runs a part of a test in the browser, and fails it for any error the
// page reported meanwhile.
func (b *browser) run(t *testing.T, name string, f func(t *testing.T)) {
	t.Run(name, func(t *testing.T) {
		b.t = t
		f(t)
		// An error the last step's work reports a moment after the step
		// is still this part's.
		time.Sleep(100 * time.Millisecond)
		b.pageErrors()
		b.mu.Lock()
		b.tolerated = nil
		b.mu.Unlock()
	})
}

// newBrowser starts Chromium once for the whole test (its start is the
// slow part) and opens a tab.
func newBrowser(t *testing.T, chromium, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900))
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, stop := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		stop()
		stopAlloc()
	})
	// The browser lives as long as the context of its first run: that one
	// has no time limit, and each step after it has its own.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	b := &browser{t: t, ctx: ctx, base: base, dir: screenshots(t)}
	b.listen()
	b.do(chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+console.Path+"#/apps"))
	b.ready()
	t.Cleanup(func() {
		b.t = t
		b.pageErrors()
	})
	return b
}

// do runs actions, each step within a minute.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v\n%s", err, b.page())
	}
}

// eval answers a JavaScript expression's value (with
// chromedp.EvalAwaitPromise, the value its promise ends with).
func eval[T any](b *browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v\n%s", expr, err, b.page())
	}
	return v
}

// page is the text the page shows, for failure messages.
func (b *browser) page() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main")?.innerText ?? ""`))
	return "the page shows:\n" + text
}

// until waits for a JavaScript condition to hold.
func (b *browser) until(cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(25*time.Second))); err != nil {
		b.t.Fatalf("waiting for %s: %v\n%s", cond, err, b.page())
	}
}

// ready waits until the page of the location's hash is shown whole.
func (b *browser) ready() {
	b.t.Helper()
	b.until(`location.hash !== "" && document.querySelector("main").dataset.ready === location.hash`)
	b.pageErrors()
}

// open shows the page of hash, as a person following a link would.
func (b *browser) open(hash string) {
	b.t.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector("main").dataset.ready = "";
		location.hash === %[1]q ? window.dispatchEvent(new HashChangeEvent("hashchange")) : (location.hash = %[1]q)`, hash)))
	b.ready()
}

// text is an element's text, "" when there is none.
func (b *browser) text(css string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`document.querySelector(%q)?.innerText ?? ""`, css))
}

// fill sets a control's value as typing would, input event included.
func (b *browser) fill(css, value string) {
	b.t.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const el = document.querySelector(%q);
		el.value = %q; el.dispatchEvent(new Event("input", {bubbles: true})); })()`, css, value)))
}

// press clicks the button (or link) whose text is label.
func (b *browser) press(label string) {
	b.t.Helper()
	b.do(chromedp.Click(fmt.Sprintf(`//*[self::button or self::a][normalize-space()=%q]`, label), chromedp.NodeVisible))
}

// clickOn clicks the element css names.
func (b *browser) clickOn(css string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible))
}

// alert waits until the element css names shows an error (role=alert)
// that says want.
func (b *browser) alert(css, want string) {
	b.t.Helper()
	b.until(fmt.Sprintf(`[...(document.querySelector(%q)?.querySelectorAll("[role=alert]") ?? [])].some((e) => e.innerText.includes(%q))`, css, want))
}

// shot saves the page as it stands at 1280 and at 390 px wide.
func (b *browser) shot(name string) {
	b.t.Helper()
	for _, width := range []int64{1280, 390} {
		b.do(chromedp.EmulateViewport(width, 900))
		ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			b.t.Fatalf("screenshot: %v", err)
		}
		file := filepath.Join(b.dir, fmt.Sprintf("%s-%d.png", name, width))
		if err := os.WriteFile(file, png, 0o644); err != nil {
			b.t.Fatal(err)
		}
		// Nothing may be wider than the window: at 390 px a table scrolls
		// inside its box, the page itself does not.
		if wide := eval[int](b, `document.documentElement.scrollWidth`); wide > int(width) {
			b.t.Errorf("%s at %d px: the page is %d px wide", name, width, wide)
		}
	}
	b.do(chromedp.EmulateViewport(1280, 900))
}

// exported is an export record's key and owner.
type exported struct {
	Owner   string `json:"owner"`
	ID      string `json:"id"`
	SortKey string `json:"sortKey"`
}

// keysOf is records' owners and keys, a line each.
func keysOf(rs []exported) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s %s %s\n", r.Owner, r.ID, r.SortKey)
	}
	return b.String()
}

// exportOf reads a namespace's records from the API's export, without
// kept versions, as the console's browsing reads them.
func exportOf(t *testing.T, api *url.URL, namespace string) []exported {
	t.Helper()
	var out []exported
	for cursor := ""; ; {
		q := url.Values{"namespace": {namespace}, "history": {"false"}, "limit": {"1000"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		res, err := http.Get(api.JoinPath("/rest/api/v1/admin/apps", app, "export").String() + "?" + q.Encode())
		must(t, err)
		var page struct {
			Records []json.RawMessage `json:"records"`
			Cursor  string            `json:"cursor"`
		}
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("export of %s: %d, %v", namespace, res.StatusCode, err)
		}
		for _, raw := range page.Records {
			var r exported
			must(t, json.Unmarshal(raw, &r))
			out = append(out, r)
		}
		if cursor = page.Cursor; cursor == "" {
			return out
		}
	}
}

// policyOf is a namespace's policy as the API answers it.
func policyOf(t *testing.T, api *url.URL, namespace string) map[string]any {
	t.Helper()
	res, err := http.Get(api.JoinPath("/rest/api/v1/admin/apps", app, "namespaces", namespace).String())
	must(t, err)
	defer res.Body.Close()
	var p map[string]any
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the policy of %s: %d, %v", namespace, res.StatusCode, err)
	}
	return p
}

// pngOf is a PNG picture of w by h pixels.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{R: uint8(2 * x), G: 120, B: uint8(3 * y), A: 255})
		}
	}
	var buf bytes.Buffer
	must(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestConsoleInBrowser clicks through every page of the console in
// headless Chromium, against the API on the test engine with the console
// mounted as the local server mounts it, and checks what the page shows
// against what the API answers.
func TestConsoleInBrowser(t *testing.T) {
	chromium := findChromium(t)
	// The API's changes feed needs the stream poller the local server
	// runs: the recent changes panel reads it.
	api, err := url.Parse(apitest.FeedServer(t, apitest.Budget))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(console.Mount(httputil.NewSingleHostReverseProxy(api), console.Local(true)))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	as := func(subject string) *client.Client {
		c, err := client.New(api.String(), client.WithSubject(subject))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	admin := as("")
	// Three users of the app, near their limits in different measures.
	for user, n := range map[string]int{"alice": 8, "bob": 3, "carol": 2} {
		for i := range n {
			_, err := as(user).Create(ctx, client.Key{App: app, Namespace: "prefs", ID: fmt.Sprintf("%s-%d", user, i)},
				map[string]any{"theme": "dark", "n": i})
			must(t, err)
		}
	}
	_, err = admin.SetAppLimits(ctx, app, client.Limits{LimitItems: 10, LimitBytes: 5000})
	must(t, err)
	_, err = admin.SetUserLimits(ctx, app, "bob", client.Limits{LimitItems: 4})
	must(t, err)
	b := newBrowser(t, chromium, srv.URL)

	b.run(t, "header", func(t *testing.T) {
		// The header names the local server and the caller field's
		// subject, as it changes.
		b.fill("#caller", "")
		if got := b.text("#stack"); got != "local server · subject anonymous" {
			t.Errorf("the header says %q", got)
		}
		b.fill("#caller", "zoe")
		if got := b.text("#stack"); got != "local server · subject zoe" {
			t.Errorf("the header says %q after the caller changed", got)
		}
		b.fill("#caller", "")
	})

	b.run(t, "apps", func(t *testing.T) {
		_, err := admin.RegisterApp(ctx, app, "Fitness", "Workouts and goals")
		must(t, err)
		b.open("#/apps")
		// The registered app, its description and default limits, and its
		// users, items and bytes summed over the users listing.
		b.until(`document.querySelector("#apps-table tbody tr td:nth-child(6)")?.innerText === "3"`)
		var items, bytes int64
		for u, err := range admin.AppUsers(ctx, app) {
			must(t, err)
			items += u.Items
			bytes += u.Bytes
		}
		row := eval[[]string](b, `[...document.querySelectorAll("#apps-table tbody tr:first-child td")].map((td) => td.innerText)`)
		want := []string{"Fitness", app, "Workouts and goals", "10", "4.9 KiB", "3", strconv.FormatInt(items, 10), fmt.Sprintf("%.1f KiB", float64(bytes)/1024), "Browse data"}
		if fmt.Sprint(row) != fmt.Sprint(want) {
			t.Errorf("the app's row %q, want %q", row, want)
		}
		b.fill(`input[name="name"]`, "fitness")
		b.press("Find")
		b.until(`document.querySelector("#found")?.innerText.includes("Workouts and goals")`)
		// An app by its id, registered or not.
		b.fill(`input[name="app"]`, strings.ToUpper(app))
		b.press("Open")
		b.ready()
		if got := eval[string](b, "location.hash"); got != "#/apps/"+app+"/users" {
			t.Errorf("opened %s", got)
		}
		b.open("#/apps")
		if got := b.text(".recent"); !strings.Contains(got, app) {
			t.Errorf("opened recently: %q", got)
		}
		b.shot("apps")
	})

	b.run(t, "users", func(t *testing.T) {
		b.open("#/apps/" + app + "/users")
		type bar struct{ Used, Limit int64 }
		type row struct {
			User         string
			Items, Bytes bar
		}
		rows := func() []row {
			return eval[[]row](b, `[...document.querySelectorAll("#users-table tbody tr")].map((tr) => {
				const m = [...tr.querySelectorAll("meter")].map((x) => ({used: +x.dataset.used, limit: +x.dataset.limit}));
				return {user: tr.dataset.user, items: m[0], bytes: m[1]};
			})`)
		}
		check := func() []row {
			t.Helper()
			got := rows()
			for _, r := range got {
				q, err := admin.UserQuota(ctx, app, r.User)
				must(t, err)
				if r.Items.Used != q.UsedItems || r.Items.Limit != *q.LimitItems || r.Bytes.Used != q.UsedBytes || r.Bytes.Limit != *q.LimitBytes {
					t.Errorf("%s's bars %+v, the API's quota %d/%d items, %d/%d bytes", r.User, r, q.UsedItems, *q.LimitItems, q.UsedBytes, *q.LimitBytes)
				}
			}
			return got
		}
		got := check()
		order := func(rs []row) string {
			var names []string
			for _, r := range rs {
				names = append(names, r.User)
			}
			return strings.Join(names, ",")
		}
		// alice has 8 of 10 items, bob 3 of 4, carol 2 of 10.
		if order(got) != "alice,bob,carol" {
			t.Errorf("closest to a limit first: %s", order(got))
		}
		b.shot("users")
		b.clickOn(`[data-sort="user"]`)
		if got := order(rows()); got != "alice,bob,carol" {
			t.Errorf("by user: %s", got)
		}
		b.clickOn(`[data-sort="user"]`)
		if got := order(rows()); got != "carol,bob,alice" {
			t.Errorf("by user, descending: %s", got)
		}

		// carol's own limit, then cleared.
		b.clickOn(`tr[data-user="carol"] button`)
		b.fill(`input[name="limitItems"]`, "3")
		b.press("Set limits")
		b.until(`document.querySelector('tr[data-user="carol"] meter')?.dataset.limit === "3"`)
		check()
		b.press("Clear override")
		b.until(`document.querySelector('tr[data-user="carol"] meter')?.dataset.limit === "10"`)
		check()
		if q, err := admin.UserQuota(ctx, app, "carol"); err != nil || *q.LimitItems != 10 {
			t.Errorf("carol's limit after the clear: %v, %v", q.LimitItems, err)
		}
		b.press("Recompute usage")
		b.until(`document.querySelector("[data-drift]") != null`)
		var drift map[string]int64
		must(t, json.Unmarshal([]byte(b.text("[data-drift]")), &drift))
		if drift["items"] != 0 || drift["bytes"] != 0 {
			t.Errorf("drift %v, want none", drift)
		}
		b.shot("user-panel")
	})

	b.run(t, "quota mode", func(t *testing.T) {
		b.open("#/apps/" + app + "/users")
		// shows checks the mode the page shows and selects against the
		// API's.
		shows := func(want uds.QuotaMode) {
			t.Helper()
			b.until(fmt.Sprintf(`document.querySelector("#quota-mode-current")?.dataset.mode === %q`, want))
			if got := eval[string](b, `document.querySelector('select[name="quotaMode"]').value`); got != string(want) {
				t.Errorf("the select shows %q, want %q", got, want)
			}
			if m, err := admin.QuotaMode(ctx, app); err != nil || m != want {
				t.Errorf("the API's mode %q, %v; the page shows %q", m, err, want)
			}
		}
		shows(uds.QuotaStrict)
		// Each mode is explained beside the choice.
		if got := b.text("#quota-modes"); !strings.Contains(got, "never passed") || !strings.Contains(got, "within the stream's lag") {
			t.Errorf("the modes explained as %q", got)
		}
		b.do(chromedp.SetValue(chromedp.CSS(`select[name="quotaMode"]`), "streamed"))
		b.press("Save mode")
		shows(uds.QuotaStreamed)
		b.until(`document.body.innerText.includes("Quota mode set to streamed")`)
		b.shot("quota-mode")
		// Read again, the page shows what the API keeps.
		b.open("#/apps/" + app + "/users")
		shows(uds.QuotaStreamed)
		b.do(chromedp.SetValue(chromedp.CSS(`select[name="quotaMode"]`), "strict"))
		b.press("Save mode")
		shows(uds.QuotaStrict)
	})

	b.run(t, "namespaces", func(t *testing.T) {
		_, err := as("alice").Create(ctx, client.Key{App: app, Namespace: "notes", ID: "n1"}, map[string]any{"text": "hi"})
		must(t, err)
		_, err = admin.SetPolicy(ctx, app, "journal", client.Policy{Access: "shared", History: &client.HistoryPolicy{Versions: 5}})
		must(t, err)
		b.open("#/apps/" + app + "/namespaces")
		if got := b.text("#namespaces-table"); !strings.Contains(got, "journal") || !strings.Contains(got, "5 versions") {
			t.Errorf("namespaces: %q", got)
		}
		// The app's rate limits.
		b.fill(`input[name="perCaller-rate"]`, "5")
		b.fill(`input[name="perCaller-burst"]`, "10")
		b.press("Set rate limits")
		b.until(`document.body.innerText.includes("Rate limits set.")`)
		rl, err := admin.AppRateLimits(ctx, app)
		must(t, err)
		if rl.PerCaller == nil || rl.PerCaller.RequestsPerSecond != 5 || rl.PerCaller.Burst != 10 || rl.PerApp != nil {
			t.Errorf("rate limits %+v", rl)
		}
		b.fill(`input[name="perApp-rate"]`, "7")
		b.press("Set rate limits")
		b.alert("form[aria-label='Rate limits'] + div", "400 Invalid perApp")
		b.shot("namespaces")
		must(t, admin.ClearAppRateLimits(ctx, app))

		// notes holds data: making it private is refused (409).
		b.open("#/apps/" + app + "/namespaces/notes")
		b.do(chromedp.SetValue(chromedp.CSS(`select[name="access"]`), "private"))
		b.press("Save policy")
		b.alert("#policy-result", "409 Namespace holds data")
		// The schema's JSON is checked while typing; the API's 400 on save.
		b.do(chromedp.SetValue(chromedp.CSS(`select[name="access"]`), "shared"), chromedp.SendKeys(chromedp.CSS("#schema"), `{"type": `))
		b.until(`document.querySelector("#schema-error").textContent.startsWith("Not valid JSON")`)
		if got := eval[string](b, `document.querySelector("#schema").getAttribute("aria-invalid")`); got != "true" {
			t.Errorf("aria-invalid %q", got)
		}
		b.shot("schema-error")
		b.do(chromedp.SendKeys(chromedp.CSS("#schema"), `5}`))
		b.until(`document.querySelector("#schema-error").textContent === ""`)
		b.press("Save policy")
		b.alert("#policy-result", "400 Invalid schema")
		b.fill("#schema", `{"type": "object", "required": ["text"]}`)
		b.press("Save policy")
		b.until(`document.querySelector("#policy-result").innerText.includes("Policy saved")`)
		p, err := admin.Policy(ctx, app, "notes")
		must(t, err)
		if string(p.Schema) != `{"type":"object","required":["text"]}` {
			t.Errorf("schema saved %s", p.Schema)
		}

		// secret is empty: making it private is announced (202), then
		// completed by sending it again once it settles.
		b.open("#/apps/" + app + "/namespaces/secret")
		b.do(chromedp.SetValue(chromedp.CSS(`select[name="access"]`), "private"))
		b.press("Save policy")
		b.until(`document.querySelector("#complete-change") != null`)
		if got := b.text("#policy-result"); !strings.Contains(got, "202 Change announced") || !strings.Contains(got, "Retry-After: 1 s") {
			t.Errorf("the announcement: %q", got)
		}
		// The change is the server's state: after a reload the page shows
		// it, its target in the form, and the button that completes it.
		b.do(chromedp.Reload())
		b.ready()
		b.until(`document.querySelector("#complete-change") != null`)
		if got := b.text("#pending-change"); !strings.Contains(got, "Change under way: shared to private") {
			t.Errorf("after a reload the change shows as %q", got)
		}
		if got := eval[string](b, `document.querySelector('select[name="access"]').value`); got != "private" {
			t.Errorf("after a reload the form shows access %q, the change's target is private", got)
		}
		b.shot("policy-202")
		// Saving shared would cancel the change: the page asks, and sends
		// nothing when told no.
		b.do(chromedp.SetValue(chromedp.CSS(`select[name="access"]`), "shared"))
		b.press("Save policy")
		b.until(`document.querySelector("#confirm").open`)
		if got := b.text("#confirm-text"); !strings.Contains(got, "cancels that change") {
			t.Errorf("the question: %q", got)
		}
		b.clickOn("#confirm-cancel")
		b.until(`document.querySelector("#policy-result").innerText.includes("Nothing sent")`)
		if p, err := admin.Policy(ctx, app, "secret"); err != nil || p.Pending == nil || p.Pending.Access != "private" {
			t.Errorf("after a save declined, secret's policy %+v, %v", p, err)
		}
		time.Sleep(1200 * time.Millisecond)
		b.clickOn("#complete-change")
		b.until(`document.querySelector("#policy-result").innerText.includes("Policy saved")`)
		if p, err := admin.Policy(ctx, app, "secret"); err != nil || p.Access != "private" || p.Pending != nil {
			t.Errorf("secret's policy %+v, %v", p, err)
		}
	})

	b.run(t, "policy form", func(t *testing.T) {
		// products holds items: its history, index and binary rule are set
		// through the form, and the index built from the page.
		for i, price := range []int{30, 10, 20} {
			_, err := as("pat").Create(ctx, client.Key{App: app, Namespace: "products", ID: fmt.Sprintf("p%d", i)}, map[string]any{"price": price})
			must(t, err)
		}
		b.open("#/apps/" + app + "/namespaces/products")
		b.fill(`input[name="versions"]`, "3")
		b.fill(`input[name="days"]`, "30")
		b.fill(`textarea[name="indexes"]`, "byPrice:/price:number")
		b.fill(`input[name="contentTypes"]`, "image/png, image/jpeg")
		b.fill(`input[name="maxBytes"]`, "100000")
		b.press("Save policy")
		b.until(`document.querySelector("#policy-result").innerText.includes("Policy saved")`)
		got := policyOf(t, api, "products")
		if fmt.Sprint(got["history"]) != "map[days:30 versions:3]" || fmt.Sprint(got["binary"]) != "map[contentTypes:[image/png image/jpeg] maxBytes:100000]" {
			t.Errorf("the policy saved %v", got)
		}
		// The build: the page advances it until every index is ready.
		for i := 0; ; i++ {
			if i == 20 {
				t.Fatalf("the index build did not end: %v", policyOf(t, api, "products"))
			}
			b.until(`document.querySelector("#policy-state") != null`)
			if eval[bool](b, `document.body.innerText.includes("Every index is ready.")`) {
				break
			}
			b.press("Advance the build")
			b.until(`/Every index is ready|The build goes on/.test(document.querySelector("#policy-result").innerText)`)
			if eval[bool](b, `document.querySelector("#policy-result").innerText.includes("The build goes on")`) {
				time.Sleep(500 * time.Millisecond)
			}
		}
		p, err := admin.Policy(ctx, app, "products")
		must(t, err)
		if len(p.Indexes) != 1 || p.Indexes[0].State != "ready" || p.Indexes[0].ItemsIndexed != 3 || p.IndexBuild != nil {
			t.Errorf("after the build the API's indexes %+v, build %+v", p.Indexes, p.IndexBuild)
		}
		if got := b.text("main"); !strings.Contains(got, "byPrice") || !strings.Contains(got, "ready") {
			t.Errorf("after the build the page shows %q", got)
		}
		// Read again, the form shows what the API keeps.
		b.open("#/apps/" + app + "/namespaces/products")
		form := eval[[]string](b, `["versions", "days", "indexes", "contentTypes", "maxBytes"].map((n) => document.querySelector("[name=" + n + "]").value)`)
		if want := []string{"3", "30", "byPrice:/price:number", "image/png, image/jpeg", "100000"}; fmt.Sprint(form) != fmt.Sprint(want) {
			t.Errorf("the form shows %q, want %q", form, want)
		}
		b.shot("policy-form")
	})

	b.run(t, "default limits", func(t *testing.T) {
		b.open("#/apps/" + app + "/users")
		set := func(items, bytes string, want client.Limits, shown string) {
			t.Helper()
			b.fill(`input[name="defaultItems"]`, items)
			b.fill(`input[name="defaultBytes"]`, bytes)
			b.press("Set defaults")
			// The defaults are shown, then the users read again under them.
			b.until(fmt.Sprintf(`document.body.innerText.includes(%q) && !document.querySelector("form[aria-label=\"The app's default limits\"] button").disabled`, shown))
			if l, err := admin.AppLimits(ctx, app); err != nil || l != want {
				t.Errorf("the app's default limits %+v, %v; want %+v", l, err, want)
			}
		}
		set("12", "-1", client.Limits{LimitItems: 12, LimitBytes: -1}, "Items: 12; bytes: unlimited.")
		set("10", "5000", client.Limits{LimitItems: 10, LimitBytes: 5000}, "Items: 10; bytes: 4.9 KiB.")
	})

	b.run(t, "data", func(t *testing.T) {
		// The page acts as alice on prefs; dave, who has no limit of his
		// own below the app's, stores the rest.
		alice, dave := as("alice"), as("dave")
		key := client.Key{App: app, Namespace: "prefs", ID: "alice-1"}
		b.fill("#caller", "alice")
		b.open("#/apps/" + app + "/data?ns=prefs&id=alice-1")
		it, err := alice.Get(ctx, key)
		must(t, err)
		if got := b.text("[data-etag]"); got != it.ETag {
			t.Errorf("ETag shown %q, the API's %q", got, it.ETag)
		}
		var shown any
		must(t, json.Unmarshal([]byte(b.text("#item-data")), &shown))
		if want := map[string]any{"theme": "dark", "n": 1.0}; fmt.Sprint(shown) != fmt.Sprint(want) {
			t.Errorf("data shown %v", shown)
		}
		b.shot("item")
		// An edit: the new ETag shown is the API's.
		b.fill("#item-editor", `{"theme": "light"}`)
		b.press("Save (If-Match)")
		b.until(`document.querySelector("#item-result").innerText.startsWith("200 Saved")`)
		it, err = alice.Get(ctx, key)
		must(t, err)
		if got := b.text("[data-etag]"); got != it.ETag || string(it.Data) != `{"theme":"light"}` {
			t.Errorf("after the edit the page shows %q, the API %q %s", got, it.ETag, it.Data)
		}
		if note := b.text("#item-result"); !strings.Contains(note, "as a merge patch of what changed") {
			t.Errorf("the edit was saved %q, want as a merge patch", note)
		}
		// The edit sends what changed: a member left alone keeps its
		// bytes (1.50), which a PUT of the value as JavaScript reads it
		// would write as 1.5.
		spelt, err := alice.Update(ctx, key, json.RawMessage(`{"theme":"light","score":1.50}`))
		must(t, err)
		b.until(`document.querySelector("[data-etag]").innerText === ` + strconv.Quote(spelt.ETag))
		b.fill("#item-editor", `{"theme": "dark", "score": 1.5}`)
		b.press("Save (If-Match)")
		b.until(`document.querySelector("#item-result").innerText.startsWith("200 Saved")`)
		if it, err = alice.Get(ctx, key); err != nil || string(it.Data) != `{"theme":"dark","score":1.50}` {
			t.Errorf("after an edit of the theme the API holds %s, %v", it.Data, err)
		}
		// Someone else writes while the person edits: the page says so
		// and keeps the text; its save is refused (412) and shows the
		// newer version.
		b.fill("#item-editor", `{"theme": "mine"}`)
		newer, err := as("bob").Update(ctx, key, map[string]any{"theme": "bob's"})
		must(t, err)
		b.until(`document.querySelector("#item-live-note").innerText.includes("the editor keeps your text")`)
		b.press("Save (If-Match)")
		b.alert("#item-result", "412 Precondition failed")
		b.until(`document.querySelector("#newer") != null`)
		if got := b.text("#newer h3"); !strings.Contains(got, "version "+strconv.FormatInt(newer.Version, 10)) || !strings.Contains(got, newer.ETag) {
			t.Errorf("the newer version shown as %q, the API's is %d %s", got, newer.Version, newer.ETag)
		}
		b.shot("item-412")
		// Delete, after the confirmation.
		b.press("Edit the newer version")
		b.press("Delete item")
		b.until(`document.querySelector("#confirm").open`)
		b.clickOn("#confirm-ok")
		b.until(`document.querySelector("#item-result").innerText.startsWith("204 Deleted")`)
		if _, err := alice.Get(ctx, key); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("after the delete: %v", err)
		}

		// An item created from the page, where none was.
		fresh := client.Key{App: app, Namespace: "notes", ID: "fresh"}
		b.open("#/apps/" + app + "/data?ns=notes&id=fresh")
		b.alert("#item-result", "404 Key not found")
		b.until(`document.querySelector("#item-live").innerText.startsWith("Live")`)
		b.fill("#item-editor", `{"text": "written from the console"}`)
		b.press("Create item")
		b.until(`document.querySelector("#item-result").innerText.startsWith("201 Created notes/fresh")`)
		if it, err := alice.Get(ctx, fresh); err != nil || string(it.Data) != `{"text":"written from the console"}` || it.CreatedBySubject != "alice" {
			t.Errorf("the item created: %+v, %v", it, err)
		}

		// History: two versions of a journal entry, the first restored.
		jkey := client.Key{App: app, Namespace: "journal", ID: "day1"}
		_, err = dave.Create(ctx, jkey, map[string]any{"text": "first draft"})
		must(t, err)
		_, err = dave.Update(ctx, jkey, map[string]any{"text": "second draft"})
		must(t, err)
		b.open("#/apps/" + app + "/data?ns=journal&id=day1")
		b.until(`document.querySelectorAll("#history-table tbody tr").length === 2`)
		b.shot("history")
		b.clickOn(`tr[data-version="1"] button[aria-label="Restore version 1"]`)
		b.clickOn("#confirm-ok")
		b.until(`document.querySelector("#item-result").innerText.includes("Restored version 1 as version 3")`)
		if it, err := dave.Get(ctx, jkey); err != nil || string(it.Data) != `{"text":"first draft"}` || it.Version != 3 {
			t.Errorf("after the restore: %+v, %v", it, err)
		}

		// A binary value: its type and size, and a link to its bytes.
		png := []byte("\x89PNG\r\n\x1a\n not really an image")
		// Its class name travels percent-encoded in a header, and is
		// shown as it is.
		_, err = dave.PutBytes(ctx, client.Key{App: app, Namespace: "avatars", ID: "dave"}, bytes.NewReader(png), int64(len(png)), "image/png", client.ClassName("Café 100%"))
		must(t, err)
		b.open("#/apps/" + app + "/data?ns=avatars&id=dave")
		if got := b.text("#item-binary"); !strings.Contains(got, "image/png, "+strconv.Itoa(len(png))+" B") {
			t.Errorf("binary value shown as %q", got)
		}
		if got := b.text("dl.meta"); !strings.Contains(got, "Café 100%") {
			t.Errorf("the class name is shown as %q", got)
		}
		if href := eval[string](b, `document.querySelector("#item-binary a").href`); !strings.HasPrefix(href, "blob:") {
			t.Errorf("download link %q", href)
		}
		// Bytes that claim to be a PNG and are not show no picture.
		b.until(`document.querySelector("#item-image [data-undecodable]") != null`)
		// A picture is shown from the bytes the page read, through a
		// blob: URL; an SVG value is not shown.
		picture := pngOf(t, 96, 64)
		_, err = dave.PutBytes(ctx, client.Key{App: app, Namespace: "avatars", ID: "real"}, bytes.NewReader(picture), int64(len(picture)), "image/png")
		must(t, err)
		b.open("#/apps/" + app + "/data?ns=avatars&id=real")
		b.until(`document.querySelector("#item-image img")?.complete && document.querySelector("#item-image img").naturalWidth === 96`)
		if src := eval[string](b, `document.querySelector("#item-image img").src`); !strings.HasPrefix(src, "blob:") {
			t.Errorf("the picture's src %q", src)
		}
		b.shot("binary")
		svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>`)
		_, err = dave.PutBytes(ctx, client.Key{App: app, Namespace: "avatars", ID: "drawing"}, bytes.NewReader(svg), int64(len(svg)), "image/svg+xml")
		must(t, err)
		b.open("#/apps/" + app + "/data?ns=avatars&id=drawing")
		if eval[bool](b, `document.querySelector("#item-image") !== null`) {
			t.Error("an SVG value is shown as a picture")
		}
		// A binary value whose type holds "json" and whose bytes look like
		// a JSON item is still bytes: no data, no editor that would
		// overwrite it with a JSON write.
		lookalike := []byte(`{"data": {"made": "up"}, "version": 99}`)
		_, err = dave.PutBytes(ctx, client.Key{App: app, Namespace: "avatars", ID: "json-bytes"}, bytes.NewReader(lookalike), int64(len(lookalike)), "text/json")
		must(t, err)
		b.open("#/apps/" + app + "/data?ns=avatars&id=json-bytes")
		if got := b.text("#item-binary"); !strings.Contains(got, "text/json, "+strconv.Itoa(len(lookalike))+" B") {
			t.Errorf("a text/json value shown as %q", got)
		}
		if eval[bool](b, `document.querySelector("#item-editor") !== null || document.querySelector("#item-data") !== null`) {
			t.Errorf("a text/json value is shown as a JSON item, with an editor: %s", b.page())
		}

		// A list, two items a page, in both orders and within a range.
		for i := 1; i <= 5; i++ {
			_, err := dave.Create(ctx, client.Key{App: app, Namespace: "activities", ID: "dave", SortKey: fmt.Sprintf("2024-01-0%d", i)}, map[string]any{"n": i})
			must(t, err)
		}
		// shows waits for the list's status to begin with status, and
		// checks the page's sort keys.
		shows := func(status, want string) {
			t.Helper()
			b.until(fmt.Sprintf(`document.querySelector("#list-status").innerText.startsWith(%q)`, status))
			if got := strings.Join(eval[[]string](b, `[...document.querySelectorAll("#list-table tbody tr td:first-child")].map((td) => td.innerText)`), ","); got != want {
				t.Errorf("%s: %s, want %s", status, got, want)
			}
		}
		b.open("#/apps/" + app + "/data?ns=activities&id=dave&list=1")
		b.fill(`input[name="limit"]`, "2")
		b.press("Show")
		shows("Page 1;", "2024-01-01,2024-01-02")
		b.clickOn("#next-page")
		shows("Page 2;", "2024-01-03,2024-01-04")
		b.shot("list")
		// Descending, from 2024-01-02 (inclusive) to 2024-01-05 (exclusive).
		b.do(chromedp.SetValue(chromedp.CSS(`select[name="sortOrder"]`), "DESC"))
		b.fill(`input[name="startKey"]`, "2024-01-02")
		b.fill(`input[name="endKey"]`, "2024-01-05")
		b.press("Show")
		shows("Page 1;", "2024-01-04,2024-01-03")
		b.clickOn("#next-page")
		shows("Page 2, the last", "2024-01-02")
	})

	b.run(t, "browse items", func(t *testing.T) {
		// 30 records of inbox, a namespace without a policy, across six
		// owners, each within the app's limit of 10 items: key-value
		// items, list items of one list, and a picture.
		owners := []string{"erin", "frank", "grace", "heidi", "ivan", "judy"}
		for o, owner := range owners {
			for i := range 5 {
				k := client.Key{App: app, Namespace: "inbox", ID: fmt.Sprintf("m%d-%d", o, i)}
				if i >= 3 {
					k.ID, k.SortKey = "thread", fmt.Sprintf("%s-%d", owner, i)
				}
				_, err := as(owner).Create(ctx, k, map[string]any{"from": owner, "n": i}, client.ClassName("Message"))
				must(t, err)
			}
		}
		picture := pngOf(t, 40, 30)
		_, err := as("erin").PutBytes(ctx, client.Key{App: app, Namespace: "inbox", ID: "picture"}, bytes.NewReader(picture), int64(len(picture)), "image/png")
		must(t, err)
		want := exportOf(t, api, "inbox")
		if len(want) != 31 {
			t.Fatalf("the API exports %d records of inbox, want 31", len(want))
		}
		// rows waits for the status to begin with status, and answers the
		// keys the table shows.
		rows := func(status string) []exported {
			t.Helper()
			b.until(fmt.Sprintf(`document.querySelector("#browse-status")?.innerText.startsWith(%q)`, status))
			return eval[[]exported](b, `[...document.querySelectorAll("#browse-table tbody tr")].map((tr) => ({owner: tr.dataset.owner, id: tr.dataset.id, sortKey: tr.dataset.sk}))`)
		}
		// same compares keys whatever their order.
		same := func(got, want []exported) {
			t.Helper()
			sorted := func(rs []exported) string {
				lines := strings.Split(strings.TrimSuffix(keysOf(rs), "\n"), "\n")
				for i := range lines {
					lines[i] = strings.TrimSpace(lines[i])
				}
				slices.Sort(lines)
				return strings.Join(lines, "\n")
			}
			if sorted(got) != sorted(want) {
				t.Errorf("the page shows\n%s\nthe API's export\n%s", sorted(got), sorted(want))
			}
		}
		// From an empty address bar: the apps, the app's data, its
		// namespaces holding data, the namespace's items.
		b.do(chromedp.Navigate(srv.URL + console.Path))
		b.ready()
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("main").dataset.ready = ""`))
		b.clickOn(`#apps-table a[href="#/apps/` + app + `/data"]`)
		b.ready()
		b.until(`document.querySelector('#namespaces-table tr[data-ns="inbox"]') != null`)
		if got := b.text(`#namespaces-table tr[data-ns="inbox"]`); !strings.Contains(got, "default") || !strings.Contains(got, "shared") {
			t.Errorf("inbox, which has no policy, shows as %q", got)
		}
		b.shot("data-namespaces")
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("main").dataset.ready = ""`))
		b.clickOn(`a[data-items="inbox"]`)
		b.ready()
		// Every page, by key: together they are the export's keys, each
		// page sorted.
		var all []exported
		for page := 1; ; page++ {
			got := rows(fmt.Sprintf("Page %d", page))
			if len(got) > 25 {
				t.Errorf("page %d shows %d items, more than a page's 25", page, len(got))
			}
			if ids := eval[[]string](b, `[...document.querySelectorAll("#browse-table tbody tr")].map((tr) => tr.dataset.id + "\u0000" + tr.dataset.sk + "\u0000" + tr.dataset.owner)`); !slices.IsSorted(ids) {
				t.Errorf("page %d is not sorted by key: %q", page, ids)
			}
			all = append(all, got...)
			if page == 1 {
				b.shot("browse")
			}
			if eval[bool](b, `document.querySelector("#browse-next").disabled`) {
				break
			}
			if page == 10 {
				t.Fatal("more than ten pages of 25 for 31 items")
			}
			b.clickOn("#browse-next")
			b.until(fmt.Sprintf(`document.querySelector("#browse-status")?.innerText.startsWith("Page %d")`, page+1))
		}
		same(all, want)
		// A picture shows as a thumbnail read from its bytes.
		b.do(chromedp.SetValue(chromedp.CSS(`input[name="pageSize"]`), "200"))
		b.press("Show")
		same(rows("Page 1, the last"), want)
		b.until(`document.querySelector('#browse-table tr[data-id="picture"] img')?.naturalWidth === 40`)
		if got := b.text(`#browse-table tr[data-id="m0-0"] td:nth-child(4)`); got != "Message" {
			t.Errorf("the class shown as %q", got)
		}
		// One owner's, newest first.
		b.fill(`input[name="owner"]`, "erin")
		b.do(chromedp.SetValue(chromedp.CSS(`select[name="order"]`), "newest"))
		b.press("Show")
		var erins []exported
		for _, r := range want {
			if r.Owner == "erin" {
				erins = append(erins, r)
			}
		}
		same(rows("Page 1, the last"), erins)
		updated := eval[[]string](b, `[...document.querySelectorAll("#browse-table tbody tr td:nth-child(5)")].map((td) => td.innerText)`)
		if !slices.IsSortedFunc(updated, func(a, b string) int { return strings.Compare(b, a) }) {
			t.Errorf("newest first, erin's items are updated %q", updated)
		}
		b.shot("browse-owner")
		// A row opens its item; Back comes to the same page.
		last := eval[exported](b, `(() => { const tr = document.querySelector("#browse-table tbody tr:last-child"); return {owner: tr.dataset.owner, id: tr.dataset.id, sortKey: tr.dataset.sk}; })()`)
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("main").dataset.ready = ""`))
		b.clickOn(`#browse-table tbody tr:last-child a[data-open]`)
		b.ready()
		it, err := as(last.Owner).Get(ctx, client.Key{App: app, Namespace: "inbox", ID: last.ID, SortKey: last.SortKey})
		must(t, err)
		if got := b.text("[data-etag]"); got != it.ETag {
			t.Errorf("the opened row shows ETag %q, the API's %s/%s is %q", got, last.ID, last.SortKey, it.ETag)
		}
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("main").dataset.ready = ""; history.back()`))
		b.ready()
		same(rows("Page 1, the last"), erins)

		// A private namespace: each owner's diary under one id. Under the
		// local server a row opens as its owner, the only caller who
		// reaches it.
		for _, owner := range []string{"erin", "frank"} {
			_, err := as(owner).Create(ctx, client.Key{App: app, Namespace: "secret", ID: "diary"}, map[string]any{"by": owner})
			must(t, err)
		}
		b.open("#/apps/" + app + "/data?ns=secret&browse=1")
		same(rows("Page 1, the last"), exportOf(t, api, "secret"))
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("main").dataset.ready = ""`))
		b.clickOn(`#browse-table tr[data-owner="frank"] a[data-open]`)
		b.ready()
		b.until(`document.querySelector("#item-data") != null`)
		if got := b.text("#item-data"); !strings.Contains(got, `"frank"`) || eval[string](b, `document.querySelector("#caller").value`) != "frank" {
			t.Errorf("frank's diary opened as %q, showing %s", eval[string](b, `document.querySelector("#caller").value`), got)
		}
		b.fill("#caller", "")
	})

	b.run(t, "recent changes", func(t *testing.T) {
		// A namespace's view shows its changes feed, read up to date and
		// then followed live over the API's WebSocket: an item there
		// before, then one created, updated, and the first deleted, each
		// on the page as the feed shows it, without a reload or a
		// Refresh (the panel reads nothing more once it is live).
		feed := func(id string) client.Key { return client.Key{App: app, Namespace: "feed", ID: id} }
		_, err := admin.Create(ctx, feed("before"), map[string]any{"n": 0})
		must(t, err)
		b.open("#/apps/" + app + "/data?ns=feed&browse=1")
		b.until(`document.querySelector("#changes-state").innerText.startsWith("Live")`)
		// row is the condition that the panel shows id's entry with the
		// version and change given.
		row := func(id string, version int, change string) string {
			return fmt.Sprintf(`(() => { const tr = document.querySelector('#changes-table tr[data-id=%q]');
				return tr !== null && tr.dataset.version === %q && tr.querySelector("td:nth-child(3)").innerText === %q; })()`,
				id, strconv.Itoa(version), change)
		}
		b.until(row("before", 1, "written"))
		_, err = admin.Create(ctx, feed("fresh"), map[string]any{"n": 1})
		must(t, err)
		b.until(row("fresh", 1, "written"))
		// The items above say that they changed, and are read again on
		// request.
		b.until(`document.querySelector("#browse-stale").innerText.startsWith("The items changed since this page was read")`)
		b.press("Read the page again")
		b.until(`document.querySelector('#browse-table tr[data-id="fresh"]') !== null`)
		_, err = admin.Update(ctx, feed("fresh"), map[string]any{"n": 2})
		must(t, err)
		b.until(row("fresh", 2, "written"))
		if got := b.text(`#changes-table tr[data-id="fresh"] td:nth-child(6)`); got != `{"n":2}` {
			t.Errorf("the updated item's value shown as %q", got)
		}
		must(t, admin.Delete(ctx, feed("before")))
		b.until(row("before", 1, "deleted"))
		// Newest first, one row a key, the deleted one marked.
		ids := eval[[]string](b, `[...document.querySelectorAll("#changes-table tbody tr")].map((tr) => tr.dataset.id + (tr.classList.contains("deleted") ? " (deleted)" : ""))`)
		if want := []string{"before (deleted)", "fresh"}; !slices.Equal(ids, want) {
			t.Errorf("the panel shows %q, want %q", ids, want)
		}
		// Refresh reads at once, keeps what was read and goes live again.
		b.press("Refresh")
		b.until(`!document.querySelector("#changes-refresh").disabled && document.querySelector("#changes-state").innerText.startsWith("Live")`)
		if n := eval[int](b, `document.querySelectorAll("#changes-table tbody tr").length`); n != 2 {
			t.Errorf("after Refresh the panel shows %d rows, want 2", n)
		}
		_, err = admin.Create(ctx, feed("after"), map[string]any{"n": 3})
		must(t, err)
		b.until(row("after", 1, "written"))
		b.shot("changes")
		// A cursor is bound to its caller: once the caller changes, the
		// panel reads the feed again from the beginning, as the new one,
		// and follows it live as the new one.
		b.fill("#caller", "zoe")
		b.until(`document.querySelector("#changes-state").innerText.startsWith("Read again from the beginning: the caller changed. Live")`)
		b.until(row("fresh", 2, "written"))
		if b.text("#changes [role=alert]") != "" {
			t.Errorf("after the caller changed the panel shows an error:\n%s", b.page())
		}
		_, err = as("zoe").Update(ctx, feed("after"), map[string]any{"n": 4})
		must(t, err)
		b.until(row("after", 2, "written"))
		b.fill("#caller", "")
	})

	b.run(t, "an item live", func(t *testing.T) {
		// An item's view shows the item's changes as they are made: a
		// write through the API shows on the page without a reload, and
		// so does a delete.
		k := client.Key{App: app, Namespace: "feed", ID: "watched"}
		_, err := admin.Create(ctx, k, map[string]any{"n": 1})
		must(t, err)
		b.open("#/apps/" + app + "/data?ns=feed&id=watched")
		b.until(`document.querySelector("#item-live").innerText.startsWith("Live")`)
		_, err = admin.Update(ctx, k, map[string]any{"n": 2})
		must(t, err)
		b.until(`document.querySelector("#item-data")?.innerText.includes('"n": 2')`)
		if got := b.text("#item-live-note"); got != "Version 2 was written meanwhile: shown." {
			t.Errorf("the change is said as %q", got)
		}
		b.shot("item-live")
		must(t, admin.Delete(ctx, k))
		b.until(`document.querySelector("#item-title")?.innerText.endsWith("no item")`)
		b.until(`document.querySelector("#item-live-note").innerText === "The item was deleted meanwhile: shown."`)
	})

	b.run(t, "an app not registered", func(t *testing.T) {
		// An app that holds data and has no name is listed, and
		// registered from the page; from then on it is named.
		other := "0b7e3c1a-5d2f-4e8b-9a61-3c4d5e6f7a80"
		_, err := as("zoe").Create(ctx, client.Key{App: other, Namespace: "notes", ID: "n1"}, map[string]any{"text": "hi"})
		must(t, err)
		b.open("#/apps")
		b.until(`document.querySelector('[data-register="` + other + `"]') != null`)
		b.shot("apps-held")
		b.clickOn(`[data-register="` + other + `"]`)
		b.fill(`input[name="registerName"]`, "Notebook")
		b.press("Register")
		b.ready()
		b.until(`[...document.querySelectorAll("#apps-table tbody tr td:first-child")].some((td) => td.innerText === "Notebook")`)
		if reg, err := admin.App(ctx, other); err != nil || reg.Name != "Notebook" {
			t.Errorf("the registration %+v, %v", reg, err)
		}
		// Every page names the app, its id beside it.
		b.open("#/apps/" + other + "/namespaces")
		if got := b.text("main .sub"); !strings.Contains(got, "Notebook") || !strings.Contains(got, other) {
			t.Errorf("the app shown as %q", got)
		}
	})

	b.run(t, "export and import", func(t *testing.T) {
		b.open("#/apps/" + app + "/transfer")
		b.press("Export")
		b.until(`document.querySelector("#export-status [data-records]") != null`)
		n := 0
		for _, err := range admin.Export(ctx, app) {
			must(t, err)
			n++
		}
		if got := eval[string](b, `document.querySelector("#export-status [data-records]").dataset.records`); got != strconv.Itoa(n) {
			t.Errorf("exported %s records, the API has %d", got, n)
		}
		// The file the page exported, downloaded as a person would, and
		// imported back after a delete: the deleted item imported, the
		// others skipped.
		downloads := t.TempDir()
		b.do(chromedp.Func(func(ctx context.Context, tab *chromedp.Target) error {
			_, err := cdp.Call(ctx, tab, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
				Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads})
			return err
		}))
		b.clickOn("#export-status a")
		file := filepath.Join(downloads, "uds-export-"+app+".json")
		var exported struct{ Records []json.RawMessage }
		for deadline := time.Now().Add(30 * time.Second); len(exported.Records) != n; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the download %s holds %d records, want %d", file, len(exported.Records), n)
			}
			if b, err := os.ReadFile(file); err == nil {
				_ = json.Unmarshal(b, &exported)
			}
		}
		must(t, as("carol").Delete(ctx, client.Key{App: app, Namespace: "prefs", ID: "carol-0"}))
		b.do(chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{file}))
		b.press("Import")
		b.until(`document.querySelector("#import-result") != null`)
		if got, want := b.text("#import-result"), fmt.Sprintf("%d records: imported 1, skipped %d already present, expired 0, conflicts 0.", n, n-1); got != want {
			t.Errorf("import: %q, want %q", got, want)
		}
		if _, err := as("carol").Get(ctx, client.Key{App: app, Namespace: "prefs", ID: "carol-0"}); err != nil {
			t.Errorf("the deleted item after the import: %v", err)
		}
		b.shot("transfer")
	})

	b.run(t, "a person's data", func(t *testing.T) {
		// alice in a second app too, with a list item.
		_, err := as("alice").Create(ctx, client.Key{App: otherApp, Namespace: "progress", ID: "unit1", SortKey: "step1"}, 1)
		must(t, err)
		b.open("#/people")
		b.fill(`input[name="user"]`, "alice")
		b.press("Show")
		b.ready()
		if got := eval[string](b, "location.hash"); got != "#/people/alice" {
			t.Errorf("showed %s", got)
		}
		var apps []string
		for a, err := range admin.UserApps(ctx, "alice") {
			must(t, err)
			apps = append(apps, a.ApplicationUUID)
		}
		shown := eval[[]string](b, `[...document.querySelectorAll("#person-apps tbody tr td:first-child a")].map((a) => a.getAttribute("href"))`)
		if len(apps) != 2 || len(shown) != len(apps) {
			t.Fatalf("the page shows %q, the API names %q", shown, apps)
		}
		for i, a := range apps {
			if shown[i] != "#/apps/"+a+"/users" {
				t.Errorf("app %d links to %s, want %s's users", i, shown[i], a)
			}
		}
		b.press("Export everything")
		b.until(`document.querySelector("#person-export-status [data-records]") != null`)
		n := 0
		for cursor := ""; ; {
			page, err := admin.ExportUserPage(ctx, "alice", cursor, 0)
			must(t, err)
			n += len(page.Records)
			if cursor = page.Cursor; cursor == "" {
				break
			}
		}
		got := eval[[]string](b, `(({ records, apps }) => [records, apps])(document.querySelector("#person-export-status [data-records]").dataset)`)
		if fmt.Sprint(got) != fmt.Sprint([]string{strconv.Itoa(n), "2"}) {
			t.Errorf("exported %q (records, apps), the API has %d records of 2 apps", got, n)
		}
		b.shot("person")

		// carol's data, erased from her page: the receipt counts her
		// records and a usage record in each of her apps.
		_, err = as("carol").Create(ctx, client.Key{App: app, Namespace: "prefs", ID: "carol"}, map[string]any{"theme": "dark"})
		must(t, err)
		want := 0
		for cursor := ""; ; {
			page, err := admin.ExportUserPage(ctx, "carol", cursor, 0)
			must(t, err)
			want += len(page.Records) + len(page.Apps)
			if cursor = page.Cursor; cursor == "" {
				break
			}
		}
		b.open("#/people/carol")
		b.ready()
		b.press("Erase everything")
		b.until(`document.querySelector("#confirm").open`)
		b.clickOn("#confirm-ok")
		b.until(`document.querySelector("#person-erase-status [data-state]") != null`)
		got = eval[[]string](b, `(({ state, erased }) => [state, erased])(document.querySelector("#person-erase-status [data-state]").dataset)`)
		if fmt.Sprint(got) != fmt.Sprint([]string{"done", strconv.Itoa(want)}) {
			t.Errorf("the erase showed %q (state, records erased), want done and %d", got, want)
		}
		receipt, err := admin.Erasure(ctx, "carol")
		if err != nil || !receipt.Done() || receipt.Erased[app]["records"] != 1 {
			t.Errorf("the API's receipt: %+v, %v", receipt, err)
		}
		if page, err := admin.ExportUserPage(ctx, "carol", "", 0); err != nil || len(page.Records)+len(page.Apps) != 0 {
			t.Errorf("carol's export after the erase: %+v, %v", page, err)
		}
		b.shot("person-erased")
	})

	b.run(t, "errors", func(t *testing.T) {
		b.open("#/apps/not-an-app/users")
		b.alert("main", "400 Invalid applicationUuid")
		b.shot("errors")
		// The server gone: a network failure is shown, not swallowed.
		srv.Close()
		b.open("#/apps/" + app + "/namespaces")
		b.alert("main", "Network error")
	})

	b.run(t, "behind uds console", func(t *testing.T) {
		// Where the API does not take the caller from the header, the
		// page has no caller field.
		// The header names the stack and the subject the proxy acts as.
		stack := console.Config{Server: "https://api.example.com/prod", Subject: "alice", Calls: "admin calls signed with SigV4, data calls as alice"}
		proxied := httptest.NewServer(console.Mount(httputil.NewSingleHostReverseProxy(api), stack))
		defer proxied.Close()
		b.do(chromedp.Navigate(proxied.URL + console.Path + "#/apps/" + app + "/users"))
		b.ready()
		if shown := eval[bool](b, `getComputedStyle(document.querySelector("#caller-form")).display !== "none"`); shown {
			t.Error("the caller field is shown")
		}
		if got := b.text("#stack"); got != "https://api.example.com/prod · subject alice" {
			t.Errorf("the header says %q", got)
		}
		if got := eval[string](b, `document.querySelector("#stack").title`); got != stack.Calls {
			t.Errorf("the header's title says %q", got)
		}
		b.shot("proxied")
	})
}
