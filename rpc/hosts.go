package rpc

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
)

// DefaultVHosts are the Host names served by default: the loopback names
// (geth's --http.vhosts defaults to localhost; IP literals always pass).
var DefaultVHosts = []string{"localhost", "127.0.0.1", "[::1]"}

// LoopbackHosts is the allow-list of endpoints only this machine may use
// (the wallet's approvals), whatever --http.vhosts says: localhost and
// loopback addresses, no other IP literal.
var LoopbackHosts = &HostAllowList{names: map[string]bool{"localhost": true}, loopbackIPs: true}

// HostAllowList decides which Host headers a node answers, against DNS
// rebinding: a web page whose name resolves to the node's address still
// sends its own name as Host, so only listed names are served. As in geth,
// a Host that is an IP address always passes (rebinding needs a name), and
// "*" passes everything.
type HostAllowList struct {
	any         bool
	names       map[string]bool
	loopbackIPs bool // only loopback IP literals pass (LoopbackHosts)
}

// NewHostAllowList builds a list from names (ports are ignored; "*": any).
func NewHostAllowList(names []string) *HostAllowList {
	l := &HostAllowList{names: make(map[string]bool)}
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "*" {
			l.any = true
		}
		if h, _, err := net.SplitHostPort(n); err == nil {
			n = h
		}
		l.names[strings.Trim(n, "[]")] = true
	}
	return l
}

// Allows reports whether a request with this Host header is served.
func (l *HostAllowList) Allows(host string) bool {
	if l == nil || l.any {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if a, err := netip.ParseAddr(host); err == nil {
		return !l.loopbackIPs || a.Unmap().IsLoopback()
	}
	// A trailing dot names the same host; drop it so "localhost." passes
	// like "localhost" (and "evil." cannot pass as a listed "evil").
	host = strings.TrimSuffix(host, ".")
	return host != "" && l.names[strings.ToLower(host)]
}

// allowsBytes is Allows for a header value on the fast path: a listed name
// is found without allocating.
func (l *HostAllowList) allowsBytes(host []byte) bool {
	if l == nil || l.any {
		return true
	}
	h := host
	if i := bytes.LastIndexByte(h, ':'); i >= 0 && !bytes.Contains(h[i:], []byte("]")) {
		h = h[:i]
	}
	h = bytes.Trim(h, "[]")
	if l.names[string(h)] {
		return true
	}
	return l.Allows(string(host))
}
