// Package loadgen is an HTTP load generator for the decision endpoint: it POSTs request bodies over
// keep-alive connections, either as fast as the server answers (closed loop) or at a fixed rate
// (open loop, latency measured from each request's scheduled start so that a stalled server is
// not hidden by coordinated omission), and reports throughput and latency percentiles.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Config describes one load run.
type Config struct {
	// URL is the endpoint POSTed to, e.g. http://127.0.0.1:8080/v1/decide.
	URL string
	// Bodies are the request bodies, used round-robin (at least one).
	Bodies [][]byte
	// Header is added to every request (Content-Type application/json is always set).
	Header http.Header
	// Rate is the target requests per second; 0 runs closed-loop at the maximum rate.
	Rate float64
	// Duration is how long to measure (default 5s).
	Duration time.Duration
	// Warmup runs the same load unmeasured first (default 0).
	Warmup time.Duration
	// Concurrency is the number of workers, each with its own keep-alive connection (default 16).
	Concurrency int
	// Timeout bounds one request (default 5s).
	Timeout time.Duration
}

// Result is what a run measured.
type Result struct {
	// Requests is the number of requests completed with HTTP 200 during the measured period.
	Requests int64 `json:"requests"`
	// Errors counts transport errors and non-200 answers.
	Errors int64 `json:"errors"`
	// Elapsed is the measured wall time.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Throughput is Requests per second of Elapsed.
	Throughput float64 `json:"throughput"`
	// Latency percentiles of successful requests.
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p999_ns"`
	Max  time.Duration `json:"max_ns"`
	// Service latency percentiles: from the moment each request was actually sent, excluding
	// any delay in sending it on schedule (equal to the above in closed-loop runs). The gap
	// between the two shows how late the generator itself woke up on a busy machine.
	ServiceP50  time.Duration `json:"service_p50_ns"`
	ServiceP99  time.Duration `json:"service_p99_ns"`
	ServiceP999 time.Duration `json:"service_p999_ns"`
	// FirstError is the first error seen, if any.
	FirstError string `json:"first_error,omitempty"`
}

// String formats the result on one line.
func (r Result) String() string {
	return fmt.Sprintf("%d req in %v: %.0f req/s, p50 %v p90 %v p99 %v p99.9 %v max %v (service p50 %v p99 %v p99.9 %v), %d errors",
		r.Requests, r.Elapsed.Round(time.Millisecond), r.Throughput, r.P50, r.P90, r.P99, r.P999, r.Max,
		r.ServiceP50, r.ServiceP99, r.ServiceP999, r.Errors)
}

// Run applies the load described by cfg and returns the measurements of the period after warmup.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.URL == "" || len(cfg.Bodies) == 0 {
		return Result{}, errors.New("loadgen: URL and at least one body are required")
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	reqs, err := encodeRequests(cfg)
	if err != nil {
		return Result{}, err
	}

	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	end := measureFrom.Add(cfg.Duration)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()

	type workerResult struct {
		lat      []time.Duration
		svc      []time.Duration
		errs     int64
		firstErr error
	}
	// Open loop: one pacer hands each request's scheduled start to the next free worker, so a slow
	// answer delays the requests queued behind it and that delay counts as latency.
	var schedule chan time.Time
	if cfg.Rate > 0 {
		schedule = make(chan time.Time, int(cfg.Rate)+cfg.Concurrency)
		go pace(ctx, schedule, start, time.Duration(float64(time.Second)/cfg.Rate))
	}
	capHint := 1024
	if cfg.Rate > 0 {
		capHint = int(cfg.Rate*cfg.Duration.Seconds())/cfg.Concurrency + 16
	}
	results := make([]workerResult, cfg.Concurrency)
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Go(func() {
			res := &results[w]
			res.lat = make([]time.Duration, 0, capHint)
			res.svc = make([]time.Duration, 0, capHint)
			conn := &keepAliveConn{addr: reqs.addr, timeout: cfg.Timeout}
			defer conn.close()
			for i := w; ; i += cfg.Concurrency {
				scheduled := time.Now()
				if schedule != nil {
					var ok bool
					if scheduled, ok = <-schedule; !ok {
						return
					}
				}
				if ctx.Err() != nil {
					return
				}
				sent := time.Now()
				err := conn.do(reqs.raw[i%len(reqs.raw)])
				done := time.Now()
				if done.After(end) {
					return
				}
				if scheduled.Before(measureFrom) {
					continue
				}
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					res.errs++
					if res.firstErr == nil {
						res.firstErr = err
					}
					continue
				}
				res.lat = append(res.lat, done.Sub(scheduled))
				res.svc = append(res.svc, done.Sub(sent))
			}
		})
	}
	wg.Wait()

	var all, svc []time.Duration
	out := Result{Elapsed: cfg.Duration}
	for _, r := range results {
		all = append(all, r.lat...)
		svc = append(svc, r.svc...)
		out.Errors += r.errs
		if r.firstErr != nil && out.FirstError == "" {
			out.FirstError = r.firstErr.Error()
		}
	}
	slices.Sort(all)
	out.Requests = int64(len(all))
	out.Throughput = float64(out.Requests) / cfg.Duration.Seconds()
	out.P50, out.P90, out.P99, out.P999 = pct(all, 0.50), pct(all, 0.90), pct(all, 0.99), pct(all, 0.999)
	if len(all) > 0 {
		out.Max = all[len(all)-1]
	}
	slices.Sort(svc)
	out.ServiceP50, out.ServiceP99, out.ServiceP999 = pct(svc, 0.50), pct(svc, 0.99), pct(svc, 0.999)
	if out.Requests == 0 {
		return out, fmt.Errorf("loadgen: no successful requests (%d errors, first: %s)", out.Errors, out.FirstError)
	}
	return out, nil
}

