package policy

import "regexp"

// RiskTypePromptInjection is the risk type of input patterns that do not name one.
const RiskTypePromptInjection = "prompt_injection"

// Capability ids with built-in meaning.
const (
	// CapCommandExecute is the capability whose passport limits allowed_commands and blocked_patterns
	// the engine enforces.
	CapCommandExecute = "system.command.execute"
	// CapFileRead is reading files and directories.
	CapFileRead = "data.file.read"
	// CapFileWrite is writing or editing files.
	CapFileWrite = "data.file.write"
	// CapWebFetch is fetching a URL.
	CapWebFetch = "web.fetch"
	// CapWebSearch is searching the web.
	CapWebSearch = "web.search"
	// CapMCPToolExecute is calling an MCP server tool.
	CapMCPToolExecute = "mcp.tool.execute"
	// CapAgentSessionCreate is starting a sub-agent.
	CapAgentSessionCreate = "agent.session.create"
)

// RiskTypeDataLeak is the risk type of output patterns that do not name one.
const RiskTypeDataLeak = "data_leak"

// Built-in safety-termination detectors (DeerFlow's SafetyTerminationDetector set), in the order
// they are checked. Each compares its field's value case-insensitively.
var (
	// DefaultOpenAIContentFilterReasons are the finish_reason values of OpenAI-compatible APIs.
	DefaultOpenAIContentFilterReasons = []string{"content_filter"}
	// DefaultAnthropicRefusalReasons are Anthropic's stop_reason values.
	DefaultAnthropicRefusalReasons = []string{"refusal"}
	// DefaultGeminiSafetyReasons are Gemini's finish_reason values for safety, blocklist,
	// prohibited content, sensitive PII and recitation stops (text and image).
	DefaultGeminiSafetyReasons = []string{"SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "RECITATION",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"}
)

// DefaultSafetyFinishReasons are every value of the built-in detectors, whatever their field.
var DefaultSafetyFinishReasons = func() []string {
	out := append([]string(nil), DefaultOpenAIContentFilterReasons...)
	out = append(out, DefaultAnthropicRefusalReasons...)
	return append(out, DefaultGeminiSafetyReasons...)
}()

// Detector names reported in suppression details (DeerFlow's names).
const (
	DetectorOpenAIContentFilter = "openai_compatible_content_filter"
	DetectorAnthropicRefusal    = "anthropic_refusal"
	DetectorGeminiSafety        = "gemini_safety"
)

// Reason fields the detectors read.
const (
	fieldFinishReason = "finish_reason"
	fieldStopReason   = "stop_reason"
)

// neverSafetyReasons are normal terminations that can never be configured as safety reasons.
var neverSafetyReasons = []string{"tool_calls", "stop", "length", "max_tokens", "end_turn", "tool_use", "stop_sequence"}

// risk levels as ordered integers.
const (
	levelSafe = iota
	levelLow
	levelMedium
	levelHigh
	levelCritical
)

var riskLevelNames = [...]string{RiskSafe, RiskLow, RiskMedium, RiskHigh, RiskCritical}

func parseRiskLevel(s string) (int, bool) {
	for i, n := range riskLevelNames {
		if n == s {
			return i, true
		}
	}
	return 0, false
}

// riskConfidence is the heuristic confidence of a finding at each level.
var riskConfidence = [...]float64{0, 0.5, 0.7, 0.85, 0.95}

// DefaultInputPatterns are the built-in prompt-injection patterns (matched case-insensitively),
// screened unless a policy sets disableDefaultPatterns. The first eight are exo's PatternBackend
// defaults, each a HIGH prompt_injection risk; the others catch further spellings of the same attacks.
var DefaultInputPatterns = []InputPattern{
	{Name: "ignore-previous-instructions", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `ignore\s+(all\s+)?previous\s+instructions`},
	{Name: "you-are-now", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `you\s+are\s+now\s+(?:a|an)\s+`},
	{Name: "forget-your", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `forget\s+(?:all\s+)?(?:your|previous)\s+`},
	{Name: "system-prompt", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `system\s*prompt`},
	{Name: "act-as-if-you", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `act\s+as\s+(?:if|though)\s+you`},
	{Name: "pretend-you-are", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `pretend\s+(?:you\s+are|to\s+be)\s+`},
	{Name: "do-not-follow", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `do\s+not\s+follow\s+(?:any|your)\s+`},
	{Name: "override-your", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `override\s+(?:your|all)\s+`},
	{Name: "instruction-override", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|earlier|preceding|all|any|your|the)\b[^.\n]{0,40}\b(instructions?|prompts?|rules|directions|guidelines|guardrails|constraints)\b`},
	{Name: "role-reassignment", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `\byou\s+are\s+now\s+(a|an|the|in|my|no\s+longer)\b`},
	{Name: "role-play", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `\b(pretend|act)\s+(to\s+be|as\s+if\s+you\s+(are|were)|like\s+you\s+(are|were))\b`},
	{Name: "reveal-system-prompt", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `\b(reveal|show|print|repeat|output|display|tell\s+me|leak|dump)\b[^.\n]{0,30}\b(your|the)\s+(system\s+prompt|initial\s+instructions|hidden\s+instructions|system\s+message|instructions\s+above)\b`},
	{Name: "jailbreak-mode", RiskLevel: RiskHigh, RiskType: RiskTypePromptInjection,
		Pattern: `\b(developer\s+mode|jailbreak(ed)?|do\s+anything\s+now|DAN\s+mode|no\s+(restrictions|limitations|filters)\s+mode)\b`},
	{Name: "new-instructions", RiskLevel: RiskMedium, RiskType: RiskTypePromptInjection,
		Pattern: `\b(new|updated|real)\s+(system\s+)?instructions\s*:`},
	{Name: "fake-system-tag", RiskLevel: RiskMedium, RiskType: RiskTypePromptInjection,
		Pattern: `(<\|?\s*(system|im_start)\s*\|?>|\[\s*(system|INST)\s*\]|###\s*system\s*:)`},
}

// compiledDefaultPatterns are DefaultInputPatterns compiled once (they are constants). Each is held
// to the bounds of a policy's own patterns (a test checks it); one that were not would still be
// screened, by running it over the whole message.
var compiledDefaultPatterns = func() []cPattern {
	out := make([]cPattern, 0, len(DefaultInputPatterns))
	for i, p := range DefaultInputPatterns {
		lvl, _ := parseRiskLevel(p.RiskLevel)
		sc, err := compileScanner(p.Pattern)
		if err != nil {
			sc = &scanner{re: regexp.MustCompile(`(?i)` + p.Pattern)}
		}
		out = append(out, cPattern{name: p.Name, scan: sc, level: lvl, riskType: p.RiskType, defaultIndex: i,
			code: riskCode(p.RiskType)})
	}
	return out
}()

// defaultScanSet screens a message with every default pattern in one pass.
var defaultScanSet = func() *scanSet {
	scanners := make([]*scanner, len(compiledDefaultPatterns))
	for i := range compiledDefaultPatterns {
		scanners[i] = compiledDefaultPatterns[i].scan
	}
	return newScanSet(scanners)
}()

// cPattern is a compiled input-guard pattern.
type cPattern struct {
	name         string
	scan         *scanner
	level        int
	riskType     string
	defaultIndex int    // index in DefaultInputPatterns, or -1 for a policy's own pattern
	code         string // the deny code of a blocking match: oap.<riskType>
}

// riskCode is the OAP reason code of a blocking finding of riskType: oap.<riskType>.
func riskCode(riskType string) string {
	if riskType == RiskTypePromptInjection {
		return CodePromptInjection
	}
	return "oap." + riskType
}
