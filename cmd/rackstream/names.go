package main

import (
	"net"
	"strings"
)

// instance is what names a group member: its process id and the endpoint
// (application.server) it announced, "" for none.
type instance struct {
	id, endpoint string
}

// displayNames maps each process id to a name a person recognises, for
// tables and consoles; the process id stays available beside it. A member
// is named by its endpoint when that is unique in the group, shortened
// while the names stay unique: the port goes when every named member has
// the same one, then the domain every host name shares, so that
// rackstream-0.rackstream.prod.svc:8080 reads rackstream-0. A member
// without a unique endpoint is named by its id, cut to its shortest unique
// prefix of at least 8 characters when it is longer than 12. The placement
// page's script applies the same rule (query/page/static/names.js).
func displayNames(members []instance) map[string]string {
	uses := map[string]int{}
	for _, m := range members {
		if m.endpoint != "" {
			uses[m.endpoint]++
		}
	}
	var named []instance
	for _, m := range members {
		if uses[m.endpoint] == 1 {
			named = append(named, m)
		}
	}
	names := make(map[string]string, len(members))
	for _, m := range named {
		names[m.id] = m.endpoint
	}
	if hosts, ok := dropCommonPort(named); ok {
		for i, m := range named {
			names[m.id] = hosts[i]
		}
		if short, ok := dropCommonDomain(hosts); ok {
			for i, m := range named {
				names[m.id] = short[i]
			}
		}
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.id
	}
	for _, m := range members {
		if _, ok := names[m.id]; !ok {
			names[m.id] = shortID(m.id, ids)
		}
	}
	return names
}

// dropCommonPort returns the members' hosts when every endpoint has the
// same port and the hosts are unique.
func dropCommonPort(named []instance) ([]string, bool) {
	hosts := make([]string, len(named))
	port := ""
	for i, m := range named {
		h, p, err := net.SplitHostPort(m.endpoint)
		if err != nil || h == "" || (i > 0 && p != port) {
			return nil, false
		}
		hosts[i], port = h, p
	}
	return hosts, len(hosts) > 0 && unique(hosts)
}

// dropCommonDomain returns the host names without the trailing labels
// they all share, when that leaves each a label or more and the names
// unique. Addresses are kept whole.
func dropCommonDomain(hosts []string) ([]string, bool) {
	labels := make([][]string, len(hosts))
	shared := -1
	for i, h := range hosts {
		if net.ParseIP(h) != nil {
			return nil, false
		}
		labels[i] = strings.Split(h, ".")
		n := len(labels[i]) - 1 // keep the first label at least
		if i > 0 {
			n = min(n, commonSuffix(labels[0], labels[i]))
		}
		if shared < 0 || n < shared {
			shared = n
		}
	}
	if shared <= 0 {
		return nil, false
	}
	short := make([]string, len(hosts))
	for i, ls := range labels {
		short[i] = strings.Join(ls[:len(ls)-shared], ".")
	}
	return short, unique(short)
}

// commonSuffix counts the trailing labels a and b share.
func commonSuffix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

// shortID cuts id, when longer than 12 characters, to its shortest prefix
// of at least 8 that no other of ids starts with, marked with an ellipsis.
func shortID(id string, ids []string) string {
	if len(id) <= 12 {
		return id
	}
	n := 8
	for ; n < len(id); n++ {
		clash := false
		for _, o := range ids {
			if o != id && strings.HasPrefix(o, id[:n]) {
				clash = true
				break
			}
		}
		if !clash {
			break
		}
	}
	if n >= len(id) {
		return id
	}
	return id[:n] + "…"
}

func unique(ss []string) bool {
	seen := make(map[string]bool, len(ss))
	for _, s := range ss {
		if seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}
