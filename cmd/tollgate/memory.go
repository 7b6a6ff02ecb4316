package main

import (
	"log/slog"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memoryLimitRatio is the share of the container's memory limit the Go runtime aims to stay
// under (GOMEMLIMIT): the rest is headroom for memory the runtime does not account, so that a
// busy endpoint collects garbage harder instead of being killed at the limit.
const memoryLimitRatio = 0.8

// setMemoryLimit sets GOMEMLIMIT to memoryLimitRatio of the cgroup's memory limit, unless the
// GOMEMLIMIT environment variable is set (it wins) or the process has no limit.
func setMemoryLimit(log *slog.Logger) {
	limit, err := memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(memlimit.FromCgroup))
	if err != nil {
		log.Warn("could not set the Go memory limit from the container's", "err", err)
		return
	}
	if limit > 0 && limit < 1<<62 {
		log.Info("Go memory limit", "bytes", limit)
	}
}
