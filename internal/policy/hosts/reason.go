package hosts

import (
	"net/netip"
	"strings"
)

// Reasons BlockedReason returns. They are stable identifiers, safe for decision messages and metric
// labels (they never carry the address).
const (
	ReasonScheme          = "scheme"           // not http or https
	ReasonCloudMetadata   = "cloud-metadata"   // instance metadata services and their names
	ReasonLoopback        = "loopback"         // 127/8, ::1, localhost, *.localhost
	ReasonUnspecified     = "unspecified"      // 0/8, :: (connecting to them reaches this host)
	ReasonLinkLocal       = "link-local"       // 169.254/16, fe80::/10
	ReasonPrivate         = "private"          // 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10
	ReasonShared          = "shared"           // 100.64/10 (carrier-grade NAT, cloud internals)
	ReasonMulticast       = "multicast"        // 224/4, ff00::/8
	ReasonBroadcast       = "broadcast"        // 255.255.255.255
	ReasonReserved        = "reserved"         // documentation, benchmarking, IETF, future use; reserved TLDs
	ReasonClusterInternal = "cluster-internal" // Kubernetes service names
	ReasonInternalName    = "internal-name"    // single-label names, *.internal, *.local, *.lan, ...
	ReasonWildcardDNS     = "wildcard-dns"     // services that resolve a name to the address it spells
)

// cloudMetadata are the metadata endpoints' addresses.
var cloudMetadata = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle, ...
	netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task metadata and credentials
	netip.MustParseAddr("169.254.170.23"):  true, // AWS EKS Pod Identity agent
	netip.MustParseAddr("169.254.0.23"):    true, // Tencent Cloud
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"):     true, // Oracle Cloud (legacy)
	netip.MustParseAddr("168.63.129.16"):   true, // Azure WireServer
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS IMDS over IPv6
	netip.MustParseAddr("fd00:ec2::23"):    true, // AWS EKS Pod Identity agent over IPv6
	netip.MustParseAddr("fd20:ce::254"):    true, // GCP metadata over IPv6
}

type rangeReason struct {
	p      netip.Prefix
	reason string
}

// v4Ranges is checked in order after cloudMetadata.
var v4Ranges = []rangeReason{
	{netip.MustParsePrefix("0.0.0.0/8"), ReasonUnspecified},
	{netip.MustParsePrefix("127.0.0.0/8"), ReasonLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), ReasonLinkLocal},
	{netip.MustParsePrefix("10.0.0.0/8"), ReasonPrivate},
	{netip.MustParsePrefix("172.16.0.0/12"), ReasonPrivate},
	{netip.MustParsePrefix("192.168.0.0/16"), ReasonPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), ReasonShared},
	{netip.MustParsePrefix("192.0.0.0/24"), ReasonReserved},    // IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), ReasonReserved},    // documentation
	{netip.MustParsePrefix("198.51.100.0/24"), ReasonReserved}, // documentation
	{netip.MustParsePrefix("203.0.113.0/24"), ReasonReserved},  // documentation
	{netip.MustParsePrefix("198.18.0.0/15"), ReasonReserved},   // benchmarking
	{netip.MustParsePrefix("192.88.99.0/24"), ReasonReserved},  // 6to4 relay anycast (deprecated)
	{netip.MustParsePrefix("224.0.0.0/4"), ReasonMulticast},
	{netip.MustParsePrefix("255.255.255.255/32"), ReasonBroadcast},
	{netip.MustParsePrefix("240.0.0.0/4"), ReasonReserved},
}

