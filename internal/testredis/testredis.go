// Package testredis runs a real redis-server on loopback for tests: a free port, a temporary
// directory, no persistence. The binary comes from Debian's redis-server package (hack/redis.sh
// installs it); a test that needs Redis fails, never skips, when it is missing.
package testredis

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Binary returns the redis-server to run: $REDIS_SERVER, else redis-server on PATH, else
// /usr/bin/redis-server.
func Binary() (string, error) {
	if b := os.Getenv("REDIS_SERVER"); b != "" {
		return b, nil
	}
	if b, err := exec.LookPath("redis-server"); err == nil {
		return b, nil
	}
	const deb = "/usr/bin/redis-server"
	if _, err := os.Stat(deb); err == nil {
		return deb, nil
	}
	return "", errors.New("redis-server not found: run hack/redis.sh (apt-get install redis-server) or set REDIS_SERVER")
}

// Server is one redis-server process on 127.0.0.1.
type Server struct {
	bin  string
	dir  string
	port int

	mu  sync.Mutex
	cmd *exec.Cmd
	log *os.File
}

// Start starts a redis-server on a free loopback port with its files in a temporary directory,
// and stops it when the test ends. It fails the test when redis-server is missing or does not
// answer.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin, dir: t.TempDir(), port: port}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// Addr is host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is redis://host:port/0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("redis-server already running")
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("redis log: %w", err)
	}
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	s.cmd, s.log = cmd, logf
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.Addr()); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			data, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server on %s did not answer PING: %w\n%s", s.Addr(), err, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ping sends PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return fmt.Errorf("dialing: %w", err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return fmt.Errorf("writing PING: %w", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading PING answer: %w", err)
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Stop kills the server (SIGKILL: the abrupt loss a counter store must survive) and waits for it.
// Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = s.log.Close()
	s.cmd, s.log = nil, nil
	return nil
}

// Restart starts a stopped server again on the same port (its data is gone: no persistence).
func (s *Server) Restart() error { return s.start() }
