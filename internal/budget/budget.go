// Package budget measures what one untrusted input costs (wall time and heap allocation) and fails
// a test or fuzz target that goes over a bound. The fuzz targets of the decider (requests), the
// manifest loader (bundles) and the admission webhooks (policies) use it to assert that no input
// takes an endpoint down.
//
// The bounds are meant for a noisy shared machine: time is the CPU time the process spent (user and
// system, when the platform reports it) or the wall time, whichever is smaller, so other processes
// competing for the cores do not count against the input; it is re-measured when a run overruns and
// only the fastest run counts, so a GC pause or a descheduled thread does not fail the target; bytes are
// the heap allocated during the run (runtime.MemStats.TotalAlloc), an upper bound on what the
// input adds to the live heap, and also the smallest across the runs.
package budget

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// Limits are the resources one input may cost.
type Limits struct {
	// Time bounds the wall time of one run.
	Time time.Duration
	// Bytes bounds the heap allocated during one run.
	Bytes uint64
}

// Request is the bound of one request decoded and decided (or refused): 200 ms and 64 MiB.
var Request = Limits{Time: 200 * time.Millisecond, Bytes: 64 << 20}

// Admission is the bound of one object through the admission path or one bundle loaded and compiled
// (the target for the worst admissible policy is 1 s; the webhook times out at 5 s).
var Admission = Limits{Time: time.Second, Bytes: 64 << 20}

// Cost is what one run cost.
type Cost struct {
	// Elapsed is the smaller of Wall and CPU (Wall when the platform reports no CPU time).
	Elapsed time.Duration
	Wall    time.Duration
	CPU     time.Duration // the process's user and system time during the run (0: not reported)
	Bytes   uint64
	Allocs  uint64
}

func (c Cost) String() string {
	return fmt.Sprintf("%v (wall %v, CPU %v), %.1f MiB in %d allocations", c.Elapsed.Round(time.Microsecond),
		c.Wall.Round(time.Microsecond), c.CPU.Round(time.Microsecond), float64(c.Bytes)/(1<<20), c.Allocs)
}

// Measure runs f once and returns its cost.
func Measure(f func()) Cost {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0, cpuOK := processCPU()
	start := time.Now()
	f()
	wall := time.Since(start)
	cpu1, _ := processCPU()
	runtime.ReadMemStats(&after)
	c := Cost{Elapsed: wall, Wall: wall, Bytes: after.TotalAlloc - before.TotalAlloc, Allocs: after.Mallocs - before.Mallocs}
	if cpuOK {
		c.CPU = cpu1 - cpu0
		c.Elapsed = min(wall, c.CPU)
	}
	return c
}

// attempts is how many runs an input gets before an overrun counts.
const attempts = 3

// Check runs f (which must be repeatable) and fails tb when its cost is over l in every one of up to
// three runs; it returns the lowest cost seen. what names the input in the failure.
func Check(tb testing.TB, what string, l Limits, f func()) Cost {
	tb.Helper()
	best := Cost{Elapsed: 1<<63 - 1, Bytes: 1<<64 - 1}
	for range attempts {
		c := Measure(f)
		best.Elapsed = min(best.Elapsed, c.Elapsed)
		if c.Bytes < best.Bytes {
			best.Bytes, best.Allocs = c.Bytes, c.Allocs
		}
		if best.Elapsed <= l.Time && best.Bytes <= l.Bytes {
			return best
		}
		runtime.GC() // the next run starts from a collected heap
	}
	tb.Fatalf("%s costs %s: over the bound of %v and %d MiB", what, best, l.Time, l.Bytes>>20)
	return best
}
