package policy

import (
	"hash/maphash"
	"sync"
	"time"
)

// rlShards is the number of independently locked shards of a RateLimiter.
const rlShards = 16

// DefaultRateLimiterKeys is the counter capacity of the limiter a snapshot creates for itself.
const DefaultRateLimiterKeys = 100_000

// RateLimiter counts calls in fixed windows per key. It is safe for concurrent use, holds at most
// maxKeys counters (expired windows are evicted first, then arbitrary ones), and is meant to be shared
// by successive snapshots (WithRateLimiter) so counts survive bundle updates.
type RateLimiter struct {
	seed     maphash.Seed
	perShard int
	shards   [rlShards]rlShard
}

type rlShard struct {
	mu      sync.Mutex
	entries map[rlKey]*rlEntry
}

// rlKey identifies one counter: which limit (namespace/policy/limit) and whose calls.
type rlKey struct {
	limit   string
	subject string
}

type rlEntry struct {
	start  int64 // window start, unix nanoseconds
	window int64 // window length, nanoseconds
	count  int64
}

// NewRateLimiter returns a limiter holding at most maxKeys counters (minimum rlShards).
func NewRateLimiter(maxKeys int) *RateLimiter {
	if maxKeys < rlShards {
		maxKeys = rlShards
	}
	l := &RateLimiter{seed: maphash.MakeSeed(), perShard: maxKeys / rlShards}
	for i := range l.shards {
		l.shards[i].entries = make(map[rlKey]*rlEntry)
	}
	return l
}

// take counts one call for key in the window containing now and reports whether it is within limit.
// A call over the limit is not counted.
func (l *RateLimiter) take(key rlKey, limit int64, window time.Duration, now time.Time) bool {
	if window <= 0 {
		return true
	}
	var h maphash.Hash
	h.SetSeed(l.seed)
	h.WriteString(key.limit)
	h.WriteByte(0)
	h.WriteString(key.subject)
	sh := &l.shards[h.Sum64()%rlShards]
	w := int64(window)
	n := now.UnixNano()
	start := n - n%w
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.entries[key]
	if !ok {
		if len(sh.entries) >= l.perShard {
			sh.evict(n, l.perShard)
		}
		e = &rlEntry{start: start, window: w}
		sh.entries[key] = e
	}
	if e.start != start || e.window != w {
		e.start, e.window, e.count = start, w, 0
	}
	if e.count >= limit {
		return false
	}
	e.count++
	return true
}

// evict drops expired windows; if that frees less than an eighth of the shard, it drops arbitrary
// entries until an eighth is free, so eviction cost is amortised over many inserts.
func (sh *rlShard) evict(now int64, capacity int) {
	target := capacity - capacity/8 - 1
	if target < 0 {
		target = 0
	}
	for k, e := range sh.entries {
		if e.start+e.window <= now {
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

// Len returns the number of counters held.
func (l *RateLimiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.entries)
		sh.mu.Unlock()
	}
	return n
}
