package wallet

import (
	"net/netip"
	"net/url"
)

// Policy says which addresses the probe may dial besides public unicast
// ones (IsPublicAddr).
//
// Loopback (127.0.0.0/8, ::1) is allowed when the node listens on loopback
// only and advertises no other URL for itself: then every caller runs on
// this machine, and a web page that rebinds its name to 127.0.0.1 is
// stopped by the Host allow-list (--http.vhosts) before it reaches the
// wallet. A node listening on another address has remote callers, which
// must not reach services bound to its loopback interface.
//
// Private (RFC 1918, fc00::/7), link-local (169.254.0.0/16 with the cloud
// metadata services, fe80::/10) and every other non-public range stay
// refused unless Private is set (--wallet.allow-private), which allows
// loopback too: a machine on loopback only still sits on a network that a
// caller must not be able to scan through it.
type Policy struct {
	Loopback bool
	Private  bool
}

// Allows reports whether the probe may dial ip.
func (p Policy) Allows(ip netip.Addr) bool {
	switch {
	case p.Private || IsPublicAddr(ip):
		return true
	case p.Loopback:
		return ip.Unmap().IsLoopback()
	}
	return false
}

// probePolicy is the probe's Policy for cfg. Loopback targets are allowed
// when the node listens on loopback only and its own chain data names no
// other host: a --wallet.rpc-url such as https://rpc.example.org says that
// callers reach this loopback listener through a proxy, from elsewhere.
func probePolicy(cfg Config) Policy {
	local := IsLoopbackAddr(cfg.NodeAddr)
	for _, u := range cfg.Self.RPCURLs {
		if pu, err := url.Parse(u); err != nil || !IsLoopbackHost(pu.Hostname()) {
			local = false
		}
	}
	return Policy{Loopback: local, Private: cfg.AllowPrivate}
}

// nonPublic lists special-purpose ranges beyond what netip's predicates cover
// (IANA special-purpose registries).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),  // TEST-NET-1
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"), // reserved, broadcast
	netip.MustParsePrefix("100::/64"),    // discard
	netip.MustParsePrefix("2001::/23"),   // IETF protocol assignments (Teredo, …)
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("fec0::/10"), // site-local (deprecated)
}

// embeds4 are IPv6 ranges that carry an IPv4 address the packet may reach.
var embeds4 = []struct {
	prefix netip.Prefix
	offset int // byte offset of the IPv4 address
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12}, // NAT64
	{netip.MustParsePrefix("64:ff9b:1::/48"), 12},
	{netip.MustParsePrefix("2002::/16"), 2}, // 6to4
}

// IsPublicAddr reports whether ip is a public unicast address, the kind the
// probe always dials.
func IsPublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() ||
		ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	if ip.Is6() {
		b := ip.As16()
		for _, e := range embeds4 {
			if e.prefix.Contains(ip) {
				v4 := netip.AddrFrom4([4]byte(b[e.offset : e.offset+4]))
				return IsPublicAddr(v4)
			}
		}
	}
	return true
}
