package paths

import "testing"

var benchPaths = []string{
	"/workspace/src/main.go",
	"~/.ssh/id_rsa",
	"/etc/passwd",
	"src/internal/policy/paths/glob.go",
	"/home/alice/.aws/credentials",
	"/tmp/../etc/shadow",
}

// BenchmarkCanonicalMatchRead is the per-call read check: canonicalize, then the read baseline.
func BenchmarkCanonicalMatchRead(b *testing.B) {
	s := BaselineRead()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c, err := Canonical(benchPaths[i%len(benchPaths)])
		if err != nil {
			b.Fatal(err)
		}
		s.Match(c)
	}
}

// BenchmarkCanonicalMatchWrite is the same against the larger write baseline.
func BenchmarkCanonicalMatchWrite(b *testing.B) {
	s := BaselineWrite()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c, err := Canonical(benchPaths[i%len(benchPaths)])
		if err != nil {
			b.Fatal(err)
		}
		s.Match(c)
	}
}

// BenchmarkMatchGlobRead checks a typical shell glob against the read baseline.
func BenchmarkMatchGlobRead(b *testing.B) {
	s := BaselineRead()
	b.ReportAllocs()
	for b.Loop() {
		s.MatchGlobMode("/workspace/src/*.go", GlobShell)
	}
}

// BenchmarkMatchGlobDynamicRead checks a word with a dynamic part against the read baseline.
func BenchmarkMatchGlobDynamicRead(b *testing.B) {
	s := BaselineRead()
	b.ReportAllocs()
	for b.Loop() {
		s.MatchGlob("/workspace/*/config.yaml")
	}
}
