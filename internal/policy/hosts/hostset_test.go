package hosts

import (
	"errors"
	"testing"
)

func mustURL(t testing.TB, s string) URL {
	t.Helper()
	u, err := ParseURL(s)
	if err != nil {
		t.Fatalf("ParseURL(%q): %v", s, err)
	}
	return u
}

func TestHostSet(t *testing.T) {
	entries := []string{
		"example.com",     // 0
		"*.github.com",    // 1
		"10.0.0.0/8",      // 2
		"2852039166",      // 3
		"[::1]",           // 4
		"fd00::/8",        // 5
		"bad entry",       // 6: error
		"*x.com",          // 7: error
		"10/8",            // 8: error
		"https://x.com",   // 9: error
		"example.com:443", // 10: error
		"",                // 11: error
		" Docs.Example.ORG. ",
		"::ffff:192.168.0.0/112",
		"*.*.example.com", // 14: error
		"*.10.0.0.1",      // 15: error
	}
	s, errs := CompileHostSet(entries)
	var idx []int
	for _, err := range errs {
		var ee *EntryError
		if !errors.As(err, &ee) {
			t.Fatalf("error %v is not an *EntryError", err)
		}
		idx = append(idx, ee.Index)
	}
	if want := []int{6, 7, 8, 9, 10, 11, 14, 15}; !equal(idx, want) {
		t.Errorf("error indexes = %v, want %v (%v)", idx, want, errs)
	}
	if s.Len() != len(entries) {
		t.Errorf("Len() = %d", s.Len())
	}
	cases := map[string]string{
		"https://example.com/x":          "example.com",
		"http://EXAMPLE.com./":           "example.com",
		"https://www.example.com/":       "",
		"https://api.github.com/":        "*.github.com",
		"https://a.b.github.com/":        "*.github.com",
		"https://github.com/":            "",
		"https://evilgithub.com/":        "",
		"https://github.com.evil.io/":    "",
		"http://10.1.2.3/":               "10.0.0.0/8",
		"http://012.1.2.3/":              "10.0.0.0/8",
		"http://[::ffff:10.1.2.3]/":      "10.0.0.0/8",
		"http://[64:ff9b::a01:203]/":     "10.0.0.0/8",
		"http://169.254.169.254/":        "2852039166",
		"http://0xA9FEA9FE/":             "2852039166",
		"http://[::1]:8080/":             "[::1]",
		"http://[fd12::1]/":              "fd00::/8",
		"http://[fe80::1%25eth0]/":       "",
		"https://docs.example.org/":      " Docs.Example.ORG. ",
		"http://192.168.1.1/":            "::ffff:192.168.0.0/112",
		"http://[::ffff:192.168.1.1]/":   "::ffff:192.168.0.0/112",
		"http://93.184.216.34/":          "",
		"file:///etc/passwd":             "",
		"http://x.com/":                  "",
		"http://example.com.evil.io/":    "",
		"http://sub.docs.example.org/":   "",
		"http://kubernetes.default.svc/": "",
	}
	for in, want := range cases {
		got, ok := s.Match(mustURL(t, in))
		if ok != (want != "") || got != want {
			t.Errorf("Match(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestHostSetOrderAndAll(t *testing.T) {
	s, errs := CompileHostSet([]string{"*.example.com", "api.example.com", "*"})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for in, want := range map[string]string{
		"https://api.example.com/": "*.example.com",
		"https://example.com/":     "*",
		"http://10.0.0.1/":         "*",
		"data:text/plain,x":        "*",
	} {
		if got, _ := s.Match(mustURL(t, in)); got != want {
			t.Errorf("Match(%q) = %q, want %q", in, got, want)
		}
	}
	s, _ = CompileHostSet([]string{"api.example.com", "*.example.com"})
	if got, _ := s.Match(mustURL(t, "https://api.example.com/")); got != "api.example.com" {
		t.Errorf("Match = %q, want the first entry", got)
	}
	var empty *HostSet
	if _, ok := empty.Match(mustURL(t, "http://x.com")); ok || empty.Len() != 0 {
		t.Error("a nil HostSet matched")
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLooksLikeURL(t *testing.T) {
	yes := []string{
		"http://x", "HTTPS://example.com/a", "ftp://x", "file:///etc/passwd", "gopher://x:70/", "http:x",
		"http:169.254.169.254", "//example.com/x", "//169.254.169.254", "localhost:8080", "localhost:8080/x",
		"127.0.0.1:80", "169.254.169.254", "169.254.169.254/latest", "0xA9FEA9FE", "2852039166/x", "[::1]",
		"[::1]:80/x", "localhost", "localhost/x", "metadata.google.internal", "metadata.google.internal/x",
		"user@10.0.0.1:22", "example.com:443", "kubernetes.default.svc", "127.1/x",
	}
	no := []string{
		"", "src/main.go", "example.com/x", "1.5", "3.14159", "2852039166", "README.md", "foo:bar", "C:",
		"a=b", "--flag", "//etc/passwd", "x.y", "/etc/hosts", "key:value", "mailto:a@b", "v1.2.3", "-",
		"x:99999999", "[nope]", "*",
	}
	for _, w := range yes {
		if !LooksLikeURL(w) {
			t.Errorf("LooksLikeURL(%q) = false", w)
		}
	}
	for _, w := range no {
		if LooksLikeURL(w) {
			t.Errorf("LooksLikeURL(%q) = true", w)
		}
	}
}
