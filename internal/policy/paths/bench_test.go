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

// wordPaths are the positional words of a typical agent command, checked as paths.
var wordPaths = []string{"diff", "HEAD~1", "internal/p7/", "src/main.go", "TODO", "/tmp/out.txt"}

// BenchmarkCanonicalMatch3 is the shell guard's per-word check: canonicalize, then three sets.
func BenchmarkCanonicalMatch3(b *testing.B) {
	sets := []*Set{BaselineRead(), BaselineWrite(), BaselineRead()}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c, err := Canonical(wordPaths[i%len(wordPaths)])
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range sets {
			s.Match(c)
		}
	}
}

// BenchmarkParsePathMatch3 is the same check parsing the word once (ParsePath, MatchParsed).
func BenchmarkParsePathMatch3(b *testing.B) {
	sets := []*Set{BaselineRead(), BaselineWrite(), BaselineRead()}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var buf [32]string
		p, _, err := ParsePath(wordPaths[i%len(wordPaths)], buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range sets {
			s.MatchParsed(&p)
		}
	}
}
