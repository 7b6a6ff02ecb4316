package budget

import (
	"testing"
	"time"
)

// TestMeasureCountsWork checks that waiting does not count (the CPU time is small) and that work
// does, and that the bytes allocated are seen.
func TestMeasureCountsWork(t *testing.T) {
	if _, ok := processCPU(); !ok {
		t.Fatal("this platform reports no process CPU time; the budgets would fall back to wall time")
	}
	idle := Measure(func() { time.Sleep(100 * time.Millisecond) })
	if idle.Wall < 100*time.Millisecond {
		t.Fatalf("sleeping 100ms measured wall %v", idle.Wall)
	}
	if idle.Elapsed >= 50*time.Millisecond || idle.Elapsed != min(idle.Wall, idle.CPU) {
		t.Fatalf("sleeping counted %v (CPU %v): waiting must not count against a budget", idle.Elapsed, idle.CPU)
	}
	var sink []byte
	busy := Measure(func() {
		for start := time.Now(); time.Since(start) < 60*time.Millisecond; {
			sink = make([]byte, 1<<10)
		}
	})
	_ = sink
	if busy.CPU < 20*time.Millisecond || busy.Bytes < 1<<10 {
		t.Fatalf("60ms of allocating work measured %s", busy)
	}
}
