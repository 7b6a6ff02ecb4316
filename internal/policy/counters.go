package policy

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// CounterStore keeps the counters of rate limits and budgets. The engine calls Apply once for a
// decision that needs counters (never for one that needs none), with every counter the decision
// touches, so a shared store answers in one round trip. Implementations must be safe for
// concurrent use and must bound how long Apply may take: an error is a counter-store failure, and
// each policy's failurePolicy decides what it does to the call.
type CounterStore interface {
	// Apply checks ops atomically and fills res (len(res) == len(ops)). When an op marked Required
	// is over its limit, nothing is counted; otherwise every op within its limit is counted.
	Apply(ctx context.Context, now time.Time, ops []CounterOp, res []CounterResult) error
}

// CounterOp is one counter a decision touches: a rate limit (GCRA: Limit calls per Window,
// bursts up to Limit) or a budget (the sum of Amount per fixed Window, capped at Limit, with an
// optional idempotency key).
type CounterOp struct {
	// Key identifies the counter: namespace/policy/name and the subject (passport or thread). It
	// is stable across bundle updates, so counts survive them.
	Key string
	// Limit is the number of calls per Window (rate limit) or the cap of the sum (budget).
	Limit int64
	// Window is the rate limit's window or the budget's period (fixed periods from the Unix
	// epoch, so a 24h period is a UTC day).
	Window time.Duration
	// Budget says the op is a budget; Amount is then added to its sum.
	Budget bool
	// Amount is what a budget op adds (≥ 0).
	Amount int64
	// IdempotencyKey, when set on a budget op, makes a repeated call with the same key (within
	// Window) not count again: it is answered Replayed when its amount is the same, Conflict when
	// it differs.
	IdempotencyKey string
	// Required says the call is denied when this op is over its limit (an enforcing policy's op):
	// then no op of the call is counted.
	Required bool
}

// CounterResult is the answer for one CounterOp.
type CounterResult struct {
	// Allowed is true when the op is within its limit (or Replayed).
	Allowed bool
	// Replayed is true for a budget op whose idempotency key was already counted with the same
	// amount: allowed, not counted again.
	Replayed bool
	// Conflict is true for a budget op whose idempotency key was already counted with another
	// amount: denied.
	Conflict bool
	// Used is a budget's sum in the current period before this call.
	Used int64
}

// MaxBudgetAmount bounds budget caps and amounts (2^50 - 1 would also do; 10^15 is readable), so
// sums stay exact in every store, including Redis' Lua numbers.
const MaxBudgetAmount = 1_000_000_000_000_000

// mcShards is the number of independently locked shards of MemoryCounters.
const mcShards = 16

// DefaultCounterKeys is the counter capacity of the in-memory store a snapshot creates for itself.
const DefaultCounterKeys = 100_000

// MemoryCounters is the in-memory CounterStore: the counters of one process. With several
// decision endpoints behind a Service, each counts on its own, so an agent gets up to N times a
// limit from N replicas; a shared store (Redis) counts across them. It is safe for concurrent
// use, holds at most maxKeys counters (expired ones are evicted first, then arbitrary ones), and
// is meant to be shared by successive snapshots (WithCounterStore) so counts survive bundle
// updates. Apply never fails.
type MemoryCounters struct {
	seed     maphash.Seed
	perShard int
	shards   [mcShards]mcShard
}

type mcShard struct {
	mu      sync.Mutex
	entries map[string]*mcEntry
}

// mcEntry is one counter: a rate limit's theoretical arrival time, a budget's period and sum, or
// an idempotency record's amount.
type mcEntry struct {
	expires int64 // unix nanoseconds after which the entry is dead
	tat     int64 // rate limit: theoretical arrival time (unix ns)
	period  int64 // budget: index of the period the sum belongs to
	sum     int64 // budget: the sum; idempotency record: the amount counted
}

// NewMemoryCounters returns an in-memory store holding at most maxKeys counters (minimum
// mcShards).
func NewMemoryCounters(maxKeys int) *MemoryCounters {
	if maxKeys < mcShards {
		maxKeys = mcShards
	}
	m := &MemoryCounters{seed: maphash.MakeSeed(), perShard: maxKeys / mcShards}
	for i := range m.shards {
		m.shards[i].entries = make(map[string]*mcEntry)
	}
	return m
}

func (m *MemoryCounters) shard(key string) int {
	return int(maphash.String(m.seed, key) % mcShards)
}

// idempotencyKey is the store key of an op's idempotency record.
func idempotencyKey(op *CounterOp) string {
	return op.Key + "\x00idem\x00" + op.IdempotencyKey
}

