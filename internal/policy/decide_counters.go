package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// opSource says which policy and limit a CounterOp of a decision comes from.
type opSource struct {
	pol    *cPolicy
	ref    string
	rate   *cRateLimit
	budget *cBudget
	cap    int64
}

// counterSubject returns s, or its hash when it is too long to be part of a counter key.
func counterSubject(s string) string {
	if len(s) <= maxCounterSubject {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// subjectKey returns the counter key of a limit for the call: per passport, or per thread (calls
// naming no thread are counted per passport under keyNoThread).
func subjectKey(key, keyNoThread string, thread bool, p *cPassport, req *Request) string {
	subject := p.src.Name
	if thread {
		if req.ThreadID != "" {
			subject = counterSubject(req.ThreadID)
		} else {
			key = keyNoThread
		}
	}
	return key + "\x00" + subject
}

// needsCounters reports whether any applicable policy has a rate limit or budget covering tool.
func needsCounters(set *policySet, req *Request) bool {
	for _, pol := range set.policies {
		if (len(pol.rateLimits) == 0 && len(pol.budgets) == 0) || !applies(pol, req) {
			continue
		}
		for i := range pol.rateLimits {
			if pol.rateLimits[i].tools.match(req.ToolName) {
				return true
			}
		}
		for i := range pol.budgets {
			if pol.budgets[i].tools.match(req.ToolName) {
				return true
			}
		}
	}
	return false
}

// takeCounters counts a call the policies let through against every rate limit and budget of the
// applicable policies covering its tool, in one CounterStore call (none when no limit covers it).
// input is the call's input as it will run (after modify rules). It reports the first exceeded
// limit of an enforcing policy; DryRun and Warn policies' results are recorded in d, whose
// expires_in becomes 0 (a decision that counted is not cacheable). A store failure is each
// policy's failurePolicy's to decide: Closed denies with oap.evaluator_error, Open skips the
// policy's counters with a warning.
func (s *Snapshot) takeCounters(ctx context.Context, d *Decision, tc *toolCall, input map[string]any) (outcome, bool) {
	set, p, req := tc.p.set, tc.p, tc.req
	if !needsCounters(set, req) {
		return outcome{}, false
	}
	// The answer depends on counters: a cached allow would skip counting the next call.
	d.ExpiresIn = 0
	var opsBuf [4]CounterOp
	var srcBuf [4]opSource
	ops, srcs := opsBuf[:0], srcBuf[:0]
	for _, pol := range set.policies {
		if (len(pol.rateLimits) == 0 && len(pol.budgets) == 0) || !applies(pol, req) {
			continue
		}
		required := pol.enforcement == enfEnforce
		for i := range pol.rateLimits {
			rl := &pol.rateLimits[i]
			if !rl.tools.match(req.ToolName) {
				continue
			}
			ops = append(ops, CounterOp{Key: subjectKey(rl.key, rl.keyNoThread, rl.thread, p, req),
				Limit: rl.limit, Window: rl.window, Required: required})
			srcs = append(srcs, opSource{pol: pol, ref: rl.ref, rate: rl})
		}
		for i := range pol.budgets {
			b := &pol.budgets[i]
			if !b.tools.match(req.ToolName) {
				continue
			}
			op, out, ok := b.op(tc, input)
			if !ok {
				if !required {
					record(d, pol.enforcement, out)
					continue
				}
				return out, true
			}
			op.Key, op.Required = subjectKey(b.key, b.keyNoThread, b.thread, p, req), required
			ops = append(ops, op)
			srcs = append(srcs, opSource{pol: pol, ref: b.ref, budget: b, cap: op.Limit})
		}
	}
	if len(ops) == 0 {
		return outcome{}, false
	}
	res := make([]CounterResult, len(ops))
	if err := s.counters.Apply(ctx, tc.now, ops, res); err != nil {
		return counterStoreFailed(d, srcs, err)
	}
	for i := range ops {
		if res[i].Allowed {
			continue
		}
		out := srcs[i].denial(ops[i], res[i])
		if srcs[i].pol.enforcement != enfEnforce {
			record(d, srcs[i].pol.enforcement, out)
			continue
		}
		return out, true
	}
	return outcome{}, false
}

// op builds a budget's CounterOp for a call (Key and Required left to the caller), or the
// deny when the call's amount cannot be read or the passport gives no cap.
func (b *cBudget) op(tc *toolCall, input map[string]any) (CounterOp, outcome, bool) {
	v, found := lookupPath(input, b.field)
	amount, ok := amountOf(v)
	if !found || !ok {
		return CounterOp{}, outcome{kind: outDeny, code: CodeInvalidContext, ref: b.ref,
			msg: fmt.Sprintf("budget %s needs argument %s to be a non-negative integer (at most %d)",
				b.ref, strings.Join(b.field, "."), int64(MaxBudgetAmount))}, false
	}
	limit, ok := b.capOf(tc.limits)
	if !ok {
		return CounterOp{}, outcome{kind: outDeny, code: CodeLimitExceeded, ref: b.ref,
			msg: fmt.Sprintf("budget %s has no cap for passport %s: its limit %s is missing or not a non-negative integer, and the budget sets no max",
				b.ref, tc.p.src.Name, b.limitKey)}, false
	}
	return CounterOp{Budget: true, Limit: limit, Window: b.period, Amount: amount,
		IdempotencyKey: b.idempotencyKeyOf(tc.req, input)}, outcome{}, true
}

// denial is the outcome of an op over its limit.
func (src *opSource) denial(op CounterOp, r CounterResult) outcome {
	if src.rate != nil {
		return outcome{kind: outDeny, code: CodeRateLimitExceeded, ref: src.ref, msg: src.rate.msg}
	}
	if r.Conflict {
		return outcome{kind: outDeny, code: CodeIdempotencyConflict, ref: src.ref,
			msg: "budget " + src.ref + ": the call's idempotency key was already counted with a different " + strings.Join(src.budget.field, ".")}
	}
	return outcome{kind: outDeny, code: CodeLimitExceeded, ref: src.ref,
		msg: "budget " + src.ref + " exceeded: " + strings.Join(src.budget.field, ".") + " " + strconv.FormatInt(op.Amount, 10) +
			" with " + strconv.FormatInt(r.Used, 10) + " already counted this period is over the cap of " +
			strconv.FormatInt(src.cap, 10) + " per " + src.budget.period.String()}
}

// counterStoreFailed applies each involved policy's failurePolicy to a counter-store failure.
func counterStoreFailed(d *Decision, srcs []opSource, err error) (outcome, bool) {
	var seen []*cPolicy
	for i := range srcs {
		pol := srcs[i].pol
		if slices.Contains(seen, pol) {
			continue
		}
		seen = append(seen, pol)
		if pol.failOpen {
			m := d.meta()
			m.Warnings = append(m.Warnings, PolicyResult{PolicyID: pol.id, Decision: DecisionAllow,
				Reason: Reason{Code: CodeEvaluatorError, Message: "counters skipped (failurePolicy Open): " + err.Error()}})
			continue
		}
		out := outcome{kind: outDeny, code: CodeEvaluatorError, ref: srcs[i].ref,
			msg: "counter store unavailable (failurePolicy Closed): " + err.Error()}
		if pol.enforcement != enfEnforce {
			record(d, pol.enforcement, out)
			continue
		}
		return out, true
	}
	return outcome{}, false
}
