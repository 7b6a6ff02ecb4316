package counters_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/counters"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testredis"
)

// newRedis returns a store on srv, closed when the test ends.
func newRedis(t *testing.T, srv *testredis.Server, timeout time.Duration) *counters.Redis {
	t.Helper()
	r, err := counters.NewRedis(counters.RedisOptions{URL: srv.URL(), Timeout: timeout, RetryInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// stores are the two CounterStore implementations the behaviour tests run against, each fresh.
func stores(t *testing.T) map[string]func() policy.CounterStore {
	srv := testredis.Start(t)
	return map[string]func() policy.CounterStore{
		"memory": func() policy.CounterStore { return policy.NewMemoryCounters(1000) },
		"redis": func() policy.CounterStore {
			r := newRedis(t, srv, time.Second)
			if err := r.Ping(t.Context()); err != nil {
				t.Fatal(err)
			}
			return r
		},
	}
}

// apply runs one decision's ops and returns the results.
func apply(t *testing.T, cs policy.CounterStore, ops ...policy.CounterOp) []policy.CounterResult {
	t.Helper()
	res := make([]policy.CounterResult, len(ops))
	if err := cs.Apply(t.Context(), time.Now(), ops, res); err != nil {
		t.Fatal(err)
	}
	return res
}

func rate(key string, limit int64, window time.Duration) policy.CounterOp {
	return policy.CounterOp{Key: key, Limit: limit, Window: window, Required: true}
}

func budget(key string, limit, amount int64, idem string) policy.CounterOp {
	return policy.CounterOp{Key: key, Budget: true, Limit: limit, Window: 24 * time.Hour, Amount: amount,
		IdempotencyKey: idem, Required: true}
}

// TestStoresRateLimit: a limit of N allows N calls at once and refills one call per window/N.
func TestStoresRateLimit(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			cs := mk()
			op := rate("ns/p/rl\x00"+name, 5, 5*time.Second)
			for i := range 5 {
				if r := apply(t, cs, op); !r[0].Allowed {
					t.Fatalf("call %d denied", i)
				}
			}
			if r := apply(t, cs, op); r[0].Allowed {
				t.Fatal("call 6 allowed, want denied (limit 5 per 5s)")
			}
			other := rate("ns/p/rl\x00other-"+name, 5, 5*time.Second)
			if r := apply(t, cs, other); !r[0].Allowed {
				t.Fatal("another subject's first call denied")
			}
			time.Sleep(1200 * time.Millisecond) // one call a second
			if r := apply(t, cs, op); !r[0].Allowed {
				t.Fatal("call after one emission interval denied")
			}
			if r := apply(t, cs, op); r[0].Allowed {
				t.Fatal("second call after one emission interval allowed")
			}
		})
	}
}

// TestStoresBudget: sums up to the cap, a repeated idempotency key counts once, a different amount
// under a used key is a conflict, and a sum over the cap is denied and not counted.
func TestStoresBudget(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			cs := mk()
			key := "ns/p/spend\x00" + name
			steps := []struct {
				amount              int64
				idem                string
				allowed, replay, cf bool
				used                int64
			}{
				{60, "call-1", true, false, false, 0},
				{60, "call-1", true, true, false, 60}, // same call_id: not counted again
				{30, "call-2", true, false, false, 60},
				{20, "call-3", false, false, false, 90}, // 110 > 100
				{70, "call-1", false, false, true, 90},  // same key, other amount
				{10, "call-3", true, false, false, 90},  // a denied call's key was not recorded
				{0, "", true, false, false, 100},
				{1, "", false, false, false, 100},
			}
			for i, st := range steps {
				r := apply(t, cs, budget(key, 100, st.amount, st.idem))[0]
				if r.Allowed != st.allowed || r.Replayed != st.replay || r.Conflict != st.cf || r.Used != st.used {
					t.Fatalf("step %d (%d, %q): got %+v, want allowed=%v replayed=%v conflict=%v used=%d",
						i, st.amount, st.idem, r, st.allowed, st.replay, st.cf, st.used)
				}
			}
		})
	}
}

// TestStoresAllOrNothing: when a required op is over its limit nothing of the call is counted;
// an op that is not required does not stop the others.
func TestStoresAllOrNothing(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			cs := mk()
			rl := rate("ns/p/rl\x00"+name, 2, time.Hour)
			b := budget("ns/p/b\x00"+name, 10, 11, "")
			r := apply(t, cs, rl, b)
			if !r[0].Allowed || r[1].Allowed {
				t.Fatalf("got %+v, want the rate limit within and the budget over", r)
			}
			// The denied call took nothing from the rate limit: two calls still pass.
			for i := range 2 {
				if r := apply(t, cs, rl); !r[0].Allowed {
					t.Fatalf("call %d after the denied one: denied", i)
				}
			}
			// A DryRun budget over its cap does not stop the rate limit from counting.
			rl2 := rate("ns/p/rl2\x00"+name, 1, time.Hour)
			dry := b
			dry.Required = false
			r = apply(t, cs, rl2, dry)
			if !r[0].Allowed || r[1].Allowed {
				t.Fatalf("got %+v", r)
			}
			if r := apply(t, cs, rl2); r[0].Allowed {
				t.Fatal("the rate limit was not counted beside a non-required op over its cap")
			}
		})
	}
}

