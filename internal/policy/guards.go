package policy

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// builtinGuardRef is the policy_id reported when the built-in guards decide (no policy selects the
// passport).
const builtinGuardRef = "tollgate.builtin"

// builtinGuardPolicy stands in for the guards when no policy selects a passport: default patterns
// at the default hooks, threshold HIGH, the built-in safety detectors, enforced.
var builtinGuardPolicy = &cPolicy{
	id: builtinGuardRef, defaultRef: builtinGuardRef,
	input:      cGuards{useDefaults: true, threshold: levelHigh},
	inputHooks: defaultHookSet,
	output:     cGuards{threshold: levelHigh},
	detectors:  defaultDetectors,
}

// guardPolicies returns the policies whose guards apply to req.
func guardPolicies(set *policySet, req *Request) []*cPolicy {
	if len(set.policies) == 0 && req.PolicyID == "" {
		return []*cPolicy{builtinGuardPolicy}
	}
	return set.policies
}

// latestMessage returns the content of the last message with the role.
func latestMessage(msgs []Message, role string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if strings.EqualFold(msgs[i].Role, role) {
			return msgs[i].Content
		}
	}
	return ""
}

// screening is one text screened by several policies' guards: it accumulates the risk assessment
// and screens with the shared default patterns at most once.
type screening struct {
	text     string
	clk      scanClock
	risk     RiskAssessment
	maxLevel int
	matched  int
	screened int // policies whose guards screened the text
	defHits  []bool
	defErr   error
}

func newScreening(text string, deadline time.Duration) *screening {
	return &screening{text: text, clk: scanClock{deadline: time.Now().Add(deadline)}, maxLevel: -1,
		risk: RiskAssessment{RiskLevel: RiskSafe}}
}

// note adds a finding to the assessment (once per detail). The risk type is that of the first
// finding at the highest level.
func (sc *screening) note(detail string, level int, riskType string) {
	if slices.Contains(sc.risk.Details, detail) {
		return
	}
	sc.risk.Details = append(sc.risk.Details, detail)
	sc.matched++
	if level > sc.maxLevel {
		sc.maxLevel = level
		sc.risk.RiskType = riskType
	}
}

// defaults screens the text with the default patterns (once).
func (sc *screening) defaults() ([]bool, error) {
	if sc.defHits == nil {
		sc.defHits = make([]bool, len(compiledDefaultPatterns))
		sc.defErr = defaultScanSet.match(sc.text, &sc.clk, sc.defHits)
	}
	return sc.defHits, sc.defErr
}

// run screens the text with g. It returns the worst matching pattern (nil when none matched) and
// why the text could not be screened ("" when it was).
func (sc *screening) run(g *cGuards) (*cPattern, string) {
	sc.screened++
	if sc.text == "" {
		return nil, ""
	}
	var worst *cPattern
	consider := func(c *cPattern) {
		sc.note(c.name+" ("+riskLevelNames[c.level]+", "+c.riskType+")", c.level, c.riskType)
		if worst == nil || c.level > worst.level {
			worst = c
		}
	}
	if len(sc.text) > MaxScanBytes {
		return nil, fmt.Sprintf("it is %d bytes, more than the %d they screen", len(sc.text), MaxScanBytes)
	}
	const late = "screening did not finish within the evaluation deadline"
	if g.useDefaults {
		hits, err := sc.defaults()
		if err != nil {
			return worst, late
		}
		for i, hit := range hits {
			if hit {
				consider(&compiledDefaultPatterns[i])
			}
		}
	}
	if g.scanSet != nil {
		hits := make([]bool, len(g.patterns))
		if err := g.scanSet.match(sc.text, &sc.clk, hits); err != nil {
			return worst, late
		}
		for i, hit := range hits {
			if hit {
				consider(&g.patterns[i])
			}
		}
	}
	return worst, ""
}

// assessment returns the risk assessment of the screened text.
func (sc *screening) assessment() *RiskAssessment {
	r := sc.risk
	if sc.maxLevel >= 0 {
		r.RiskLevel = riskLevelNames[sc.maxLevel]
		r.HasRisk = sc.maxLevel > levelSafe
		r.Confidence = min(riskConfidence[sc.maxLevel]+0.02*float64(sc.matched-1), 0.99)
	}
	return &r
}

// screenKind names a kind of guard in decisions: input guards (prompt injection in what enters
// the model's context) or output guards (what a response must not show).
type screenKind struct {
	name       string // "input guard" or "output guard"
	ref        string // the policy_id suffix of a fail-closed deny
	failCode   string // the code of a fail-closed deny
	guards     func(*cPolicy) *cGuards
	guardsName string // "input guards" or "output guards"
}

