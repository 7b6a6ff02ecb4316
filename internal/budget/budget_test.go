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
		// Work until the process has used 30ms of CPU (however long other load makes that take).
		start, _ := processCPU()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			sink = make([]byte, 1<<10)
			if now, _ := processCPU(); now-start >= 30*time.Millisecond {
				break
			}
		}
	})
	_ = sink
	if busy.CPU < 30*time.Millisecond || busy.Bytes < 1<<10 || busy.Elapsed != min(busy.Wall, busy.CPU) {
		t.Fatalf("30ms of CPU spent allocating measured %s", busy)
	}
}
