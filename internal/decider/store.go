// Package decider is Tollgate's decision endpoint: it keeps the compiled policy snapshots of every
// namespace (Store), feeds them from the bundle ConfigMaps in the cluster (WatchBundlesWithLogger)
// or from manifest files (Store.LoadSet), decides (Service: Decide, DecideBatch, Verify,
// DecideJSON) and serves decisions over HTTP (Server, the Service's transport).
package decider

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/internal/counters"
	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Store holds the current compiled snapshot of each namespace. Readers never block: the set of
// snapshots is an immutable map swapped atomically on every change. A bundle that fails to compile
// never replaces a working snapshot; its error is recorded for /v1/status and the metrics.
type Store struct {
	counters   policy.CounterStore
	compile    []policy.Option
	evaluators *EvaluatorPool

	snaps atomic.Pointer[map[string]*policy.Snapshot]
	// policyLabels are the policy ids of the served snapshots, the only policy label values of the
	// metrics (labels.go); nsPolicyIDs (guarded by mu) are their source per namespace.
	policyLabels atomic.Pointer[map[string]string]
	nsPolicyIDs  map[string][]string
	// toolLabels are, by namespace, the literal tool names the served bundle's policies name: with
	// the built-in tool names, the tool label values of the metrics (labels.go).
	toolLabels atomic.Pointer[map[string]map[string]struct{}]

	mu     sync.Mutex // serialises writers and guards status
	status map[string]*nsStatus
	loads  atomic.Uint64 // successful loads
	errs   atomic.Uint64 // failed loads

	// changed receives a value (without blocking) whenever the served snapshots change, for the
	// Reporter to report a new revision early.
	changed chan struct{}
}

