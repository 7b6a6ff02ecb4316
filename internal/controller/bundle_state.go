package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

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
	// reason is the condition reason (ReasonInvalid, ReasonDuplicateAgentID).
	reason string
	// why says what is wrong with the passport (see leftOutMessage).
	why string
}

// namespaceRecord is what the bundle writer knows about one namespace's stored bundle.
type namespaceRecord struct {
	// revision is the revision of the stored bundle ("" when none is stored).
	revision string
	// writeErr is the error of the last failed write, "" after a successful one.
	writeErr string
	// rejected lists, "path: message; …", why the bundle of the policies' current generations does
	// not compile as a whole ("" when it does); the stored bundle then holds their last good versions.
	rejected string
	// policies are the policies in the stored bundle, by name.
	policies map[string]enforcedPolicy
	// excluded are the passports left out of the stored bundle, by name.
	excluded map[string]excludedPassport
	// empty is true when the namespace holds no passports or policies and its bundle was deleted.
	empty bool
}

// bundleState is the bundle writer's mutable view of every namespace's stored bundle, read by the
// status reconcilers. It is owned by one Setup call (no package state); all methods are safe for
// concurrent use.
type bundleState struct {
	mu         sync.RWMutex
	namespaces map[string]*namespaceRecord
	// history maps recent revisions to the policy generations they held (for DeciderReports).
	history *revisionHistory
}

func newBundleState() *bundleState {
	return &bundleState{namespaces: map[string]*namespaceRecord{}, history: newRevisionHistory()}
}

// get returns a copy of the record of ns and whether the bundle writer has processed ns yet.
func (s *bundleState) get(ns string) (namespaceRecord, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec, ok := s.namespaces[ns]
	if !ok {
		return namespaceRecord{}, false
	}
	return *rec, true
}

// policy returns what is enforced for policy name in ns.
func (s *bundleState) policy(ns, name string) (enforcedPolicy, bool, namespaceRecord, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec, known := s.namespaces[ns]
	if !known {
		return enforcedPolicy{}, false, namespaceRecord{}, false
	}
	p, ok := rec.policies[name]
	return p, ok, *rec, true
}

// passport returns why passport name in ns is excluded (ok false when it is not).
func (s *bundleState) passport(ns, name string) (excludedPassport, bool, namespaceRecord, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec, known := s.namespaces[ns]
	if !known {
		return excludedPassport{}, false, namespaceRecord{}, false
	}
	e, ok := rec.excluded[name]
	return e, ok, *rec, true
}

// put replaces the record of ns; the maps of rec must not be modified afterwards.
func (s *bundleState) put(ns string, rec namespaceRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.namespaces[ns] = &rec
	s.history.remember(ns, &rec)
}

// setWriteErr records a failed write for ns, keeping what is stored.
func (s *bundleState) setWriteErr(ns, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.namespaces[ns]
	if !ok {
		rec = &namespaceRecord{}
		s.namespaces[ns] = rec
	}
	cp := *rec
	cp.writeErr = msg
	s.namespaces[ns] = &cp
}

// forget drops ns (its last object is gone and its bundle deleted).
func (s *bundleState) forget(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.namespaces, ns)
}

// clusterEnforcement is what one namespace's stored bundle holds of a cluster policy.
type clusterEnforcement struct {
	// enforced is the cluster policy in the bundle; ok is false when the bundle does not hold it.
	enforced enforcedPolicy
	ok       bool
	// writeErr and rejected are the namespace's (see namespaceRecord).
	writeErr, rejected string
}

// clusterPolicy returns, for every namespace the bundle writer processed and found holding
// passports or policies, what its bundle holds of policy name (cluster/<name>).
func (s *bundleState) clusterPolicy(name string) map[string]clusterEnforcement {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]clusterEnforcement, len(s.namespaces))
	for ns, rec := range s.namespaces {
		if rec.empty {
			continue
		}
		p, ok := rec.policies[name]
		out[ns] = clusterEnforcement{enforced: p, ok: ok, writeErr: rec.writeErr, rejected: rec.rejected}
	}
	return out
}

// holding returns the namespaces whose stored bundle holds policy name.
func (s *bundleState) holding(name string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for ns, rec := range s.namespaces {
		if _, ok := rec.policies[name]; ok {
			out = append(out, ns)
		}
	}
	return out
}
