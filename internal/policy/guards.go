package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
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

// decideInput screens the latest user message with every applicable policy's input guards. A
// message the guards cannot screen (longer than MaxScanBytes, or not screened before the evaluation
// deadline) is denied by every enforcing policy with guards: screening fails closed.
func (s *Snapshot) decideInput(d Decision, p *cPassport, req *Request) Decision {
	text := latestUserMessage(req.Messages)
	risk := &RiskAssessment{RiskLevel: RiskSafe}
	maxLevel, matched := -1, 0
	note := func(detail string, level int, riskType string) {
		if slices.Contains(risk.Details, detail) {
			return
		}
		risk.Details = append(risk.Details, detail)
		matched++
		if level > maxLevel {
			maxLevel = level
			risk.RiskType = riskType
		}
	}
	clk := scanClock{deadline: time.Now().Add(s.deadline)}
	// The default patterns are shared by policies: screen with them at most once.
	var defHits []bool
	var defErr error
	defaults := func() ([]bool, error) {
		if defHits == nil {
			defHits = make([]bool, len(compiledDefaultPatterns))
			defErr = defaultScanSet.match(text, &clk, defHits)
		}
		return defHits, defErr
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
			note(c.name+" ("+riskLevelNames[c.level]+", "+c.riskType+")", c.level, c.riskType)
			if worst == nil || c.level > worst.level {
				worst = c
			}
		}
		unscreened := ""
		if text != "" && (pol.useDefaults || len(pol.patterns) > 0) {
			unscreened = screen(text, pol, &clk, defaults, consider)
		}
		var out outcome
		switch {
		case worst != nil && worst.level >= pol.threshold:
			out = outcome{kind: outDeny, code: CodePromptInjection, ref: pol.id + "#" + worst.name,
				msg: "input guard " + worst.name + " matched the latest user message: " + riskLevelNames[worst.level] +
					" " + worst.riskType + " risk at or above the block threshold " + riskLevelNames[pol.threshold]}
		case unscreened != "":
			note("unscreened ("+unscreened+")", max(pol.threshold, levelLow), RiskTypePromptInjection)
			out = outcome{kind: outDeny, code: CodePromptInjection, ref: pol.id + "#input-guards",
				msg: "the input guards could not screen the latest user message (" + unscreened + "); it is denied, as screening fails closed"}
		default:
			continue
		}
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

// screen runs a policy's patterns (the shared defaults through defaults) over text, calling
// consider for each that matches. It returns why the text could not be screened, or "".
func screen(text string, pol *cPolicy, clk *scanClock, defaults func() ([]bool, error), consider func(*cPattern)) string {
	if len(text) > MaxScanBytes {
		return fmt.Sprintf("it is %d bytes, more than the %d they screen", len(text), MaxScanBytes)
	}
	const late = "screening did not finish within the evaluation deadline"
	if pol.useDefaults {
		hits, err := defaults()
		if err != nil {
			return late
		}
		for i, hit := range hits {
			if hit {
				consider(&compiledDefaultPatterns[i])
			}
		}
	}
	if pol.scanSet != nil {
		hits := make([]bool, len(pol.patterns))
		if err := pol.scanSet.match(text, clk, hits); err != nil {
			return late
		}
		for i, hit := range hits {
			if hit {
				consider(&pol.patterns[i])
			}
		}
	}
	return ""
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