// nsStatus is the load history of one namespace.
type nsStatus struct {
	revision   string
	loadedAt   time.Time
	lastError  string
	errorAt    time.Time
	errorCount uint64
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithCounterStore makes every snapshot keep its rate-limit and budget counters in cs (default:
// one policy.MemoryCounters of policy.DefaultCounterKeys counters created by NewStore and shared
// by all snapshots, counting for this process only).
func WithCounterStore(cs policy.CounterStore) StoreOption {
	return func(s *Store) { s.counters = cs }
}

// counterStatuser is a counter store that reports its health (counters.Redis).
type counterStatuser interface {
	Status() counters.Status
}

// CounterStatus reports the counter store: memory (per replica, always up) or a shared store
// and whether it answers.
func (s *Store) CounterStatus() counters.Status {
	if cs, ok := s.counters.(counterStatuser); ok {
		return cs.Status()
	}
	return counters.MemoryStatus()
}

// WithCompileOptions adds engine options (clock, decision TTL, …) used for every compile.
func WithCompileOptions(opts ...policy.Option) StoreOption {
	return func(s *Store) { s.compile = append(s.compile, opts...) }
}

// WithEvaluatorPool sets the pool of external-evaluator clients (default: NewEvaluatorPool with
// default settings). The pool outlives snapshot swaps so circuit breakers keep their state.
func WithEvaluatorPool(p *EvaluatorPool) StoreOption {
	return func(s *Store) { s.evaluators = p }
}

// NewStore returns an empty store.
func NewStore(opts ...StoreOption) *Store {
	s := &Store{status: map[string]*nsStatus{}, changed: make(chan struct{}, 1)}
	for _, o := range opts {
		o(s)
	}
	if s.counters == nil {
		s.counters = policy.NewMemoryCounters(policy.DefaultCounterKeys)
	}
	if s.evaluators == nil {
		s.evaluators = NewEvaluatorPool(EvaluatorConfig{Client: &http.Client{}})
	}
	empty := map[string]*policy.Snapshot{}
	s.snaps.Store(&empty)
	return s
}

// Load compiles b and makes it the namespace's snapshot. On error the previous snapshot (if any)
// stays in place, and the error is recorded and returned.
func (s *Store) Load(b policy.Bundle) error {
	if b.Namespace == "" {
		err := errors.New("load bundle: namespace is empty")
		s.RecordError("", err)
		return err
	}
	snap, err := policy.Compile(b, s.engineOptions()...)
	if err != nil {
		err = fmt.Errorf("load bundle of namespace %s: %w", b.Namespace, err)
		s.RecordError(b.Namespace, err)
		return err
	}
	s.publish(map[string]*policy.Snapshot{b.Namespace: snap}, []policy.Bundle{b})
	return nil
}

// LoadSet builds and compiles the bundles of a set of manifests (one per namespace, each compiled
// once, with the store's engine options) and when every one compiles serves them all at once;
// namespaces the set does not hold keep their snapshots. A problem is a *manifest.InvalidError
// naming the file, document and field path of each mistake: the store is unchanged and the error
// is returned but not recorded (the caller knows which namespaces it concerns, see RecordError).
// It returns the namespaces loaded, sorted.
func (s *Store) LoadSet(set *manifest.Set) ([]string, error) {
	built, err := set.Build(s.engineOptions()...)
	if err != nil {
		return nil, err
	}
	snaps := make(map[string]*policy.Snapshot, len(built))
	bundles := make([]policy.Bundle, len(built))
	namespaces := make([]string, len(built))
	for i, b := range built {
		if b.Bundle.Namespace == "" || b.Snapshot == nil {
			return nil, fmt.Errorf("load manifests: namespace %q has no compiled bundle", b.Bundle.Namespace)
		}
		snaps[b.Bundle.Namespace] = b.Snapshot
		bundles[i] = b.Bundle
		namespaces[i] = b.Bundle.Namespace
	}
	s.publish(snaps, bundles)
	return namespaces, nil
}

// engineOptions are the options every compile of the store uses: its shared counter store and
// evaluator pool, then WithCompileOptions.
func (s *Store) engineOptions() []policy.Option {
	opts := make([]policy.Option, 0, len(s.compile)+2)
	opts = append(opts, policy.WithCounterStore(s.counters), policy.WithEvaluators(s.evaluators.Evaluator))
	return append(opts, s.compile...)
}

// publish serves snaps (by namespace), compiled from bundles, in one swap.
func (s *Store) publish(snaps map[string]*policy.Snapshot, bundles []policy.Bundle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(*s.snaps.Load())
	now := time.Now()
	for i := range bundles {
		ns := bundles[i].Namespace
		snap := snaps[ns]
		s.publishPolicyIDsLocked(ns, policyIDs(&bundles[i]))
		s.publishToolNamesLocked(ns, toolNames(&bundles[i]))
		next[ns] = snap
		st := s.statusLocked(ns)
		st.revision = snap.Revision()
		st.loadedAt = now
		st.lastError, st.errorAt = "", time.Time{}
		s.loads.Add(1)
	}
	s.snaps.Store(&next)
	s.notifyChanged()
}

// notifyChanged signals changed without blocking.
func (s *Store) notifyChanged() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// RecordError records a failed load of namespace's bundle (for example a bundle that could not be
// decoded) without touching its snapshot.
func (s *Store) RecordError(namespace string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.statusLocked(namespace)
	st.lastError = err.Error()
	st.errorAt = time.Now()
	st.errorCount++
	s.errs.Add(1)
}

func (s *Store) statusLocked(ns string) *nsStatus {
	st, ok := s.status[ns]
	if !ok {
		st = &nsStatus{}
		s.status[ns] = st
	}
	return st
}

// clearError forgets the namespace's last error: the cluster holds the revision being served again.
func (s *Store) clearError(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.status[ns]; ok {
		st.lastError, st.errorAt = "", time.Time{}
	}
}

// Remove drops the namespace's snapshot and status (its bundle was deleted).
func (s *Store) Remove(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(*s.snaps.Load())
	delete(next, namespace)
	s.snaps.Store(&next)
	s.publishPolicyIDsLocked(namespace, nil)
	s.publishToolNamesLocked(namespace, nil)
	delete(s.status, namespace)
	s.notifyChanged()
}

// Snapshot returns the namespace's current snapshot.
func (s *Store) Snapshot(namespace string) (*policy.Snapshot, bool) {
	snap, ok := (*s.snaps.Load())[namespace]
	return snap, ok
}

// Namespaces returns the namespaces with a loaded snapshot, sorted.
func (s *Store) Namespaces() []string {
	return slices.Sorted(maps.Keys(*s.snaps.Load()))
}

// Len returns the number of loaded snapshots.
func (s *Store) Len() int { return len(*s.snaps.Load()) }

// LoadErrors returns how many loads have failed since the store was created.
func (s *Store) LoadErrors() uint64 { return s.errs.Load() }

// Loads returns how many loads have succeeded since the store was created.
func (s *Store) Loads() uint64 { return s.loads.Load() }

// NamespaceStatus is the load state of one namespace as reported by /v1/status.
type NamespaceStatus struct {
	// Namespace is the bundle's namespace.
	Namespace string `json:"namespace"`
	// Revision is the revision of the snapshot being served ("" when none loaded).
	Revision string `json:"revision,omitempty"`
	// LoadedAt is when that snapshot was loaded.
	LoadedAt *time.Time `json:"loaded_at,omitempty"`
	// LastError is the error of the latest failed load since the last good one.
	LastError string `json:"last_error,omitempty"`
	// LastErrorAt is when it happened.
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	// ErrorCount is the number of failed loads of this namespace.
	ErrorCount uint64 `json:"error_count"`
}

// Status returns the state of every namespace the store has heard of, sorted by namespace.
func (s *Store) Status() []NamespaceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NamespaceStatus, 0, len(s.status))
	for ns, st := range s.status {
		ns := NamespaceStatus{Namespace: ns, Revision: st.revision, LastError: st.lastError, ErrorCount: st.errorCount}
		if !st.loadedAt.IsZero() {
			t := st.loadedAt
			ns.LoadedAt = &t
		}
		if !st.errorAt.IsZero() {
			t := st.errorAt
			ns.LastErrorAt = &t
		}
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b NamespaceStatus) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out
}

