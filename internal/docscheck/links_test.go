package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepositoryLinks checks every relative link and anchor of the
// repository's Markdown documents.
func TestRepositoryLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := Documents(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"README.md", filepath.Join("docs", "decisions.md")} {
		if !contains(docs, want) {
			t.Fatalf("%s is not among the documents checked: %v", want, docs)
		}
	}
	broken, err := BrokenLinks(root, docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Errorf("broken link: %s", b)
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestBrokenLinks checks that the checker finds what it must: a missing
// file, a missing anchor in another file and in its own, and that it
// passes what GitHub resolves.
func TestBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Join([]string{
		"# Front",
		"[guide](docs/guide.md), [its part](docs/guide.md#seed-000s-data-families), [again](docs/guide.md#notes-1)",
		"[explicit](docs/guide.md#kept), [here](#front), [image](docs/pic.png), [site](https://example.com/x.md#nowhere)",
		"[gone](docs/missing.md), [no such part](docs/guide.md#nowhere), [not here](#back)",
		"`[in code](docs/missing.md)`",
		"```sh",
		"[in a block](docs/missing.md)",
		"```",
		"[ref]: docs/also-missing.md",
	}, "\n"))
	write("docs/guide.md", "# Guide\n## Seed 000's data families\n## Notes\n## Notes\n<a id=\"kept\"></a>\n```\n# not a heading\n```\n")
	write("docs/pic.png", "")
	broken, err := BrokenLinks(dir, []string{"README.md", filepath.Join("docs", "guide.md")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:4: docs/missing.md: no such file",
		"README.md:4: docs/guide.md#nowhere: no heading or anchor #nowhere there",
		"README.md:4: #back: no heading or anchor #back there",
		"README.md:9: docs/also-missing.md: no such file",
	}
	if strings.Join(broken, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(broken, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"Seed 000's data families":                  "seed-000s-data-families",
		"Streamed quota × expiry reclaim":           "streamed-quota--expiry-reclaim",
		"The `uds` command line":                    "the-uds-command-line",
		"[Deploying](docs/deploying.md) in 5 lines": "deploying-in-5-lines",
		"Delete-all of a list":                      "delete-all-of-a-list",
		"A first request":                           "a-first-request",
	} {
		if got := Slug(title); got != want {
			t.Errorf("Slug(%q) = %q, want %q", title, got, want)
		}
	}
}