var (
	inputScreen = screenKind{name: "input guard", ref: "#input-guards", failCode: CodePromptInjection,
		guardsName: "input guards", guards: func(p *cPolicy) *cGuards { return &p.input }}
	outputScreen = screenKind{name: "output guard", ref: "#response-guards", failCode: CodeResponseBlocked,
		guardsName: "output guards", guards: func(p *cPolicy) *cGuards { return &p.output }}
)

// screen screens sc's text (what names it in messages) with the guards of kind of every policy in
// pols that applies to req and for which use is true. DryRun and Warn policies' findings are
// recorded in d; the first enforcing policy's blocking outcome is returned (nil when none blocks).
// Text a policy's guards cannot screen (too long, or not screened by the deadline) blocks: screening
// fails closed.
func (s *Snapshot) screen(d *Decision, pols []*cPolicy, req *Request, kind screenKind, use func(*cPolicy) bool,
	sc *screening, what string) *outcome {
	var blocked *outcome
	for _, pol := range pols {
		if !applies(pol, req) || !use(pol) {
			continue
		}
		g := kind.guards(pol)
		if !g.active() {
			continue
		}
		worst, unscreened := sc.run(g)
		var out outcome
		switch {
		case worst != nil && worst.level >= g.threshold:
			out = outcome{kind: outDeny, code: worst.code, ref: pol.id + "#" + worst.name,
				msg: kind.name + " " + worst.name + " matched " + what + ": " + riskLevelNames[worst.level] + " " +
					worst.riskType + " risk at or above the block threshold " + riskLevelNames[g.threshold]}
		case unscreened != "":
			sc.note("unscreened ("+unscreened+")", max(g.threshold, levelLow), RiskTypePromptInjection)
			out = outcome{kind: outDeny, code: kind.failCode, ref: pol.id + kind.ref,
				msg: "the " + kind.guardsName + " could not screen " + what + " (" + unscreened + "); it is denied, as screening fails closed"}
		default:
			continue
		}
		if pol.enforcement != enfEnforce {
			record(d, pol.enforcement, out)
			continue
		}
		if blocked == nil {
			blocked = &out
		}
	}
	return blocked
}

// inputHook returns the use function of the input guards screening at hook.
func inputHook(bit hookSet) func(*cPolicy) bool {
	return func(p *cPolicy) bool { return p.inputHooks&bit != 0 }
}

// countApplying returns how many of pols apply to req.
func countApplying(pols []*cPolicy, req *Request) int {
	n := 0
	for _, pol := range pols {
		if applies(pol, req) {
			n++
		}
	}
	return n
}

// notApplying is the deny of the OAP verify route when the policy it names does not select the
// passport.
func notApplying(d Decision, p *cPassport, req *Request) Decision {
	return deny(d, CodePolicyDenied, "policy "+req.PolicyID+" does not apply to passport "+p.src.Name, req.PolicyID)
}

// decideInput screens the latest user message (pre_llm_call) with every applicable policy's input
// guards.
func (s *Snapshot) decideInput(d Decision, p *cPassport, req *Request) Decision {
	return s.decideScreened(d, p, req, hookBitPreLLM, latestMessage(req.Messages, "user"), "the latest user message")
}

// decideToolResult screens a tool's result (post_tool_call) before it goes back to the model: the
// main path of indirect prompt injection (a fetched page, a file, an issue comment that says
// "ignore previous instructions").
func (s *Snapshot) decideToolResult(d Decision, p *cPassport, req *Request) Decision {
	return s.decideScreened(d, p, req, hookBitPostTool, screenText(req.ToolResult), "the result of the tool call")
}

// decideScreened decides a hook whose whole answer is the input guards' verdict on text.
func (s *Snapshot) decideScreened(d Decision, p *cPassport, req *Request, bit hookSet, text, what string) Decision {
	pols := guardPolicies(p.set, req)
	sc := newScreening(text, s.deadline)
	blocked := s.screen(&d, pols, req, inputScreen, inputHook(bit), sc, what)
	if req.PolicyID != "" && countApplying(pols, req) == 0 {
		d = notApplying(d, p, req)
	} else if blocked != nil {
		d = deny(d, blocked.code, blocked.msg, blocked.ref)
	} else {
		d = allow(d, "no input guard blocked "+what, "")
	}
	d.meta().Risk = sc.assessment()
	return d
}

