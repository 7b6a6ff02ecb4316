package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/loadgen"
	"github.com/tollgate-dev/tollgate/bench/internal/report"
	"github.com/tollgate-dev/tollgate/bench/internal/stats"
	"github.com/tollgate-dev/tollgate/bench/internal/sysinfo"
)

// Decider targets (issue 5).
const (
	targetDecisionsPerSec = 20_000
	targetP99At5000Ns     = 2e6
	batchSize             = 10
	closedLoopConns       = 8
	openLoopConns         = 64
	warmup                = 500 * time.Millisecond
)

// mixCase is one request of the mix the decider is driven with, and the decision it must get.
type mixCase struct {
	body, want string
}

// requestMix are realistic requests against config/samples (namespace default), sent round-robin:
// allows, a Modify (git gets --no-pager), a blocked pattern, an agent_id lookup and a suspended passport.
var requestMix = []mixCase{
	{`{"passport":"default/coding-agent","tool_name":"bash","tool_input":{"command":"ls -la"},"thread_id":"t1","call_id":"c1"}`, "allow"},
	{`{"passport":"default/coding-agent","tool_name":"bash","tool_input":{"command":"git status"},"thread_id":"t1","call_id":"c2"}`, "modify"},
	{`{"passport":"default/coding-agent","tool_name":"bash","tool_input":{"command":"ls && rm -rf /"},"thread_id":"t1","call_id":"c3"}`, "deny"},
	{`{"passport":"default/coding-agent","tool_name":"read_file","tool_input":{"path":"README.md"},"thread_id":"t1","call_id":"c4"}`, "allow"},
	{`{"agent_id":"ap_coding_agent_01","tool_name":"web_search","tool_input":{"query":"kubernetes"},"thread_id":"t2","call_id":"c5"}`, "allow"},
	{`{"passport":"default/research-agent","tool_name":"web_search","tool_input":{"query":"x"},"thread_id":"t3","call_id":"c6"}`, "deny"},
}

// server is the decision endpoint child process.
type server struct {
	cmd    *exec.Cmd
	addr   string
	log    string // the child's stderr: its messages and the decision log
	exited chan error
}

// buildBinaries builds the tollgate binary and bench/cmd/benchserver into dir.
func buildBinaries(ctx context.Context, root, dir string) (tollgate, benchserver string, err error) {
	tollgate, benchserver = filepath.Join(dir, "tollgate"), filepath.Join(dir, "benchserver")
	for pkg, bin := range map[string]string{"./cmd/tollgate": tollgate, "./bench/cmd/benchserver": benchserver} {
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("building %s: %w\n%s", pkg, err, out)
		}
	}
	return tollgate, benchserver, nil
}

// startServer runs `tollgate serve` on config/samples with GOMAXPROCS=1 on a free loopback port,
// with the decision log on (the child's stderr, written to a file in dir).
func startServer(ctx context.Context, cfg config, dir string) (*server, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	s := &server{addr: addr, log: filepath.Join(dir, "serve.log"), exited: make(chan error, 1)}
	logFile, err := os.Create(s.log)
	if err != nil {
		return nil, fmt.Errorf("creating the server log: %w", err)
	}
	defer func() { _ = logFile.Close() }() // the child holds its own descriptor
	s.cmd = exec.Command(cfg.tollgateBin, "serve", "-f", filepath.Join(cfg.root, "config", "samples"),
		"--bind-address", addr, "--decision-log", "--watch=false", "--log-format", "json")
	// The endpoint's runtime settings as config/decider ships them, on one core.
	s.cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GOGC=200", "GOMEMLIMIT=409MiB")
	s.cmd.Stderr = logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // never outlive the benchmark
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting tollgate serve: %w", err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// logTail returns the end of the server's log, for error messages.
func (s *server) logTail() string {
	data, err := os.ReadFile(s.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(data[max(0, len(data)-2000):])
}

// freeLoopbackAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	return addr, nil
}

func (s *server) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			return fmt.Errorf("tollgate serve exited before it was ready (%v): %s", err, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("waiting for tollgate serve: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := client.Get("http://" + s.addr + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("tollgate serve not ready after 30s: %s", s.logTail())
}

// stop terminates the child (SIGTERM, then SIGKILL after 5s) and waits for it.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		logExit(err)
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		logExit(<-s.exited)
	}
}

// logExit reports an unexpected exit status of the stopped server.
func logExit(err error) {
	var exit *exec.ExitError
	if err == nil || (errors.As(err, &exit) && !exit.Exited()) {
		return // a clean exit, or killed by our signal
	}
	progress("tollgate serve exited: %v", err)
}

// loadRun is one measured load configuration.
type loadRun struct {
	id, name string
	path     string
	bodies   [][]byte
	perCall  int     // decisions per call
	rate     float64 // decisions per second; 0 = closed loop (maximum)
	rates    []float64
	cpu      []float64 // server CPU seconds per second
	client   []float64 // load generator (this process) CPU seconds per second
	p50      []float64
	p99      []float64
	p999     []float64
	sentP99  []float64 // p99 from each request's actual send, without the load generator's lateness
}

