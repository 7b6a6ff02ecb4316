package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeExample is a shell block of README.md marked with <!-- readme-test expect="…" … -->.
type readmeExample struct {
	line   int
	script string
	expect []string
}

var (
	readmeMarker = regexp.MustCompile(`^<!-- readme-test((?:\s+expect="(?:[^"\\]|\\.)*")*)\s*-->$`)
	readmeExpect = regexp.MustCompile(`expect="((?:[^"\\]|\\.)*)"`)
)

// readmeExamples extracts the marked blocks: the marker line, then a ```sh fence.
func readmeExamples(t *testing.T, readme string) []readmeExample {
	t.Helper()
	lines := strings.Split(readme, "\n")
	var out []readmeExample
	for i := 0; i < len(lines); i++ {
		m := readmeMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			if strings.Contains(lines[i], "<!-- readme-test") {
				t.Fatalf("README.md:%d: malformed readme-test marker %q", i+1, lines[i])
			}
			continue
		}
		ex := readmeExample{line: i + 1}
		for _, e := range readmeExpect.FindAllStringSubmatch(m[1], -1) {
			ex.expect = append(ex.expect, strings.ReplaceAll(e[1], `\"`, `"`))
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			t.Fatalf("README.md:%d: a readme-test marker must be followed by a ```sh block", i+1)
		}
		var body []string
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			body = append(body, lines[j])
		}
		if j == len(lines) {
			t.Fatalf("README.md:%d: unterminated code block", i+2)
		}
		ex.script = strings.Join(body, "\n") + "\n"
		out = append(out, ex)
		i = j
	}
	return out
}

// TestREADMEExamples runs the README's marked examples exactly as written (from the repository root,
// with the freshly built tollgate first on PATH); only the example port 8080 is swapped for a free
// one so that the test never collides with a running server.
func TestREADMEExamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the README examples use curl, which is not installed")
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := readmeExamples(t, string(data))
	if len(examples) < 4 {
		t.Fatalf("found %d readme-test examples, want at least 4 (eval, eval on stdin, test, serve)", len(examples))
	}
	port := freePort(t)
	pathEnv := filepath.Dir(tollgateBin) + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, ex := range examples {
		t.Run(strings.Fields(ex.script)[0]+"@README.md:"+itoa(ex.line), func(t *testing.T) {
			script := strings.ReplaceAll(ex.script, "127.0.0.1:8080", "127.0.0.1:"+port)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "PATH="+pathEnv)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			// Whatever the outcome, leave no background server behind.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			if err != nil {
				t.Fatalf("example failed: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout.String(), stderr.String())
			}
			for _, want := range ex.expect {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, stdout.String())
				}
			}
		})
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func itoa(n int) string { return strconv.Itoa(n) }
