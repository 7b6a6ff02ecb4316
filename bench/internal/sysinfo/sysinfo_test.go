package sysinfo

import (
	"os"
	"testing"
	"time"
)

func TestCPUModel(t *testing.T) {
	in := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC  7B13 64-Core Processor\n\nprocessor\t: 1\nmodel name\t: other\n"
	if got := CPUModel(in); got != "AMD EPYC 7B13 64-Core Processor" {
		t.Errorf("CPUModel = %q", got)
	}
	if got := CPUModel("processor : 0\n"); got != "" {
		t.Errorf("CPUModel without model name = %q, want empty", got)
	}
}

func TestOSName(t *testing.T) {
	in := "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.2 LTS\"\nID=ubuntu\n"
	if got := OSName(in); got != "Ubuntu 24.04.2 LTS" {
		t.Errorf("OSName = %q", got)
	}
	if got := OSName("ID=x\n"); got != "" {
		t.Errorf("OSName without PRETTY_NAME = %q", got)
	}
}

func TestParseStatCPU(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	stat := "4242 (bench server) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 100 1000 10\n"
	got, err := ParseStatCPU(stat)
	if err != nil || got != 3*time.Second {
		t.Fatalf("ParseStatCPU = %v, %v; want 3s", got, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x 1 2"} {
		if _, err := ParseStatCPU(bad); err == nil {
			t.Errorf("ParseStatCPU(%q) succeeded", bad)
		}
	}
}

func TestProcessCPUSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

func TestMachine(t *testing.T) {
	m := Machine()
	if m.Cores < 1 || m.GoVersion == "" || m.OS == "" || m.CPU == "" {
		t.Errorf("incomplete machine: %+v", m)
	}
}

func TestParseLoadAverage(t *testing.T) {
	if v, err := ParseLoadAverage("9.47 7.07 3.72 3/812 4242\n"); err != nil || v != 9.47 {
		t.Errorf("ParseLoadAverage = %v, %v", v, err)
	}
	for _, bad := range []string{"", "x 1 2"} {
		if _, err := ParseLoadAverage(bad); err == nil {
			t.Errorf("ParseLoadAverage(%q) succeeded", bad)
		}
	}
}
