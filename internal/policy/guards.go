package policy

import (
	"slices"
	"strconv"
	"strings"
)

// builtinGuardRef is the policy_id reported when the built-in guards decide (no policy selects the
// passport).
const builtinGuardRef = "tollgate.builtin"

// responseDetector names the post_llm_call detector in suppression details.
const responseDetector = "response_guard.safety_finish_reason"

// builtinGuardPolicy stands in for the guards when no policy selects a passport: default patterns,
// threshold HIGH, default safety reasons, enforced.
var builtinGuardPolicy = &cPolicy{
	id: builtinGuardRef, defaultRef: builtinGuardRef, useDefaults: true, threshold: levelHigh,
	safety: DefaultSafetyFinishReasons,
}

// guardPolicies returns the policies whose guards apply to req.
func guardPolicies(set *policySet, req *Request) []*cPolicy {
	if len(set.policies) == 0 && req.PolicyID == "" {
		return []*cPolicy{builtinGuardPolicy}
	}
	return set.policies
}

// latestUserMessage returns the content of the last message with role user.
func latestUserMessage(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if strings.EqualFold(msgs[i].Role, "user") {
			return msgs[i].Content
		}
	}
	return ""
}

// decideInput screens the latest user message with every applicable policy's input guards.
func (s *Snapshot) decideInput(d Decision, p *cPassport, req *Request) Decision {
	text := latestUserMessage(req.Messages)
	risk := &RiskAssessment{RiskLevel: RiskSafe}
	maxLevel, matched := -1, 0
	note := func(c *cPattern) {
		detail := c.name + " (" + riskLevelNames[c.level] + ", " + c.riskType + ")"
		if slices.Contains(risk.Details, detail) {
			return
		}
		risk.Details = append(risk.Details, detail)
		matched++
		if c.level > maxLevel {
			maxLevel = c.level
			risk.RiskType = c.riskType
		}
	}
	// The default patterns are shared by policies: evaluate each at most once.
	var defDone, defHit uint64
	defMatch := func(i int) bool {
		bit := uint64(1) << uint(i)
		if defDone&bit == 0 {
			defDone |= bit
			if compiledDefaultPatterns[i].re.MatchString(text) {
				defHit |= bit
			}
		}
		return defHit&bit != 0
	}

	var blocked *outcome
	evaluated := 0
	for _, pol := range guardPolicies(p.set, req) {
		if !applies(pol, req) {
			continue
		}
		evaluated++
		var worst *cPattern
		consider := func(c *cPattern) {
			note(c)
			if worst == nil || c.level > worst.level {
				worst = c
			}
		}
		if text != "" {
			if pol.useDefaults {
				for i := range compiledDefaultPatterns {
					if defMatch(i) {
						consider(&compiledDefaultPatterns[i])
					}
				}
			}
			for i := range pol.patterns {
				if pol.patterns[i].re.MatchString(text) {
					consider(&pol.patterns[i])
				}
			}
		}
		if worst == nil || worst.level < pol.threshold {
			continue
		}
		out := outcome{kind: outDeny, code: CodePromptInjection, ref: pol.id + "#" + worst.name,
			msg: "input guard " + worst.name + " matched the latest user message: " + riskLevelNames[worst.level] +
				" " + worst.riskType + " risk at or above the block threshold " + riskLevelNames[pol.threshold]}
		if pol.enforcement != enfEnforce {
			record(&d, pol.enforcement, out)
			continue
		}
		if blocked == nil {
			blocked = &out
		}
	}
	if maxLevel >= 0 {
		risk.RiskLevel = riskLevelNames[maxLevel]
		risk.HasRisk = maxLevel > levelSafe
		conf := riskConfidence[maxLevel] + 0.02*float64(matched-1)
		risk.Confidence = min(conf, 0.99)
	}
	if req.PolicyID != "" && evaluated == 0 {
		d = deny(d, CodePolicyDenied, "policy "+req.PolicyID+" does not apply to passport "+p.src.Name, req.PolicyID)
		d.meta().Risk = risk
		return d
	}
	if blocked != nil {
		d = deny(d, blocked.code, blocked.msg, blocked.ref)
	} else {
		d = allow(d, "no input guard blocked the latest user message", "")
	}
	d.meta().Risk = risk
	return d
}

// decideResponse suppresses every tool call of a response that ended in a safety termination.
func (s *Snapshot) decideResponse(d Decision, p *cPassport, req *Request) Decision {
	field, value := "finish_reason", req.FinishReason
	if value == "" {
		field, value = "stop_reason", req.StopReason
	}
	var blocked *outcome
	evaluated := 0
	for _, pol := range guardPolicies(p.set, req) {
		if !applies(pol, req) {
			continue
		}
		evaluated++
		if value == "" || !slices.ContainsFunc(pol.safety, func(r string) bool { return strings.EqualFold(r, value) }) {
			continue
		}
		n := len(req.ToolCalls)
		out := outcome{kind: outDeny, code: CodeResponseBlocked, ref: pol.id + "#response-guards",
			msg: "response ended with safety termination " + field + "=" + value + "; suppressing " +
				pluralCalls(n)}
		if pol.enforcement != enfEnforce {
			record(&d, pol.enforcement, out)
			continue
		}
		if blocked == nil {
			blocked = &out
		}
	}
	if req.PolicyID != "" && evaluated == 0 {
		return deny(d, CodePolicyDenied, "policy "+req.PolicyID+" does not apply to passport "+p.src.Name, req.PolicyID)
	}
	if blocked == nil {
		return allow(d, "response is not a safety termination", "")
	}
	d = deny(d, blocked.code, blocked.msg, blocked.ref)
	names := make([]string, 0, len(req.ToolCalls))
	for _, tc := range req.ToolCalls {
		names = append(names, tc.Name)
	}
	d.meta().Suppressed = &Suppression{Detector: responseDetector, ReasonField: field, ReasonValue: value,
		ToolNames: names, Count: len(names)}
	return d
}

func pluralCalls(n int) string {
	switch n {
	case 0:
		return "no tool calls"
	case 1:
		return "1 tool call"
	}
	return strconv.Itoa(n) + " tool calls"
}
