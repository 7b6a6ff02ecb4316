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
