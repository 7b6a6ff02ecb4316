// Package httpload is a small HTTP/1.1 load generator for loopback benchmarks: keep-alive
// connections that send one pre-encoded request over and over, in a closed loop (as fast as the
// server answers) or an open loop (at a fixed rate, latency measured from each request's scheduled
// time so a slow server cannot hide its queueing). It speaks just enough HTTP/1.1 for that: it
// needs Content-Length responses and refuses non-loopback addresses.
package httpload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/stats"
)

// RequestTimeout bounds each request; a request that takes longer fails its connection.
const RequestTimeout = 10 * time.Second

// maxBody bounds the response bodies the client accepts.
const maxBody = 16 << 20

// BuildRequest returns the bytes of a keep-alive HTTP/1.1 POST of a JSON body.
func BuildRequest(addr, path string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, len(body))
	b.Write(body)
	return b.Bytes()
}

// CheckLoopback returns an error unless addr ("host:port") names a loopback address.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q is not a loopback address", addr)
	}
	return nil
}

// Conn is one keep-alive connection. It is not safe for concurrent use.
type Conn struct {
	c    net.Conn
	br   *bufio.Reader
	body []byte
}

// Dial opens a connection to the loopback address addr.
func Dial(addr string) (*Conn, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	return &Conn{c: c, br: bufio.NewReaderSize(c, 64<<10)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends req (from BuildRequest) and reads the response. The body is valid until the next call.
func (c *Conn) Do(req []byte) (int, []byte, error) {
	if err := c.c.SetDeadline(time.Now().Add(RequestTimeout)); err != nil {
		return 0, nil, fmt.Errorf("setting deadline: %w", err)
	}
	if _, err := c.c.Write(req); err != nil {
		return 0, nil, fmt.Errorf("writing request: %w", err)
	}
	status, body, err := readResponse(c.br, c.body[:0])
	c.body = body
	return status, body, err
}

// readResponse reads one HTTP/1.1 response with a Content-Length body, appending the body to buf.
func readResponse(br *bufio.Reader, buf []byte) (int, []byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, buf, fmt.Errorf("reading status line: %w", err)
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, buf, fmt.Errorf("malformed status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, buf, fmt.Errorf("malformed status line %q", line)
	}
	length := -1
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return status, buf, fmt.Errorf("reading headers: %w", err)
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return status, buf, fmt.Errorf("malformed header %q", h)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 || length > maxBody {
				return status, buf, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return status, buf, fmt.Errorf("unsupported Transfer-Encoding %q", value)
		}
	}
	if length < 0 {
		return status, buf, errors.New("response has no Content-Length")
	}
	start := len(buf)
	buf = append(buf, make([]byte, length)...)
	if _, err := io.ReadFull(br, buf[start:]); err != nil {
		return status, buf, fmt.Errorf("reading body: %w", err)
	}
	return status, buf, nil
}

// Result is what one load run measured.
type Result struct {
	// Requests is the number of requests answered with 200.
	Requests int
	// Errors is the number of failed requests (transport errors or non-200 answers).
	Errors int
	// Elapsed is the duration of the measured phase.
	Elapsed time.Duration
	// Latencies are the sorted latencies of the successful requests.
	Latencies stats.Latencies
	// FirstError is the first error seen, if any.
	FirstError error
}

// Rate returns successful requests per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// collector merges the workers' results.
type collector struct {
	mu  sync.Mutex
	res Result
}

func (c *collector) add(n, errs int, lat []time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res.Requests += n
	c.res.Errors += errs
	c.res.Latencies = append(c.res.Latencies, lat...)
	if c.res.FirstError == nil {
		c.res.FirstError = err
	}
}

// worker runs requests on one connection, redialling after a failure.
type worker struct {
	addr string
	req  []byte
	conn *Conn
	lat  []time.Duration
	n    int
	errs int
	err  error
}

func (w *worker) do() (time.Duration, bool) {
	if w.conn == nil {
		c, err := Dial(w.addr)
		if err != nil {
			w.fail(err)
			return 0, false
		}
		w.conn = c
	}
	start := time.Now()
	status, body, err := w.conn.Do(w.req)
	took := time.Since(start)
	if err == nil && status != 200 {
		err = fmt.Errorf("status %d: %.200s", status, body)
	}
	if err != nil {
		_ = w.conn.Close()
		w.conn = nil
		w.fail(err)
		return took, false
	}
	w.n++
	return took, true
}

func (w *worker) fail(err error) {
	w.errs++
	if w.err == nil {
		w.err = err
	}
}

func (w *worker) close() {
	if w.conn != nil {
		_ = w.conn.Close()
	}
}

// ClosedLoop sends req over conns keep-alive connections to addr as fast as they are answered:
// warmup first (not counted), then for dur. It returns the throughput and latencies.
func ClosedLoop(addr string, req []byte, conns int, warmup, dur time.Duration) (Result, error) {
	if err := CheckLoopback(addr); err != nil {
		return Result{}, err
	}
	conns = max(conns, 1)
	var col collector
	var wg sync.WaitGroup
	begin := time.Now()
	measureFrom := begin.Add(warmup)
	end := measureFrom.Add(dur)
	for range conns {
		wg.Go(func() {
			w := &worker{addr: addr, req: req}
			defer w.close()
			for {
				now := time.Now()
				if !now.Before(end) {
					break
				}
				took, ok := w.do()
				if now.Before(measureFrom) {
					w.n, w.errs, w.lat = 0, 0, w.lat[:0]
					continue
				}
				if ok {
					w.lat = append(w.lat, took)
				}
			}
			col.add(w.n, w.errs, w.lat, w.err)
		})
	}
	wg.Wait()
	col.res.Elapsed = time.Since(measureFrom)
	col.res.Latencies.Sort()
	return col.res, nil
}

// OpenLoop sends req to addr at rate requests per second for dur (after warmup at the same rate,
// not counted) over up to conns keep-alive connections. Each latency runs from the request's
// scheduled time to its answer, so time spent waiting for a free connection counts.
func OpenLoop(addr string, req []byte, rate float64, conns int, warmup, dur time.Duration) (Result, error) {
	if err := CheckLoopback(addr); err != nil {
		return Result{}, err
	}
	if rate <= 0 {
		return Result{}, errors.New("open loop: rate must be positive")
	}
	conns = max(conns, 1)
	interval := time.Duration(float64(time.Second) / rate)
	total := int((warmup + dur) / interval)
	warm := int(warmup / interval)
	type job struct {
		at      time.Time
		counted bool
	}
	jobs := make(chan job, total)
	var col collector
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			w := &worker{addr: addr, req: req}
			defer w.close()
			for j := range jobs {
				n, errs := w.n, w.errs
				_, ok := w.do()
				if !j.counted {
					w.n, w.errs = n, errs
					continue
				}
				if ok {
					w.lat = append(w.lat, time.Since(j.at))
				}
			}
			col.add(w.n, w.errs, w.lat, w.err)
		})
	}
	start := time.Now().Add(10 * time.Millisecond)
	// Release each job at its scheduled time; after an oversleep the overdue jobs go out at once.
	for i := range total {
		at := start.Add(time.Duration(i) * interval)
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		jobs <- job{at: at, counted: i >= warm}
	}
	close(jobs)
	wg.Wait()
	col.res.Elapsed = time.Duration(total-warm) * interval
	col.res.Latencies.Sort()
	return col.res, nil
}
