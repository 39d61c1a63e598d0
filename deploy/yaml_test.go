package deploy

// The module has no YAML library among its requirements (gopkg.in/yaml.v3 is
// only in the module graph, and importing it would change go.mod), so the
// tests read the manifests with this parser of the YAML subset they are
// written in. It rejects what it does not understand (anchors, aliases, tags,
// multi-line plain scalars, nested flow collections) instead of misreading
// it, so a manifest that passes these tests is plain YAML any parser reads
// the same way.
//
// The subset: documents separated by "---"; block mappings and sequences by
// indentation (spaces only); a sequence may sit at its key's indentation;
// "- key: value" items; plain, 'single' and "double" quoted scalars; literal
// (|, |-) and folded (>, >-) block scalars; flow sequences and mappings of
// scalars on one line ([a, "b"], {k: v}); comments. Plain scalars true/false
// become bool, integers int64, null and ~ nil, everything else string.

import (
	"fmt"
	"strconv"
	"strings"
)

type yamlLine struct {
	num    int    // 1-based line number in the file
	indent int    // leading spaces
	text   string // the content, comment removed, trailing space trimmed
	raw    string // the whole line, for block scalars
}

type yamlParser struct {
	file  string
	lines []yamlLine
	pos   int
}

// parseYAML returns the documents of src; file names errors.
func parseYAML(file, src string) ([]any, error) {
	var docs []any
	var cur []yamlLine
	flush := func() error {
		p := &yamlParser{file: file, lines: cur}
		cur = nil
		if len(p.lines) == 0 {
			return nil
		}
		v, err := p.block(p.lines[0].indent)
		if err != nil {
			return err
		}
		if p.pos < len(p.lines) {
			return p.errf(p.lines[p.pos], "unexpected indentation")
		}
		docs = append(docs, v)
		return nil
	}
	for i, raw := range strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n") {
		if lead := raw[:len(raw)-len(strings.TrimLeft(raw, " \t"))]; strings.Contains(lead, "\t") {
			return nil, fmt.Errorf("%s:%d: tab in indentation", file, i+1)
		}
		if strings.TrimRight(raw, " ") == "---" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		indent := len(raw) - len(strings.TrimLeft(raw, " "))
		cur = append(cur, yamlLine{num: i + 1, indent: indent, text: stripComment(strings.TrimSpace(raw)), raw: raw})
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

// stripComment removes a comment: "#" at the start or after a space,
// outside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if i == 0 || s[i-1] == ' ' || s[i-1] == '[' || s[i-1] == '{' || s[i-1] == ',' || s[i-1] == ':' {
				quote = c
			}
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return strings.TrimRight(s[:i], " ")
		}
	}
	return s
}

func (p *yamlParser) errf(l yamlLine, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, l.num, fmt.Sprintf(format, args...))
}

// next skips blank and comment-only lines and returns the next line.
func (p *yamlParser) next() (yamlLine, bool) {
	for p.pos < len(p.lines) {
		if l := p.lines[p.pos]; l.text != "" {
			return l, true
		}
		p.pos++
	}
	return yamlLine{}, false
}

