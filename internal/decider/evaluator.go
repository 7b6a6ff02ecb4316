package decider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
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
	v, err := DecodeVerdict(data)
	if err != nil {
		return policy.Verdict{}, err
	}
	return v, nil
}

// wireVerdict is an evaluator's answer as it may be written (docs/evaluator-protocol.md): Tollgate's
// style ({"decision", "code", "message", "modified_input"}), agentick's classifier style
// ({"action": "allow"|"deny", "reason"}, or null for allow) and an OAP decision ({"allow",
// "reasons": [{code, message}]}).
type wireVerdict struct {
	Decision      *string         `json:"decision"`
	Action        *string         `json:"action"`
	Allow         *bool           `json:"allow"`
	Code          string          `json:"code"`
	Message       string          `json:"message"`
	Reason        string          `json:"reason"`
	Reasons       []policy.Reason `json:"reasons"`
	ModifiedInput map[string]any  `json:"modified_input"`
}

// DecodeVerdict reads an external evaluator's answer. JSON null, {"action": "allow"} and
// {"decision": "allow"} allow; {"action": "deny", "reason": …} and {"decision": "deny", "code": …,
// "message": …} deny; {"decision": "modify", "modified_input": {…}} modifies; {"allow": bool,
// "reasons": [{code, message}]} (an OAP decision) allows or denies. Anything else is an error, so
// the engine fails closed (unless the policy's failurePolicy is Open): an answer without a verdict,
// an unknown verdict, or fields that disagree.
func DecodeVerdict(data []byte) (policy.Verdict, error) {
	trimmed := bytes.TrimSpace(data)
	if string(trimmed) == "null" {
		return policy.Verdict{Decision: policy.DecisionAllow}, nil
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return policy.Verdict{}, errors.New("decoding evaluator response: want a JSON object or null")
	}
	var w wireVerdict
	if err := json.Unmarshal(trimmed, &w); err != nil {
		return policy.Verdict{}, fmt.Errorf("decoding evaluator response: %w", err)
	}
	decision, err := w.decision()
	if err != nil {
		return policy.Verdict{}, err
	}
	v := policy.Verdict{Decision: decision, Code: w.Code, Message: w.Message, ModifiedInput: w.ModifiedInput}
	if v.Message == "" {
		v.Message = w.Reason
	}
	for i, r := range w.Reasons {
		if r.Code == "" || len(r.Code) > 64 || !reEvaluatorCode.MatchString(r.Code) {
			return policy.Verdict{}, fmt.Errorf("evaluator answered reasons[%d].code %q: want an OAP code such as oap.policy_denied", i, clip(r.Code))
		}
	}
	if len(w.Reasons) > 0 {
		if v.Code == "" {
			v.Code = w.Reasons[0].Code
		}
		if v.Message == "" {
			v.Message = w.Reasons[0].Message
		}
	}
	if v.Code != "" && (len(v.Code) > 64 || !reEvaluatorCode.MatchString(v.Code)) {
		return policy.Verdict{}, fmt.Errorf("evaluator answered reason code %q: want an OAP code such as oap.policy_denied", clip(v.Code))
	}
	if v.Decision == policy.DecisionAllow && v.Code == policy.CodeAllowed {
		v.Code = ""
	}
	return v, nil
}

// reEvaluatorCode is the form of a reason code an evaluator may answer with.
var reEvaluatorCode = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)

// decision reads the verdict from whichever of decision, action and allow the answer carries; they
// must agree.
func (w *wireVerdict) decision() (string, error) {
	var got []string
	if w.Decision != nil {
		switch *w.Decision {
		case policy.DecisionAllow, policy.DecisionDeny, policy.DecisionModify:
			got = append(got, *w.Decision)
		default:
			return "", fmt.Errorf("evaluator answered unknown decision %q: want allow, deny or modify", clip(*w.Decision))
		}
	}
	if w.Action != nil {
		switch *w.Action {
		case policy.DecisionAllow, policy.DecisionDeny:
			got = append(got, *w.Action)
		default:
			return "", fmt.Errorf("evaluator answered unknown action %q: want allow or deny", clip(*w.Action))
		}
	}
	if w.Allow != nil {
		switch {
		case !*w.Allow:
			got = append(got, policy.DecisionDeny)
		case w.Decision != nil && *w.Decision == policy.DecisionModify:
			got = append(got, policy.DecisionModify) // a modify is allowed
		default:
			got = append(got, policy.DecisionAllow)
		}
	}
	if len(got) == 0 {
		return "", errors.New("evaluator answered no verdict: want decision, action or allow (or null to allow)")
	}
	for _, g := range got[1:] {
		if g != got[0] {
			return "", fmt.Errorf("evaluator answered conflicting verdicts %v", got)
		}
	}
	return got[0], nil
}
