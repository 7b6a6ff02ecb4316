package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// runDemoBin runs `tollgate demo` with a deadline, from an empty directory: the CRDs and samples it
// applies are the ones embedded in the binary. The demo needs the envtest control plane
// (KUBEBUILDER_ASSETS or bin/k8s): these tests fail, never skip, without it.
func runDemoBin(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, tollgateBin, append([]string{"demo"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBEBUILDER_ASSETS="+assets)
	return runCmdIn(t, t.TempDir(), cmd)
}

func TestDemoOnce(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	res := runDemoBin(t, "--once", "--addr", "127.0.0.1:0", "--kubeconfig", kubeconfig)
	t.Logf("demo output:\n%s", res.stdout)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", res.code, res.stderr)
	}
	for _, want := range []string{
		"applying config/samples (embedded)",
		"guardrailpolicy.guardrails.tollgate.dev/git-no-pager created",
		"$ kubectl get gp,ap",
		"agentpassport.guardrails.tollgate.dev/coding-agent     Active",
		"decision: ALLOW  oap.allowed",
		"decision: DENY  oap.blocked_pattern",
		"decision: MODIFY",
		`modified_input: {"command":"git --no-pager log -3"}`,
		"decision: DENY  oap.passport_suspended",
		"export KUBECONFIG=" + kubeconfig,
		"curl -s http://127.0.0.1:",
		"Demo script finished",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	m := regexp.MustCompile(`denied coding-agent \(oap.passport_suspended\) (\S+) after the patch`).FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatal("demo output lacks the measured kill-switch time")
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d <= 0 || d > time.Minute {
		t.Errorf("kill-switch time %q is not a plausible duration", m[1])
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil || !strings.Contains(string(data), "client-certificate-data") {
		t.Errorf("kubeconfig not written: %v", err)
	}
	if strings.Contains(res.stderr, "stopping the control plane") {
		t.Errorf("the control plane did not stop cleanly:\n%s", res.stderr)
	}
}

func TestDemoFailingStepExitsNonZero(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"unexpected argument", []string{"now"}, 2, "unexpected arguments"},
		{"missing samples", []string{"--once", "--addr", "127.0.0.1:0", "--samples", "/nonexistent/samples"}, 1,
			"tollgate demo: applying the samples: manifest path: stat /nonexistent/samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runDemoBin(t, tt.args...)
			if res.code != tt.wantCode || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant %q", res.code, tt.wantCode, res.stderr, tt.want)
			}
		})
	}
}
