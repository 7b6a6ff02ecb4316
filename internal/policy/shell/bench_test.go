package shell

import (
	"syscall"
	"testing"
	"time"
)

// bench200 is a realistic ~200-character agent command.
const bench200 = `git status --short && git diff --stat HEAD~1 | head -50; find . -name '*.go' -newer go.mod | xargs grep -n 'TODO' 2>/dev/null | sort | uniq -c | sort -rn | head -20 && echo done`

// cpuTime is the CPU time (user+system) this process has used. On a shared
// machine it is a steadier measure than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchCPU runs f b.N times, reporting CPU ns/op next to the wall time.
func benchCPU(b *testing.B, f func()) {
	b.ReportAllocs()
	start := cpuTime()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(n), "cpu-ns/op")
	}
}

func BenchmarkAnalyze200(b *testing.B) {
	b.SetBytes(int64(len(bench200)))
	benchCPU(b, func() {
		if _, err := Analyze(bench200, Limits{}); err != nil {
			b.Fatal(err)
		}
	})
}

// benchDecide is the command of the engine's cold shell decision benchmark
// (a new command every call: the analysis is not cached).
const benchDecide = `git diff --stat HEAD~1 | head -50 && grep -rn TODO internal/p7/ | wc -l`

func BenchmarkAnalyzeDecide(b *testing.B) {
	b.SetBytes(int64(len(benchDecide)))
	benchCPU(b, func() {
		if _, err := Analyze(benchDecide, Limits{}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkParseOnly measures the mvdan.cc/sh parser alone on bench200: the
// floor under BenchmarkAnalyze200 for commands that take the full parser.
func BenchmarkParseOnly(b *testing.B) {
	benchCPU(b, func() {
		ps := parserPool.Get().(*parserState)
		if _, err := ps.parse(bench200, true); err != nil {
			b.Fatal(err)
		}
		parserPool.Put(ps)
	})
}

func BenchmarkAnalyzeShort(b *testing.B) {
	benchCPU(b, func() {
		if _, err := Analyze("ls -la", Limits{}); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkPatternMatch(b *testing.B) {
	pats := []string{"rm -rf", "sudo", "git push --force", "curl | sh", "kubectl delete", "chmod 777"}
	var cps []*CommandPattern
	for _, p := range pats {
		cp, err := CompilePattern(p)
		if err != nil {
			b.Fatal(err)
		}
		cps = append(cps, cp)
	}
	s, err := Analyze(bench200, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	benchCPU(b, func() {
		for _, cp := range cps {
			if _, ok := cp.Match(s); ok {
				b.Fatal("unexpected match")
			}
		}
	})
}

func BenchmarkCompilePattern(b *testing.B) {
	benchCPU(b, func() {
		if _, err := CompilePattern("git push --force"); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkCalibration is a fixed CPU-bound loop (200 bytes, no memory
// traffic): compare it across machines or runs to normalize the others on a
// shared machine (about 70 ns on an idle modern core).
func BenchmarkCalibration(b *testing.B) {
	var buf [200]byte
	for i := range buf {
		buf[i] = byte(i)
	}
	n := 0
	for b.Loop() {
		for _, c := range buf {
			if c == ' ' {
				n++
			}
			n += int(c >> 3)
		}
	}
	calibrationSink = n
}

var calibrationSink int
