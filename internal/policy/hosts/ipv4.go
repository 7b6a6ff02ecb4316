package hosts

import (
	"net/netip"
	"strings"
)

// endsInNumber reports whether a lower-case name without trailing dots must be read as an IPv4
// address (WHATWG's "ends in a number"): its last label is all digits, or "0x" and hex digits.
func endsInNumber(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return isHex(last[2:])
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if unhex(s[i]) < 0 {
			return false
		}
	}
	return true
}

// parseIPv4 reads a lower-case IPv4 address as glibc's inet_aton does: 1 to 4 parts separated by
// dots, each decimal, octal (a leading 0) or hexadecimal (0x); the last part fills the remaining
// bytes (a.b.c.d, a.b.16bits, a.24bits, 32bits). It also reads "0x" alone as 0, as WHATWG parsers
// do (glibc rejects it); where either would connect, so do we.
func parseIPv4(s string) (netip.Addr, bool) {
	var vals [4]uint32
	n := 0
	for {
		part, rest, more := strings.Cut(s, ".")
		if n == 4 {
			return netip.Addr{}, false
		}
		v, ok := parseIPv4Part(part)
		if !ok {
			return netip.Addr{}, false
		}
		vals[n] = v
		n++
		if !more {
			break
		}
		s = rest
	}
	max := [4]uint32{0xffffffff, 0xffffff, 0xffff, 0xff}[n-1]
	if vals[n-1] > max {
		return netip.Addr{}, false
	}
	var a uint32
	for i := 0; i < n-1; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
		a |= vals[i] << (24 - 8*i)
	}
	a |= vals[n-1]
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), true
}

// parseIPv4Part reads one part as strtoul(s, &end, 0) must consume it whole, up to 2^32-1.
func parseIPv4Part(s string) (uint32, bool) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, false // inet_aton: every part starts with a digit
	}
	base, digits := uint64(10), s
	switch {
	case strings.HasPrefix(s, "0x"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	var v uint64
	for i := 0; i < len(digits); i++ {
		d := uint64(unhex(digits[i]))
		if unhex(digits[i]) < 0 || d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return uint32(v), true
}

// Prefixes of IPv6 addresses that carry an IPv4 address.
var (
	prefixMapped     = netip.MustParsePrefix("::ffff:0:0/96")   // IPv4-mapped
	prefixCompatible = netip.MustParsePrefix("::/96")           // IPv4-compatible (deprecated)
	prefixSIIT       = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (SIIT)
	prefixNAT64      = netip.MustParsePrefix("64:ff9b::/96")    // NAT64 well-known prefix
	prefixNAT64Local = netip.MustParsePrefix("64:ff9b:1::/48")  // NAT64 local-use prefix
	prefix6to4       = netip.MustParsePrefix("2002::/16")       // 6to4
)

// EmbeddedIPv4 returns the IPv4 address an IPv6 address reaches: IPv4-mapped (::ffff:a.b.c.d),
// IPv4-compatible (::a.b.c.d, but not :: or ::1), IPv4-translated (::ffff:0:a.b.c.d), NAT64
// (64:ff9b::/96 and the local-use 64:ff9b:1::/48, last 32 bits) and 6to4 (2002:AABB:CCDD::/48).
// An IPv4 address is returned as it is.
func EmbeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	a = a.WithZone("")
	if a.Is4() {
		return a, true
	}
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	last := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	switch {
	case prefixMapped.Contains(a), prefixSIIT.Contains(a), prefixNAT64.Contains(a), prefixNAT64Local.Contains(a):
		return last, true
	case prefixCompatible.Contains(a):
		if a == netip.IPv6Unspecified() || a == netip.IPv6Loopback() {
			return netip.Addr{}, false
		}
		return last, true
	case prefix6to4.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}
