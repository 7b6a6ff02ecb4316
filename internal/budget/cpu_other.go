//go:build !unix

package budget

import "time"

// processCPU reports no CPU time: the budget falls back to wall time.
func processCPU() (time.Duration, bool) { return 0, false }
