package hosts

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// EntryError is an entry of a HostSet that did not compile.
type EntryError struct {
	Index int // position in the list given to CompileHostSet
	Err   error
}

func (e *EntryError) Error() string { return fmt.Sprintf("host entry %d: %v", e.Index, e.Err) }

func (e *EntryError) Unwrap() error { return e.Err }

var (
	errWildcard = errors.New(`a wildcard must be a whole leading label ("*.example.com") or "*" alone`)
	errCIDR     = errors.New("invalid CIDR")
	errNotHost  = errors.New("not a host: write the host alone, without scheme, port or path")
)

// HostSet is a compiled host list, as passports and policies write them:
//
//   - "example.com" matches that name only (not its subdomains);
//   - "*.example.com" matches every subdomain at any depth, not example.com itself: write both to
//     allow a site and its subdomains;
//   - "10.0.0.0/8", "fd00::/8" match IP literals in the range; a single IP in any spelling
//     ("2852039166", "[::1]") is canonicalized and matches that address;
//   - "*" matches every host.
//
// Names are compared after CanonicalHost (lower case, no trailing dot); names never match IP
// literals (a name's addresses are not resolved) and IP entries never match names. An IP literal
// that embeds an IPv4 address (EmbeddedIPv4) also matches the IPv4 entries. HostSet is immutable
// and safe for concurrent use; a nil *HostSet matches nothing.
type HostSet struct {
	entries []string
	all     int            // index of "*", or -1
	exact   map[string]int // name → index
	suffix  map[string]int // "*.example.com" as "example.com" → index
	nets    []hostNet
}

type hostNet struct {
	p   netip.Prefix
	idx int
}

// CompileHostSet compiles host entries. Entries that do not compile are left out and reported, one
// *EntryError each, with their index.
func CompileHostSet(entries []string) (*HostSet, []error) {
	s := &HostSet{all: -1, exact: map[string]int{}, suffix: map[string]int{}}
	s.entries = append([]string(nil), entries...)
	var errs []error
	for i, e := range entries {
		if err := s.add(i, strings.TrimSpace(e)); err != nil {
			errs = append(errs, &EntryError{Index: i, Err: err})
		}
	}
	return s, errs
}

// setFirst records the first index of a key.
func setFirst(m map[string]int, k string, i int) {
	if _, ok := m[k]; !ok {
		m[k] = i
	}
}

func (s *HostSet) add(i int, e string) error {
	switch {
	case e == "*":
		if s.all < 0 {
			s.all = i
		}
		return nil
	case strings.Contains(e, "://"):
		return errNotHost
	case strings.HasPrefix(e, "*."):
		name, ip, err := canonicalHost(e[2:])
		if err != nil {
			return err
		}
		if ip.IsValid() {
			return errWildcard
		}
		setFirst(s.suffix, name, i)
		return nil
	case strings.Contains(e, "*"):
		return errWildcard
	case strings.Contains(e, "/"):
		// Strict notation: "10/8" means 10.0.0.0/8 to some and 0.0.0.10/8 to inet_aton.
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return fmt.Errorf("%w: write a full address and a prefix length", errCIDR)
		}
		s.nets = append(s.nets, hostNet{p: unmapPrefix(p.Masked()), idx: i})
		return nil
	}
	name, ip, err := canonicalHost(e)
	if err != nil {
		if strings.Contains(e, ":") && !strings.HasPrefix(e, "[") {
			return fmt.Errorf("%w (%w)", errNotHost, err)
		}
		return err
	}
	if ip.IsValid() {
		ip = ip.WithZone("")
		s.nets = append(s.nets, hostNet{p: unmapPrefix(netip.PrefixFrom(ip, ip.BitLen())), idx: i})
		return nil
	}
	setFirst(s.exact, name, i)
	return nil
}

// unmapPrefix writes a prefix inside ::ffff:0:0/96 as the IPv4 prefix it stands for.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// Len returns the number of entries given, including those that did not compile.
func (s *HostSet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// Match returns the first entry, in list order, that matches the URL's host.
func (s *HostSet) Match(u URL) (entry string, ok bool) {
	if s == nil {
		return "", false
	}
	best := s.all
	better := func(i int) {
		if best < 0 || i < best {
			best = i
		}
	}
	if u.IP.IsValid() {
		ip := u.IP.WithZone("")
		v4, has4 := EmbeddedIPv4(ip)
		for _, n := range s.nets {
			if n.p.Contains(ip) || (has4 && n.p.Contains(v4)) {
				better(n.idx)
			}
		}
	} else if u.Host != "" {
		if i, ok := s.exact[u.Host]; ok {
			better(i)
		}
		for h := u.Host; ; {
			dot := strings.IndexByte(h, '.')
			if dot < 0 {
				break
			}
			h = h[dot+1:]
			if i, ok := s.suffix[h]; ok {
				better(i)
			}
		}
	}
	if best < 0 {
		return "", false
	}
	return s.entries[best], true
}
