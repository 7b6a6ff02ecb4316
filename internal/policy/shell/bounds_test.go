package shell

import (
	"runtime"
	"strings"
	"testing"
)

// TestLiteralRunsAreLinear feeds a word split into thousands of adjacent literals (every "$" followed
// by a non-name character starts a new one): joining them pairwise allocated 531 MiB for 64 KiB.
func TestLiteralRunsAreLinear(t *testing.T) {
	src := strings.Repeat("00$\ufffd00", (DefaultMaxBytes-64)/8)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Analyze(src, Limits{}); err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("analysing %d bytes allocated %d MiB, want at most 32 MiB", len(src), got>>20)
	}
}
