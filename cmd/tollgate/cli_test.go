package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testVersion and testCommit are stamped into the test binary like `make build` stamps a release.
const (
	testVersion = "v0.0.0-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testLDFlags = "-X github.com/tollgate-dev/tollgate/internal/version.version=" + testVersion +
		" -X github.com/tollgate-dev/tollgate/internal/version.commit=" + testCommit
)

// tollgateBin is the tollgate binary built once by TestMain.
var tollgateBin string

// repoRoot is the repository root (tests run in cmd/).
const repoRoot = "../.."

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tollgate-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	tollgateBin = filepath.Join(dir, "tollgate")
	// Built as a release is (-trimpath, version stamped by the linker), so that nothing finds the
	// source tree through the binary's file paths: the demo must work from any directory.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", testLDFlags, "-o", tollgateBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building tollgate:", err)
		return 1
	}
	return m.Run()
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

// runBin runs the binary in the repository root with stdin.
func runBin(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(tollgateBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return runCmd(t, cmd)
}

// runCmd runs a command of the binary in the repository root and collects its output and exit
// code; it fails the test only when the binary could not run at all.
func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	return runCmdIn(t, repoRoot, cmd)
}

// runCmdIn is runCmd in directory dir.
func runCmdIn(t *testing.T, dir string, cmd *exec.Cmd) result {
	t.Helper()
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %v: %v", cmd.Args, err)
	}
	return res
}

// writeFile writes content into dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const badPolicy = `apiVersion: guardrails.tollgate.dev/v1alpha1
kind: GuardrailPolicy
metadata:
  name: broken
spec:
  rules:
  - name: bad-cel
    tools: [bash]
    when: "input.command.contains("
    action: Deny
`

func TestEval(t *testing.T) {
	tmp := t.TempDir()
	bad := writeFile(t, tmp, "bad/policy.yaml", "# a comment line\n"+badPolicy)
	typo := writeFile(t, tmp, "typo.yaml", strings.Replace(badPolicy, "action: Deny", "actoin: Deny", 1))
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{name: "allowed", args: []string{"eval", "-f", "config/samples", "--request", "examples/requests/allowed.json"},
			wantStdout: []string{`"decision":"allow"`, `"code":"oap.allowed"`, `"bundle_revision":"sha256:`}},
		{name: "blocked rm -rf", args: []string{"eval", "-f", "config/samples", "--request", "examples/requests/rm-rf.json"},
			wantStdout: []string{`"decision":"deny"`, `"oap.blocked_pattern"`}},
		{name: "modify", args: []string{"eval", "--request", "examples/requests/git-log.json", "-f", "config/samples"},
			wantStdout: []string{`"decision":"modify"`, `"modified_input":{"command":"git --no-pager log -3"}`}},
		{name: "suspended", args: []string{"eval", "-f", "config/samples", "--request", "examples/requests/suspended.json"},
			wantStdout: []string{`"oap.passport_suspended"`}},
		{name: "request on stdin as YAML, files as positional args", args: []string{"eval", "config/samples/guardrails_v1alpha1_agentpassport.yaml", "-f", "config/samples/guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml"},
			stdin: "passport: coding-agent\ntool_name: bash\ntool_input: {command: make all}\n", wantStdout: []string{`"decision":"deny"`, `oap.command_not_allowed`}},
		{name: "unknown passport is a deny, not an error", args: []string{"eval", "-f", "config/samples"},
			stdin: `{"passport":"nobody","tool_name":"bash"}`, wantStdout: []string{`"oap.passport_not_found"`}},
		{name: "compile error names the file and field", args: []string{"eval", "-f", "config/samples", "-f", filepath.Join(tmp, "bad")},
			stdin: `{"passport":"coding-agent","tool_name":"bash"}`, wantCode: 1,
			wantStderr: []string{bad + " (document 1, line 2): GuardrailPolicy default/broken: spec.rules[0].when:"}},
		{name: "strict decoding of manifests", args: []string{"eval", "-f", typo}, wantCode: 1,
			wantStderr: []string{typo + " (document 1, line 1)", `unknown field "spec.rules[0].actoin"`}},
		{name: "unknown request field", args: []string{"eval", "-f", "config/samples"},
			stdin: `{"passport":"coding-agent","tool_name":"bash","tool_imput":{}}`, wantCode: 1,
			wantStderr: []string{"request (stdin)", `unknown field "tool_imput"`}},
		{name: "request refused by the endpoint names the field", args: []string{"eval", "-f", "config/samples"},
			stdin: `{"passport":"coding-agent"}`, wantCode: 1, wantStderr: []string{"invalid request: tool_name: required"}},
		{name: "missing request file", args: []string{"eval", "-f", "config/samples", "--request", "nope.json"}, wantCode: 1,
			wantStderr: []string{"nope.json"}},
		{name: "no manifests is a usage error", args: []string{"eval"}, wantCode: 2, wantStderr: []string{"no manifests"}},
		{name: "bad flag is a usage error", args: []string{"eval", "--bogus"}, wantCode: 2, wantStderr: []string{"flag provided but not defined"}},
		{name: "help", args: []string{"eval", "-h"}, wantCode: 0, wantStderr: []string{"Usage: tollgate eval"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runBin(t, tt.stdin, tt.args...)
			if res.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", res.code, tt.wantCode, res.stdout, res.stderr)
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, res.stdout)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
				}
			}
			if tt.wantCode == 0 && len(tt.wantStdout) > 0 {
				var d map[string]any
				if err := json.Unmarshal([]byte(res.stdout), &d); err != nil {
					t.Errorf("stdout is not one JSON decision: %v", err)
				}
			}
		})
	}
}

