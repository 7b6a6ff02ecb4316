package policy

import (
	"context"
	"time"
)

// Verdict is an external evaluator's answer.
type Verdict struct {
	// Decision is allow, deny or modify.
	Decision string `json:"decision"`
	// Code is the OAP reason code (default oap.allowed or oap.policy_denied).
	Code string `json:"code,omitempty"`
	// Message is human-readable.
	Message string `json:"message,omitempty"`
	// ModifiedInput is the rewritten input of a modify verdict.
	ModifiedInput map[string]any `json:"modified_input,omitempty"`
}

// Evaluator decides a request no rule of a policy matched. Implementations must be safe for
// concurrent use; the engine bounds each call with the policy's timeout.
type Evaluator interface {
	// Evaluate returns the verdict for req; an error is an evaluation error (see failurePolicy).
	Evaluate(ctx context.Context, req Request) (Verdict, error)
}

// EvaluatorFunc adapts a function to Evaluator.
type EvaluatorFunc func(ctx context.Context, req Request) (Verdict, error)

// Evaluate calls f.
func (f EvaluatorFunc) Evaluate(ctx context.Context, req Request) (Verdict, error) {
	return f(ctx, req)
}

// Option configures Compile.
type Option func(*options)

type options struct {
	counters   CounterStore
	evaluators func(ExternalEvaluatorSpec) Evaluator
	clock      func() time.Time
	ttl        time.Duration
	deadline   time.Duration
}

// DefaultDecisionTTL is how long a decision may be cached unless WithDecisionTTL says otherwise.
const DefaultDecisionTTL = 60 * time.Second

// WithCounterStore makes the snapshot keep its rate-limit and budget counters in cs, which
// outlives snapshot swaps: a MemoryCounters shared by the snapshots of one process, or a store
// shared by every decision endpoint (Redis). Without it each snapshot gets its own MemoryCounters.
func WithCounterStore(cs CounterStore) Option { return func(o *options) { o.counters = cs } }

// WithEvaluators supplies the factory that builds an Evaluator for each policy's externalEvaluator.
// Without it, a policy with an external evaluator fails evaluation (see failurePolicy).
func WithEvaluators(f func(ExternalEvaluatorSpec) Evaluator) Option {
	return func(o *options) { o.evaluators = f }
}

// WithClock sets the clock used for expiry, rate limits and created_at (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithDecisionTTL sets expires_in of decisions (default DefaultDecisionTTL).
func WithDecisionTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// DefaultEvalDeadline bounds the evaluation of one decision's CEL expressions and input-guard
// patterns unless WithEvalDeadline says otherwise.
const DefaultEvalDeadline = 50 * time.Millisecond

// WithEvalDeadline bounds the evaluation of one decision's CEL expressions and input-guard patterns
// (default DefaultEvalDeadline; d ≤ 0 keeps the default). An evaluation that passes it fails: the
// policy's failurePolicy decides (oap.evaluator_error when Closed), and input screening that cannot
// finish denies with oap.prompt_injection. External evaluators have their own timeouts.
func WithEvalDeadline(d time.Duration) Option { return func(o *options) { o.deadline = d } }