// resolve finds the snapshot that answers req: the namespace of "namespace/name", the only
// snapshot holding a bare passport name or the agent id, or defaultNS for a bare name.
func (s *Store) resolve(req *policy.Request, defaultNS string) (*policy.Snapshot, error) {
	snaps := *s.snaps.Load()
	if req.Passport != "" {
		if ns, _, ok := strings.Cut(req.Passport, "/"); ok {
			snap, found := snaps[ns]
			if !found {
				return nil, errNoBundle{ns}
			}
			return snap, nil
		}
		if defaultNS != "" {
			snap, found := snaps[defaultNS]
			if !found {
				return nil, errNoBundle{defaultNS}
			}
			return snap, nil
		}
		return findOne(snaps, func(sn *policy.Snapshot) bool { _, ok := sn.Passport(req.Passport); return ok },
			"passport "+req.Passport)
	}
	if req.AgentID != "" {
		return findOne(snaps, func(sn *policy.Snapshot) bool { _, ok := sn.PassportByAgentID(req.AgentID); return ok },
			"agent id "+req.AgentID)
	}
	return nil, errNoPassport{}
}

func findOne(snaps map[string]*policy.Snapshot, match func(*policy.Snapshot) bool, what string) (*policy.Snapshot, error) {
	var found *policy.Snapshot
	for _, sn := range snaps {
		if match(sn) {
			if found != nil {
				return nil, errAmbiguous{what}
			}
			found = sn
		}
	}
	if found == nil {
		return nil, errNotFound{what}
	}
	return found, nil
}

type errNoBundle struct{ ns string }

func (e errNoBundle) Error() string { return "no policy bundle loaded for namespace " + e.ns }

type errNoPassport struct{}

func (errNoPassport) Error() string { return "passport or agent_id is required" }

type errAmbiguous struct{ what string }

func (e errAmbiguous) Error() string {
	return e.what + " exists in several namespaces: use passport \"namespace/name\""
}

type errNotFound struct{ what string }

func (e errNotFound) Error() string { return e.what + " not found in any loaded namespace" }