const failingTest = `apiVersion: cli.tollgate.dev/v1alpha1
kind: Test
metadata:
  name: wrong-expectations
paths: [` + "%s" + `]
cases:
- name: expects allow but rm -rf is denied
  request: {passport: coding-agent, tool_name: bash, tool_input: {command: ls && rm -rf /}}
  expect: {decision: allow}
- name: right
  request: {passport: coding-agent, tool_name: bash, tool_input: {command: ls}}
  expect: {decision: allow, code: oap.allowed}
`

func TestTestCommand(t *testing.T) {
	samples, err := filepath.Abs(filepath.Join(repoRoot, "config", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	failing := writeFile(t, tmp, "failing/test.yaml", fmt.Sprintf(failingTest, samples))
	invalid := writeFile(t, tmp, "invalid/test.yaml", "apiVersion: cli.tollgate.dev/v1alpha1\nkind: Test\nmetadata: {name: x}\ncases: []\n")
	writeFile(t, tmp, "broken/test.yaml", "apiVersion: cli.tollgate.dev/v1alpha1\nkind: Test\nmetadata: {name: broken}\npaths: [policy.yaml]\n"+
		"cases:\n- name: c\n  request: {passport: coding-agent, tool_name: bash}\n  expect: {decision: allow}\n")
	writeFile(t, tmp, "broken/policy.yaml", badPolicy)
	empty := t.TempDir()
	writeFile(t, empty, "only-a-policy.yaml", badPolicy)

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{name: "examples pass", args: []string{"test", "examples/tests"},
			wantStdout: []string{"RESULT", "PASS    samples", "PASS    deploy-approval", "8 passed, 0 failed"}},
		{name: "failure exits 1 with the reason", args: []string{"test", failing}, wantCode: 1,
			wantStdout: []string{"FAIL", "decision: got deny, want allow", "1 passed, 1 failed"}, wantStderr: []string{"1 of 2 cases failed"}},
		{name: "invalid test file", args: []string{"test", invalid}, wantCode: 1,
			wantStdout: []string{"ERROR " + invalid, "paths or objects: at least one is required", "cases: at least one is required"}},
		{name: "broken policy under test", args: []string{"test", filepath.Join(tmp, "broken")}, wantCode: 1,
			wantStdout: []string{"spec.rules[0].when"}},
		{name: "no tests found", args: []string{"test", empty}, wantCode: 1, wantStderr: []string{"no test files"}},
		{name: "bad output format", args: []string{"test", "-o", "yaml", "examples/tests"}, wantCode: 2, wantStderr: []string{"want table, json, junit or github"}},
		{name: "no paths", args: []string{"test"}, wantCode: 2, wantStderr: []string{"no test paths"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runBin(t, "", tt.args...)
			if res.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", res.code, tt.wantCode, res.stdout, res.stderr)
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, res.stdout)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
				}
			}
		})
	}

	t.Run("junit output", func(t *testing.T) {
		res := runBin(t, "", "test", "-o", "junit", "examples/tests", failing)
		if res.code != 1 || !strings.HasPrefix(res.stdout, "<?xml") {
			t.Fatalf("exit %d, want 1 and XML: %s\n%s", res.code, res.stderr, res.stdout)
		}
		for _, w := range []string{`<testsuites name="tollgate test" tests="10" failures="1" errors="0"`, `<failure message="decision: got deny, want allow"`} {
			if !strings.Contains(res.stdout, w) {
				t.Errorf("JUnit lacks %s:\n%s", w, res.stdout)
			}
		}
	})

	t.Run("github output", func(t *testing.T) {
		res := runBin(t, "", "test", "-o", "github", "examples/tests", failing)
		if res.code != 1 || !strings.Contains(res.stdout, "::error file="+failing+",line=") || !strings.Contains(res.stdout, "9 passed, 1 failed") {
			t.Fatalf("exit %d, want 1 and an annotation at %s: %s\n%s", res.code, failing, res.stderr, res.stdout)
		}
	})

	t.Run("json output", func(t *testing.T) {
		res := runBin(t, "", "test", "examples/tests", "-o", "json", failing)
		if res.code != 1 {
			t.Fatalf("exit %d, want 1: %s", res.code, res.stderr)
		}
		var rep struct {
			Passed, Failed int
			Results        []struct {
				Case     string
				Pass     bool
				Failures []string
				Got      struct{ Decision, Code string }
			}
		}
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, res.stdout)
		}
		if rep.Passed != 9 || rep.Failed != 1 || len(rep.Results) != 10 {
			t.Errorf("passed=%d failed=%d results=%d, want 9, 1, 10", rep.Passed, rep.Failed, len(rep.Results))
		}
	})
}
