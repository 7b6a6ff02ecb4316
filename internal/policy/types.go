package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BundleVersion is the version of the Bundle document format this package reads and writes.
const BundleVersion = "tollgate.dev/bundle/v1"

// Bundle is the versioned, serializable input of the engine: every passport and policy of one namespace.
type Bundle struct {
	// Version is the format version; BundleVersion (empty is read as BundleVersion).
	Version string `json:"version"`
	// Namespace is the namespace whose objects the bundle holds.
	Namespace string `json:"namespace"`
	// Passports are the namespace's AgentPassports.
	Passports []Passport `json:"passports"`
	// Policies are the namespace's GuardrailPolicies.
	Policies []Policy `json:"policies"`
}

// Passport is an AgentPassport as the engine sees it: object identity plus spec.
type Passport struct {
	// Name is the object name.
	Name string `json:"name"`
	// Namespace is the object namespace.
	Namespace string `json:"namespace,omitempty"`
	// UID is the object UID; the effective agent id when spec.agentID is empty.
	UID string `json:"uid,omitempty"`
	// Labels are the object labels, matched by policies' passportSelector.
	Labels map[string]string `json:"labels,omitempty"`
	// Generation is the object generation.
	Generation int64 `json:"generation,omitempty"`
	// Spec is the passport spec, JSON-identical to AgentPassport.spec.
	Spec PassportSpec `json:"spec"`
	// AutoSuspension is set while the passport is suspended automatically (AgentPassport
	// status.autoSuspension); it is not part of the passport's digest.
	AutoSuspension *AutoSuspension `json:"autoSuspension,omitempty"`
}

// Policy is a GuardrailPolicy as the engine sees it: object identity plus spec.
type Policy struct {
	// Name is the object name.
	Name string `json:"name"`
	// Namespace is the object namespace.
	Namespace string `json:"namespace,omitempty"`
	// Labels are the object labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Generation is the object generation.
	Generation int64 `json:"generation,omitempty"`
	// ClusterScoped marks a ClusterGuardrailPolicy merged into the namespace's bundle (its Name is
	// cluster/<name>): its default policy id is its Name, it applies to every request even one naming
	// another policy id, it is evaluated after the namespace's policies (on the input they leave), and
	// its toolCapabilities come before theirs.
	ClusterScoped bool `json:"clusterScoped,omitempty"`
	// Spec is the policy spec, JSON-identical to GuardrailPolicy.spec.
	Spec PolicySpec `json:"spec"`
}

// Passport status values.
const (
	// StatusActive lets the agent act within its capabilities and limits.
	StatusActive = "active"
	// StatusSuspended denies every call (the kill switch).
	StatusSuspended = "suspended"
	// StatusRevoked denies every call for good.
	StatusRevoked = "revoked"
)

// PassportSpec mirrors AgentPassport.spec (same JSON field names).
type PassportSpec struct {
	// AgentID is the OAP passport id; defaults to the object UID.
	AgentID string `json:"agentID,omitempty"`
	// Owner is who is accountable for the agent.
	Owner PassportOwner `json:"owner"`
	// AssuranceLevel is the OAP assurance level (L0…L4FIN).
	AssuranceLevel string `json:"assuranceLevel,omitempty"`
	// Status is active (default), suspended or revoked.
	Status string `json:"status,omitempty"`
	// Capabilities are the OAP capabilities the agent holds.
	Capabilities []Capability `json:"capabilities,omitempty"`
	// Limits are free-form per-capability limits keyed by capability id.
	Limits map[string]any `json:"limits,omitempty"`
	// Regions are the regions the agent may operate in.
	Regions []string `json:"regions,omitempty"`
	// ExpiresAt is when the passport stops being valid.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// Subjects lists who may present the passport.
	Subjects PassportSubjects `json:"subjects,omitempty"`
	// UnmappedTools is Deny (default: a tool that maps to no capability is denied with
	// oap.unknown_capability) or Allow.
	UnmappedTools string `json:"unmappedTools,omitempty"`
	// AutoSuspend suspends the passport automatically after repeated denials (acted on by the
	// controllers).
	AutoSuspend *AutoSuspend `json:"autoSuspend,omitempty"`
}

// UnmappedTools values.
const (
	// UnmappedDeny denies tools that map to no capability (the default).
	UnmappedDeny = "Deny"
	// UnmappedAllow lets such tools through to the policies.
	UnmappedAllow = "Allow"
)

