package docs_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's root, relative to this package.
const root = ".."

// readmeMaxLines bounds README.md: a front page read in ten minutes.
const readmeMaxLines = 380

// markdownFiles returns every tracked Markdown file, relative to root
// with '/' separators: git's list when git is there, else a walk of the
// tree without hidden directories.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.md")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range bytes.Split(out, []byte{0}) {
			if len(f) > 0 {
				files = append(files, string(f))
			}
		}
		if len(files) > 0 {
			return files
		}
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	fence      = regexp.MustCompile("(?m)^ {0,3}(```|~~~)")
	inlineCode = regexp.MustCompile("`+[^`\n]*`+")
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional "title"; refLink matches a reference definition.
	inlineLink = regexp.MustCompile(`!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`(?m)^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	heading    = regexp.MustCompile(`(?m)^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$`)
)

// prose returns md without its fenced code blocks and inline code, line
// for line, so that links are read from the prose alone.
func prose(md string) string { return unfenced(md, true) }

// unfenced returns md without its fenced code blocks, line for line, and
// without its inline code too when dropInline is set.
func unfenced(md string, dropInline bool) string {
	var out []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			in = !in
			out = append(out, "")
			continue
		}
		if in || !dropInline {
			if in {
				line = ""
			}
			out = append(out, line)
			continue
		}
		out = append(out, inlineCode.ReplaceAllStringFunc(line, func(s string) string {
			return strings.Repeat(" ", len(s))
		}))
	}
	return strings.Join(out, "\n")
}

// links returns every relative link target of md's prose.
func links(md string) []string {
	p := prose(md)
	var out []string
	for _, re := range []*regexp.Regexp{inlineLink, refLink} {
		for _, m := range re.FindAllStringSubmatch(p, -1) {
			if target := m[1]; !scheme.MatchString(target) {
				out = append(out, target)
			}
		}
	}
	return out
}

// anchors returns the anchors GitHub gives md's headings: lower case,
// punctuation dropped, spaces as hyphens, "-1", "-2"... for repeats.
func anchors(md string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(unfenced(md, false), -1) {
		text := strings.ToLower(strings.ReplaceAll(m[2], "`", ""))
		var b strings.Builder
		for _, r := range text {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestRelativeLinksResolve checks every relative link of every tracked
// Markdown file: its file (or directory) exists and, for a link into a
// Markdown file with #anchor, the anchor is one of its headings.
func TestRelativeLinksResolve(t *testing.T) {
	files := markdownFiles(t)
	checked := 0
	for _, file := range files {
		md := read(t, file)
		for _, target := range links(md) {
			checked++
			raw, anchor, _ := strings.Cut(target, "#")
			p, err := url.PathUnescape(raw)
			if err != nil {
				t.Errorf("%s: link %q: %v", file, target, err)
				continue
			}
			dest := file
			if p != "" {
				dest = path.Clean(path.Join(path.Dir(file), p))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s: link %q leaves the repository", file, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s: link %q: %s does not exist", file, target, dest)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !anchors(read(t, dest))[strings.ToLower(anchor)] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", file, target, dest, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the scan is broken")
	}
}

// goMarker precedes a fenced Go block: the block is the source of a
// function, its body or, when the block starts with "func", the whole
// declaration.
var goMarker = regexp.MustCompile(`<!-- go: (\S+) (\w+) -->`)

// TestGoSnippetsAreCompiledCode checks every fenced Go block of README.md
// and the pages under docs/: each follows a <!-- go: FILE FUNC --> line and is the source
// of that function, so every Go snippet a reader sees compiles (and the
// functions' examples run them).
func TestGoSnippetsAreCompiledCode(t *testing.T) {
	pages := []string{"README.md"}
	for _, f := range markdownFiles(t) {
		if strings.HasPrefix(f, "docs/") {
			pages = append(pages, f)
		}
	}
	blocks := 0
	for _, page := range pages {
		lines := strings.Split(read(t, page), "\n")
		for i, line := range lines {
			if strings.TrimSpace(line) != "```go" {
				continue
			}
			blocks++
			end := slices.IndexFunc(lines[i+1:], func(l string) bool { return strings.TrimSpace(l) == "```" })
			if end < 0 {
				t.Errorf("%s:%d: a Go block without its end", page, i+1)
				continue
			}
			block := strings.Join(lines[i+1:i+1+end], "\n")
			var m []string
			if i > 0 {
				m = goMarker.FindStringSubmatch(lines[i-1])
			}
			if m == nil {
				t.Errorf("%s:%d: a Go block without a <!-- go: FILE FUNC --> line before it", page, i+1)
				continue
			}
			want, err := funcSource(m[1], m[2], strings.HasPrefix(block, "func "))
			if err != nil {
				t.Errorf("%s:%d: %v", page, i+1, err)
				continue
			}
			if block != want {
				t.Errorf("%s:%d: the Go block differs from %s in %s; it should read:\n%s", page, i+1, m[2], m[1], want)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no Go block found: the scan is broken")
	}
}

// funcSource returns the source of function name in file (relative to
// root): the declaration without its doc comment, or its body with one
// level of indentation removed.
func funcSource(file, name string, whole bool) (string, error) {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != name || fn.Recv != nil {
			continue
		}
		if whole {
			return string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset]), nil
		}
		body := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
		body = strings.Trim(body, "\n")
		lines := strings.Split(body, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, "\t")
		}
		return strings.Join(lines, "\n"), nil
	}
	return "", &missingFunc{file, name}
}

type missingFunc struct{ file, name string }

func (m *missingFunc) Error() string { return m.file + " has no function " + m.name }

// TestREADMEIsAFrontPage keeps README.md short and checks that every page
// under docs/ is reachable from it, following relative links between
// Markdown files.
func TestREADMEIsAFrontPage(t *testing.T) {
	readme := read(t, "README.md")
	if n := strings.Count(readme, "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; keep it to %d and move the detail into docs/", n, readmeMaxLines)
	}
	files := markdownFiles(t)
	reached := map[string]bool{"README.md": true}
	for queue := []string{"README.md"}; len(queue) > 0; queue = queue[1:] {
		from := queue[0]
		for _, l := range links(read(t, from)) {
			p, _, _ := strings.Cut(l, "#")
			if p == "" {
				continue
			}
			to := path.Clean(path.Join(path.Dir(from), p))
			if !reached[to] && slices.Contains(files, to) {
				reached[to] = true
				queue = append(queue, to)
			}
		}
	}
	for _, f := range files {
		if strings.HasPrefix(f, "docs/") && !reached[f] {
			t.Errorf("%s cannot be reached from README.md through links", f)
		}
	}
}
