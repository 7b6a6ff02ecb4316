package counters_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/counters"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testredis"
)

// benchBundle: one passport; a policy with a rate limit and a budget on refund calls.
func benchBundle() policy.Bundle {
	return policy.Bundle{Namespace: "shop",
		Passports: []policy.Passport{{Name: "payer", Namespace: "shop", Spec: policy.PassportSpec{
			Owner: policy.PassportOwner{ID: "p@example.com", Type: "team"}, AssuranceLevel: "L2",
			Capabilities: []policy.Capability{{ID: "finance.payment.refund"}}}}},
		Policies: []policy.Policy{{Name: "payments", Namespace: "shop", Spec: policy.PolicySpec{
			ToolCapabilities: []policy.ToolCapability{{Tool: "refund", Capability: "finance.payment.refund"}},
			RateLimits:       []policy.RateLimit{{Name: "calls", Tools: []string{"refund"}, Limit: 1_000_000, Window: "1s"}},
			Budgets:          []policy.Budget{{Name: "daily", Tools: []string{"refund"}, Field: "amount", Max: policy.MaxBudgetAmount}},
		}}}}
}

func benchDecideCounters(b *testing.B, cs policy.CounterStore) {
	snap, err := policy.Compile(benchBundle(), policy.WithCounterStore(cs))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		d := snap.Decide(ctx, policy.Request{Passport: "payer", ToolName: "refund", CallID: "c-" + strconv.Itoa(i),
			ToolInput: map[string]any{"amount": float64(1)}})
		if !d.Allow {
			b.Fatalf("denied: %v", d.Reasons)
		}
	}
}

// BenchmarkDecideCountersMemory: a decision with a rate limit and a budget (with an idempotency
// key) counted in memory.
func BenchmarkDecideCountersMemory(b *testing.B) {
	benchDecideCounters(b, policy.NewMemoryCounters(policy.DefaultCounterKeys))
}

// BenchmarkDecideCountersRedis: the same decision counted in a redis-server on loopback (one
// script call per decision).
func BenchmarkDecideCountersRedis(b *testing.B) {
	srv := testredis.Start(b)
	r, err := counters.NewRedis(counters.RedisOptions{URL: srv.URL(), Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close() })
	benchDecideCounters(b, r)
}
