package decider

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP sink formats (HTTPSinkConfig.Format).
const (
	// HTTPFormatNDJSON posts newline-delimited JSON records (Content-Type application/x-ndjson).
	HTTPFormatNDJSON = "ndjson"
	// HTTPFormatArray posts one JSON array of records (Content-Type application/json), as OPA's
	// decision-log service receives them.
	HTTPFormatArray = "array"
)

// Defaults of HTTPSinkConfig.
const (
	DefaultHTTPSinkBuffer        = 10000
	DefaultHTTPSinkBatch         = 500
	DefaultHTTPSinkBatchBytes    = 4 << 20
	DefaultHTTPSinkFlushInterval = time.Second
	DefaultHTTPSinkTimeout       = 10 * time.Second
	DefaultHTTPSinkMinBackoff    = 100 * time.Millisecond
	DefaultHTTPSinkMaxBackoff    = 30 * time.Second
	DefaultHTTPSinkCloseTimeout  = 5 * time.Second
)

// HTTPSinkConfig configures an HTTPSink.
type HTTPSinkConfig struct {
	// URL receives the batches (POST).
	URL string
	// Format is HTTPFormatNDJSON (default) or HTTPFormatArray.
	Format string
	// Buffer bounds the records held, queued or in flight, until the receiver acknowledges them
	// (default DefaultHTTPSinkBuffer); a record that finds it full is dropped and counted.
	Buffer int
	// BatchSize and BatchBytes bound one POST (records, and bytes before compression).
	BatchSize, BatchBytes int
	// FlushInterval is how long a record may wait for its batch to fill.
	FlushInterval time.Duration
	// Timeout bounds one POST (ignored when Client is set).
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between retries of a failed POST (doubling, with
	// jitter).
	MinBackoff, MaxBackoff time.Duration
	// CloseTimeout bounds how long Close keeps delivering what is held; the rest is dropped.
	CloseTimeout time.Duration
	// TokenFile, when set, is read before each POST and sent as a bearer token (a projected
	// ServiceAccount token rotates).
	TokenFile string
	// Header is sent with every POST.
	Header http.Header
	// Client sends the POSTs (default: a client with Timeout).
	Client *http.Client
	// Logger receives delivery problems (default slog.Default()); records are never logged.
	Logger *slog.Logger
}

// HTTPSink batches records and POSTs them gzip-compressed (Content-Encoding: gzip), the convention
// of OPA's decision logs, from a goroutine of its own. A POST that fails (no connection, a timeout,
// 408, 429 or 5xx) is retried with backoff until it succeeds, while new records queue behind it in
// the bounded buffer: during an outage nothing is lost until the buffer is full, and records that
// find it full are dropped and counted. A batch the receiver rejects (any other 4xx) is dropped and
// counted. Write never blocks.
type HTTPSink struct {
	cfg    HTTPSinkConfig
	client *http.Client
	log    *slog.Logger

	mu      sync.Mutex
	queue   [][]byte // records not yet acknowledged, oldest first
	closing bool
	wake    chan struct{}
	done    chan struct{}

	written atomic.Uint64
	dropped atomic.Uint64
	failing atomic.Bool
}

// NewHTTPSink starts a sink named "http" posting to cfg.URL.
func NewHTTPSink(cfg HTTPSinkConfig) (*HTTPSink, error) {
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("decision log URL %q: want http:// or https://", cfg.URL)
	}
	switch cfg.Format {
	case "":
		cfg.Format = HTTPFormatNDJSON
	case HTTPFormatNDJSON, HTTPFormatArray:
	default:
		return nil, fmt.Errorf("decision log HTTP format %q: want %s or %s", cfg.Format, HTTPFormatNDJSON, HTTPFormatArray)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.Buffer, DefaultHTTPSinkBuffer)
	def(&cfg.BatchSize, DefaultHTTPSinkBatch)
	def(&cfg.BatchBytes, DefaultHTTPSinkBatchBytes)
	defDur(&cfg.FlushInterval, DefaultHTTPSinkFlushInterval)
	defDur(&cfg.Timeout, DefaultHTTPSinkTimeout)
	defDur(&cfg.MinBackoff, DefaultHTTPSinkMinBackoff)
	defDur(&cfg.MaxBackoff, DefaultHTTPSinkMaxBackoff)
	defDur(&cfg.CloseTimeout, DefaultHTTPSinkCloseTimeout)
	s := &HTTPSink{cfg: cfg, client: cfg.Client, log: cfg.Logger, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if s.client == nil {
		s.client = &http.Client{Timeout: cfg.Timeout}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	go s.run()
	return s, nil
}

// Write queues a copy of line, or drops and counts it when the buffer is full or the sink closed.
func (s *HTTPSink) Write(line []byte) {
	s.mu.Lock()
	if s.closing || len(s.queue) >= s.cfg.Buffer {
		s.mu.Unlock()
		s.dropped.Add(1)
		return
	}
	s.queue = append(s.queue, bytes.TrimSuffix(bytes.Clone(line), []byte("\n")))
	full := len(s.queue) >= s.cfg.BatchSize
	s.mu.Unlock()
	if full {
		s.signal()
	}
}

// Flush does nothing: the sink posts on its own schedule (a full batch or FlushInterval).
func (s *HTTPSink) Flush() {}

func (s *HTTPSink) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close stops taking records and delivers what is held within CloseTimeout; what is left then is
// dropped and counted.
func (s *HTTPSink) Close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.signal()
	<-s.done
}

// Stats returns the sink's counters.
func (s *HTTPSink) Stats() SinkStats {
	return SinkStats{Name: "http", Written: s.written.Load(), Dropped: s.dropped.Load()}
}

// Held returns the number of records queued or in flight.
func (s *HTTPSink) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// run posts batches until the sink is closed and drained (or its close deadline passes). A batch
// goes out when it is full, at the flush interval, right after a retry's backoff, and at once while
// closing.
func (s *HTTPSink) run() {
	defer close(s.done)
	tick := time.NewTicker(s.cfg.FlushInterval)
	defer tick.Stop()
	backoff := time.Duration(0)
	ready := false         // the flush interval passed while records waited
	var deadline time.Time // set once closing
	for {
		batch, closing := s.next()
		if closing && deadline.IsZero() {
			deadline = time.Now().Add(s.cfg.CloseTimeout)
		}
		if len(batch) == 0 && closing {
			return
		}
		if len(batch) == 0 || (!closing && backoff == 0 && len(batch) < s.cfg.BatchSize && !ready) {
			select {
			case <-s.wake:
			case <-tick.C:
				ready = len(batch) > 0
			}
			continue
		}
		ready = false
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if closing {
			ctx, cancel = context.WithDeadline(ctx, deadline)
		}
		retry, err := s.post(ctx, batch)
		cancel()
		switch {
		case err == nil:
			s.ack(len(batch), false)
			backoff = 0
			if s.failing.Swap(false) {
				s.log.Info("decision log receiver is back", "url", s.cfg.URL)
			}
			continue
		case !retry:
			s.ack(len(batch), true)
			s.log.Warn("decision log receiver rejected a batch: records dropped", "url", s.cfg.URL, "records", len(batch), "err", err)
			continue
		}
		if !s.failing.Swap(true) {
			s.log.Warn("decision log receiver unavailable: holding records and retrying", "url", s.cfg.URL, "err", err)
		}
		if closing && !time.Now().Before(deadline) {
			s.dropAll()
			return
		}
		backoff = nextBackoff(backoff, s.cfg.MinBackoff, s.cfg.MaxBackoff)
		wait := backoff
		if closing {
			wait = min(wait, time.Until(deadline))
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.closeSignal(closing):
		}
		t.Stop()
	}
}

// closeSignal is the wake channel while not yet closing (so that Close cuts a backoff short), and
// nil once closing (the backoff then runs to the deadline).
func (s *HTTPSink) closeSignal(closing bool) <-chan struct{} {
	if closing {
		return nil
	}
	return s.wake
}

// next returns the oldest records, up to one batch, without removing them, and whether the sink is
// closing.
func (s *HTTPSink) next() ([][]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, size := 0, 0
	for n < len(s.queue) && n < s.cfg.BatchSize {
		size += len(s.queue[n]) + 1
		if n > 0 && size > s.cfg.BatchBytes {
			break
		}
		n++
	}
	return s.queue[:n:n], s.closing
}

// ack removes the n oldest records, counting them written or dropped.
func (s *HTTPSink) ack(n int, drop bool) {
	s.mu.Lock()
	clear(s.queue[:n])
	s.queue = s.queue[n:]
	if len(s.queue) == 0 {
		s.queue = nil
	}
	s.mu.Unlock()
	if drop {
		s.dropped.Add(uint64(n))
	} else {
		s.written.Add(uint64(n))
	}
}

// dropAll drops and counts every record held.
func (s *HTTPSink) dropAll() {
	s.mu.Lock()
	n := len(s.queue)
	s.queue = nil
	s.mu.Unlock()
	s.dropped.Add(uint64(n))
	if n > 0 {
		s.log.Warn("decision log closed before the receiver took every record: records dropped", "url", s.cfg.URL, "records", n)
	}
}

// post sends one batch; retry says whether a failure is worth retrying.
func (s *HTTPSink) post(ctx context.Context, batch [][]byte) (retry bool, err error) {
	body, err := s.encode(batch)
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("building the request: %w", err)
	}
	for k, v := range s.cfg.Header {
		req.Header[k] = v
	}
	if s.cfg.Format == HTTPFormatArray {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Header.Set("Content-Type", "application/x-ndjson")
	}
	req.Header.Set("Content-Encoding", "gzip")
	if s.cfg.TokenFile != "" {
		tok, err := os.ReadFile(s.cfg.TokenFile)
		if err != nil {
			return true, fmt.Errorf("reading the token file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return true, fmt.Errorf("posting decision log records: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return false, nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return true, fmt.Errorf("receiver answered HTTP %d", c)
	default:
		return false, fmt.Errorf("receiver answered HTTP %d", c)
	}
}

// encode gzips the batch as JSON lines or a JSON array.
func (s *HTTPSink) encode(batch [][]byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	sep, end := []byte("\n"), []byte("\n")
	if s.cfg.Format == HTTPFormatArray {
		sep, end = []byte(","), []byte("]")
		_, _ = zw.Write([]byte("["))
	}
	for i, rec := range batch {
		if i > 0 {
			_, _ = zw.Write(sep)
		}
		_, _ = zw.Write(rec)
	}
	_, _ = zw.Write(end)
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing decision log records: %w", err)
	}
	return buf.Bytes(), nil
}

// nextBackoff doubles prev within [lo, hi], with ±20% jitter.
func nextBackoff(prev, lo, hi time.Duration) time.Duration {
	next := prev * 2
	if next < lo {
		next = lo
	}
	if next > hi {
		next = hi
	}
	jitter := time.Duration(float64(next) * (rand.Float64()*0.4 - 0.2))
	return max(lo, min(hi, next+jitter))
}
