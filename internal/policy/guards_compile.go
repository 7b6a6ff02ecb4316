package policy

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// cGuards is a compiled screen: patterns matched against one kind of text, blocking at threshold.
type cGuards struct {
	useDefaults bool       // screen DefaultInputPatterns
	patterns    []cPattern // the policy's own patterns
	scanSet     *scanSet   // screens them in one pass
	threshold   int
}

// active reports whether the screen has any pattern to run.
func (g *cGuards) active() bool { return g.useDefaults || len(g.patterns) > 0 }

// hookSet is a set of hooks the input guards screen at.
type hookSet uint8

const (
	hookBitPreLLM hookSet = 1 << iota
	hookBitPostTool
	hookBitPreTool
)

// inputGuardHooks are the hooks input guards can screen at, with their bits.
var inputGuardHooks = []struct {
	name string
	bit  hookSet
}{{HookPreLLMCall, hookBitPreLLM}, {HookPostToolCall, hookBitPostTool}, {HookPreToolCall, hookBitPreTool}}

// defaultHookSet is DefaultInputGuardHooks as a set.
const defaultHookSet = hookBitPreLLM | hookBitPostTool

// cDetector is a compiled safety-termination detector: the field it reads and its values.
type cDetector struct {
	name    string
	field   string
	reasons []string
}

// detect returns the detector's field and the request's value when the value is one of its reasons
// (compared case-insensitively, as DeerFlow's detectors do).
func (c *cDetector) detect(req *Request) (string, bool) {
	v := req.FinishReason
	if c.field == fieldStopReason {
		v = req.StopReason
	}
	if v == "" {
		return "", false
	}
	return v, slices.ContainsFunc(c.reasons, func(r string) bool { return strings.EqualFold(r, v) })
}

// providerDetectors are the built-in detector of each provider: name, field and default values.
var providerDetectors = map[string]cDetector{
	ProviderOpenAICompatible: {DetectorOpenAIContentFilter, fieldFinishReason, DefaultOpenAIContentFilterReasons},
	ProviderAnthropic:        {DetectorAnthropicRefusal, fieldStopReason, DefaultAnthropicRefusalReasons},
	ProviderGemini:           {DetectorGeminiSafety, fieldFinishReason, DefaultGeminiSafetyReasons},
}

// providers are the detector providers in their default order.
var providers = []string{ProviderOpenAICompatible, ProviderAnthropic, ProviderGemini}

// defaultDetectors are the built-in detectors, in the order they are checked.
var defaultDetectors = func() []cDetector {
	out := make([]cDetector, 0, len(providers))
	for _, p := range providers {
		out = append(out, providerDetectors[p])
	}
	return out
}()

// reRiskType is the format of a pattern's riskType (it becomes the reason code oap.<riskType>).
var reRiskType = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// patternBudget charges the RE2 programs of one policy's patterns to the policy's budget
// (MaxPolicyPatternInsts) and the bundle's (the compiler's count, MaxBundlePatternInsts).
type patternBudget struct {
	cc     *celCompiler
	policy int
}

// compileGuards compiles the policy's input guards, response guards and default reason.
func (cp *cPolicy) compileGuards(e *errs, cc *celCompiler, spec PolicySpec) {
	pb := &patternBudget{cc: cc}
	cp.compileInputGuards(e, pb, spec.InputGuards)
	cp.compileResponseGuards(e, pb, spec.ResponseGuards)
	cp.compileDefaultReason(e, spec)
}

