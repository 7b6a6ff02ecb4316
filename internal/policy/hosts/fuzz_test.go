package hosts

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"http://2852039166/", "http://0xA9FEA9FE/", "http://0251.0376.0251.0376/", "http://169.254.43518/",
		"http://127.1:10250/", "http://[::ffff:a9fe:a9fe]/", "http://[::ffff:169.254.169.254]/",
		"http://METADATA.GOOGLE.INTERNAL./", "http://good@169.254.169.254/", "http://169.254.169.254%2f@x",
		"HTTP://x", "169.254.169.254/latest", "//host/path", "[fe80::1%25eth0]", "http://0.0.0.0", "http://[::]",
		"http://[::1]", "http://0/", "file:///etc/passwd", "gopher://x:70/_", "jar:http://x!/", "http:x",
		"http://%31%36%39.254.169.254/", "http://a@b@c/", "http://[64:ff9b::1.2.3.4]:8080/x?y#z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := ParseURL(raw)
		LooksLikeURL(raw)
		if err != nil {
			return
		}
		r := BlockedReason(u)
		if u.Scheme == "" || u.Scheme != strings.ToLower(u.Scheme) {
			t.Fatalf("ParseURL(%q): scheme %q", raw, u.Scheme)
		}
		if name, _, _ := strings.Cut(u.Host, "%"); name != strings.ToLower(name) || strings.HasSuffix(u.Host, ".") {
			t.Fatalf("ParseURL(%q): host %q not canonical", raw, u.Host)
		}
		if u.IP.IsValid() && u.Host != u.IP.String() {
			t.Fatalf("ParseURL(%q): host %q, IP %v", raw, u.Host, u.IP)
		}
		if u.Host == "" {
			if u.IP.IsValid() || u.Port != "" {
				t.Fatalf("ParseURL(%q) = %+v", raw, u)
			}
			return
		}
		// Canonical hosts read back as themselves.
		h2, ip2, err := CanonicalHost(bracket(u.Host))
		if err != nil || h2 != u.Host || ip2 != u.IP {
			t.Fatalf("CanonicalHost(%q) = %q, %v, %v", u.Host, h2, ip2, err)
		}
		again, err := ParseURL(u.Scheme + "://" + bracket(u.Host) + portSuffix(u.Port) + "/")
		if err != nil || again.Host != u.Host || again.IP != u.IP || again.Port != u.Port || BlockedReason(again) != r {
			t.Fatalf("ParseURL(%q) = %+v; rebuilt = %+v, %v", raw, u, again, err)
		}
		// Where net/url agrees that this is an http(s) URL with an IP literal, the address agrees.
		lower := strings.ToLower(strings.TrimSpace(raw))
		if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
			return
		}
		ref, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			return
		}
		if a, err := netip.ParseAddr(ref.Hostname()); err == nil {
			if a.WithZone("") != u.IP.WithZone("") {
				t.Fatalf("ParseURL(%q): IP %v, net/url %v", raw, u.IP, a)
			}
			if AddrReason(a) != r {
				t.Fatalf("ParseURL(%q): reason %q, net/url's address %q", raw, r, AddrReason(a))
			}
		} else if !u.IP.IsValid() && ref.Hostname() != "" {
			if want := strings.TrimRight(strings.ToLower(ref.Hostname()), "."); want != u.Host {
				t.Fatalf("ParseURL(%q): host %q, net/url %q", raw, u.Host, want)
			}
		}
	})
}

func bracket(h string) string {
	if strings.Contains(h, ":") {
		return "[" + strings.Replace(h, "%", "%25", 1) + "]"
	}
	return h
}

func portSuffix(p string) string {
	if p == "" {
		return ""
	}
	return ":" + p
}
