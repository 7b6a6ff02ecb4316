package decider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// EvaluatorConfig configures the HTTP clients of external evaluators.
type EvaluatorConfig struct {
	// Client sends the requests (default: a client with keep-alive and no overall timeout; each
	// call is bounded by the policy's timeout through its context).
	Client *http.Client
	// FailureThreshold is how many consecutive failures open the circuit (default 5).
	FailureThreshold int
	// OpenFor is how long an open circuit fails calls immediately before one trial call (default 10s).
	OpenFor time.Duration
	// MaxResponseBytes bounds the evaluator's answer (default 64 KiB).
	MaxResponseBytes int64
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// ErrCircuitOpen is returned (wrapped) while an evaluator's circuit is open.
var ErrCircuitOpen = errors.New("circuit open: evaluator failing")

// EvaluatorPool builds one HTTPEvaluator per URL and keeps it across snapshot swaps, so a circuit
// breaker keeps its state when bundles change. Its Evaluator method is the factory passed to
// policy.WithEvaluators.
type EvaluatorPool struct {
	cfg EvaluatorConfig
	mu  sync.Mutex
	by  map[string]*HTTPEvaluator
}

// NewEvaluatorPool returns an empty pool.
func NewEvaluatorPool(cfg EvaluatorConfig) *EvaluatorPool {
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.FailureThreshold <= 0 {
		cfg.FailureThreshold = 5
	}
	if cfg.OpenFor <= 0 {
		cfg.OpenFor = 10 * time.Second
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 64 << 10
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &EvaluatorPool{cfg: cfg, by: map[string]*HTTPEvaluator{}}
}

// Evaluator returns the pool's evaluator for spec (one per URL and timeout).
func (p *EvaluatorPool) Evaluator(spec policy.ExternalEvaluatorSpec) policy.Evaluator {
	return p.get(spec)
}

func (p *EvaluatorPool) get(spec policy.ExternalEvaluatorSpec) *HTTPEvaluator {
	key := spec.URL + " " + spec.TimeoutDuration().String()
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.by[key]; ok {
		return e
	}
	e := &HTTPEvaluator{url: spec.URL, timeout: spec.TimeoutDuration(), cfg: p.cfg}
	p.by[key] = e
	return e
}

// HTTPEvaluator POSTs the decision request as JSON to an external endpoint and reads a
// policy.Verdict. It fails closed (any problem is an error, which the engine turns into a deny unless
// the policy's failurePolicy is Open) and opens a circuit after consecutive failures.
type HTTPEvaluator struct {
	url     string
	timeout time.Duration
	cfg     EvaluatorConfig

	mu        sync.Mutex
	failures  int
	openUntil time.Time
	trial     bool // a trial call is in flight while half-open
}

// NewHTTPEvaluator returns a standalone evaluator for spec.
func NewHTTPEvaluator(spec policy.ExternalEvaluatorSpec, cfg EvaluatorConfig) *HTTPEvaluator {
	return NewEvaluatorPool(cfg).get(spec)
}

// Evaluate implements policy.Evaluator.
func (e *HTTPEvaluator) Evaluate(ctx context.Context, req policy.Request) (policy.Verdict, error) {
	if err := e.admit(); err != nil {
		return policy.Verdict{}, err
	}
	v, err := e.call(ctx, req)
	e.done(err == nil)
	return v, err
}

// admit reports whether a call may go out: closed, or half-open with no trial in flight.
func (e *HTTPEvaluator) admit() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failures < e.cfg.FailureThreshold {
		return nil
	}
	if e.cfg.Now().Before(e.openUntil) || e.trial {
		return fmt.Errorf("%s: %w", e.url, ErrCircuitOpen)
	}
	e.trial = true
	return nil
}

func (e *HTTPEvaluator) done(ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.trial = false
	if ok {
		e.failures = 0
		return
	}
	e.failures++
	if e.failures >= e.cfg.FailureThreshold {
		e.openUntil = e.cfg.Now().Add(e.cfg.OpenFor)
	}
}

// State returns "closed", "open" or "half-open".
func (e *HTTPEvaluator) State() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.failures < e.cfg.FailureThreshold:
		return "closed"
	case e.cfg.Now().Before(e.openUntil):
		return "open"
	default:
		return "half-open"
	}
}

func (e *HTTPEvaluator) call(ctx context.Context, req policy.Request) (policy.Verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	body, err := json.Marshal(req)
	if err != nil {
		return policy.Verdict{}, fmt.Errorf("encoding request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return policy.Verdict{}, fmt.Errorf("building request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	resp, err := e.cfg.Client.Do(hr)
	if err != nil {
		return policy.Verdict{}, fmt.Errorf("calling evaluator: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, e.cfg.MaxResponseBytes+1))
	if err != nil {
		return policy.Verdict{}, fmt.Errorf("reading evaluator response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return policy.Verdict{}, fmt.Errorf("evaluator answered HTTP %d", resp.StatusCode)
	}
	if int64(len(data)) > e.cfg.MaxResponseBytes {
		return policy.Verdict{}, fmt.Errorf("evaluator response exceeds %d bytes", e.cfg.MaxResponseBytes)
	}
	var v policy.Verdict
	if err := json.Unmarshal(data, &v); err != nil {
		return policy.Verdict{}, fmt.Errorf("decoding evaluator response: %w", err)
	}
	switch v.Decision {
	case policy.DecisionAllow, policy.DecisionDeny, policy.DecisionModify:
	default:
		return policy.Verdict{}, fmt.Errorf("evaluator answered unknown decision %q", v.Decision)
	}
	return v, nil
}
