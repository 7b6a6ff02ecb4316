// Package counters holds the shared counter store of the decision endpoints: rate limits and
// budgets counted in Redis, so that every replica behind a Service counts against the same limits.
// The engine (internal/policy) sees it as a policy.CounterStore; its in-memory store
// (policy.MemoryCounters) counts per process.
package counters

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// DefaultTimeout bounds one counter-store call (a decision's one round trip) unless
// RedisOptions.Timeout says otherwise.
const DefaultTimeout = 50 * time.Millisecond

// DefaultRetryInterval is how long a store found unreachable fails calls at once, without trying
// the network, before one call tries again.
const DefaultRetryInterval = 500 * time.Millisecond

// keyPrefix starts every key the store writes.
const keyPrefix = "tollgate:"

// ErrUnavailable is returned (wrapped) while the store is marked unreachable between trials.
var ErrUnavailable = errors.New("counter store unavailable")

//go:embed take.lua
var takeLua string

// takeScript is the one script a decision runs: every rate limit (GCRA) and budget (fixed-period
// sum with idempotency records) of the call, checked, then counted when no required op is over.
var takeScript = redis.NewScript(takeLua)

// RedisOptions configure a Redis counter store.
type RedisOptions struct {
	// URL is redis://[user:password@]host:port/db (rediss:// for TLS, unix:// for a socket).
	URL string
	// Timeout bounds one call, dial included (default DefaultTimeout).
	Timeout time.Duration
	// RetryInterval is how long an unreachable store fails calls without trying (default
	// DefaultRetryInterval).
	RetryInterval time.Duration
}

// Redis is a policy.CounterStore in Redis: one EVALSHA of an atomic Lua script per decision that
// needs counters. It is safe for concurrent use. Its health (Status) is what /v1/status and the
// tollgate_counter_store_* metrics report.
type Redis struct {
	client   *redis.Client
	timeout  time.Duration
	retry    time.Duration
	addr     string // host:port/db, without credentials
	calls    atomic.Uint64
	errs     atomic.Uint64
	up       atomic.Bool
	nextTry  atomic.Int64 // unix ns before which calls fail at once (while down)
	mu       sync.Mutex
	lastErr  string
	lastErrT time.Time
}

// NewRedis returns a store for o.URL. It does not wait for Redis: a store that cannot be reached
// yet is reported down, and each policy's failurePolicy decides its calls until it is.
func NewRedis(o RedisOptions) (*Redis, error) {
	opt, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("counter store URL: %w", err)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	// One bounded attempt per call: no command retries, one dial, every wait within the timeout.
	opt.DialTimeout = o.Timeout
	opt.DialerRetries = 1
	opt.ReadTimeout = o.Timeout
	opt.WriteTimeout = o.Timeout
	opt.PoolTimeout = o.Timeout
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	r := &Redis{client: redis.NewClient(opt), timeout: o.Timeout, retry: o.RetryInterval,
		addr: displayAddr(o.URL, opt)}
	return r, nil
}

// displayAddr is the store's address for status and logs: scheme, host and database, never
// credentials.
func displayAddr(raw string, opt *redis.Options) string {
	scheme := "redis"
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" {
		scheme = u.Scheme
	}
	return scheme + "://" + opt.Addr + "/" + strconv.Itoa(opt.DB)
}

// Ping checks that Redis answers within the timeout (and marks the store up or down).
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := r.client.Ping(ctx).Err()
	r.observe(err)
	if err != nil {
		return fmt.Errorf("pinging counter store %s: %w", r.addr, err)
	}
	return nil
}

// Close closes the connections.
func (r *Redis) Close() error {
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("closing counter store: %w", err)
	}
	return nil
}

// Apply implements policy.CounterStore with one script call. Redis' clock (TIME) times the
// counters, so deciders with skewed clocks agree. now is not used.
func (r *Redis) Apply(ctx context.Context, _ time.Time, ops []policy.CounterOp, res []policy.CounterResult) error {
	r.calls.Add(1)
	if !r.up.Load() && time.Now().UnixNano() < r.nextTry.Load() {
		r.errs.Add(1)
		return fmt.Errorf("%w: %s (retrying in %s)", ErrUnavailable, r.addr, r.retry)
	}
	keys := make([]string, 0, 2*len(ops))
	args := make([]any, 0, 1+6*len(ops))
	args = append(args, len(ops))
	for i := range ops {
		op := &ops[i]
		kind := "r"
		if op.Budget {
			kind = "b"
		}
		key := keyPrefix + kind + ":" + op.Key
		idem, hasIdem := key, "0"
		if op.Budget && op.IdempotencyKey != "" {
			idem, hasIdem = key+"\x00idem\x00"+op.IdempotencyKey, "1"
		}
		keys = append(keys, key, idem)
		req := "0"
		if op.Required {
			req = "1"
		}
		args = append(args, kind, op.Limit, op.Window.Microseconds(), op.Amount, req, hasIdem)
	}
	callCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	out, err := takeScript.Run(callCtx, r.client, keys, args...).Int64Slice()
	if err == nil && len(out) != 3*len(ops) {
		err = fmt.Errorf("script answered %d values for %d counters", len(out), len(ops))
	}
	if err != nil && ctx.Err() != nil {
		// The caller gave up (client gone, request deadline): not the store's failure.
		return fmt.Errorf("counter store %s: %w", r.addr, ctx.Err())
	}
	r.observe(err)
	if err != nil {
		return fmt.Errorf("counter store %s: %w", r.addr, err)
	}
	for i := range ops {
		v := out[3*i : 3*i+3]
		res[i] = policy.CounterResult{Allowed: v[0] == 1, Replayed: v[1] == 1, Conflict: v[1] == 2, Used: v[2]}
	}
	return nil
}

// observe records the outcome of a call to Redis.
func (r *Redis) observe(err error) {
	if err == nil {
		r.up.Store(true)
		return
	}
	r.errs.Add(1)
	r.nextTry.Store(time.Now().Add(r.retry).UnixNano())
	r.up.Store(false)
	r.mu.Lock()
	r.lastErr, r.lastErrT = clipError(err.Error()), time.Now()
	r.mu.Unlock()
}

// clipError keeps an error message short enough for status.
func clipError(s string) string {
	if len(s) > 256 {
		s = s[:256] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// Status is a counter store's state for /v1/status.
type Status struct {
	// Backend is memory or redis.
	Backend string `json:"backend"`
	// Shared is true when the counters are shared by every decision endpoint using the store;
	// false means each replica counts on its own.
	Shared bool `json:"shared"`
	// Address is the store's address without credentials (redis only).
	Address string `json:"address,omitempty"`
	// Up is false while the store cannot be reached (each policy's failurePolicy then decides).
	Up bool `json:"up"`
	// Calls counts the store calls (decisions that needed counters).
	Calls uint64 `json:"calls"`
	// Errors counts the failed ones.
	Errors uint64 `json:"errors"`
	// LastError is the latest failure's message.
	LastError string `json:"last_error,omitempty"`
	// LastErrorAt is when it happened.
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
}

// Status returns the store's state.
func (r *Redis) Status() Status {
	st := Status{Backend: "redis", Shared: true, Address: r.addr, Up: r.up.Load(),
		Calls: r.calls.Load(), Errors: r.errs.Load()}
	r.mu.Lock()
	if r.lastErr != "" {
		st.LastError = r.lastErr
		t := r.lastErrT
		st.LastErrorAt = &t
	}
	r.mu.Unlock()
	return st
}

// MemoryStatus is the Status of the in-memory store: per replica, always up.
func MemoryStatus() Status {
	return Status{Backend: "memory", Up: true}
}
