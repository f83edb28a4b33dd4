package docscheck

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// skipped are the folders whose documents are not the repository's own
// (dependencies, vendored code and its test suites), are build output, or
// are drafts (pending) written for the guide they will be moved into,
// whose links hold once they are there.
var skipped = map[string]bool{
	".git": true, "node_modules": true, "third_party": true, "build": true, "cdk.out": true,
	".data": true, ".tools": true, "testdata": true, "bin": true, "pending": true,
}

// Documents returns the Markdown files under root, as paths relative to
// it, outside the skipped folders.
func Documents(root string) ([]string, error) {
	var docs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && skipped[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			docs = append(docs, rel)
		}
		return nil
	})
	return docs, err
}

// BrokenLinks returns a line for each relative link of the documents
// (paths relative to root) whose file does not exist, or whose anchor is
// none of that file's.
func BrokenLinks(root string, docs []string) ([]string, error) {
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) (map[string]bool, error) {
		if a, ok := anchorsOf[path]; ok {
			return a, nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := Anchors(string(text))
		anchorsOf[path] = a
		return a, nil
	}
	var broken []string
	for _, doc := range docs {
		text, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			return nil, err
		}
		for _, l := range Links(string(text)) {
			target, fragment, _ := strings.Cut(l.Target, "#")
			if target == "" && fragment == "" {
				continue
			}
			if p, err := url.PathUnescape(target); err == nil {
				target = p
			}
			path := filepath.Join(root, doc)
			if target != "" {
				path = filepath.Join(filepath.Dir(path), filepath.FromSlash(target))
			}
			info, err := os.Stat(path)
			if err != nil {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file", doc, l.Line, l.Target))
				continue
			}
			if fragment == "" || info.IsDir() || !strings.HasSuffix(path, ".md") {
				continue
			}
			a, err := anchors(path)
			if err != nil {
				return nil, err
			}
			if f, err := url.PathUnescape(fragment); err == nil {
				fragment = f
			}
			if !a[fragment] {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no heading or anchor #%s there", doc, l.Line, l.Target, fragment))
			}
		}
	}
	return broken, nil
}

// Link is a relative link of a document and the line it is on.
type Link struct {
	Line   int
	Target string
}

var (
	// inlineLink is a link or image, [text](target) or ![alt](target),
	// with an optional title after the target.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// refDefinition is a reference definition, [label]: target.
	refDefinition = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	codeSpan      = regexp.MustCompile("`+[^`]*`+")
	scheme        = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// Links returns the relative links of a Markdown text, outside fenced code
// blocks and code spans: those with a scheme (https:, mailto:) are not
// the repository's to check.
func Links(text string) []Link {
	var links []Link
	lines := strings.Split(text, "\n")
	code := codeLines(lines)
	for i, line := range lines {
		if code[i] {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refDefinition.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, t := range targets {
			if t != "" && !scheme.MatchString(t) {
				links = append(links, Link{Line: i + 1, Target: t})
			}
		}
	}
	return links
}

// codeLines says of each line whether it belongs to a fenced code block,
// its fences included: a block opens with three or more ` or ~ and closes
// with a line of at least as many of the same and nothing else.
func codeLines(lines []string) []bool {
	code := make([]bool, len(lines))
	fence := ""
	for i, line := range lines {
		f, ok := fenceOf(line)
		switch {
		case fence == "" && ok:
			fence = f
		case fence != "" && ok && f[0] == fence[0] && len(f) >= len(fence) && strings.TrimSpace(line) == f:
			fence = ""
		case fence == "":
			continue
		}
		code[i] = true
	}
	return code
}

// fenceOf says whether a line opens or closes a fenced code block, and
// with which fence (``` or ~~~, three or more).
func fenceOf(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return "", false
	}
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return strings.Repeat(c, n), true
		}
	}
	return "", false
}

var (
	heading     = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	explicit    = regexp.MustCompile(`<a\s+(?:id|name)\s*=\s*"([^"]+)"`)
	linkInTitle = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag     = regexp.MustCompile(`<[^>]+>`)
)

// Anchors returns the anchors of a Markdown text as GitHub makes them: a
// slug per heading outside fenced code blocks (repeated slugs numbered
// -1, -2, ...) and every <a id=...> or <a name=...>.
func Anchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	lines := strings.Split(text, "\n")
	code := codeLines(lines)
	for i, line := range lines {
		if code[i] {
			continue
		}
		for _, m := range explicit.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// Slug is GitHub's anchor of a heading: its text as rendered (links by
// their text, no code marks, emphasis or tags), in lower case, with every
// character but letters, digits, marks, spaces, - and _ dropped and each
// space turned into -.
func Slug(title string) string {
	title = linkInTitle.ReplaceAllString(title, "$1")
	title = htmlTag.ReplaceAllString(title, "")
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
