package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// enforcedPolicy is what the stored bundle holds for one policy.
type enforcedPolicy struct {
	// uid is the policy's UID ("" when loaded from a bundle written by an earlier process).
	uid types.UID
	// spec is the enforced generation (the last known good one when the current one does not compile).
	spec policy.Policy
	// selected is how many passports of the bundle the enforced spec selects.
	selected int32
}

// excludedPassport says why a passport was left out of the bundle.
type excludedPassport struct {
	reason  string
	message string
}

// namespaceRecord is what the bundle writer knows about one namespace's stored bundle.
type namespaceRecord struct {
	// revision is the revision of the stored bundle ("" when none is stored).
	revision string
	// writeErr is the error of the last failed write, "" after a successful one.
	writeErr string
	// policies are the policies in the stored bundle, by name.
	policies map[string]enforcedPolicy
	// excluded are the passports left out of the stored bundle, by name.
	excluded map[string]excludedPassport
}

// registry is the bundle writer's view of every namespace, read by the status reconcilers. It is
// owned by one SetupWithManager call (no package state); all methods are safe for concurrent use.
type registry struct {
	mu         sync.RWMutex
	namespaces map[string]*namespaceRecord
}

func newRegistry() *registry {
	return &registry{namespaces: map[string]*namespaceRecord{}}
}

// get returns a copy of the record of ns and whether the bundle writer has processed ns yet.
func (r *registry) get(ns string) (namespaceRecord, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rec, ok := r.namespaces[ns]
	if !ok {
		return namespaceRecord{}, false
	}
	return *rec, true
}

// policy returns what is enforced for policy name in ns.
func (r *registry) policy(ns, name string) (enforcedPolicy, bool, namespaceRecord, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rec, known := r.namespaces[ns]
	if !known {
		return enforcedPolicy{}, false, namespaceRecord{}, false
	}
	p, ok := rec.policies[name]
	return p, ok, *rec, true
}

// passport returns why passport name in ns is excluded (ok false when it is not).
func (r *registry) passport(ns, name string) (excludedPassport, bool, namespaceRecord, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rec, known := r.namespaces[ns]
	if !known {
		return excludedPassport{}, false, namespaceRecord{}, false
	}
	e, ok := rec.excluded[name]
	return e, ok, *rec, true
}

// put replaces the record of ns; the maps of rec must not be modified afterwards.
func (r *registry) put(ns string, rec namespaceRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.namespaces[ns] = &rec
}

// setWriteErr records a failed write for ns, keeping what is stored.
func (r *registry) setWriteErr(ns, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.namespaces[ns]
	if !ok {
		rec = &namespaceRecord{}
		r.namespaces[ns] = rec
	}
	cp := *rec
	cp.writeErr = msg
	r.namespaces[ns] = &cp
}

// forget drops ns (its last object is gone and its bundle deleted).
func (r *registry) forget(ns string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.namespaces, ns)
}

// compileResult is the outcome of policy.CompilePolicy for one generation of one policy.
type compileResult struct {
	uid        types.UID
	generation int64
	errs       field.ErrorList
}

// compileCache remembers the compile result of each policy's current generation, so the policy
// reconciler and the bundle writer compile a generation once, not once per bundle write.
type compileCache struct {
	mu      sync.Mutex
	results map[types.NamespacedName]compileResult
}

func newCompileCache() *compileCache {
	return &compileCache{results: map[types.NamespacedName]compileResult{}}
}

// compile returns the compile errors of spec for the policy key at uid/generation, compiling on a miss.
func (c *compileCache) compile(key types.NamespacedName, uid types.UID, generation int64, spec policy.PolicySpec) field.ErrorList {
	c.mu.Lock()
	res, ok := c.results[key]
	c.mu.Unlock()
	if ok && res.uid == uid && res.generation == generation {
		return res.errs
	}
	errs := policy.ValidatePolicy(spec)
	c.mu.Lock()
	c.results[key] = compileResult{uid: uid, generation: generation, errs: errs}
	c.mu.Unlock()
	return errs
}

// forget drops the result of a deleted policy.
func (c *compileCache) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.results, key)
}