// Apply implements CounterStore: the shards of every key the ops touch are locked (in order), the
// ops are checked, and when no Required op is over its limit the allowed ones are counted.
func (m *MemoryCounters) Apply(_ context.Context, now time.Time, ops []CounterOp, res []CounterResult) error {
	n := now.UnixNano()
	var mask uint32
	for i := range ops {
		mask |= 1 << m.shard(ops[i].Key)
		if ops[i].Budget && ops[i].IdempotencyKey != "" {
			mask |= 1 << m.shard(idempotencyKey(&ops[i]))
		}
	}
	for i := range mcShards {
		if mask&(1<<i) != 0 {
			m.shards[i].mu.Lock()
		}
	}
	defer func() {
		for i := range mcShards {
			if mask&(1<<i) != 0 {
				m.shards[i].mu.Unlock()
			}
		}
	}()
	ok := true
	for i := range ops {
		res[i] = m.check(&ops[i], n)
		if !res[i].Allowed && ops[i].Required {
			ok = false
		}
	}
	if !ok {
		return nil
	}
	for i := range ops {
		if res[i].Allowed && !res[i].Replayed {
			m.commit(&ops[i], n)
		}
	}
	return nil
}

// get returns the live entry of key (nil when absent or expired). The key's shard must be locked.
func (m *MemoryCounters) get(key string, now int64) *mcEntry {
	e := m.shards[m.shard(key)].entries[key]
	if e == nil || e.expires <= now {
		return nil
	}
	return e
}

// put returns key's entry for writing, creating (and evicting for) it when needed, reset when
// expired. The key's shard must be locked.
func (m *MemoryCounters) put(key string, now int64) *mcEntry {
	sh := &m.shards[m.shard(key)]
	e := sh.entries[key]
	if e == nil {
		if len(sh.entries) >= m.perShard {
			sh.evict(now, m.perShard)
		}
		e = &mcEntry{}
		sh.entries[key] = e
	}
	if e.expires <= now {
		*e = mcEntry{}
	}
	return e
}

// gcraStep returns a rate limit's next theoretical arrival time for a call at now, and whether the
// call is within the limit: Limit calls per Window, bursts up to Limit.
func gcraStep(tat, now int64, limit int64, window int64) (int64, bool) {
	interval := max(window/max(limit, 1), 1)
	tat = max(tat, now)
	next := tat + interval
	return next, next-now <= window
}

func (m *MemoryCounters) check(op *CounterOp, now int64) CounterResult {
	w := int64(op.Window)
	if w <= 0 {
		return CounterResult{Allowed: true}
	}
	if !op.Budget {
		var tat int64
		if e := m.get(op.Key, now); e != nil {
			tat = e.tat
		}
		_, ok := gcraStep(tat, now, op.Limit, w)
		return CounterResult{Allowed: ok}
	}
	var r CounterResult
	if e := m.get(op.Key, now); e != nil && e.period == now/w {
		r.Used = e.sum
	}
	if op.IdempotencyKey != "" {
		if e := m.get(idempotencyKey(op), now); e != nil {
			if e.sum == op.Amount {
				r.Allowed, r.Replayed = true, true
			} else {
				r.Conflict = true
			}
			return r
		}
	}
	r.Allowed = r.Used+op.Amount <= op.Limit
	return r
}

func (m *MemoryCounters) commit(op *CounterOp, now int64) {
	w := int64(op.Window)
	if w <= 0 {
		return
	}
	if !op.Budget {
		e := m.put(op.Key, now)
		e.tat, _ = gcraStep(e.tat, now, op.Limit, w)
		e.expires = e.tat
		return
	}
	period := now / w
	e := m.put(op.Key, now)
	if e.period != period {
		e.period, e.sum = period, 0
	}
	e.sum += op.Amount
	e.expires = (period + 1) * w
	if op.IdempotencyKey != "" {
		ie := m.put(idempotencyKey(op), now)
		ie.sum, ie.expires = op.Amount, now+w
	}
}

// evict drops expired entries; if that frees less than an eighth of the shard, it drops arbitrary
// entries until an eighth is free, so eviction cost is amortised over many inserts.
func (sh *mcShard) evict(now int64, capacity int) {
	target := max(capacity-capacity/8-1, 0)
	for k, e := range sh.entries {
		if e.expires <= now {
			delete(sh.entries, k)
		}
	}
	for k := range sh.entries {
		if len(sh.entries) <= target {
			break
		}
		delete(sh.entries, k)
	}
}

// Len returns the number of counters held (expired ones not yet evicted included).
func (m *MemoryCounters) Len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.entries)
		sh.mu.Unlock()
	}
	return n
}
