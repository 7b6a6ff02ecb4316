package policy

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const capRefund = "finance.payment.refund"

// budgetBundle has passports a (limit max_amount_per_day 500) and b (no limit), both holding the
// refund capability, and a policy with a daily budget on refund amounts (max 100).
func budgetBundle(b Budget, mutate ...func(*PolicySpec)) Bundle {
	pa := passport("a", nil, capRefund)
	pa.Spec.Limits = map[string]any{capRefund: map[string]any{"max_amount_per_day": float64(500)}}
	spec := PolicySpec{
		ToolCapabilities: []ToolCapability{{Tool: "refund", Capability: capRefund}},
		Budgets:          []Budget{b},
	}
	for _, m := range mutate {
		m(&spec)
	}
	return Bundle{Namespace: "agents", Passports: []Passport{pa, passport("b", nil, capRefund)},
		Policies: []Policy{{Name: "spend", Spec: spec}}}
}

func refund(p, callID string, input map[string]any) Request {
	return Request{Passport: p, ToolName: "refund", CallID: callID, ToolInput: input}
}

func amount(n any) map[string]any { return map[string]any{"amount": n, "order_id": "o-1"} }

func TestBudgetDecisions(t *testing.T) {
	ctx := context.Background()
	type step struct {
		req  Request
		code string
		msg  string // substring of the first reason's message
	}
	cases := []struct {
		name   string
		budget Budget
		steps  []step
	}{
		{"max per passport, call_id idempotency", Budget{Name: "daily", Tools: []string{"refund"}, Field: "amount", Max: 100}, []step{
			{refund("b", "c1", amount(60)), CodeAllowed, ""},
			{refund("b", "c1", amount(60)), CodeAllowed, ""}, // retried: counted once
			{refund("b", "c2", amount(40)), CodeAllowed, ""}, // 100: at the cap
			{refund("b", "c3", amount(1)), CodeLimitExceeded, "amount 1 with 100 already counted this period is over the cap of 100 per 24h0m0s"},
			{refund("b", "c1", amount(61)), CodeIdempotencyConflict, "already counted with a different amount"},
			{refund("b", "", amount(0)), CodeAllowed, ""},
		}},
		{"different call ids count twice", Budget{Name: "daily", Field: "amount", Max: 100}, []step{
			{refund("b", "c1", amount(50)), CodeAllowed, ""},
			{refund("b", "c2", amount(50)), CodeAllowed, ""},
			{refund("b", "c3", amount(50)), CodeLimitExceeded, "over the cap of 100"},
			{refund("b", "c3", amount(50)), CodeLimitExceeded, ""}, // a denied call's id is not remembered
		}},
		{"the passport's limit overrides max", Budget{Name: "daily", Field: "amount", Max: 100, LimitKey: "max_amount_per_day"}, []step{
			{refund("a", "c1", amount(400)), CodeAllowed, ""},
			{refund("a", "c2", amount(101)), CodeLimitExceeded, "over the cap of 500"},
			{refund("b", "c1", amount(101)), CodeLimitExceeded, "over the cap of 100"}, // b has no limit: max
		}},
		{"a passport without the limit and no max", Budget{Name: "daily", Field: "amount", LimitKey: "max_amount_per_day"}, []step{
			{refund("a", "c1", amount(1)), CodeAllowed, ""},
			{refund("b", "c1", amount(1)), CodeLimitExceeded, "has no cap for passport b"},
		}},
		{"amounts that cannot be counted", Budget{Name: "daily", Field: "payment.amount", Max: 100}, []step{
			{refund("b", "c1", map[string]any{"payment": map[string]any{"amount": float64(5)}}), CodeAllowed, ""},
			{refund("b", "c2", amount(5)), CodeInvalidContext, "needs argument payment.amount"},
			{refund("b", "c3", map[string]any{"payment": map[string]any{"amount": -1.0}}), CodeInvalidContext, "non-negative integer"},
			{refund("b", "c4", map[string]any{"payment": map[string]any{"amount": 1.5}}), CodeInvalidContext, ""},
			{refund("b", "c5", map[string]any{"payment": map[string]any{"amount": "5"}}), CodeInvalidContext, ""},
			{refund("b", "c6", map[string]any{"payment": map[string]any{"amount": 1e300}}), CodeInvalidContext, ""},
		}},
		{"idempotency key from an argument", Budget{Name: "daily", Field: "amount", Max: 100, IdempotencyField: "idempotency_key"}, []step{
			{refund("b", "c1", map[string]any{"amount": 70.0, "idempotency_key": "k-1"}), CodeAllowed, ""},
			{refund("b", "c2", map[string]any{"amount": 70.0, "idempotency_key": "k-1"}), CodeAllowed, ""}, // other call_id, same key
			{refund("b", "c1", map[string]any{"amount": 70.0, "idempotency_key": "k-2"}), CodeLimitExceeded, ""},
		}},
		{"per thread", Budget{Name: "daily", Field: "amount", Max: 100, Per: PerThread}, []step{
			{Request{Passport: "b", ToolName: "refund", ThreadID: "t1", ToolInput: amount(100)}, CodeAllowed, ""},
			{Request{Passport: "b", ToolName: "refund", ThreadID: "t2", ToolInput: amount(100)}, CodeAllowed, ""},
			{Request{Passport: "b", ToolName: "refund", ThreadID: "t1", ToolInput: amount(1)}, CodeLimitExceeded, ""},
		}},
		{"other tools are not counted", Budget{Name: "daily", Tools: []string{"charge"}, Field: "amount", Max: 1}, []step{
			{refund("b", "c1", amount(100)), CodeAllowed, ""},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := Compile(budgetBundle(tc.budget), WithClock(fixedClock))
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range tc.steps {
				d := snap.Decide(ctx, st.req)
				checkInvariants(t, d)
				if d.Reasons[0].Code != st.code || !strings.Contains(d.Reasons[0].Message, st.msg) {
					t.Fatalf("step %d: got %v, want %s %q", i, d.Reasons, st.code, st.msg)
				}
				if counted := tc.name != "other tools are not counted"; counted != (d.ExpiresIn == 0) {
					t.Errorf("step %d: expires_in = %d; a decision that counts is not cacheable, one that does not is", i, d.ExpiresIn)
				}
				if st.code != CodeAllowed && d.PolicyID != "agents/spend#daily" {
					t.Errorf("step %d: policy_id = %q", i, d.PolicyID)
				}
			}
		})
	}
}