// block parses the mapping or sequence that starts at the current line,
// whose lines sit at indent.
func (p *yamlParser) block(indent int) (any, error) {
	l, ok := p.next()
	if !ok {
		return nil, nil
	}
	if l.indent != indent {
		return nil, p.errf(l, "indentation %d, want %d", l.indent, indent)
	}
	if l.text == "-" || strings.HasPrefix(l.text, "- ") {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

func (p *yamlParser) sequence(indent int) ([]any, error) {
	out := []any{}
	for {
		l, ok := p.next()
		if !ok || l.indent < indent {
			return out, nil
		}
		if l.indent > indent {
			return nil, p.errf(l, "unexpected indentation in a sequence")
		}
		if l.text != "-" && !strings.HasPrefix(l.text, "- ") {
			return out, nil // a mapping key at the sequence's indentation ends it
		}
		rest := strings.TrimSpace(strings.TrimPrefix(l.text, "-"))
		switch {
		case rest == "":
			p.pos++
			nl, ok := p.next()
			if !ok || nl.indent <= indent {
				out = append(out, nil)
				continue
			}
			v, err := p.block(nl.indent)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		case isMappingEntry(rest):
			// "- key: value": the item is a mapping whose first entry is on
			// this line, its other entries at the column after "- ".
			child := indent + len(l.text) - len(rest)
			p.lines[p.pos].indent = child
			p.lines[p.pos].text = rest
			v, err := p.mapping(child)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		default:
			v, err := p.inlineValue(l, rest, indent)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
}

func (p *yamlParser) mapping(indent int) (map[string]any, error) {
	out := map[string]any{}
	for {
		l, ok := p.next()
		if !ok || l.indent < indent {
			return out, nil
		}
		if l.indent > indent {
			return nil, p.errf(l, "unexpected indentation in a mapping")
		}
		if strings.HasPrefix(l.text, "- ") || l.text == "-" {
			return nil, p.errf(l, "sequence item where a mapping key was expected")
		}
		key, rest, err := p.splitEntry(l, l.text)
		if err != nil {
			return nil, err
		}
		if _, dup := out[key]; dup {
			return nil, p.errf(l, "key %q repeated", key)
		}
		if rest != "" {
			v, err := p.inlineValue(l, rest, indent)
			if err != nil {
				return nil, err
			}
			out[key] = v
			continue
		}
		p.pos++
		nl, ok := p.next()
		switch {
		case !ok || nl.indent < indent:
			out[key] = nil
		case nl.indent == indent && (strings.HasPrefix(nl.text, "- ") || nl.text == "-"):
			v, err := p.sequence(indent) // a sequence at its key's indentation
			if err != nil {
				return nil, err
			}
			out[key] = v
		case nl.indent > indent:
			v, err := p.block(nl.indent)
			if err != nil {
				return nil, err
			}
			out[key] = v
		default:
			out[key] = nil
		}
	}
}

// inlineValue parses the value after "key:" or "- " on line l, consuming
// that line (and the lines of a block scalar).
func (p *yamlParser) inlineValue(l yamlLine, s string, parentIndent int) (any, error) {
	p.pos++
	switch s {
	case "|", "|-", ">", ">-", "|+", ">+":
		return p.blockScalar(s, parentIndent)
	}
	return p.scalarOrFlow(l, s)
}

// blockScalar reads the lines indented deeper than parentIndent.
func (p *yamlParser) blockScalar(style string, parentIndent int) (string, error) {
	var lines []string
	indent := -1
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if strings.TrimSpace(l.raw) == "" {
			lines = append(lines, "")
			p.pos++
			continue
		}
		if l.indent <= parentIndent {
			break
		}
		if indent < 0 {
			indent = l.indent
		}
		if l.indent < indent {
			return "", p.errf(l, "block scalar line less indented than its first line")
		}
		lines = append(lines, l.raw[indent:])
		p.pos++
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var text string
	if style[0] == '>' {
		// Folding: lines join with a space; an empty line is a newline.
		var b strings.Builder
		for i, ln := range lines {
			switch {
			case ln == "":
				b.WriteByte('\n')
			case i > 0 && lines[i-1] != "":
				b.WriteByte(' ')
				b.WriteString(ln)
			default:
				b.WriteString(ln)
			}
		}
		text = b.String()
	} else {
		text = strings.Join(lines, "\n")
	}
	if !strings.HasSuffix(style, "-") && text != "" {
		text += "\n"
	}
	return text, nil
}

// isMappingEntry reports whether s starts with "key:" followed by a space
// or the end (a key may be quoted).
func isMappingEntry(s string) bool {
	if s == "" || strings.ContainsRune("[{", rune(s[0])) {
		return false
	}
	if s[0] == '"' || s[0] == '\'' {
		end := closingQuote(s)
		return end > 0 && strings.HasPrefix(s[end+1:], ":") && (len(s) == end+2 || s[end+2] == ' ')
	}
	i := strings.Index(s, ":")
	return i > 0 && (i == len(s)-1 || s[i+1] == ' ')
}

func (p *yamlParser) splitEntry(l yamlLine, s string) (key, rest string, err error) {
	if !isMappingEntry(s) {
		return "", "", p.errf(l, "want \"key: value\", got %q (multi-line plain scalars are not in the subset)", s)
	}
	if s[0] == '"' || s[0] == '\'' {
		end := closingQuote(s)
		k, err := p.quoted(l, s[:end+1])
		if err != nil {
			return "", "", err
		}
		return k, strings.TrimSpace(s[end+2:]), nil
	}
	i := strings.Index(s, ":")
	return s[:i], strings.TrimSpace(s[i+1:]), nil
}

// closingQuote returns the index of the quote that closes s[0], or -1.
func closingQuote(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case q == '\'' && s[i] == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == q:
			return i
		}
	}
	return -1
}

func (p *yamlParser) quoted(l yamlLine, s string) (string, error) {
	if s[0] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	}
	v, err := strconv.Unquote(s)
	if err != nil {
		return "", p.errf(l, "bad double-quoted string %s: %v", s, err)
	}
	return v, nil
}

func (p *yamlParser) scalarOrFlow(l yamlLine, s string) (any, error) {
	switch s[0] {
	case '[', '{':
		return p.flow(l, s)
	case '"', '\'':
		end := closingQuote(s)
		if end != len(s)-1 {
			return nil, p.errf(l, "text after the closing quote of %s", s)
		}
		return p.quoted(l, s)
	case '&', '*', '!', '?', '@', '`', '%', '|', '>':
		return nil, p.errf(l, "%q: anchors, aliases, tags and directives are not in the subset", s)
	}
	if strings.Contains(s, ": ") {
		return nil, p.errf(l, "%q: a mapping entry where a scalar was expected", s)
	}
	return plainScalar(s), nil
}

func plainScalar(s string) any {
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null", "~":
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	return s
}

// flow parses a one-line flow sequence or mapping of scalars.
func (p *yamlParser) flow(l yamlLine, s string) (any, error) {
	open, close := s[0], map[byte]byte{'[': ']', '{': '}'}[s[0]]
	if s[len(s)-1] != close {
		return nil, p.errf(l, "flow collection %q must close on its line", s)
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	var items []string
	for body != "" {
		var item string
		if body[0] == '"' || body[0] == '\'' {
			end := closingQuote(body)
			if end < 0 {
				return nil, p.errf(l, "unclosed quote in %q", s)
			}
			j := strings.IndexByte(body[end:], ',')
			if j < 0 {
				item, body = body, ""
			} else {
				item, body = body[:end+j], body[end+j+1:]
			}
		} else if i := strings.IndexByte(body, ','); i >= 0 {
			item, body = body[:i], body[i+1:]
		} else {
			item, body = body, ""
		}
		item, body = strings.TrimSpace(item), strings.TrimSpace(body)
		if item == "" || strings.ContainsAny(item[:1], "[{") {
			return nil, p.errf(l, "empty or nested item in flow collection %q", s)
		}
		items = append(items, item)
	}
	if open == '[' {
		out := []any{}
		for _, it := range items {
			v, err := p.scalarOrFlow(l, it)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	out := map[string]any{}
	for _, it := range items {
		k, rest, err := p.splitEntry(l, it)
		if err != nil {
			return nil, err
		}
		if rest == "" {
			out[k] = nil
			continue
		}
		v, err := p.scalarOrFlow(l, rest)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}
