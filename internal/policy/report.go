package policy

import (
	"slices"
	"strings"
	"sync"
)

// reportIndex numbers a snapshot's policies and passports for per-object counters (the decision
// endpoint's reports), built on first use.
type reportIndex struct {
	once      sync.Once
	policies  []string         // policy names, sorted
	refs      map[string]int32 // policy id and policy_id#name of every rule, requirement, rate limit -> policy
	passports []string         // passport names, sorted
	byName    map[string]int32
}

func (s *Snapshot) reportIdx() *reportIndex {
	r := &s.report
	r.once.Do(func() {
		pols := slices.Clone(s.compiled)
		slices.SortFunc(pols, func(a, b *cPolicy) int { return strings.Compare(a.name, b.name) })
		r.policies = make([]string, len(pols))
		r.refs = make(map[string]int32, len(pols))
		for i, p := range pols {
			r.policies[i] = p.name
			idx := int32(i)
			if _, taken := r.refs[p.id]; !taken {
				r.refs[p.id] = idx // policies sharing an id: the first by name
			}
			for j := range p.rules {
				r.refs[p.rules[j].ref] = idx
			}
			for j := range p.requires {
				r.refs[p.requires[j].ref] = idx
			}
			for j := range p.rateLimits {
				r.refs[p.rateLimits[j].ref] = idx
			}
		}
		r.passports = make([]string, 0, len(s.passports))
		for name := range s.passports {
			r.passports = append(r.passports, name)
		}
		slices.Sort(r.passports)
		r.byName = make(map[string]int32, len(r.passports))
		for i, name := range r.passports {
			r.byName[name] = int32(i)
		}
	})
	return r
}

// PolicyNames returns the names of the snapshot's policies, sorted; PolicyIndex indexes it. The
// slice is shared and must not be modified.
func (s *Snapshot) PolicyNames() []string { return s.reportIdx().policies }

// PolicyIndex returns the index in PolicyNames of the policy a decision's policy_id (or a dry-run
// or warning result's) names: "policy id" or "policy id#name". It returns -1 when no policy of the
// snapshot has that id. Policies sharing a policy id are told apart by their rule names.
func (s *Snapshot) PolicyIndex(ref string) int {
	if ref == "" {
		return -1
	}
	r := s.reportIdx()
	if i, ok := r.refs[ref]; ok {
		return int(i)
	}
	if id, _, ok := strings.Cut(ref, "#"); ok {
		if i, ok := r.refs[id]; ok {
			return int(i)
		}
	}
	return -1
}

// PassportNames returns the names of the snapshot's passports, sorted; PassportIndex indexes it.
// The slice is shared and must not be modified.
func (s *Snapshot) PassportNames() []string { return s.reportIdx().passports }

// PassportIndex returns the index in PassportNames of the passport a request presented (by name,
// "namespace/name", or else by agent id), -1 when the snapshot has none.
func (s *Snapshot) PassportIndex(passport, agentID string) int {
	var p *cPassport
	if passport != "" {
		p = s.lookup(passport)
	} else if agentID != "" {
		p = s.byAgentID[agentID]
	}
	if p == nil {
		return -1
	}
	if i, ok := s.reportIdx().byName[p.src.Name]; ok {
		return int(i)
	}
	return -1
}