// PassportOwner identifies who is accountable for an agent.
type PassportOwner struct {
	// ID is the owner's identifier.
	ID string `json:"id"`
	// Type is user, team, org or service.
	Type string `json:"type,omitempty"`
}

// Capability grants one OAP capability with optional free-form parameters.
type Capability struct {
	// ID is the OAP capability id, e.g. system.command.execute.
	ID string `json:"id"`
	// Params are free-form parameters, visible in CEL as passport.capabilities[id].
	Params map[string]any `json:"params,omitempty"`
}

// PassportSubjects lists who may present a passport.
type PassportSubjects struct {
	// ServiceAccounts are ServiceAccount names in the passport's namespace whose pods may present it.
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`
}

// Enforcement actions, failure policies, default actions and rule actions (CRD enum values).
const (
	// EnforcementEnforce applies the policy's verdicts.
	EnforcementEnforce = "Enforce"
	// EnforcementDryRun never changes the outcome; would-be results go into metadata.
	EnforcementDryRun = "DryRun"
	// EnforcementWarn allows and returns the would-be reason as a warning.
	EnforcementWarn = "Warn"
	// FailClosed denies with oap.evaluator_error when evaluation fails.
	FailClosed = "Closed"
	// FailOpen skips the failing policy when evaluation fails.
	FailOpen = "Open"
	// ActionAllow allows the call.
	ActionAllow = "Allow"
	// ActionDeny denies the call.
	ActionDeny = "Deny"
	// ActionModify rewrites the call's input and lets it through.
	ActionModify = "Modify"
	// PerPassport counts rate-limited calls per passport.
	PerPassport = "Passport"
	// PerThread counts rate-limited calls per conversation thread.
	PerThread = "Thread"
)

// Risk levels of input-guard findings, lowest to highest.
const (
	RiskSafe     = "SAFE"
	RiskLow      = "LOW"
	RiskMedium   = "MEDIUM"
	RiskHigh     = "HIGH"
	RiskCritical = "CRITICAL"
)

// PolicySpec mirrors GuardrailPolicy.spec (same JSON field names).
type PolicySpec struct {
	// PassportSelector selects passports by label; nil or empty selects every passport.
	PassportSelector *metav1.LabelSelector `json:"passportSelector,omitempty"`
	// PolicyID is the OAP policy id reported in decisions; defaults to namespace/name.
	PolicyID string `json:"policyID,omitempty"`
	// EnforcementAction is Enforce (default), DryRun or Warn.
	EnforcementAction string `json:"enforcementAction,omitempty"`
	// FailurePolicy is Closed (default) or Open.
	FailurePolicy string `json:"failurePolicy,omitempty"`
	// DefaultAction is Allow (default) or Deny, used when no rule matched and no evaluator is set.
	DefaultAction string `json:"defaultAction,omitempty"`
	// DefaultReason is the reason code and message of a defaultAction Deny (default
	// oap.policy_denied and a message naming the policy).
	DefaultReason *DefaultReason `json:"defaultReason,omitempty"`
	// Priority orders policies: higher first.
	Priority int32 `json:"priority,omitempty"`
	// ToolCapabilities map tool-name globs to capability ids, overriding the built-in table.
	ToolCapabilities []ToolCapability `json:"toolCapabilities,omitempty"`
	// Rules are evaluated in order; the first match decides.
	Rules []Rule `json:"rules,omitempty"`
	// Requires are CEL conditions that must hold.
	Requires []Requirement `json:"requires,omitempty"`
	// RateLimits cap how often matching tools may be called.
	RateLimits []RateLimit `json:"rateLimits,omitempty"`
	// Budgets cap the sum of a numeric argument of matching tools per period (see Budget).
	Budgets []Budget `json:"budgets,omitempty"`
	// InputGuards screen user messages before LLM calls.
	InputGuards *InputGuards `json:"inputGuards,omitempty"`
	// ResponseGuards screen LLM responses for safety terminations.
	ResponseGuards *ResponseGuards `json:"responseGuards,omitempty"`
	// ExternalEvaluator is consulted when no rule matched, instead of DefaultAction.
	ExternalEvaluator *ExternalEvaluatorSpec `json:"externalEvaluator,omitempty"`
}

// DefaultReason is the reason a policy's defaultAction Deny answers with.
type DefaultReason struct {
	// Code is the OAP reason code, e.g. oap.tool_not_allowed (default oap.policy_denied).
	Code string `json:"code,omitempty"`
	// Message is the human-readable reason.
	Message string `json:"message,omitempty"`
}

// ToolCapability maps a tool-name glob to an OAP capability id.
type ToolCapability struct {
	// Tool is a tool-name glob.
	Tool string `json:"tool"`
	// Capability is the capability id a matching tool call needs.
	Capability string `json:"capability"`
}

// Rule is one ordered rule of a policy.
type Rule struct {
	// Name identifies the rule in decisions (policy_id#name).
	Name string `json:"name"`
	// Tools are tool-name globs (`*` matches any run of characters).
	Tools []string `json:"tools"`
	// When is an optional CEL condition; the rule matches only when it is true.
	When string `json:"when,omitempty"`
	// Action is Allow, Deny or Modify.
	Action string `json:"action"`
	// Code is the OAP reason code of a deny (default oap.policy_denied).
	Code string `json:"code,omitempty"`
	// Message is the human-readable reason.
	Message string `json:"message,omitempty"`
	// Modify is the input patch of a Modify rule.
	Modify *InputPatch `json:"modify,omitempty"`
}

// InputPatch rewrites a tool call's input.
type InputPatch struct {
	// Set assigns fields (dotted paths) from CEL expressions.
	Set []InputField `json:"set,omitempty"`
	// Remove deletes fields by dotted path.
	Remove []string `json:"remove,omitempty"`
}

// InputField sets one input field to the value of a CEL expression.
type InputField struct {
	// Path is the dotted field path, e.g. options.timeout.
	Path string `json:"path"`
	// Value is a CEL expression.
	Value string `json:"value"`
}

// Requirement is a CEL condition that must hold for the tools it covers.
type Requirement struct {
	// Name identifies the requirement.
	Name string `json:"name"`
	// Tools are tool-name globs; empty means every tool.
	Tools []string `json:"tools,omitempty"`
	// Expression is the CEL condition.
	Expression string `json:"expression"`
	// Code is the OAP reason code of the deny when it fails.
	Code string `json:"code"`
	// Message is the human-readable reason.
	Message string `json:"message,omitempty"`
}

// RateLimit caps how many matching calls are allowed per window.
type RateLimit struct {
	// Name identifies the limit.
	Name string `json:"name"`
	// Tools are tool-name globs; empty means every tool.
	Tools []string `json:"tools,omitempty"`
	// Limit is the number of calls allowed per window.
	Limit int32 `json:"limit"`
	// Window is a Go duration string, e.g. "1m".
	Window string `json:"window"`
	// Per is Passport (default) or Thread.
	Per string `json:"per,omitempty"`
}

// InputGuards screen text entering the model's context for prompt injection: the latest user
// message (pre_llm_call), a tool's result (post_tool_call) and, when asked, a tool call's arguments
// (pre_tool_call).
type InputGuards struct {
	// BlockThreshold is the lowest risk level that blocks (default HIGH).
	BlockThreshold string `json:"blockThreshold,omitempty"`
	// DisableDefaultPatterns turns off the built-in prompt-injection patterns.
	DisableDefaultPatterns bool `json:"disableDefaultPatterns,omitempty"`
	// Patterns are additional patterns screened after the built-in ones.
	Patterns []InputPattern `json:"patterns,omitempty"`
	// Hooks are the hooks the guards screen at: pre_llm_call, post_tool_call and pre_tool_call
	// (default DefaultInputGuardHooks).
	Hooks []string `json:"hooks,omitempty"`
}

// DefaultInputGuardHooks are the hooks input guards screen at unless a policy names its own: the
// latest user message before an LLM call and every tool result before it reaches the model.
var DefaultInputGuardHooks = []string{HookPreLLMCall, HookPostToolCall}

// InputPattern is one RE2 pattern matched case-insensitively against the screened text.
type InputPattern struct {
	// Name identifies the pattern in risk details.
	Name string `json:"name"`
	// Pattern is an RE2 regular expression.
	Pattern string `json:"pattern"`
	// RiskLevel is SAFE, LOW, MEDIUM, HIGH or CRITICAL.
	RiskLevel string `json:"riskLevel"`
	// RiskType classifies the risk (default prompt_injection for input patterns, data_leak for
	// output patterns). A blocking match is denied with the code oap.<riskType>.
	RiskType string `json:"riskType,omitempty"`
}

// Safety-termination providers of ResponseGuards.Detectors.
const (
	// ProviderOpenAICompatible reads finish_reason (default content_filter): OpenAI, Azure OpenAI,
	// DeepSeek, Mistral, Qwen, Moonshot, GLM and other OpenAI-compatible APIs.
	ProviderOpenAICompatible = "OpenAICompatible"
	// ProviderAnthropic reads stop_reason (default refusal).
	ProviderAnthropic = "Anthropic"
	// ProviderGemini reads finish_reason (default SAFETY, BLOCKLIST, PROHIBITED_CONTENT, SPII,
	// RECITATION and their IMAGE_ variants).
	ProviderGemini = "Gemini"
)

// ResponseGuards screen LLM responses (hook post_llm_call): a safety termination suppresses the
// response's tool calls, and output patterns screen the response's text.
type ResponseGuards struct {
	// Detectors say which provider signals are safety terminations, checked in order; empty means
	// the built-in detectors (OpenAICompatible, Anthropic, Gemini with their default values).
	Detectors []SafetyDetector `json:"detectors,omitempty"`
	// SafetyFinishReasons are further finish_reason values that mean a safety termination for the
	// OpenAI-compatible detector, e.g. GLM's sensitive.
	SafetyFinishReasons []string `json:"safetyFinishReasons,omitempty"`
	// BlockThreshold is the lowest risk level of an output pattern that blocks (default HIGH).
	BlockThreshold string `json:"blockThreshold,omitempty"`
	// Patterns screen the response's text (content) for what must not be shown: secrets, PII.
	Patterns []InputPattern `json:"patterns,omitempty"`
}

// SafetyDetector detects one provider's safety terminations.
type SafetyDetector struct {
	// Provider is OpenAICompatible, Anthropic or Gemini.
	Provider string `json:"provider"`
	// Reasons replace the provider's default values (compared case-insensitively).
	Reasons []string `json:"reasons,omitempty"`
}

// ExternalEvaluatorSpec is an HTTP endpoint consulted when no rule of the policy matched.
type ExternalEvaluatorSpec struct {
	// URL is the endpoint the decision request is POSTed to.
	URL string `json:"url"`
	// Timeout bounds one call (Go duration string, default 500ms).
	Timeout string `json:"timeout,omitempty"`
}

// DefaultEvaluatorTimeout bounds one external evaluator call when the policy sets no timeout.
const DefaultEvaluatorTimeout = 500 * time.Millisecond

// TimeoutDuration returns the parsed timeout, or DefaultEvaluatorTimeout when empty or invalid.
func (e ExternalEvaluatorSpec) TimeoutDuration() time.Duration {
	if e.Timeout == "" {
		return DefaultEvaluatorTimeout
	}
	d, err := time.ParseDuration(e.Timeout)
	if err != nil || d <= 0 {
		return DefaultEvaluatorTimeout
	}
	return d
}

// Hooks a Request can come from.
const (
	// HookPreToolCall asks whether a tool call may run (the default).
	HookPreToolCall = "pre_tool_call"
	// HookPreLLMCall screens the latest user message before an LLM call.
	HookPreLLMCall = "pre_llm_call"
	// HookPostLLMCall screens an LLM response: its tool calls and its text.
	HookPostLLMCall = "post_llm_call"
	// HookPostToolCall screens a tool's result before it goes back to the model.
	HookPostToolCall = "post_tool_call"
)

// Request is one question to the engine; its JSON is the decider's HTTP API.
type Request struct {
	// Passport is "namespace/name" or "name" of the passport presented.
	Passport string `json:"passport,omitempty"`
	// AgentID is the OAP passport id, used when Passport is empty (and checked when both are set).
	AgentID string `json:"agent_id,omitempty"`
	// ToolName is the tool being called (pre_tool_call) or that produced ToolResult (post_tool_call).
	ToolName string `json:"tool_name,omitempty"`
	// ToolInput are the tool's arguments.
	ToolInput map[string]any `json:"tool_input,omitempty"`
	// ToolResult is the tool's result (post_tool_call): text, or any JSON whose strings are screened.
	ToolResult any `json:"tool_result,omitempty"`
	// Hook is pre_tool_call (default), pre_llm_call, post_llm_call or post_tool_call.
	Hook string `json:"hook,omitempty"`
	// Messages are the conversation (pre_llm_call screens the latest user message).
	Messages []Message `json:"messages,omitempty"`
	// FinishReason is the provider's finish reason (post_llm_call).
	FinishReason string `json:"finish_reason,omitempty"`
	// StopReason is the provider's stop reason (post_llm_call), used when FinishReason is empty.
	StopReason string `json:"stop_reason,omitempty"`
	// ToolCalls are the tool calls of the LLM response (post_llm_call).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Content is the LLM response's text (post_llm_call), a string or an array of parts; when
	// empty, the latest assistant message of Messages is screened.
	Content Text `json:"content,omitempty"`
	// ThreadID identifies the conversation (rate limits per Thread).
	ThreadID string `json:"thread_id,omitempty"`
	// CallID identifies the tool call.
	CallID string `json:"call_id,omitempty"`
	// IsSubagent says the caller is a sub-agent.
	IsSubagent bool `json:"is_subagent,omitempty"`
	// Timestamp is when the agent made the call (informational; visible in CEL).
	Timestamp time.Time `json:"timestamp,omitzero"`
	// PolicyID, when set, restricts evaluation to policies with that policy id (OAP verify route).
	// It is never read from JSON so that callers cannot skip policies.
	PolicyID string `json:"-"`
	// Caller, when set, is the authenticated ServiceAccount asking: the passport must list it in
	// spec.subjects.serviceAccounts, else the decision is a deny oap.subject_not_allowed. It comes
	// from authentication, never from JSON. Nil means authentication is off (local use).
	Caller *Caller `json:"-"`
}

// Caller is an authenticated caller: a Kubernetes ServiceAccount.
type Caller struct {
	// Namespace is the ServiceAccount's namespace.
	Namespace string
	// ServiceAccount is the ServiceAccount's name.
	ServiceAccount string
	// AnyNamespace makes the caller match ServiceAccount in every namespace's passports (a static
	// token whose subject is a plain name). TokenReview callers never set it.
	AnyNamespace bool
}

// String returns "namespace/name" ("*/name" for AnyNamespace).
func (c Caller) String() string {
	if c.AnyNamespace {
		return "*/" + c.ServiceAccount
	}
	return c.Namespace + "/" + c.ServiceAccount
}

// Message is one conversation message.
type Message struct {
	// Role is user, assistant, system or tool.
	Role string `json:"role"`
	// Content is the message text.
	Content string `json:"content"`
}

// UnmarshalJSON accepts content as a string or as an array of parts ({type, text}), joining the texts.
func (m *Message) UnmarshalJSON(data []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("message: %w", err)
	}
	m.Role = raw.Role
	text, err := decodeText(raw.Content)
	if err != nil {
		return fmt.Errorf("message content: %w", err)
	}
	m.Content = text
	return nil
}

// Text is message text. Its JSON is a string or an array of parts ({type, text}), whose texts are
// joined with newlines.
type Text string

// UnmarshalJSON accepts a string, an array of parts or null.
func (t *Text) UnmarshalJSON(data []byte) error {
	text, err := decodeText(data)
	if err != nil {
		return fmt.Errorf("content: %w", err)
	}
	*t = Text(text)
	return nil
}

// decodeText reads message content: a JSON string, an array of parts or null (empty).
func decodeText(raw []byte) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("decoding text: %w", err)
		}
		return s, nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("want a string or an array of parts: %w", err)
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// ToolCall is one tool call of an LLM response.
type ToolCall struct {
	// Name is the tool name.
	Name string `json:"name"`
	// Arguments are the call's arguments (free-form; never echoed in decisions).
	Arguments any `json:"arguments,omitempty"`
}

// Decision values.
const (
	// DecisionAllow lets the call run unchanged.
	DecisionAllow = "allow"
	// DecisionDeny blocks the call.
	DecisionDeny = "deny"
	// DecisionModify lets the call run with Decision.ModifiedInput.
	DecisionModify = "modify"
)

// OAP reason codes.
const (
	CodeAllowed           = "oap.allowed"
	CodePassportNotFound  = "oap.passport_not_found"
	CodePassportSuspended = "oap.passport_suspended"
	CodeUnknownCapability = "oap.unknown_capability"
	CodeCommandNotAllowed = "oap.command_not_allowed"
	CodeBlockedPattern    = "oap.blocked_pattern"
	CodePolicyDenied      = "oap.policy_denied"
	CodeRateLimitExceeded = "oap.rate_limit_exceeded"
	CodeEvaluatorError    = "oap.evaluator_error"
	CodeRequirementFailed = "oap.requirement_failed"
	CodePromptInjection   = "oap.prompt_injection"
	CodeResponseBlocked   = "oap.response_blocked"
	CodeSubjectNotAllowed = "oap.subject_not_allowed"
	CodeInvalidRequest    = "oap.invalid_request"
	// CodeToolNotAllowed is DeerFlow's AllowlistProvider code for a tool outside an allowlist; a
	// policy's defaultReason can answer with it.
	CodeToolNotAllowed = "oap.tool_not_allowed"
)

// Decision is the engine's answer; its JSON is the decider's HTTP response.
type Decision struct {
	// DecisionID identifies the decision (unique per snapshot).
	DecisionID string `json:"decision_id"`
	// Allow is true for allow and modify.
	Allow bool `json:"allow"`
	// Decision is allow, deny or modify.
	Decision string `json:"decision"`
	// Reasons explain the decision; never empty (oap.allowed on allow).
	Reasons []Reason `json:"reasons"`
	// PolicyID is the deciding policy's id plus "#rule" when a rule decided.
	PolicyID string `json:"policy_id,omitempty"`
	// ModifiedInput is the rewritten tool input of a modify decision.
	ModifiedInput map[string]any `json:"modified_input,omitempty"`
	// PassportDigest is the sha256 of the RFC 8785 canonical passport.
	PassportDigest string `json:"passport_digest,omitempty"`
	// BundleRevision is the revision of the bundle the snapshot was compiled from.
	BundleRevision string `json:"bundle_revision"`
	// CreatedAt is when the decision was made.
	CreatedAt time.Time `json:"created_at"`
	// ExpiresIn is how many seconds the decision may be cached.
	ExpiresIn int64 `json:"expires_in"`
	// Metadata holds dry-run results, warnings, risk assessments and suppression details.
	Metadata *Metadata `json:"metadata,omitempty"`
}

// Reason is an OAP reason code with a human-readable message.
type Reason struct {
	// Code is an OAP reason code, e.g. oap.allowed.
	Code string `json:"code"`
	// Message is human-readable.
	Message string `json:"message,omitempty"`
}

// Metadata is the optional detail of a Decision.
type Metadata struct {
	// DryRun lists what DryRun policies would have done.
	DryRun []PolicyResult `json:"dry_run,omitempty"`
	// Warnings are the reasons of Warn policies (and other non-fatal findings).
	Warnings []PolicyResult `json:"warnings,omitempty"`
	// Risk is the guards' risk assessment of the screened text (pre_llm_call, post_tool_call,
	// post_llm_call content, pre_tool_call arguments).
	Risk *RiskAssessment `json:"risk_assessment,omitempty"`
	// Suppressed describes the suppressed tool calls (post_llm_call).
	Suppressed *Suppression `json:"suppressed_tool_calls,omitempty"`
	// ModifiedBy names every policy (policy_id#rule) that changed the input of a modify decision,
	// in the order they applied.
	ModifiedBy []string `json:"modified_by,omitempty"`
}

// PolicyResult is what one policy decided or would have decided.
type PolicyResult struct {
	// PolicyID is the policy id plus "#rule".
	PolicyID string `json:"policy_id"`
	// Decision is allow, deny or modify.
	Decision string `json:"decision"`
	// Reason is the policy's reason.
	Reason Reason `json:"reason"`
	// ModifiedInput is the would-be rewritten input of a modify.
	ModifiedInput map[string]any `json:"modified_input,omitempty"`
}

// RiskAssessment is the guards' verdict on the screened text.
type RiskAssessment struct {
	// HasRisk is true when any pattern above SAFE matched.
	HasRisk bool `json:"has_risk"`
	// RiskLevel is the highest matched level (SAFE when none).
	RiskLevel string `json:"risk_level"`
	// RiskType is the risk type of the highest match.
	RiskType string `json:"risk_type,omitempty"`
	// Confidence is a heuristic confidence in [0,1].
	Confidence float64 `json:"confidence"`
	// Details name the matched patterns.
	Details []string `json:"details,omitempty"`
}

// Suppression describes tool calls suppressed after a safety termination (post_llm_call).
type Suppression struct {
	// Detector names the detector that fired: openai_compatible_content_filter, anthropic_refusal
	// or gemini_safety.
	Detector string `json:"detector"`
	// ReasonField is finish_reason or stop_reason.
	ReasonField string `json:"reason_field"`
	// ReasonValue is the provider's value, e.g. content_filter.
	ReasonValue string `json:"reason_value"`
	// ToolNames are the names of the suppressed calls (never their arguments).
	ToolNames []string `json:"tool_names"`
	// Count is the number of suppressed calls.
	Count int `json:"count"`
}
