package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// buildTollgate builds the tollgate binary from the repository at root into dir.
func buildTollgate(root, dir string) (string, error) {
	bin := filepath.Join(dir, "tollgate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tollgate")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/tollgate: %w\n%s", err, out)
	}
	return bin, nil
}

// logBuffer is a process's combined output, safe to read while the process writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	out io.Writer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.out != nil {
		_, _ = l.out.Write(p)
	}
	return len(p), nil
}

// String returns everything written so far.
func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// process is one running tollgate subcommand.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *logBuffer
	done chan struct{}
	err  error // set when done is closed
}

// startProcess starts bin with args and env added to the environment; its output goes to a buffer
// and to logFile.
func startProcess(name, bin string, logFile io.Writer, env []string, args ...string) (*process, error) {
	p := &process{name: name, log: &logBuffer{out: logFile}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	// No proxy on loopback, and no kubeconfig but the one on the command line.
	p.cmd.Env = append(os.Environ(), "KUBECONFIG=", "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	p.cmd.Env = append(p.cmd.Env, env...)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM (a rolling restart's signal), waits up to 20 s, then kills.
func (p *process) stop() error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within 20s of SIGTERM", p.name)
	}
}

// waitHTTP polls url until it answers 200, the process exits or timeout passes.
func (p *process) waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before %s answered; output:\n%s", p.name, p.err, url, p.log.String())
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not ready within %s (last: %s); output:\n%s", p.name, url, timeout, last, p.log.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