// compileInputGuards compiles the input guards: the patterns screening text that enters the
// model's context, and the hooks they screen at.
func (cp *cPolicy) compileInputGuards(e *errs, pb *patternBudget, g *InputGuards) {
	cp.input = cGuards{useDefaults: true, threshold: levelHigh}
	cp.inputHooks = defaultHookSet
	if g == nil {
		return
	}
	const base = "spec.inputGuards"
	cp.input.threshold = compileThreshold(e, base+".blockThreshold", g.BlockThreshold)
	cp.input.useDefaults = !g.DisableDefaultPatterns
	cp.input.patterns = compilePatterns(e, pb, base+".patterns", g.Patterns, DefaultInputRiskType)
	cp.input.scanSet = patternScanSet(cp.input.patterns)
	if len(g.Hooks) > 0 {
		cp.inputHooks = 0
	}
	for i, h := range g.Hooks {
		k := slices.IndexFunc(inputGuardHooks, func(x struct {
			name string
			bit  hookSet
		}) bool {
			return x.name == h
		})
		path := fmt.Sprintf("%s.hooks[%d]", base, i)
		switch {
		case k < 0:
			e.enum(path, h, []string{HookPreLLMCall, HookPostToolCall, HookPreToolCall})
			if h == "" {
				e.add(path, "must not be empty")
			}
		case cp.inputHooks&inputGuardHooks[k].bit != 0:
			e.add(path, "duplicate hook %q", h)
		default:
			cp.inputHooks |= inputGuardHooks[k].bit
		}
	}
}

// compileResponseGuards compiles the post_llm_call guards: the safety-termination detectors and the
// output patterns screening the response's text.
func (cp *cPolicy) compileResponseGuards(e *errs, pb *patternBudget, g *ResponseGuards) {
	cp.detectors = defaultDetectors
	cp.output = cGuards{threshold: levelHigh}
	if g == nil {
		return
	}
	const base = "spec.responseGuards"
	if len(g.Detectors) > 0 {
		cp.detectors = make([]cDetector, 0, len(g.Detectors))
		seen := map[string]bool{}
		for i, d := range g.Detectors {
			path := fmt.Sprintf("%s.detectors[%d]", base, i)
			def, ok := providerDetectors[d.Provider]
			switch {
			case d.Provider == "":
				e.required(path + ".provider")
				continue
			case !ok:
				e.enum(path+".provider", d.Provider, providers)
				continue
			case seen[d.Provider]:
				e.add(path+".provider", "duplicate provider %q", d.Provider)
				continue
			}
			seen[d.Provider] = true
			if len(d.Reasons) > 0 {
				checkSafetyReasons(e, path+".reasons", d.Reasons)
				def.reasons = d.Reasons
			}
			cp.detectors = append(cp.detectors, def)
		}
	}
	if len(g.SafetyFinishReasons) > 0 {
		checkSafetyReasons(e, base+".safetyFinishReasons", g.SafetyFinishReasons)
		cp.addFinishReasons(g.SafetyFinishReasons)
	}
	cp.output.threshold = compileThreshold(e, base+".blockThreshold", g.BlockThreshold)
	cp.output.patterns = compilePatterns(e, pb, base+".patterns", g.Patterns, DefaultOutputRiskType)
	cp.output.scanSet = patternScanSet(cp.output.patterns)
}

// addFinishReasons extends the OpenAI-compatible detector with further finish_reason values (adding
// that detector when the policy's detectors leave it out).
func (cp *cPolicy) addFinishReasons(reasons []string) {
	out := slices.Clone(cp.detectors)
	for i := range out {
		if out[i].name == DetectorOpenAIContentFilter {
			out[i].reasons = append(slices.Clone(out[i].reasons), reasons...)
			cp.detectors = out
			return
		}
	}
	d := providerDetectors[ProviderOpenAICompatible]
	d.reasons = slices.Clone(reasons)
	cp.detectors = append(out, d)
}

// checkSafetyReasons rejects empty values and normal terminations.
func checkSafetyReasons(e *errs, path string, reasons []string) {
	for i, r := range reasons {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case r == "":
			e.add(p, "must not be empty")
		case len(r) > 64:
			e.add(p, "must be at most 64 characters")
		case slices.ContainsFunc(neverSafetyReasons, func(n string) bool { return strings.EqualFold(n, r) }):
			e.add(p, "%q is a normal termination, not a safety termination", r)
		}
	}
}

// compileThreshold parses a blockThreshold (default HIGH).
func compileThreshold(e *errs, path, v string) int {
	if v == "" {
		return levelHigh
	}
	lvl, ok := parseRiskLevel(v)
	if !ok {
		e.enum(path, v, riskLevelNames[:])
		return levelHigh
	}
	return lvl
}