// benchHTTP measures the decision endpoint over loopback HTTP with bench/internal/loadgen.
func benchHTTP(ctx context.Context, cfg config) ([]report.Row, []string, error) {
	dir, err := os.MkdirTemp("", "tollgate-bench-serve-")
	if err != nil {
		return nil, nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	srv, err := startServer(ctx, cfg, dir)
	if err != nil {
		return nil, nil, err
	}
	defer srv.stop()
	if err := checkAnswers(ctx, srv.addr); err != nil {
		return nil, nil, err
	}
	single := make([][]byte, len(requestMix))
	for i, m := range requestMix {
		single[i] = []byte(m.body)
	}
	batches := make([][]byte, len(requestMix))
	for i := range batches {
		if batches[i], err = batchBody(batchSize, i); err != nil {
			return nil, nil, err
		}
	}
	const one, batch = "/v1/decide", "/v1/decide:batch"
	runs := []*loadRun{
		{id: "decider.single.max", name: "2. Decider /v1/decide, max throughput", path: one, bodies: single, perCall: 1},
		{id: "decider.single.1000", name: "2. Decider /v1/decide @ 1,000/s", path: one, bodies: single, perCall: 1, rate: 1000},
		{id: "decider.single.5000", name: "2. Decider /v1/decide @ 5,000/s", path: one, bodies: single, perCall: 1, rate: 5000},
		{id: "decider.batch.max", name: "2. Decider batch of 10, max throughput", path: batch, bodies: batches, perCall: batchSize},
		{id: "decider.batch.1000", name: "2. Decider batch of 10 @ 1,000 decisions/s", path: batch, bodies: batches, perCall: batchSize, rate: 1000},
		{id: "decider.batch.5000", name: "2. Decider batch of 10 @ 5,000 decisions/s", path: batch, bodies: batches, perCall: batchSize, rate: 5000},
	}
	for i := range cfg.runs {
		for _, lr := range runs {
			if err := lr.measure(ctx, srv, cfg.loadDur); err != nil {
				return nil, nil, err
			}
		}
		progress("http run %d/%d: max %.0f/s (batch %.0f/s), p99 at 5,000/s %.2f ms (batch %.2f ms)", i+1, cfg.runs,
			runs[0].rates[i], runs[3].rates[i], runs[2].p99[i]/1e6, runs[5].p99[i]/1e6)
	}
	select {
	case err := <-srv.exited:
		return nil, nil, fmt.Errorf("tollgate serve died during the benchmark (%v): %s", err, srv.logTail())
	default:
	}
	rows := httpRows(runs, cfg.runs)
	notes := []string{fmt.Sprintf("Decider: `GOMAXPROCS=1 GOGC=200 GOMEMLIMIT=409MiB tollgate serve -f config/samples --decision-log` (authentication off, decision log to a file; GOGC as config/decider ships it, GOMEMLIMIT as the decider sets it for its 512Mi limit) as a child process, "+
		"driven by bench/internal/loadgen from the bench process over loopback keep-alive connections: %d for maximum throughput (closed loop), %d for fixed rates (open loop, latency from each request's scheduled time, so the load generator's own timer lateness on a busy 2-core machine counts against the server; the `p99 from actual send` row leaves it out); %s per run after %s warm-up. "+
		"Requests: a round-robin mix of %d (allow, Modify, blocked pattern, agent_id lookup, suspended passport); a batch carries 10 of them. "+
		"CPU is the share of one core each process used (from /proc); per server CPU-second = decisions ÷ the server's CPU time (utime+stime), the rate one fully used core would give: "+
		"on 2 cores shared by server, load generator and other work the server rarely gets a whole core.",
		closedLoopConns, openLoopConns, cfg.loadDur, warmup, len(requestMix))}
	return rows, notes, nil
}

// batchBody returns a /v1/decide:batch body of n requests of the mix, starting at offset.
func batchBody(n, offset int) ([]byte, error) {
	reqs := make([]json.RawMessage, n)
	for i := range reqs {
		reqs[i] = json.RawMessage(requestMix[(offset+i)%len(requestMix)].body)
	}
	body, err := json.Marshal(map[string]any{"requests": reqs})
	if err != nil {
		return nil, fmt.Errorf("encoding the batch: %w", err)
	}
	return body, nil
}

// checkAnswers makes sure every request of the mix gets its expected decision, alone and in a batch,
// before anything is measured.
func checkAnswers(ctx context.Context, addr string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	post := func(path string, body []byte, into any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("building a request: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("POST %s: %w", path, err)
		}
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("POST %s: reading the answer: %w", path, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST %s answered %d: %.300s", path, resp.StatusCode, data)
		}
		if err := json.Unmarshal(data, into); err != nil {
			return fmt.Errorf("POST %s: decoding %.300s: %w", path, data, err)
		}
		return nil
	}
	type decision struct {
		Decision string `json:"decision"`
	}
	for _, m := range requestMix {
		var d decision
		if err := post("/v1/decide", []byte(m.body), &d); err != nil {
			return err
		}
		if d.Decision != m.want {
			return fmt.Errorf("request %s: decision %q, want %q", m.body, d.Decision, m.want)
		}
	}
	body, err := batchBody(batchSize, 0)
	if err != nil {
		return err
	}
	var b struct {
		Decisions []decision `json:"decisions"`
	}
	if err := post("/v1/decide:batch", body, &b); err != nil {
		return err
	}
	if len(b.Decisions) != batchSize {
		return fmt.Errorf("batch answered %d decisions, want %d", len(b.Decisions), batchSize)
	}
	for i, d := range b.Decisions {
		if want := requestMix[i%len(requestMix)].want; d.Decision != want {
			return fmt.Errorf("batch decision %d is %q, want %q", i, d.Decision, want)
		}
	}
	return nil
}

func (lr *loadRun) measure(ctx context.Context, srv *server, dur time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("decider benchmark: %w", err)
	}
	cpuBefore, err := sysinfo.ProcessCPU(srv.cmd.Process.Pid)
	if err != nil {
		return err
	}
	clientBefore, err := sysinfo.ProcessCPU(os.Getpid())
	if err != nil {
		return err
	}
	lc := loadgen.Config{URL: "http://" + srv.addr + lr.path, Bodies: lr.bodies, Duration: dur, Warmup: warmup,
		Concurrency: closedLoopConns}
	if lr.rate > 0 {
		lc.Rate, lc.Concurrency = lr.rate/float64(lr.perCall), openLoopConns
	}
	start := time.Now()
	res, err := loadgen.Run(ctx, lc)
	if err != nil {
		return fmt.Errorf("%s: %w", lr.id, err)
	}
	wall := time.Since(start)
	cpuAfter, err := sysinfo.ProcessCPU(srv.cmd.Process.Pid)
	if err != nil {
		return err
	}
	clientAfter, err := sysinfo.ProcessCPU(os.Getpid())
	if err != nil {
		return err
	}
	if res.Errors > 0 {
		return fmt.Errorf("%s: %d of %d requests failed, first: %s", lr.id, res.Errors, res.Errors+res.Requests, res.FirstError)
	}
	lr.rates = append(lr.rates, res.Throughput*float64(lr.perCall))
	// CPU time covers warm-up and measurement alike, so divide by the whole wall time.
	lr.cpu = append(lr.cpu, (cpuAfter-cpuBefore).Seconds()/wall.Seconds())
	lr.client = append(lr.client, (clientAfter-clientBefore).Seconds()/wall.Seconds())
	lr.p50 = append(lr.p50, float64(res.P50))
	lr.p99 = append(lr.p99, float64(res.P99))
	lr.p999 = append(lr.p999, float64(res.P999))
	lr.sentP99 = append(lr.sentP99, float64(res.ServiceP99))
	return nil
}