// v6Ranges is checked in order after cloudMetadata and the embedded IPv4 address.
var v6Ranges = []rangeReason{
	{netip.MustParsePrefix("::/128"), ReasonUnspecified},
	{netip.MustParsePrefix("::1/128"), ReasonLoopback},
	{netip.MustParsePrefix("fe80::/10"), ReasonLinkLocal},
	{netip.MustParsePrefix("fc00::/7"), ReasonPrivate},
	{netip.MustParsePrefix("fec0::/10"), ReasonPrivate}, // site-local (deprecated)
	{netip.MustParsePrefix("ff00::/8"), ReasonMulticast},
	{netip.MustParsePrefix("100::/64"), ReasonReserved},      // discard
	{netip.MustParsePrefix("2001:db8::/32"), ReasonReserved}, // documentation
	{netip.MustParsePrefix("3fff::/20"), ReasonReserved},     // documentation
	{netip.MustParsePrefix("2001::/23"), ReasonReserved},     // IETF protocol assignments (Teredo, ORCHID, ...)
	{netip.MustParsePrefix("5f00::/16"), ReasonReserved},     // segment routing
}

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// AddrReason says why an address is blocked by default for web fetches (a Reason* constant), or ""
// when it is public. An IPv6 address that carries an IPv4 one (EmbeddedIPv4) is judged by it.
func AddrReason(a netip.Addr) string {
	a = a.WithZone("")
	if !a.IsValid() {
		return ReasonReserved
	}
	if cloudMetadata[a] {
		return ReasonCloudMetadata
	}
	if v4, ok := EmbeddedIPv4(a); ok {
		if cloudMetadata[v4] {
			return ReasonCloudMetadata
		}
		for _, r := range v4Ranges {
			if r.p.Contains(v4) {
				return r.reason
			}
		}
		return ""
	}
	for _, r := range v6Ranges {
		if r.p.Contains(a) {
			return r.reason
		}
	}
	if !globalUnicast6.Contains(a) {
		return ReasonReserved // not allocated for unicast
	}
	return ""
}

var metadataNames = map[string]bool{
	"metadata.google.internal":     true,
	"metadata.goog":                true,
	"metadata":                     true,
	"instance-data":                true,
	"instance-data.ec2.internal":   true,
	"metadata.tencentyun.com":      true,
	"metadata.platformequinix.com": true,
	"metadata.packet.net":          true,
}

var loopbackNames = map[string]bool{
	"localhost": true, "localhost.localdomain": true, "localhost6": true, "localhost6.localdomain6": true,
	"ip6-localhost": true, "ip6-loopback": true,
}

// Services that resolve a name to the address written in it (169.254.169.254.nip.io) or to a chosen
// address (rebinding test services), by their last two labels.
var wildcardDNS = map[string]bool{
	"nip.io": true, "sslip.io": true, "xip.io": true, "nip.direct": true, "localtest.me": true,
	"lvh.me": true, "vcap.me": true, "traefik.me": true, "lacolhost.com": true, "1u.ms": true,
	"rbndr.us": true, "localh.st": true,
}

// Domains that never resolve publicly (names under them reach private resolvers), by their last
// label or two.
var internalDomains = map[string]bool{
	"internal": true, "local": true, "localdomain": true, "lan": true, "home": true, "corp": true,
	"intranet": true, "private": true, "home.arpa": true,
}

var reservedTLDs = map[string]bool{"test": true, "example": true, "invalid": true, "onion": true, "alt": true}

// NameReason says why a canonical host name is blocked by default for web fetches, or "".
func NameReason(name string) string {
	switch {
	case metadataNames[name]:
		return ReasonCloudMetadata
	case loopbackNames[name] || strings.HasSuffix(name, ".localhost"):
		return ReasonLoopback
	case name == "kubernetes" || hasSuffix(name, "kubernetes.default") || strings.HasSuffix(name, ".svc") ||
		hasSuffix(name, "cluster.local"):
		return ReasonClusterInternal
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return ReasonInternalName // resolved through the search domains
	}
	tld, last2 := name[dot+1:], name
	if d := strings.LastIndexByte(name[:dot], '.'); d >= 0 {
		last2 = name[d+1:]
	}
	switch {
	case wildcardDNS[last2]:
		return ReasonWildcardDNS
	case internalDomains[tld] || internalDomains[last2]:
		return ReasonInternalName
	case reservedTLDs[tld]:
		return ReasonReserved
	}
	return ""
}

// hasSuffix reports whether name is domain or a subdomain of it.
func hasSuffix(name, domain string) bool {
	return name == domain || (strings.HasSuffix(name, domain) && name[len(name)-len(domain)-1] == '.')
}

// BlockedReason says why a URL is blocked by default for agent web fetches (a Reason* constant), or
// "" when its scheme is http or https and its host is public: a scheme other than http and https
// (ReasonScheme), an address by AddrReason, a name by NameReason. A URL without a host is
// ReasonScheme (file:, data:) or ReasonReserved.
func BlockedReason(u URL) string {
	if u.Scheme != "http" && u.Scheme != "https" {
		return ReasonScheme
	}
	if u.IP.IsValid() {
		return AddrReason(u.IP)
	}
	if u.Host == "" {
		return ReasonReserved
	}
	return NameReason(u.Host)
}