// screenToolInput screens a tool call's arguments (pre_tool_call) with the input guards of the
// policies that screen at pre_tool_call (none unless a policy names the hook). The risk assessment
// goes into d when any policy screened; a blocking finding is a deny (reported true).
func (s *Snapshot) screenToolInput(d Decision, p *cPassport, req *Request) (Decision, bool) {
	if !screensAt(p.set.policies, hookBitPreTool) {
		return d, false
	}
	sc := newScreening(screenText(req.ToolInput), s.deadline)
	blocked := s.screen(&d, p.set.policies, req, inputScreen, inputHook(hookBitPreTool), sc, "the arguments of the tool call")
	if sc.screened == 0 {
		return d, false
	}
	d.meta().Risk = sc.assessment()
	if blocked != nil {
		return deny(d, blocked.code, blocked.msg, blocked.ref), true
	}
	return d, false
}

// screensAt reports whether any of pols screens at the hook.
func screensAt(pols []*cPolicy, bit hookSet) bool {
	for _, pol := range pols {
		if pol.inputHooks&bit != 0 && pol.input.active() {
			return true
		}
	}
	return false
}

// screenText is the text of a JSON value the guards screen: a string as it is; the keys and string
// values of objects (keys sorted) and arrays, depth first, one per line. It stops once longer than
// MaxScanBytes (the guards then deny it unscreened).
func screenText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	appendScreenText(&b, v)
	return b.String()
}

func appendScreenText(b *strings.Builder, v any) {
	if b.Len() > MaxScanBytes {
		return
	}
	add := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	switch t := v.(type) {
	case string:
		add(t)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k)
			appendScreenText(b, t[k])
		}
	case []any:
		for _, x := range t {
			appendScreenText(b, x)
		}
	case []string:
		for _, x := range t {
			add(x)
		}
	}
}

// termination is a safety termination one policy's detectors found.
type termination struct {
	detector, field, value string
}

// detectTermination returns the first of the policy's detectors that fires on req.
func (pol *cPolicy) detectTermination(req *Request) (termination, bool) {
	for i := range pol.detectors {
		c := &pol.detectors[i]
		if v, ok := c.detect(req); ok {
			return termination{detector: c.name, field: c.field, value: v}, true
		}
	}
	return termination{}, false
}

// decideResponse decides an LLM response (post_llm_call). A response that a provider ended with a
// safety termination has its tool calls suppressed (their arguments may be truncated): only when it
// carries tool calls, as DeerFlow's SafetyFinishReasonMiddleware; a response without tool calls is
// allowed (its text reaches the user as the provider filtered it). The response's text is screened
// by the policies' output patterns.
func (s *Snapshot) decideResponse(d Decision, p *cPassport, req *Request) Decision {
	pols := guardPolicies(p.set, req)
	n := len(req.ToolCalls)
	var blocked *outcome
	var hit, seen *termination
	for _, pol := range pols {
		if !applies(pol, req) {
			continue
		}
		t, ok := pol.detectTermination(req)
		if !ok {
			continue
		}
		if seen == nil {
			seen = &t
		}
		if n == 0 {
			continue
		}
		out := outcome{kind: outDeny, code: CodeResponseBlocked, ref: pol.id + "#response-guards",
			msg: "response ended with safety termination " + t.field + "=" + t.value + " (detector " + t.detector +
				"); suppressing " + pluralCalls(n) + ": their arguments may be truncated and unsafe to run"}
		if pol.enforcement != enfEnforce {
			record(&d, pol.enforcement, out)
			continue
		}
		if blocked == nil {
			blocked, hit = &out, &t
		}
	}
	text := string(req.Content)
	if text == "" {
		text = latestMessage(req.Messages, "assistant")
	}
	sc := newScreening(text, s.deadline)
	oblocked := s.screen(&d, pols, req, outputScreen, func(*cPolicy) bool { return true }, sc, "the response content")
	if sc.screened > 0 && text != "" {
		d.meta().Risk = sc.assessment()
	}
	switch {
	case req.PolicyID != "" && countApplying(pols, req) == 0:
		return notApplying(d, p, req)
	case blocked != nil:
		d = deny(d, blocked.code, blocked.msg, blocked.ref)
		names := make([]string, 0, n)
		for _, tc := range req.ToolCalls {
			names = append(names, tc.Name)
		}
		d.meta().Suppressed = &Suppression{Detector: hit.detector, ReasonField: hit.field, ReasonValue: hit.value,
			ToolNames: names, Count: n}
		return d
	case oblocked != nil:
		return deny(d, oblocked.code, oblocked.msg, oblocked.ref)
	case seen != nil:
		return allow(d, "response ended with safety termination "+seen.field+"="+seen.value+" (detector "+seen.detector+
			") but carries no tool calls: nothing to suppress", "")
	}
	return allow(d, "response is not a safety termination", "")
}

func pluralCalls(n int) string {
	if n == 1 {
		return "1 tool call"
	}
	return strconv.Itoa(n) + " tool calls"
}
