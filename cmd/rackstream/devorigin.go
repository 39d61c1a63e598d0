package main

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// crossSite returns why r, a request to a dev admin route, may have been
// sent by a web page of another site, or "" when it may not. A loopback-only
// listener does not stop a browser on the same machine: any page it shows
// can POST a form to http://127.0.0.1:PORT/v1/dev/instances/i1/kill, and a
// page of a domain that resolves to 127.0.0.1 (DNS rebinding) can even read
// the answers. So the routes refuse, for every method:
//   - Sec-Fetch-Site other than same-origin or none (browsers send it on
//     every request: a form on another page, even another port, is
//     cross-site or same-site);
//   - an Origin whose host:port is not the request's Host (older browsers
//     without Sec-Fetch-Site still send Origin on a cross-origin POST);
//   - a Host that is not a loopback address or localhost (the name a
//     rebinding page uses).
//
// curl and scripts send neither header and the address they dial as Host,
// so they pass.
func crossSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return "Sec-Fetch-Site is " + site
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return "its Origin is not this instance"
		}
	}
	if !loopbackHost(r.Host) {
		return "its Host is not a loopback address"
	}
	return ""
}

// loopbackHost reports whether host (a Host header, with or without a port)
// names this machine's loopback interface.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
