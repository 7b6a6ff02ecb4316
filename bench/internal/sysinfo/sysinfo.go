// Package sysinfo describes the machine a benchmark runs on and reads a process's CPU time, from
// /proc on Linux (degrading to "unknown" elsewhere).
package sysinfo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/report"
)

// Machine returns the CPU model, core count, Go version, OS and kernel of this machine.
func Machine() report.Machine {
	m := report.Machine{
		CPU: "unknown CPU", Cores: runtime.NumCPU(), GoVersion: runtime.Version(),
		OS: runtime.GOOS, Arch: runtime.GOARCH,
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if model := CPUModel(string(data)); model != "" {
			m.CPU = model
		}
	}
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		if name := OSName(string(data)); name != "" {
			m.Distro = name
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

// CPUModel returns the first "model name" of /proc/cpuinfo content ("" when there is none).
func CPUModel(cpuinfo string) string {
	sc := bufio.NewScanner(strings.NewReader(cpuinfo))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.Join(strings.Fields(value), " ")
		}
	}
	return ""
}

// OSName returns PRETTY_NAME of /etc/os-release content ("" when there is none).
func OSName(osRelease string) string {
	for line := range strings.Lines(osRelease) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// LoadAverage returns the 1-minute load average (0 when unknown).
func LoadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := ParseLoadAverage(string(data))
	return v
}

// ParseLoadAverage returns the first field of /proc/loadavg content.
func ParseLoadAverage(loadavg string) (float64, error) {
	fields := strings.Fields(loadavg)
	if len(fields) == 0 {
		return 0, errors.New("empty loadavg")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, fmt.Errorf("malformed loadavg %q: %w", fields[0], err)
	}
	return v, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; 100 on every Linux architecture Go
// supports.
const clockTicks = 100

// ProcessCPU returns the user plus system CPU time pid has used so far.
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	return ParseStatCPU(string(data))
}

// ParseStatCPU returns utime+stime of /proc/<pid>/stat content.
func ParseStatCPU(stat string) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may contain spaces: fields after the last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat: no command name")
	}
	fields := strings.Fields(stat[i+1:])
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, errors.New("malformed /proc stat: too few fields")
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc stat CPU time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
