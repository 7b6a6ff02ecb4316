package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"time"

	"github.com/tollgate-dev/tollgate/internal/counters"
	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// counterStoreEnv is the environment variable holding the default of --counter-store (so a URL
// with a password can come from a Secret rather than the command line).
const counterStoreEnv = "TOLLGATE_COUNTER_STORE"

// counterStoreOptions choose where rate-limit and budget counters live: --counter-store,
// --counter-store-timeout.
type counterStoreOptions struct {
	url     string
	timeout time.Duration
	// memoryKeys is the capacity of the in-memory store (--rate-limiter-keys on the decider).
	memoryKeys int
}

func newCounterStoreOptions() counterStoreOptions {
	return counterStoreOptions{url: os.Getenv(counterStoreEnv), timeout: counters.DefaultTimeout,
		memoryKeys: policy.DefaultCounterKeys}
}

// BindFlags registers --counter-store and --counter-store-timeout.
func (o *counterStoreOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.url, "counter-store", o.url, "`URL` of a Redis keeping rate-limit and budget counters for every replica "+
		"(redis://[user:password@]host:port/db, rediss:// for TLS; default $"+counterStoreEnv+"); empty counts in this process's memory, per replica")
	fs.DurationVar(&o.timeout, "counter-store-timeout", o.timeout,
		"bound of one counter-store call; a slower or unreachable store is a failure that each policy's failurePolicy decides")
}

// open returns the store option for decider.NewStore and a function closing the store. With no
// URL the counters stay in memory. An unreachable Redis is logged, not fatal: until it answers,
// each policy's failurePolicy decides the calls that need counters.
func (o *counterStoreOptions) open(ctx context.Context, log *slog.Logger) (decider.StoreOption, func(), error) {
	if o.url == "" {
		log.Info("rate-limit and budget counters are kept in memory: each replica counts on its own (set --counter-store to share them)")
		return decider.WithCounterStore(policy.NewMemoryCounters(o.memoryKeys)), func() {}, nil
	}
	r, err := counters.NewRedis(counters.RedisOptions{URL: o.url, Timeout: o.timeout})
	if err != nil {
		return nil, nil, usageError("--counter-store: %v", err)
	}
	addr := r.Status().Address
	if err := r.Ping(ctx); err != nil {
		log.Warn("counter store unreachable: each policy's failurePolicy decides calls that need counters until it answers", "store", addr, "err", err)
	} else {
		log.Info("rate-limit and budget counters are shared in Redis", "store", addr)
	}
	closeStore := func() {
		if err := r.Close(); err != nil {
			log.Warn("closing the counter store", "err", err)
		}
	}
	return decider.WithCounterStore(r), closeStore, nil
}
