package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// hostURL is a fetch target with a canonical host.
type hostURL struct {
	Scheme string
	Host   string
	IP     netip.Addr // valid when the host is an address in any spelling
}

// hostSet is a passport's allowed_domains or blocked_domains: host names, "*.suffix" globs, IPs
// and CIDRs.
type hostSet struct {
	names    map[string]string
	suffixes []string
	prefixes []netip.Prefix
}

// parseHostURL reads a URL as a fetch tool or curl would, scheme-less forms included.
func parseHostURL(raw string) (hostURL, error) {
	if len(raw) > 8192 {
		return hostURL{}, errors.New("URL longer than 8192 bytes")
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f || r == '\\' || r > 0x7e {
			return hostURL{}, errors.New("URL holds control, non-ASCII or backslash characters")
		}
	}
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		s = "http://" + strings.TrimPrefix(s, "//")
	}
	u, err := url.Parse(s)
	if err != nil {
		return hostURL{}, fmt.Errorf("parse URL: %w", err)
	}
	if u.Host == "" || u.Opaque != "" {
		return hostURL{}, errors.New("URL has no host")
	}
	h, ip, err := canonicalHost(u.Hostname())
	if err != nil {
		return hostURL{}, err
	}
	return hostURL{Scheme: strings.ToLower(u.Scheme), Host: h, IP: ip}, nil
}

// canonicalHost lower-cases a host, drops trailing dots and reads IPv4 in every inet_aton spelling
// and IPv6 (IPv4-mapped addresses unmapped).
func canonicalHost(h string) (string, netip.Addr, error) {
	h = strings.TrimRight(strings.ToLower(h), ".")
	if h == "" {
		return "", netip.Addr{}, errors.New("URL has an empty host")
	}
	if i := strings.IndexByte(h, '%'); i >= 0 && strings.Contains(h, ":") {
		h = h[:i] // an IPv6 zone
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		ip = ip.Unmap()
		return ip.String(), ip, nil
	}
	if ip, ok := inetAton(h); ok {
		return ip.String(), ip, nil
	}
	return h, netip.Addr{}, nil
}

// inetAton reads an IPv4 address as glibc's inet_aton does: 1 to 4 parts, each decimal, octal
// (leading 0) or hex (0x).
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			p, base = p[2:], 16
			if p == "" {
				p = "0"
			}
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	last := len(vals) - 1
	for i, v := range vals[:last] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*uint(i))
	}
	if vals[last] >= 1<<(8*uint(4-last)) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// looksLikeURL reports a word that names a URL.
func looksLikeURL(s string) bool { return strings.Contains(s, "://") }

// internalPrefixes are the address ranges fetches may not reach unless allowed.
var internalPrefixes = []struct {
	p    netip.Prefix
	name string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud-metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud-metadata"},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud-metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("64:ff9b::/96"), "translated"},
	{netip.MustParsePrefix("::/96"), "reserved"},
}

// internalNames are host names that reach the node, the cluster or a cloud's metadata service.
var internalNames = map[string]string{
	"localhost": "loopback", "metadata.google.internal": "cloud-metadata", "metadata": "cloud-metadata",
	"metadata.goog": "cloud-metadata", "instance-data": "cloud-metadata", "instance-data.ec2.internal": "cloud-metadata",
	"kubernetes": "cluster", "kubernetes.default": "cluster", "kubernetes.default.svc": "cluster",
	"kubernetes.default.svc.cluster.local": "cluster",
}

// blockedHostReason says why a host is blocked by default ("" when it is public).
func blockedHostReason(u hostURL) string {
	if u.IP.IsValid() {
		for _, ip := range []netip.Addr{u.IP, embeddedIPv4(u.IP)} {
			if !ip.IsValid() {
				continue
			}
			for _, ip4 := range internalPrefixes {
				if ip4.p.Contains(ip) {
					return ip4.name
				}
			}
		}
		return ""
	}
	if why, ok := internalNames[u.Host]; ok {
		return why
	}
	if strings.HasSuffix(u.Host, ".localhost") {
		return "loopback"
	}
	if strings.HasSuffix(u.Host, ".internal") || strings.HasSuffix(u.Host, ".cluster.local") ||
		strings.HasSuffix(u.Host, ".svc") || strings.HasSuffix(u.Host, ".local") {
		return "internal"
	}
	return ""
}

// embeddedIPv4 returns the IPv4 address inside an IPv4-compatible or NAT64 IPv6 address.
func embeddedIPv4(ip netip.Addr) netip.Addr {
	if !ip.Is6() {
		return netip.Addr{}
	}
	b := ip.As16()
	if (b == [16]byte{} || netip.MustParsePrefix("::/96").Contains(ip) || netip.MustParsePrefix("64:ff9b::/96").Contains(ip)) && !ip.IsUnspecified() {
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	return netip.Addr{}
}

// compileHostEntries compiles host entries; each bad entry is an error naming its index.
func compileHostEntries(list []string) (*hostSet, []error) {
	s := &hostSet{names: map[string]string{}}
	var errs []error
	for i, e := range list {
		switch {
		case strings.HasPrefix(e, "*."):
			s.suffixes = append(s.suffixes, strings.ToLower(strings.TrimRight(e[1:], ".")))
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				errs = append(errs, fmt.Errorf("entry %d: invalid CIDR %q", i, e))
				continue
			}
			s.prefixes = append(s.prefixes, p.Masked())
		default:
			h, ip, err := canonicalHost(e)
			if err != nil {
				errs = append(errs, fmt.Errorf("entry %d: %w", i, err))
				continue
			}
			if ip.IsValid() {
				s.prefixes = append(s.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
			} else {
				s.names[h] = e
			}
		}
	}
	return s, errs
}

// match returns the entry matching the URL's host.
func (s *hostSet) match(u hostURL) (string, bool) {
	if u.IP.IsValid() {
		for _, p := range s.prefixes {
			if p.Contains(u.IP) {
				return p.String(), true
			}
		}
		return "", false
	}
	if e, ok := s.names[u.Host]; ok {
		return e, true
	}
	for _, suf := range s.suffixes {
		if strings.HasSuffix(u.Host, suf) {
			return "*" + suf, true
		}
	}
	return "", false
}
