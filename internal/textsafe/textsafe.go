// Package textsafe renders untrusted text for terminals and logs: process
// ids, tags and endpoints that any group member can announce (docs/design.md §10),
// and whatever a scenario file holds. A value printed as is could carry a
// terminal escape sequence (ESC [ ... to move the cursor, recolour or
// rewrite earlier lines, OSC 8 to plant a link, a C1 control such as U+009B
// that some terminals read as ESC [) or a bidirectional override that makes
// the text read differently than it is. These functions escape every
// character that is not printable, as Go's %q does, and keep the rest.
//
// [Short] is for a value that a person reads: command output, configuration
// errors and warnings, the dev console, the what-if's errors. It escapes
// and shortens, so that a value can neither rewrite a terminal nor bury the
// message around it.
package textsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s with every rune that is not printable (unicode.IsPrint:
// control characters C0 and C1, DEL, format characters such as the bidi
// overrides, unassigned code points) written as a Go escape (\x1b, \n,
// \u009b, \u202e), and every byte that is not valid UTF-8 as \xNN. Printable
// text, including spaces and backslashes, is kept as is.
func Escape(s string) string {
	if safe(s, false) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // 'x' with the escape inside
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// Lines escapes each line of s and keeps the line breaks: for multi-line
// messages such as a list of errors.
func Lines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Escape(l)
	}
	return strings.Join(lines, "\n")
}

// MaxShown is how many bytes of one value [Short] shows: enough for any
// sensible host name, tag or topic, little enough that a message stays
// readable around a value of any length.
const MaxShown = 256

// Short returns s escaped as [Escape] does and cut to its first
// [MaxShown] bytes, saying how many more there were. Use it for every value
// that a user, a file or another group member supplied, wherever a person
// reads it.
func Short(s string) string { return Bounded(s, MaxShown) }

// Printable reports whether [Escape] keeps s as it is: s is valid UTF-8
// and holds no control, format or unassigned character.
func Printable(s string) bool { return safe(s, false) || Escape(s) == s }

// Bounded escapes at most max bytes of s, cut at a character boundary, and
// says how many more there were: for a value of unbounded length in a log
// line.
func Bounded(s string, max int) string {
	if len(s) <= max {
		return Escape(s)
	}
	cut := max
	for cut > 0 && cut > max-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if cut == 0 || !utf8.RuneStart(s[cut]) {
		cut = max // not UTF-8 here: cut anywhere, the bytes show as \xNN
	}
	return Escape(s[:cut]) + fmt.Sprintf("... (%d more bytes)", len(s)-cut)
}

// JSON escapes, in JSON text that encoding/json wrote, the non-printable
// characters encoding/json leaves raw (DEL, C1 controls, bidi and other
// format characters) as \uXXXX. Outside strings JSON holds only ASCII
// punctuation, literals and whitespace, so every such character is inside a
// string and the result is the same JSON value.
func JSON(b []byte) []byte {
	if safe(string(b), true) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == '\n' || r == '\t' || r == '\r' || unicode.IsPrint(r) || r == utf8.RuneError && size == 1 {
			out = append(out, b[i:i+size]...)
		} else if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	return out
}

// safe reports whether s is printable ASCII (plus, with whitespace, tab
// and line breaks), the common case that needs no copy.
func safe(s string, whitespace bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f || whitespace && (c == '\n' || c == '\t' || c == '\r') {
			continue
		}
		return false
	}
	return true
}
