package hosts

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Limits.
const (
	MaxURLLen  = 8192 // bytes of a URL ParseURL accepts
	MaxHostLen = 253  // bytes of a canonical host name (DNS's limit)
)

// Errors ParseURL, CanonicalHost and CompileHostSet wrap. Messages never include the input.
var (
	ErrTooLong   = errors.New("too long")
	ErrControl   = errors.New("contains a control character, a space or a NUL byte")
	ErrNonASCII  = errors.New("non-ASCII host (write IDNs in punycode)")
	ErrEmptyHost = errors.New("empty host")
	ErrBadHost   = errors.New("invalid host name")
	ErrBadIPv4   = errors.New("invalid IPv4 address (the host ends in a number)")
	ErrBadIPv6   = errors.New("invalid IPv6 address")
	ErrBadPort   = errors.New("invalid port")
	ErrAmbiguous = errors.New("ambiguous authority (parsers disagree on its host)")
)

// URL is a parsed fetch target with a canonical host.
type URL struct {
	// Scheme is lower-case; "http" when the input had none (curl's assumption). Callers deny the
	// schemes they do not fetch: file, gopher, ftp, dict, ldap, jar, data, ...
	Scheme string
	// Host is the canonical host: a lower-case ASCII name without trailing dots, or the IP address
	// in netip's form (IPv6 without brackets, with its zone as written: interface names are
	// case-sensitive). Empty for URLs without an authority
	// ("file:/etc/passwd", "data:...", "mailto:...") and "file:///...".
	Host string
	// Port is the explicit port in decimal without leading zeros, or "".
	Port string
	// IP is valid when the host is an IP literal, in any spelling.
	IP netip.Addr
	// Userinfo reports a user (and password) before '@' in the authority.
	Userinfo bool
}

// ParseURL parses a URL as a fetch tool or curl would:
//
//   - "HTTP://x" is http; a scheme-less target ("169.254.169.254/latest", "host:8080/x",
//     "user@host") is http, as curl assumes; "//host/path" is http too;
//   - special schemes (http, https, ws, wss, ftp) may omit or repeat their slashes ("http:x",
//     "http:/x", "http:///x"), as WHATWG parsers allow;
//   - the host is percent-decoded (WHATWG does it) and canonicalized by CanonicalHost; an IPv6
//     literal may carry a zone ("[fe80::1%25eth0]");
//   - other schemes are reported in Scheme; those without "//" have no host.
//
// It fails for input longer than MaxURLLen, control characters or spaces (other than around the
// URL), non-ASCII in the authority, an unparsable host or port, and ambiguous authorities.
func ParseURL(raw string) (URL, error) {
	u, err := parseURL(raw)
	if err != nil {
		return URL{}, fmt.Errorf("parse URL: %w", err)
	}
	return u, nil
}

// special schemes may omit the slashes before their authority (WHATWG).
var special = map[string]bool{"http": true, "https": true, "ws": true, "wss": true, "ftp": true}

// opaque schemes are recognised without "//" ("mailto:x", "file:/etc/passwd"): they have no host.
var opaque = map[string]bool{
	"file": true, "data": true, "javascript": true, "mailto": true, "jar": true, "gopher": true,
	"dict": true, "ldap": true, "ldaps": true, "netdoc": true, "about": true, "blob": true,
	"vbscript": true, "tel": true, "sms": true, "urn": true, "news": true, "nntp": true,
	"telnet": true, "tftp": true, "sftp": true, "scp": true, "smb": true, "smbs": true, "ssh": true,
	"git": true, "s3": true, "gs": true, "view-source": true, "chrome": true, "resource": true,
}

