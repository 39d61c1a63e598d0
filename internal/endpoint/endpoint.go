// Package endpoint owns the one check of a query endpoint: the host:port a
// member announces as its application.server in its join metadata, and that
// other instances dial when they forward a query to it.
//
// The announcement comes from any group member, so it is untrusted input
// (docs/design.md §10): it must name a host and a port and nothing else. A value
// with a path, a query, user information or a fragment would let a member
// steer the forwarded request's URL; Validate refuses all of them. The
// balancer checks at decode time and the query server again before it dials,
// with this same function, so the two can't disagree.
package endpoint

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// MaxLen bounds an endpoint: a DNS name (253) plus a colon and a port.
const MaxLen = 253 + 1 + 5

// Validate reports whether s is host:port with a non-empty host of DNS name
// or IP literal characters and a decimal port in 1..65535. An IPv6 literal
// is written in brackets ("[::1]:8080"). The error names what is wrong but
// never repeats s: callers decide whether the value may be logged.
func Validate(s string) error {
	if s == "" {
		return fmt.Errorf("endpoint is empty")
	}
	if len(s) > MaxLen {
		return fmt.Errorf("endpoint is %d bytes, more than %d", len(s), MaxLen)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("endpoint is not host:port")
	}
	if host == "" {
		return fmt.Errorf("endpoint has no host")
	}
	if strings.Contains(host, ":") {
		if net.ParseIP(host) == nil {
			return fmt.Errorf("endpoint host is not a valid IPv6 literal")
		}
	} else {
		for i := 0; i < len(host); i++ {
			c := host[i]
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
			if !ok {
				return fmt.Errorf("endpoint host has a character other than letters, digits, '.', '-' and '_' at byte %d", i)
			}
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port[0] == '+' || port[0] == '0' {
		return fmt.Errorf("endpoint port is not a decimal number in 1..65535")
	}
	return nil
}