// TestRedisExactlyNAcrossClients: two independent clients (as two deciders) share one Redis; 40
// concurrent calls against a limit of 10 allow exactly 10.
func TestRedisExactlyNAcrossClients(t *testing.T) {
	srv := testredis.Start(t)
	a, b := newRedis(t, srv, time.Second), newRedis(t, srv, time.Second)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		cs := a
		if i%2 == 1 {
			cs = b
		}
		wg.Go(func() {
			res := make([]policy.CounterResult, 2)
			ops := []policy.CounterOp{rate("ns/p/rl\x00agent", 10, time.Hour), budget("ns/p/b\x00agent", 1000, 10, "")}
			if err := cs.Apply(context.Background(), time.Now(), ops, res); err != nil {
				errs <- err
				return
			}
			if res[0].Allowed && res[1].Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := allowed.Load(); n != 10 {
		t.Fatalf("%d calls allowed across two clients, want exactly 10", n)
	}
	// The budget counted the 10 allowed calls only.
	if r := apply(t, a, budget("ns/p/b\x00agent", 1000, 0, "")); r[0].Used != 100 {
		t.Fatalf("budget used = %d, want 100", r[0].Used)
	}
}

// TestRedisDownAndBack: a stopped Redis fails calls within the timeout, is reported down, fails
// calls at once between trials, and counts again once it is back.
func TestRedisDownAndBack(t *testing.T) {
	srv := testredis.Start(t)
	r := newRedis(t, srv, 50*time.Millisecond)
	op := rate("ns/p/rl\x00agent", 3, time.Hour)
	apply(t, r, op)
	if st := r.Status(); !st.Up || st.Backend != "redis" || !st.Shared || st.Address != srv.URL() || st.Calls != 1 {
		t.Fatalf("status = %+v", st)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	res := make([]policy.CounterResult, 1)
	start := time.Now()
	err := r.Apply(t.Context(), time.Now(), []policy.CounterOp{op}, res)
	if err == nil {
		t.Fatal("Apply succeeded with Redis stopped")
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a failing call took %s, want it bounded by the 50ms timeout", d)
	}
	st := r.Status()
	if st.Up || st.Errors == 0 || st.LastError == "" || st.LastErrorAt == nil {
		t.Fatalf("status after a failure = %+v", st)
	}
	err = r.Apply(t.Context(), time.Now(), []policy.CounterOp{op}, res)
	if !errors.Is(err, counters.ErrUnavailable) {
		t.Fatalf("call between trials: %v, want ErrUnavailable", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.Apply(t.Context(), time.Now(), []policy.CounterOp{op}, res) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Redis back, but calls still fail: %+v", r.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !r.Status().Up {
		t.Fatal("store not up after a successful call")
	}
	// Counting resumed (the restarted server has no data: the call above was the first of three).
	for i := range 2 {
		if !apply(t, r, op)[0].Allowed {
			t.Fatalf("call %d after restart denied", i+2)
		}
	}
	if apply(t, r, op)[0].Allowed {
		t.Fatal("call 4 after restart allowed, want the limit of 3 enforced")
	}
}

// TestRedisURL: bad URLs are refused; credentials never reach the status.
func TestRedisURL(t *testing.T) {
	if _, err := counters.NewRedis(counters.RedisOptions{URL: "http://x"}); err == nil {
		t.Error("http:// accepted")
	}
	r, err := counters.NewRedis(counters.RedisOptions{URL: "redis://user:s3cret@127.0.0.1:1/2"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if st := r.Status(); st.Address != "redis://127.0.0.1:1/2" || st.Up {
		t.Errorf("status = %+v", st)
	}
}

// TestRedisCallerGone: a call whose caller already gave up fails without marking the store down.
func TestRedisCallerGone(t *testing.T) {
	srv := testredis.Start(t)
	r := newRedis(t, srv, time.Second)
	if err := r.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := make([]policy.CounterResult, 1)
	if err := r.Apply(ctx, time.Now(), []policy.CounterOp{rate("ns/p/rl\x00x", 1, time.Hour)}, res); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a canceled context: %v", err)
	}
	if st := r.Status(); !st.Up || st.Errors != 0 {
		t.Fatalf("status after a caller gave up = %+v, want up with no errors", st)
	}
}
