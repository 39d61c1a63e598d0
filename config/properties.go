package config

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Property is one key and value read from a properties file, with the line
// (from 1) on which its logical line starts.
type Property struct {
	Key   string
	Value string
	Line  int
}

// SyntaxError is a line of a properties file that could not be read.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// ParseProperties reads data as java.util.Properties.load does, except that
// the text is UTF-8 rather than ISO-8859-1:
//
//   - lines end at \n, \r or \r\n; leading spaces, tabs and form feeds are
//     skipped; blank lines are ignored;
//   - a line whose first other character is '#' or '!' is a comment (a
//     trailing backslash does not continue a comment);
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading whitespace is dropped;
//   - the key ends at the first unescaped '=', ':', space, tab or form feed;
//     whitespace, then at most one '=' or ':', then whitespace separate it from
//     the value; a bare key has the empty value; trailing whitespace of the
//     value is kept;
//   - in keys and values \t, \n, \r and \f are control characters, \uXXXX is
//     the UTF-16 code unit XXXX (surrogate pairs combine), and a backslash
//     before any other character stands for that character.
//
// Properties come back in file order; a key may repeat (the caller decides
// which wins; Java keeps the last). A line with a malformed \u escape or
// invalid UTF-8 is reported and skipped, so that every error of a file is
// found in one pass.
func ParseProperties(data []byte) ([]Property, []*SyntaxError) {
	var (
		props []Property
		errs  []*SyntaxError
	)
	lines := logicalLines(data)
	for _, l := range lines {
		if !utf8.ValidString(l.text) {
			errs = append(errs, &SyntaxError{Line: l.line, Msg: "not valid UTF-8"})
			continue
		}
		rawKey, rawValue := splitKeyValue(l.text)
		// A bad escape is located, never quoted: the text around it may be
		// a secret (sasl.password=abc\uZZZZ), or a secret pasted as a key.
		key, bad := unescape(rawKey)
		if bad > 0 {
			errs = append(errs, &SyntaxError{Line: l.line, Msg: fmt.Sprintf("malformed \\uxxxx encoding at character %d of the key: want four hex digits", bad)})
			continue
		}
		value, bad := unescape(rawValue)
		if bad > 0 {
			errs = append(errs, &SyntaxError{Line: l.line, Msg: fmt.Sprintf("%s: malformed \\uxxxx encoding at character %d of the value: want four hex digits", key, bad)})
			continue
		}
		props = append(props, Property{Key: key, Value: value, Line: l.line})
	}
	return props, errs
}

type logicalLine struct {
	text string // continuations joined, escapes still in place
	line int    // where it starts
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// logicalLines splits data into logical lines as Java's LineReader does.
func logicalLines(data []byte) []logicalLine {
	var (
		out  []logicalLine
		line = 1
		cur  []byte
		curL int // line of cur's start, 0 when not in a logical line
	)
	i := 0
	for i < len(data) {
		// A natural line: data[i:end] then a terminator of width tw.
		end := i
		for end < len(data) && data[end] != '\n' && data[end] != '\r' {
			end++
		}
		tw := 0
		if end < len(data) {
			tw = 1
			if data[end] == '\r' && end+1 < len(data) && data[end+1] == '\n' {
				tw = 2
			}
		}
		text := data[i:end]
		j := 0
		for j < len(text) && isSpace(text[j]) {
			j++
		}
		text = text[j:]
		switch {
		case curL == 0 && len(text) == 0:
			// blank line
		case curL == 0 && (text[0] == '#' || text[0] == '!'):
			// comment: never continued
		default:
			if curL == 0 {
				curL = line
			}
			cont := trailingBackslashes(text)%2 == 1
			if cont {
				text = text[:len(text)-1]
			}
			cur = append(cur, text...)
			if !cont || tw == 0 {
				out = append(out, logicalLine{string(cur), curL})
				cur, curL = cur[:0], 0
			}
		}
		i = end + tw
		if tw > 0 {
			line++
		}
	}
	if curL != 0 {
		out = append(out, logicalLine{string(cur), curL})
	}
	return out
}

func trailingBackslashes(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n
}

// splitKeyValue splits a logical line into its escaped key and value.
func splitKeyValue(s string) (key, value string) {
	keyEnd, valueStart := len(s), len(s)
	hasSep := false
	escaped := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !escaped && (c == '=' || c == ':') {
			keyEnd, valueStart, hasSep = i, i+1, true
			break
		}
		if !escaped && isSpace(c) {
			keyEnd, valueStart = i, i+1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for valueStart < len(s) {
		c := s[valueStart]
		if !isSpace(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	return s[:keyEnd], s[valueStart:]
}

// unescape resolves the escapes of a key or value, as Java's loadConvert.
// When s holds a malformed \uxxxx escape it returns the escape's position
// in s, counted in characters from 1, as bad.
func unescape(s string) (_ string, bad int) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	var units []uint16 // pending \u code units, combined at the end of a run
	flush := func() {
		for i := 0; i < len(units); i++ {
			u := rune(units[i])
			if u >= 0xD800 && u < 0xDC00 && i+1 < len(units) && units[i+1] >= 0xDC00 && units[i+1] < 0xE000 {
				u = 0x10000 + (u-0xD800)<<10 + rune(units[i+1]) - 0xDC00
				i++
			}
			b.WriteRune(u) // a lone surrogate becomes U+FFFD
		}
		units = units[:0]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			flush()
			b.WriteByte(c)
			continue
		}
		i++
		c = s[i]
		if c == 'u' {
			if len(s)-(i+1) < 4 {
				return "", utf8.RuneCountInString(s[:i-1]) + 1
			}
			var u uint16
			for _, h := range []byte(s[i+1 : i+5]) {
				d, ok := hexDigit(h)
				if !ok {
					return "", utf8.RuneCountInString(s[:i-1]) + 1
				}
				u = u<<4 | uint16(d)
			}
			units = append(units, u)
			i += 4
			continue
		}
		flush()
		switch c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		default:
			// A multi-byte character after a backslash stands for itself:
			// copy its first byte here, the rest on the next iterations.
			b.WriteByte(c)
		}
	}
	flush()
	return b.String(), 0
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// FormatProperty returns key and value as one properties line (without the
// line terminator) that [ParseProperties] reads back as exactly key and
// value. Like java.util.Properties.store it escapes backslashes, control
// characters (as \t, \n, \r, \f or \uXXXX), and in the key spaces,
// separators and comment characters; unlike store it escapes in the value
// only a leading space, and writes other characters as UTF-8.
func FormatProperty(key, value string) string {
	var b strings.Builder
	escapeInto(&b, key, true)
	b.WriteByte('=')
	escapeInto(&b, value, false)
	return b.String()
}

func escapeInto(b *strings.Builder, s string, isKey bool) {
	for i, r := range s {
		switch r {
		case ' ':
			if isKey || i == 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(' ')
		case '=', ':', '#', '!':
			if isKey {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == 0x7f || r == utf8.RuneError {
				fmt.Fprintf(b, `\u%04X`, r)
				continue
			}
			b.WriteRune(r)
		}
	}
}