// httpRows turns the load runs into table rows.
func httpRows(runs []*loadRun, n int) []report.Row {
	over := strconv.Itoa(n) + " runs"
	var rows []report.Row
	for _, lr := range runs {
		cpu := stats.Summarize(lr.cpu)
		if lr.rate == 0 {
			r := report.Row{ID: lr.id + ".decisions_per_second", Name: lr.name, Unit: report.UnitPerSecond,
				Summary: stats.Summarize(lr.rates), Over: over,
				Note: fmt.Sprintf("CPU: server %.0f%%, load generator %.0f%%", cpu.Median*100, stats.Summarize(lr.client).Median*100)}
			if lr.perCall == 1 {
				r = r.WithTarget(report.Target{Op: report.AtLeast, Value: targetDecisionsPerSec})
			}
			rows = append(rows, r)
			perCPU := make([]float64, len(lr.rates))
			for i := range lr.rates {
				perCPU[i] = lr.rates[i] / max(lr.cpu[i], 1e-9)
			}
			rows = append(rows, report.Row{ID: lr.id + ".decisions_per_server_cpu_second", Name: strings.Replace(lr.name, "max throughput", "per server CPU-second", 1),
				Unit: report.UnitPerSecond, Summary: stats.Summarize(perCPU), Over: over,
			})
			continue
		}
		for _, p := range []struct {
			label string
			v     []float64
		}{{"p50", lr.p50}, {"p99", lr.p99}, {"p99.9", lr.p999}, {"p99 from actual send", lr.sentP99}} {
			r := report.Row{ID: lr.id + "." + strings.ReplaceAll(p.label, " ", "_"), Name: lr.name + ", " + p.label, Unit: report.UnitNanos,
				Summary: stats.Summarize(p.v), Over: over}
			if p.label == "p99" && lr.rate == 5000 && lr.perCall == 1 {
				r = r.WithTarget(report.Target{Op: report.AtMost, Value: targetP99At5000Ns})
			}
			rows = append(rows, r)
		}
	}
	return rows
}
