package decider

import (
	"maps"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Metric label values must not come from request input: a caller could otherwise create one time
// series per distinct value (the verify route takes a policy id from its URL). Every label of
// tollgate_decisions_total is therefore taken from a closed set: the outcome and OAP code from the
// fixed sets below, the policy from the policy ids compiled into a served snapshot. Anything else is
// labelOther.

// labelOther is the label value of anything outside a label's closed set.
const labelOther = "other"

// Label names shared by several metrics.
const (
	labelNamespace = "namespace"
	labelPassport  = "passport"
	labelTool      = "tool"
	labelStatus    = "status"
)

// outcomeLabels are the outcome label's values.
var outcomeLabels = map[string]string{
	policy.DecisionAllow:  policy.DecisionAllow,
	policy.DecisionDeny:   policy.DecisionDeny,
	policy.DecisionModify: policy.DecisionModify,
}

// codeLabels are the OAP reason codes the engine and the server produce (the guard's, and the risk
// codes of the built-in input and output patterns). Codes chosen by policy authors (a rule's code,
// a pattern's riskType) or returned by external evaluators are labelled labelOther: the policy
// label still says which policy decided.
var codeLabels = func() map[string]string {
	m := map[string]string{}
	for _, c := range []string{
		policy.CodeAllowed, policy.CodePassportNotFound, policy.CodePassportSuspended,
		policy.CodeUnknownCapability, policy.CodeCommandNotAllowed, policy.CodeBlockedPattern,
		policy.CodePolicyDenied, policy.CodeRateLimitExceeded, policy.CodeEvaluatorError,
		policy.CodeRequirementFailed, policy.CodePromptInjection, policy.CodeResponseBlocked,
		policy.CodeSubjectNotAllowed, policy.CodeInvalidRequest, policy.CodeLimitExceeded,
		policy.CodeInvalidContext, policy.CodeToolNotAllowed, policy.CodeIdempotencyConflict, "oap." + policy.RiskTypeDataLeak,
	} {
		m[c] = c
	}
	return m
}()

// closedLabel returns v when the set holds it, else labelOther.
func closedLabel(set map[string]string, v string) string {
	if l, ok := set[v]; ok {
		return l
	}
	return labelOther
}

// policyIDs are the ids of a bundle's policies, computed like the engine does (spec.policyID, else
// "namespace/name").
func policyIDs(b *policy.Bundle) []string {
	ids := make([]string, 0, len(b.Policies))
	for _, p := range b.Policies {
		id := p.Spec.PolicyID
		if id == "" {
			ns := p.Namespace
			if ns == "" {
				ns = b.Namespace
			}
			id = p.Name
			if ns != "" {
				id = ns + "/" + p.Name
			}
		}
		ids = append(ids, id)
	}
	return ids
}

// publishPolicyIDsLocked sets the namespace's policy ids (nil: the namespace is gone) and publishes
// the union over every served namespace for the metrics. Callers hold s.mu.
func (s *Store) publishPolicyIDsLocked(namespace string, ids []string) {
	if s.nsPolicyIDs == nil {
		s.nsPolicyIDs = map[string][]string{}
	}
	if ids == nil {
		delete(s.nsPolicyIDs, namespace)
	} else {
		s.nsPolicyIDs[namespace] = ids
	}
	union := map[string]string{"": ""} // decisions no policy made (server denies, engine checks)
	for _, l := range s.nsPolicyIDs {
		for _, id := range l {
			union[id] = id
		}
	}
	if cur := s.policyLabels.Load(); cur != nil && maps.Equal(*cur, union) {
		return
	}
	s.policyLabels.Store(&union)
}

// policyLabel is the policy label of a decision's policy id ("id" or "id#rule"): the id when a
// served snapshot compiled a policy with that id, else labelOther.
func (s *Store) policyLabel(policyID string) string {
	if i := strings.IndexByte(policyID, '#'); i >= 0 {
		policyID = policyID[:i]
	}
	m := s.policyLabels.Load()
	if m == nil {
		if policyID == "" {
			return ""
		}
		return labelOther
	}
	if l, ok := (*m)[policyID]; ok {
		return l
	}
	return labelOther
}

// toolNames are the literal tool names (globs without `*`) a bundle's policies name in their rules,
// requirements, rate limits and tool-capability mappings.
func toolNames(b *policy.Bundle) map[string]struct{} {
	names := map[string]struct{}{}
	add := func(globs ...string) {
		for _, g := range globs {
			if g != "" && !strings.Contains(g, "*") {
				names[g] = struct{}{}
			}
		}
	}
	for i := range b.Policies {
		spec := &b.Policies[i].Spec
		for _, tc := range spec.ToolCapabilities {
			add(tc.Tool)
		}
		for _, r := range spec.Rules {
			add(r.Tools...)
		}
		for _, r := range spec.Requires {
			add(r.Tools...)
		}
		for _, r := range spec.RateLimits {
			add(r.Tools...)
		}
	}
	return names
}

// publishToolNamesLocked sets the namespace's literal tool names (nil: the namespace is gone).
// Callers hold s.mu.
func (s *Store) publishToolNamesLocked(namespace string, names map[string]struct{}) {
	next := map[string]map[string]struct{}{}
	if cur := s.toolLabels.Load(); cur != nil {
		next = maps.Clone(*cur)
	}
	if names == nil {
		delete(next, namespace)
	} else {
		next[namespace] = names
	}
	s.toolLabels.Store(&next)
}

// toolLabel is the tool label of a call of tool answered from namespace's snapshot: the tool when
// it is a built-in tool name or one the namespace's policies name literally, "" for calls without a
// tool (LLM hooks), else labelOther.
func (s *Store) toolLabel(namespace, tool string) string {
	if tool == "" || policy.IsBuiltinToolName(tool) {
		return tool
	}
	if m := s.toolLabels.Load(); m != nil {
		if _, ok := (*m)[namespace][tool]; ok {
			return tool
		}
	}
	return labelOther
}

// knownTool reports whether tool is a label value toolLabel can return for namespace (other than
// labelOther): the metrics drop series whose tool has left the bundle.
func (s *Store) knownTool(namespace, tool string) bool {
	return tool == labelOther || s.toolLabel(namespace, tool) == tool
}

// passportLabels are the namespace and passport labels of a decision answered from snap for req:
// the snapshot's namespace and the name of the passport the request named (by name or agent id)
// when the snapshot holds it, else labelOther for either.
func passportLabels(snap *policy.Snapshot, req *policy.Request) (namespace, passport string) {
	if snap == nil {
		return labelOther, labelOther
	}
	namespace, passport = snap.Namespace(), labelOther
	var p policy.Passport
	var ok bool
	switch {
	case req.Passport != "":
		p, ok = snap.Passport(req.Passport)
	case req.AgentID != "":
		p, ok = snap.PassportByAgentID(req.AgentID)
	}
	if ok {
		passport = p.Name
	}
	return namespace, passport
}

// knownPassport reports whether the labels namespace and passport can still be produced by
// passportLabels: the metrics drop series of passports that left their bundle.
func (s *Store) knownPassport(namespace, passport string) bool {
	if namespace == labelOther {
		return true
	}
	snap, ok := s.Snapshot(namespace)
	if !ok {
		return false
	}
	if passport == labelOther {
		return true
	}
	_, ok = snap.Passport(passport)
	return ok
}