// TestBudgetPeriod: sums reset at the next period; an idempotency key is remembered one period
// from its call, across the reset.
func TestBudgetPeriod(t *testing.T) {
	now := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	snap, err := Compile(budgetBundle(Budget{Name: "daily", Field: "amount", Max: 100}), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	code := func(r Request) string { return snap.Decide(ctx, r).Reasons[0].Code }
	if c := code(refund("b", "c1", amount(100))); c != CodeAllowed {
		t.Fatal(c)
	}
	if c := code(refund("b", "c2", amount(1))); c != CodeLimitExceeded {
		t.Fatal(c)
	}
	now = now.Add(2 * time.Hour) // 01:00 the next UTC day
	if c := code(refund("b", "c1", amount(100))); c != CodeAllowed {
		t.Fatalf("retry of yesterday's call: %s", c)
	}
	if c := code(refund("b", "c2", amount(100))); c != CodeAllowed {
		t.Fatalf("the retry must not have been counted: %s", c)
	}
	if c := code(refund("b", "c3", amount(1))); c != CodeLimitExceeded {
		t.Fatal(c)
	}
}

// TestBudgetDryRunAndWarn: a DryRun or Warn budget over its cap does not deny; the result is
// reported, and an enforcing rate limit beside it still counts.
func TestBudgetDryRunAndWarn(t *testing.T) {
	for _, enf := range []string{EnforcementDryRun, EnforcementWarn} {
		t.Run(enf, func(t *testing.T) {
			b := budgetBundle(Budget{Name: "daily", Field: "amount", Max: 10}, func(s *PolicySpec) { s.EnforcementAction = enf })
			snap, err := Compile(b, WithClock(fixedClock))
			if err != nil {
				t.Fatal(err)
			}
			d := snap.Decide(context.Background(), refund("b", "c1", amount(11)))
			checkInvariants(t, d)
			if !d.Allow || d.Metadata == nil {
				t.Fatalf("got %+v", d)
			}
			res := d.Metadata.DryRun
			if enf == EnforcementWarn {
				res = d.Metadata.Warnings
			}
			if r := last(res); r.Reason.Code != CodeLimitExceeded || r.Decision != DecisionDeny || r.PolicyID != "agents/spend#daily" {
				t.Fatalf("metadata = %+v", d.Metadata)
			}
			d = snap.Decide(context.Background(), refund("b", "c2", amount("x")))
			if !d.Allow {
				t.Fatalf("an uncountable amount under %s denied: %v", enf, d.Reasons)
			}
		})
	}
}

// last returns the last result (a zero one when none).
func last(rs []PolicyResult) PolicyResult {
	if len(rs) == 0 {
		return PolicyResult{}
	}
	return rs[len(rs)-1]
}

// countingStore counts Apply calls and fails them when fail is set.
type countingStore struct {
	inner CounterStore
	calls atomic.Int64
	fail  atomic.Bool
}

func (c *countingStore) Apply(ctx context.Context, now time.Time, ops []CounterOp, res []CounterResult) error {
	c.calls.Add(1)
	if c.fail.Load() {
		return errors.New("dial tcp 127.0.0.1:6379: connection refused")
	}
	return c.inner.Apply(ctx, now, ops, res)
}

// TestCounterStoreFailure: each policy's failurePolicy decides when the store fails.
func TestCounterStoreFailure(t *testing.T) {
	cases := []struct {
		failure, enforcement string
		allow                bool
		code                 string
	}{
		{FailClosed, EnforcementEnforce, false, CodeEvaluatorError},
		{"", EnforcementEnforce, false, CodeEvaluatorError},
		{FailOpen, EnforcementEnforce, true, CodeAllowed},
		{FailClosed, EnforcementDryRun, true, CodeAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.failure+"/"+tc.enforcement, func(t *testing.T) {
			cs := &countingStore{inner: NewMemoryCounters(100)}
			cs.fail.Store(true)
			b := budgetBundle(Budget{Name: "daily", Field: "amount", Max: 100}, func(s *PolicySpec) {
				s.FailurePolicy, s.EnforcementAction = tc.failure, tc.enforcement
				s.RateLimits = []RateLimit{{Name: "calls", Limit: 5, Window: "1m"}}
			})
			snap, err := Compile(b, WithCounterStore(cs), WithClock(fixedClock))
			if err != nil {
				t.Fatal(err)
			}
			d := snap.Decide(context.Background(), refund("b", "c1", amount(1)))
			checkInvariants(t, d)
			if d.Allow != tc.allow || d.Reasons[0].Code != tc.code {
				t.Fatalf("got %s %v", d.Decision, d.Reasons)
			}
			if cs.calls.Load() != 1 {
				t.Errorf("store calls = %d, want 1 (one per decision, rate limit and budget together)", cs.calls.Load())
			}
			switch {
			case !tc.allow:
				if !strings.Contains(d.Reasons[0].Message, "counter store unavailable") || d.PolicyID == "" {
					t.Errorf("deny = %+v", d)
				}
			case tc.failure == FailOpen:
				if d.Metadata == nil || len(d.Metadata.Warnings) != 1 || d.Metadata.Warnings[0].Reason.Code != CodeEvaluatorError {
					t.Errorf("metadata = %+v", d.Metadata)
				}
			default:
				if d.Metadata == nil || last(d.Metadata.DryRun).Reason.Code != CodeEvaluatorError {
					t.Errorf("metadata = %+v", d.Metadata)
				}
			}
			// Back: counting works again.
			cs.fail.Store(false)
			if d := snap.Decide(context.Background(), refund("b", "c2", amount(1))); !d.Allow {
				t.Fatalf("after recovery: %v", d.Reasons)
			}
		})
	}
}

// TestNoCounterNoStoreCall: decisions that no rate limit or budget covers never call the store.
func TestNoCounterNoStoreCall(t *testing.T) {
	cs := &countingStore{inner: NewMemoryCounters(100)}
	snap, err := Compile(budgetBundle(Budget{Name: "daily", Tools: []string{"refund"}, Field: "amount", Max: 100},
		func(s *PolicySpec) {
			s.ToolCapabilities = append(s.ToolCapabilities, ToolCapability{Tool: "lookup", Capability: capRefund})
			s.Rules = []Rule{{Name: "no-big", Tools: []string{"refund"}, When: "input.amount > 1000", Action: ActionDeny}}
		}), WithCounterStore(cs))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, r := range []Request{
		{Passport: "b", ToolName: "lookup", ToolInput: amount(5)},      // no limit covers it
		refund("b", "c1", amount(5000)),                                // denied by a rule first
		{Passport: "nobody", ToolName: "refund", ToolInput: amount(5)}, // unknown passport
		{Passport: "b", Hook: HookPreLLMCall, Messages: []Message{{Role: "user", Content: "hi"}}},
	} {
		snap.Decide(ctx, r)
	}
	if n := cs.calls.Load(); n != 0 {
		t.Fatalf("store called %d times for decisions needing no counter", n)
	}
	snap.Decide(ctx, refund("b", "c1", amount(5)))
	if n := cs.calls.Load(); n != 1 {
		t.Fatalf("store called %d times for one budgeted call", n)
	}
}

func TestBudgetValidation(t *testing.T) {
	cases := []struct {
		b    Budget
		want string
	}{
		{Budget{Name: "a", Max: 1}, "spec.budgets[0].field: Required value"},
		{Budget{Name: "a", Field: "amount"}, "spec.budgets[0].max: Invalid value: max or limitKey is required"},
		{Budget{Name: "a", Field: "amount", Max: MaxBudgetAmount + 1}, "spec.budgets[0].max"},
		{Budget{Name: "a", Field: "amount", Max: -1}, "spec.budgets[0].max"},
		{Budget{Name: "a", Field: "a..b", Max: 1}, "spec.budgets[0].field"},
		{Budget{Name: "a", Field: "amount", Max: 1, Period: "1 day"}, "spec.budgets[0].period: Invalid value: invalid duration"},
		{Budget{Name: "a", Field: "amount", Max: 1, Period: "10ms"}, "spec.budgets[0].period: Invalid value: must be at least 1s"},
		{Budget{Name: "a", Field: "amount", Max: 1, Per: "Team"}, "spec.budgets[0].per: Invalid value: unsupported value \"Team\""},
		{Budget{Name: "a", Field: "amount", LimitKey: "Max Amount"}, "spec.budgets[0].limitKey"},
		{Budget{Name: "a", Field: "amount", Max: 1, IdempotencyField: "x y"}, "spec.budgets[0].idempotencyField"},
		{Budget{Name: "a", Field: "amount", Max: 1, Tools: []string{""}}, "spec.budgets[0].tools[0]"},
		{Budget{Name: "", Field: "amount", Max: 1}, "spec.budgets[0].name"},
	}
	for _, tc := range cases {
		fe := ValidatePolicy(PolicySpec{Budgets: []Budget{tc.b}})
		if !strings.Contains(fe.ToAggregate().Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.b, fe, tc.want)
		}
	}
	fe := ValidatePolicy(PolicySpec{Budgets: []Budget{{Name: "a", Field: "amount", Max: 1}, {Name: "a", Field: "amount", Max: 1}}})
	if !strings.Contains(fe.ToAggregate().Error(), "spec.budgets[1].name") {
		t.Errorf("duplicate name: %v", fe)
	}
	ok := Budget{Name: "daily", Tools: []string{"pay_*"}, Field: "payment.amount", Max: 1, LimitKey: "max_amount_per_day",
		Period: "1h", Per: PerThread, IdempotencyField: "idempotency_key"}
	if fe := ValidatePolicy(PolicySpec{Budgets: []Budget{ok}}); len(fe) != 0 {
		t.Errorf("valid budget: %v", fe)
	}
}

// TestLongSubjectsAreHashed: a thread id or idempotency key longer than maxCounterSubject is hashed
// into the counter key, so callers cannot grow keys.
func TestLongSubjectsAreHashed(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	got := counterSubject(long)
	if len(got) > 80 || !strings.HasPrefix(got, "sha256:") || counterSubject(long+"y") == got {
		t.Fatalf("counterSubject = %q", got)
	}
	if counterSubject("short") != "short" {
		t.Fatal("short subject changed")
	}
}

// TestMemoryBudgetConcurrent: concurrent calls never sum past the cap (run it with -race).
func TestMemoryBudgetConcurrent(t *testing.T) {
	snap, err := Compile(budgetBundle(Budget{Name: "daily", Field: "amount", Max: 200}), WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if snap.Decide(context.Background(), refund("b", "call-"+strconv.Itoa(i), amount(10))).Allow {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 20 {
		t.Fatalf("%d calls of 10 allowed under a cap of 200, want 20", n)
	}
}
