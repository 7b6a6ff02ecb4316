package hosts

import "testing"

var benchURLs = []string{
	"https://api.github.com/repos/tollgate-dev/tollgate/pulls?state=open",
	"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
	"http://0xA9FEA9FE/",
	"https://pkg.go.dev/net/netip",
	"http://[::ffff:a9fe:a9fe]/",
	"http://metadata.google.internal./computeMetadata/v1/",
}

// BenchmarkParseURLBlockedReason is the per-fetch check: parse, then the default block reason.
func BenchmarkParseURLBlockedReason(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		u, err := ParseURL(benchURLs[i%len(benchURLs)])
		if err != nil {
			b.Fatal(err)
		}
		_ = BlockedReason(u)
	}
}

func BenchmarkHostSetMatch(b *testing.B) {
	s, errs := CompileHostSet([]string{"*.github.com", "github.com", "pkg.go.dev", "proxy.golang.org",
		"*.pypi.org", "10.0.0.0/8", "registry.npmjs.org"})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	u, _ := ParseURL(benchURLs[0])
	b.ReportAllocs()
	for b.Loop() {
		s.Match(u)
	}
}
