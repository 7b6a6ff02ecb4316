package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startServe starts `tollgate serve` on a free port and returns its base URL, its stderr so far and
// a stop function returning the exit code.
func startServe(t *testing.T, args ...string) (string, *safeBuffer, func() int) {
	t.Helper()
	cmd := exec.Command(tollgateBin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = repoRoot
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &safeBuffer{}
	serveProcs[logs] = cmd.Process
	t.Cleanup(func() { delete(serveProcs, logs) })
	urlc := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`decision API on (http://\S+)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logs.WriteLine(sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
			}
		}
	}()
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		_ = pw.Close()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 0
	}
	t.Cleanup(func() { stop() })
	select {
	case u := <-urlc:
		return u, logs, stop
	case <-time.After(30 * time.Second):
		stop()
		t.Fatalf("tollgate serve did not start:\n%s", logs.String())
	}
	return "", nil, nil
}

// safeBuffer collects lines written by one goroutine and read by another.
type safeBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *safeBuffer) WriteLine(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, s)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

func postDecide(t *testing.T, base, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(base+"/v1/decide", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/decide: HTTP %d: %s", resp.StatusCode, data)
	}
	var d map[string]any
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func firstCode(d map[string]any) string {
	reasons, _ := d["reasons"].([]any)
	if len(reasons) == 0 {
		return ""
	}
	r, _ := reasons[0].(map[string]any)
	code, _ := r["code"].(string)
	return code
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dst, e.Name(), string(data))
	}
}

// TestServe checks the endpoint from files: decisions, reload on change, last good set kept on an
// invalid change, and a clean exit on SIGTERM.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join(repoRoot, "config", "samples"), dir)
	base, logs, stop := startServe(t, "-f", dir)
	allowed := `{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"ls"}}`

	if d := postDecide(t, base, allowed); d["decision"] != "allow" {
		t.Fatalf("initial decision = %v, want allow", d)
	}
	if d := postDecide(t, base, `{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"ls && rm -rf /"}}`); firstCode(d) != "oap.blocked_pattern" {
		t.Fatalf("rm -rf = %v, want oap.blocked_pattern", d)
	}

	// An invalid change is rejected and the last good set keeps serving.
	writeFile(t, dir, "zz-broken.yaml", badPolicy)
	waitFor(t, logs, "still serving the last good set")
	if d := postDecide(t, base, allowed); d["decision"] != "allow" {
		t.Fatalf("after an invalid change: %v, want the last good set (allow)", d)
	}
	resp, err := http.Get(base + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	status, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !bytes.Contains(status, []byte("spec.rules[0].when")) {
		t.Errorf("/v1/status does not report the invalid change: %s", status)
	}

	// Fixing it and suspending the passport reloads.
	if err := os.Remove(filepath.Join(dir, "zz-broken.yaml")); err != nil {
		t.Fatal(err)
	}
	passport := filepath.Join(dir, "guardrails_v1alpha1_agentpassport.yaml")
	data, err := os.ReadFile(passport)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, filepath.Base(passport), strings.Replace(string(data), "status: active", "status: suspended", 1))
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := postDecide(t, base, allowed)
		if firstCode(d) == "oap.passport_suspended" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change was not reloaded: %v\nlogs:\n%s", d, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0\n%s", code, logs.String())
	}
}

func waitFor(t *testing.T, logs *safeBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("logs never said %q:\n%s", s, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeRefusesInvalidStart(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "bad.yaml", badPolicy)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"invalid manifests", []string{"serve", "-f", dir, "--addr", "127.0.0.1:0"}, 1, "spec.rules[0].when"},
		{"no manifests", []string{"serve"}, 2, "no manifests"},
		{"bad log format", []string{"serve", "-f", dir, "--log-format", "xml"}, 2, "want text or json"},
		{"bad address", []string{"serve", "-f", "config/samples", "--addr", "256.0.0.1:http"}, 1, "listening on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runBin(t, "", tt.args...)
			if res.code != tt.wantCode || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", res.code, tt.wantCode, res.stderr, tt.want)
			}
		})
	}
}