// compilePatterns compiles a policy's patterns at base (…patterns), holding them to the policy's
// and the bundle's RE2 budgets. A pattern without riskType has defaultRiskType.
func compilePatterns(e *errs, pb *patternBudget, base string, pats []InputPattern, defaultRiskType string) []cPattern {
	var out []cPattern
	seen := map[string]bool{}
	for i, p := range pats {
		path := fmt.Sprintf("%s[%d]", base, i)
		if p.Name == "" {
			e.required(path + ".name")
		} else if seen[p.Name] {
			e.add(path+".name", "duplicate name %q", p.Name)
		}
		seen[p.Name] = true
		sc := pb.compile(e, path+".pattern", p.Pattern)
		lvl, ok := parseRiskLevel(p.RiskLevel)
		if !ok {
			if p.RiskLevel == "" {
				e.required(path + ".riskLevel")
			} else {
				e.enum(path+".riskLevel", p.RiskLevel, riskLevelNames[:])
			}
		}
		rt := p.RiskType
		if rt == "" {
			rt = defaultRiskType
		} else {
			e.pattern(path+".riskType", rt, reRiskType, 63)
		}
		if sc != nil && ok {
			out = append(out, cPattern{name: p.Name, scan: sc, level: lvl, riskType: rt, defaultIndex: -1, code: riskCode(rt)})
		}
	}
	return out
}

// compile compiles one pattern at path, charging its RE2 program to the budgets; nil when it is
// invalid or a budget is spent.
func (pb *patternBudget) compile(e *errs, path, pattern string) *scanner {
	cc := pb.cc
	switch {
	case pattern == "":
		e.required(path)
		return nil
	case len(pattern) > 1024:
		e.add(path, "must be at most 1024 characters")
		return nil
	case pb.policy > MaxPolicyPatternInsts || cc.patternInsts > MaxBundlePatternInsts:
		// A budget is spent: the patterns after it are not compiled.
		return nil
	}
	// The pattern as written, for an error message without the (?i) it is matched with.
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		e.add(path, "invalid regular expression: %v", err)
		return nil
	}
	sc, err := compileScanner(pattern)
	if err != nil {
		e.add(path, "%v", err)
		return nil
	}
	pb.policy += sc.insts
	cc.patternInsts += sc.insts
	switch {
	case pb.policy > MaxPolicyPatternInsts:
		e.add(path, "the policy's patterns compile to more than %d RE2 instructions here (the per-policy budget)", MaxPolicyPatternInsts)
		return nil
	case cc.patternInsts > MaxBundlePatternInsts:
		e.add(path, "the bundle's patterns compile to more than %d RE2 instructions here (the per-bundle budget)", MaxBundlePatternInsts)
		return nil
	}
	return sc
}

// patternScanSet returns the scan set screening pats in one pass (nil when there are none).
func patternScanSet(pats []cPattern) *scanSet {
	if len(pats) == 0 {
		return nil
	}
	scanners := make([]*scanner, len(pats))
	for i := range pats {
		scanners[i] = pats[i].scan
	}
	return newScanSet(scanners)
}

// compileDefaultReason reads the reason of a defaultAction Deny.
func (cp *cPolicy) compileDefaultReason(e *errs, spec PolicySpec) {
	cp.defaultCode = CodePolicyDenied
	r := spec.DefaultReason
	if r == nil {
		return
	}
	const base = "spec.defaultReason"
	if spec.DefaultAction != ActionDeny {
		e.add(base, "only meaningful with defaultAction Deny")
	}
	if r.Code == "" && r.Message == "" {
		e.add(base, "set a code, a message or both")
	}
	if r.Code != "" {
		e.pattern(base+".code", r.Code, reReasonCode, 64)
		cp.defaultCode = r.Code
	}
	if len(r.Message) > 1024 {
		e.add(base+".message", "must be at most 1024 characters")
	}
	if r.Message != "" {
		cp.defaultDenyM = r.Message
	}
}