func parseURL(raw string) (URL, error) {
	if len(raw) > MaxURLLen {
		return URL{}, ErrTooLong
	}
	raw = strings.Trim(raw, " ")
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c < 0x20 || c == 0x7f || c == ' ' {
			return URL{}, ErrControl
		}
	}
	if raw == "" {
		return URL{}, ErrEmptyHost
	}
	var u URL
	rest := raw
	scheme, after, hasScheme := cutScheme(raw)
	switch {
	case hasScheme && special[scheme]:
		// WHATWG: any number of slashes, even none ("http:x", "http:///x").
		u.Scheme = scheme
		rest = strings.TrimLeft(after, "/")
		if strings.HasPrefix(rest, `\`) {
			return URL{}, ErrAmbiguous
		}
	case hasScheme && strings.HasPrefix(after, "//"):
		u.Scheme, rest = scheme, after[2:]
	case hasScheme && opaque[scheme]:
		u.Scheme = scheme
		return u, nil
	case strings.HasPrefix(raw, "//"):
		u.Scheme, rest = "http", raw[2:]
	default:
		u.Scheme = "http"
	}
	end := 0
	for end < len(rest) && rest[end] != '/' && rest[end] != '?' && rest[end] != '#' {
		end++
	}
	auth := rest[:end]
	if u.Scheme == "file" && auth == "" {
		return u, nil
	}
	if err := u.parseAuthority(auth); err != nil {
		return URL{}, err
	}
	return u, nil
}

// cutScheme splits "scheme:rest" when the part before ':' is a valid scheme name, lower-cased.
// "localhost:8080" and "10.0.0.1:80" read as a scheme here; the callers decide.
func cutScheme(s string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", s, false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", s, false
		}
	}
	return strings.ToLower(s[:i]), s[i+1:], true
}

func (u *URL) parseAuthority(auth string) error {
	if strings.ContainsRune(auth, '\\') {
		return ErrAmbiguous // WHATWG reads '\' as '/', curl does not
	}
	for i := 0; i < len(auth); i++ {
		if auth[i] >= 0x80 {
			return ErrNonASCII
		}
	}
	hostport := auth
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		user := auth[:at]
		if strings.ContainsAny(user, "@[]") || hasEncodedDelimiter(user) {
			return ErrAmbiguous
		}
		u.Userinfo = true
		hostport = auth[at+1:]
	}
	host, port := hostport, ""
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return ErrBadIPv6
		}
		host = hostport[:end+1]
		switch after := hostport[end+1:]; {
		case after == "":
		case after[0] == ':':
			port = after[1:]
		default:
			return ErrBadHost
		}
	} else if i := strings.IndexByte(hostport, ':'); i >= 0 {
		host, port = hostport[:i], hostport[i+1:]
		if strings.IndexByte(port, ':') >= 0 {
			return ErrBadHost
		}
	}
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || port[0] == '+' {
			return ErrBadPort
		}
		u.Port = strconv.FormatUint(n, 10)
	}
	if !strings.HasPrefix(host, "[") && strings.IndexByte(host, '%') >= 0 {
		dec, err := percentDecode(host)
		if err != nil {
			return err
		}
		host = dec
	}
	h, ip, err := CanonicalHost(host)
	if err != nil {
		return err
	}
	u.Host, u.IP = h, ip
	return nil
}

// hasEncodedDelimiter reports a percent-encoded '/', '?', '#', '@', '\' or ':' in a user part: a
// parser that decodes before splitting would find another host.
func hasEncodedDelimiter(s string) bool {
	l := strings.ToLower(s)
	for _, e := range [...]string{"%2f", "%3f", "%23", "%40", "%5c", "%3a", "%5b", "%5d"} {
		if strings.Contains(l, e) {
			return true
		}
	}
	return false
}

// percentDecode decodes a host's %XX escapes; the result must be a plain host.
func percentDecode(s string) (string, error) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return "", ErrBadHost
		}
		c := byte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		switch {
		case c < 0x20 || c == 0x7f || c == ' ':
			return "", ErrControl
		case c >= 0x80:
			return "", ErrNonASCII
		case strings.IndexByte("/?#@\\:[]%", c) >= 0:
			return "", ErrAmbiguous
		}
		b = append(b, c)
		i += 2
	}
	return string(b), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// CanonicalHost canonicalizes a host as written in a URL's authority or in a host list: a name is
// lower-cased and loses its trailing dots; an IP literal in any spelling ("2852039166", "0x7f.1",
// "[::ffff:169.254.169.254]", "::1", "[fe80::1%25eth0]") is returned in netip's form with ip valid.
// Non-ASCII names (write IDNs in punycode), characters other than letters, digits, '-', '_' and
// '.', empty labels, labels over 63 bytes, names over MaxHostLen bytes and names ending in a number
// that are not IPv4 addresses are errors.
func CanonicalHost(h string) (host string, ip netip.Addr, err error) {
	host, ip, err = canonicalHost(h)
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("canonical host: %w", err)
	}
	return host, ip, nil
}

func canonicalHost(h string) (string, netip.Addr, error) {
	if h == "" {
		return "", netip.Addr{}, ErrEmptyHost
	}
	if len(h) > MaxURLLen {
		return "", netip.Addr{}, ErrTooLong
	}
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c < 0x20 || c == 0x7f || c == ' ':
			return "", netip.Addr{}, ErrControl
		case c >= 0x80:
			return "", netip.Addr{}, ErrNonASCII
		}
	}
	if h[0] == '[' {
		if len(h) < 2 || h[len(h)-1] != ']' {
			return "", netip.Addr{}, ErrBadIPv6
		}
		return parseIPv6(h[1 : len(h)-1])
	}
	if strings.IndexByte(h, ':') >= 0 {
		return parseIPv6(h)
	}
	name := strings.ToLower(strings.TrimRight(h, "."))
	if name == "" {
		return "", netip.Addr{}, ErrEmptyHost
	}
	if endsInNumber(name) {
		a, ok := parseIPv4(name)
		if !ok {
			return "", netip.Addr{}, ErrBadIPv4
		}
		return a.String(), a, nil
	}
	if len(name) > MaxHostLen {
		return "", netip.Addr{}, ErrTooLong
	}
	label := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if label == 0 {
				return "", netip.Addr{}, ErrBadHost
			}
			label = 0
			continue
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return "", netip.Addr{}, ErrBadHost
		}
		if label++; label > 63 {
			return "", netip.Addr{}, ErrBadHost
		}
	}
	return name, netip.Addr{}, nil
}

// parseIPv6 parses an IPv6 literal with an optional zone written "%zone" or "%25zone" (RFC 6874).
func parseIPv6(s string) (string, netip.Addr, error) {
	addr, zone, hasZone := strings.Cut(s, "%")
	if hasZone {
		if strings.HasPrefix(zone, "25") && len(zone) > 2 {
			zone = zone[2:]
		}
		if zone == "" || strings.ContainsAny(zone, "%/?#@[]") {
			return "", netip.Addr{}, ErrBadIPv6
		}
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return "", netip.Addr{}, ErrBadIPv6
	}
	if hasZone {
		a = a.WithZone(zone)
	}
	return a.String(), a, nil
}
