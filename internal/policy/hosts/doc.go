// Package hosts parses fetch targets as the tools that fetch them would (curl, WHATWG URL parsers,
// glibc's resolver), canonicalizes their hosts, says why an address is blocked by default for agent
// web fetches, and matches hosts against allow and block lists (allowed_domains and the like).
//
// The package is pure Go (standard library only). Tollgate assumes a prompt-injected caller that
// tries every spelling of an address, so:
//
//   - every IPv4 spelling glibc's inet_aton accepts is an IPv4 address: 1 to 4 parts, each decimal,
//     octal (leading 0) or hexadecimal (0x), "http://2852039166/", "http://0251.0376.0251.0376/",
//     "http://169.254.43518/", "http://0x7f.1/"; plus the WHATWG reading of "0x" as 0;
//   - IPv6 addresses that embed an IPv4 one (mapped, compatible, SIIT, NAT64, 6to4) are checked as
//     that IPv4 address too;
//   - a host whose last label is a number but that is not a valid IPv4 address is an error, as in
//     WHATWG parsers ("1.2.3.256", "foo.123"), rather than a name;
//   - input where parsers disagree is an error, not a guess: two '@', a backslash in the authority,
//     percent-encoded delimiters in the user part, control characters, non-ASCII hosts. Callers deny
//     on error.
//
// What a name resolves to is outside a static check: any public name can resolve to 169.254.169.254
// (DNS rebinding, wildcard DNS). The fetching tool must check the address it connects to as well;
// BlockedReason catches the literal addresses, the well-known internal names and the wildcard-DNS
// services that echo an address from the name.
package hosts