// pace sends the scheduled start of every request, one per interval from start, until ctx ends. It
// sleeps on its own OS thread with nanosleep: the Go runtime's timers may fire up to a millisecond
// late when the process is idle, and that lateness would count as server latency.
func pace(ctx context.Context, schedule chan<- time.Time, start time.Time, interval time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(schedule)
	for next := start; ctx.Err() == nil; next = next.Add(interval) {
		if d := time.Until(next); d > 0 {
			ts := syscall.NsecToTimespec(d.Nanoseconds())
			for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
			}
		}
		select {
		case schedule <- next:
		case <-ctx.Done():
			return
		}
	}
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// requests are the load's HTTP requests, serialised once with net/http's own writer.
type requests struct {
	addr string
	raw  [][]byte
}

func encodeRequests(cfg Config) (requests, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return requests{}, fmt.Errorf("loadgen: URL %q must be http://host:port/path", cfg.URL)
	}
	out := requests{addr: u.Host}
	for _, body := range cfg.Bodies {
		req, err := http.NewRequest(http.MethodPost, cfg.URL, bytes.NewReader(body))
		if err != nil {
			return requests{}, fmt.Errorf("loadgen: building a request: %w", err)
		}
		for k, v := range cfg.Header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		var buf bytes.Buffer
		if err := req.Write(&buf); err != nil {
			return requests{}, fmt.Errorf("loadgen: encoding a request: %w", err)
		}
		out.raw = append(out.raw, buf.Bytes())
	}
	return out, nil
}

// keepAliveConn is one worker's keep-alive HTTP/1.1 connection: it writes a pre-serialised request
// and parses the answer with net/http's response reader. A worker waits for each answer before it
// sends the next request, so no pipelining is involved; the connection is redialled after errors.
// Bypassing http.Transport keeps the load generator's own cost per request small, which matters
// when it shares two cores with the server it measures.
type keepAliveConn struct {
	addr    string
	timeout time.Duration
	conn    net.Conn
	br      *bufio.Reader
}

func (c *keepAliveConn) do(raw []byte) error {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, c.timeout)
		if err != nil {
			return fmt.Errorf("dialing %s: %w", c.addr, err)
		}
		c.conn, c.br = conn, bufio.NewReader(conn)
	}
	if err := c.roundTrip(raw); err != nil {
		c.close()
		return err
	}
	return nil
}

func (c *keepAliveConn) roundTrip(raw []byte) error {
	if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return fmt.Errorf("setting a deadline: %w", err)
	}
	if _, err := c.conn.Write(raw); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return fmt.Errorf("reading response: %w", err)
	}
	_, copyErr := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if copyErr != nil {
		return fmt.Errorf("reading response: %w", copyErr)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if resp.Close {
		c.close()
	}
	return nil
}

func (c *keepAliveConn) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn, c.br = nil, nil
	}
}
