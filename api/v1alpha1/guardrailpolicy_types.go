package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnforcementAction says what a policy's verdicts do.
// +kubebuilder:validation:Enum=Enforce;DryRun;Warn
type EnforcementAction string

const (
	// EnforcementEnforce applies the policy's verdicts.
	EnforcementEnforce EnforcementAction = "Enforce"
	// EnforcementDryRun never changes the outcome; what it would have done is reported in metadata.
	EnforcementDryRun EnforcementAction = "DryRun"
	// EnforcementWarn allows and returns the would-be reason as a warning.
	EnforcementWarn EnforcementAction = "Warn"
)

// FailurePolicy says what an evaluation error does.
// +kubebuilder:validation:Enum=Closed;Open
type FailurePolicy string

const (
	// FailClosed denies with oap.evaluator_error when evaluation fails.
	FailClosed FailurePolicy = "Closed"
	// FailOpen skips the failing policy when evaluation fails.
	FailOpen FailurePolicy = "Open"
)

// DefaultAction is the verdict when no rule of a policy matched.
// +kubebuilder:validation:Enum=Allow;Deny
type DefaultAction string

const (
	// DefaultAllow allows calls that no rule matched.
	DefaultAllow DefaultAction = "Allow"
	// DefaultDeny denies calls that no rule matched.
	DefaultDeny DefaultAction = "Deny"
)

// RuleAction is what a matching rule does.
// +kubebuilder:validation:Enum=Allow;Deny;Modify
type RuleAction string

const (
	// ActionAllow allows the call.
	ActionAllow RuleAction = "Allow"
	// ActionDeny denies the call.
	ActionDeny RuleAction = "Deny"
	// ActionModify rewrites the call's input and lets it through.
	ActionModify RuleAction = "Modify"
)

// RiskLevel grades the risk of an input-guard finding.
// +kubebuilder:validation:Enum=SAFE;LOW;MEDIUM;HIGH;CRITICAL
type RiskLevel string

// GuardHook is a hook input guards screen at.
// +kubebuilder:validation:Enum=pre_llm_call;post_tool_call;pre_tool_call
type GuardHook string

const (
	// HookPreLLMCall screens the latest user message before an LLM call.
	HookPreLLMCall GuardHook = "pre_llm_call"
	// HookPostToolCall screens a tool's result before it goes back to the model.
	HookPostToolCall GuardHook = "post_tool_call"
	// HookPreToolCall screens a tool call's arguments before it runs.
	HookPreToolCall GuardHook = "pre_tool_call"
)

// SafetyProvider names a provider convention for safety terminations.
// +kubebuilder:validation:Enum=OpenAICompatible;Anthropic;Gemini
type SafetyProvider string

const (
	// ProviderOpenAICompatible reads finish_reason (default content_filter).
	ProviderOpenAICompatible SafetyProvider = "OpenAICompatible"
	// ProviderAnthropic reads stop_reason (default refusal).
	ProviderAnthropic SafetyProvider = "Anthropic"
	// ProviderGemini reads finish_reason (default SAFETY, BLOCKLIST, PROHIBITED_CONTENT, SPII,
	// RECITATION and their IMAGE_ variants).
	ProviderGemini SafetyProvider = "Gemini"
)

// RateLimitScope says what a rate limit counts per.
// +kubebuilder:validation:Enum=Passport;Thread
type RateLimitScope string

// ToolCapability maps tool names to an OAP capability, overriding the built-in table.
type ToolCapability struct {
	// tool is a tool-name glob (`*` matches any run of characters), e.g. `kubectl_*`.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	Tool string `json:"tool"`

	// capability is the OAP capability id a matching tool call needs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+(\.[a-z0-9]+)*$`
	// +required
	Capability string `json:"capability"`
}

// InputField sets one field of the tool input to the value of a CEL expression.
type InputField struct {
	// path is the dotted path of the field in the tool input, e.g. `command` or `options.timeout`.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`
	// +required
	Path string `json:"path"`

	// value is a CEL expression whose result becomes the field's value.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Value string `json:"value"`
}

// InputPatch rewrites a tool call's input.
type InputPatch struct {
	// set assigns fields of the input from CEL expressions.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=path
	// +optional
	Set []InputField `json:"set,omitempty"`

	// remove deletes fields of the input by dotted path.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`
	// +listType=set
	// +optional
	Remove []string `json:"remove,omitempty"`
}

// Rule is one ordered rule of a policy; the first matching rule decides.
// +kubebuilder:validation:XValidation:rule="self.action == 'Modify' ? has(self.modify) : !has(self.modify)",message="modify is required with action Modify and not allowed otherwise",fieldPath=".modify"
// +kubebuilder:validation:XValidation:rule="!has(self.code) || self.action == 'Deny'",message="code is only meaningful with action Deny",fieldPath=".code"
type Rule struct {
	// name identifies the rule in decisions (policy_id#name) and status; unique in a policy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// tools are tool-name globs the rule applies to (`bash`, `file_*`, `*_admin`, `*`).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=atomic
	// +required
	Tools []string `json:"tools"`

	// when is an optional CEL condition over tool, input, passport, limits and request; the rule
	// matches only when it evaluates to true.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	When string `json:"when,omitempty"`

	// action is what the rule does when it matches.
	// +required
	Action RuleAction `json:"action"`

	// code is the OAP reason code of a deny (defaults to oap.policy_denied).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`
	// +optional
	Code string `json:"code,omitempty"`

	// message is the human-readable reason returned with the decision.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// modify is the input patch applied by a Modify rule.
	// +optional
	Modify *InputPatch `json:"modify,omitempty"`
}

// Requirement is a CEL condition that must hold for the tools it covers, else the call is denied.
type Requirement struct {
	// name identifies the requirement in decisions; unique in a policy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// tools are the tool-name globs the requirement covers; empty means every tool.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=atomic
	// +optional
	Tools []string `json:"tools,omitempty"`

	// expression is the CEL condition that must evaluate to true.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Expression string `json:"expression"`

	// code is the OAP reason code of the deny when the requirement fails.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`
	// +required
	Code string `json:"code"`

	// message is the human-readable reason returned when the requirement fails.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// RateLimit caps how many matching calls are allowed per window.
type RateLimit struct {
	// name identifies the limit; unique in a policy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// tools are the tool-name globs the limit counts; empty means every tool.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=atomic
	// +optional
	Tools []string `json:"tools,omitempty"`

	// limit is the number of calls allowed per window.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +required
	Limit int32 `json:"limit"`

	// window is the length of the counting window, e.g. 1m.
	// +kubebuilder:validation:Format=duration
	// +required
	Window metav1.Duration `json:"window"`

	// per says what the calls are counted per: the passport or the conversation thread.
	// +kubebuilder:default=Passport
	// +optional
	Per RateLimitScope `json:"per,omitempty"`
}

// InputPattern is one prompt-injection pattern of the input guards.
type InputPattern struct {
	// name identifies the pattern in risk details.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`

	// pattern is an RE2 regular expression matched case-insensitively against the screened text.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Pattern string `json:"pattern"`

	// riskLevel is the risk a match carries.
	// +required
	RiskLevel RiskLevel `json:"riskLevel"`

	// riskType classifies the risk, e.g. prompt_injection or jailbreak. A blocking match is denied
	// with the reason code oap.<riskType>.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*$`
	// +kubebuilder:default=prompt_injection
	// +optional
	RiskType string `json:"riskType,omitempty"`
}

// InputGuards screen text entering the model's context for prompt injection: the latest user
// message (pre_llm_call), a tool's result (post_tool_call: indirect prompt injection) and, when
// named in hooks, a tool call's arguments (pre_tool_call).
type InputGuards struct {
	// blockThreshold is the lowest risk level that blocks.
	// +kubebuilder:default=HIGH
	// +optional
	BlockThreshold RiskLevel `json:"blockThreshold,omitempty"`

	// disableDefaultPatterns turns off Tollgate's built-in prompt-injection patterns.
	// +optional
	DisableDefaultPatterns bool `json:"disableDefaultPatterns,omitempty"`

	// patterns are additional patterns screened after the built-in ones.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=name
	// +optional
	Patterns []InputPattern `json:"patterns,omitempty"`

	// hooks are the hooks the guards screen at; empty means pre_llm_call and post_tool_call.
	// +kubebuilder:validation:MaxItems=3
	// +listType=set
	// +optional
	Hooks []GuardHook `json:"hooks,omitempty"`
}

// OutputPattern is one pattern screening the text of an LLM response (post_llm_call) for what must
// not be shown: secrets, personal data.
type OutputPattern struct {
	// name identifies the pattern in risk details.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`

	// pattern is an RE2 regular expression matched case-insensitively against the response's text.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Pattern string `json:"pattern"`

	// riskLevel is the risk a match carries.
	// +required
	RiskLevel RiskLevel `json:"riskLevel"`

	// riskType classifies the risk, e.g. pii_leak or secret_leak. A blocking match is denied with
	// the reason code oap.<riskType>.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*$`
	// +kubebuilder:default=data_leak
	// +optional
	RiskType string `json:"riskType,omitempty"`
}

// SafetyDetector detects one provider's safety terminations.
type SafetyDetector struct {
	// provider is the convention the detector reads: OpenAICompatible (finish_reason), Anthropic
	// (stop_reason) or Gemini (finish_reason).
	// +required
	Provider SafetyProvider `json:"provider"`

	// reasons replace the provider's default values (compared case-insensitively).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(r, !(r.lowerAscii() in ['tool_calls', 'stop', 'length', 'max_tokens', 'end_turn', 'tool_use', 'stop_sequence']))",message="normal terminations (tool_calls, stop, length, max_tokens, end_turn, tool_use, stop_sequence) are not safety terminations"
	// +listType=set
	// +optional
	Reasons []string `json:"reasons,omitempty"`
}

// ResponseGuards screen LLM responses (hook post_llm_call). A response a provider ended with a
// safety termination has every tool call suppressed (their arguments may be truncated); a
// response without tool calls is allowed. Output patterns screen the response's text.
type ResponseGuards struct {
	// detectors say which provider signals are safety terminations, checked in order; empty means
	// the built-in OpenAICompatible, Anthropic and Gemini detectors with their default values.
	// +kubebuilder:validation:MaxItems=3
	// +listType=map
	// +listMapKey=provider
	// +optional
	Detectors []SafetyDetector `json:"detectors,omitempty"`

	// safetyFinishReasons are further finish_reason values the OpenAI-compatible detector treats as
	// safety terminations, e.g. GLM's sensitive.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(r, !(r.lowerAscii() in ['tool_calls', 'stop', 'length', 'max_tokens', 'end_turn', 'tool_use', 'stop_sequence']))",message="normal terminations (tool_calls, stop, length, max_tokens, end_turn, tool_use, stop_sequence) are not safety terminations"
	// +listType=set
	// +optional
	SafetyFinishReasons []string `json:"safetyFinishReasons,omitempty"`

	// blockThreshold is the lowest risk level of an output pattern that blocks.
	// +kubebuilder:default=HIGH
	// +optional
	BlockThreshold RiskLevel `json:"blockThreshold,omitempty"`

	// patterns screen the response's text (content) for what must not be shown.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=name
	// +optional
	Patterns []OutputPattern `json:"patterns,omitempty"`
}

// DefaultReason is the reason a defaultAction Deny answers with.
// +kubebuilder:validation:MinProperties=1
type DefaultReason struct {
	// code is the OAP reason code, e.g. oap.tool_not_allowed (defaults to oap.policy_denied).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`
	// +optional
	Code string `json:"code,omitempty"`

	// message is the human-readable reason.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// ExternalEvaluator is an HTTP endpoint consulted when no rule of the policy matched.
type ExternalEvaluator struct {
	// url is the endpoint the decision request is POSTed to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	// +required
	URL string `json:"url"`

	// timeout bounds one call to the evaluator.
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:default="500ms"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// GuardrailPolicySpec declares rules for the passports a policy selects.
// +kubebuilder:validation:XValidation:rule="!has(self.rules) || self.rules.all(r, self.rules.exists_one(o, o.name == r.name))",message="rule names must be unique within a policy",fieldPath=".rules"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultReason) || self.defaultAction == 'Deny'",message="defaultReason is only meaningful with defaultAction Deny",fieldPath=".defaultReason"
type GuardrailPolicySpec struct {
	// passportSelector selects the passports (by label) the policy applies to; empty selects every
	// passport in the namespace.
	// +optional
	PassportSelector *metav1.LabelSelector `json:"passportSelector,omitempty"`

	// policyID is the OAP policy id reported in decisions, e.g. system.command.execute.v1; defaults to
	// namespace/name.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+([._-][a-z0-9]+)*$`
	// +optional
	PolicyID string `json:"policyID,omitempty"`

	// enforcementAction is Enforce, DryRun (report only) or Warn (allow with a warning).
	// +kubebuilder:default=Enforce
	// +optional
	EnforcementAction EnforcementAction `json:"enforcementAction,omitempty"`

	// failurePolicy says whether an evaluation error denies (Closed) or skips the policy (Open).
	// +kubebuilder:default=Closed
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`

	// defaultAction is the verdict when no rule matched and no external evaluator is configured.
	// +kubebuilder:default=Allow
	// +optional
	DefaultAction DefaultAction `json:"defaultAction,omitempty"`

	// defaultReason is the reason code and message of a defaultAction Deny, e.g. oap.tool_not_allowed
	// for an allowlist.
	// +optional
	DefaultReason *DefaultReason `json:"defaultReason,omitempty"`

	// priority orders policies: higher priorities are evaluated first.
	// +kubebuilder:validation:Minimum=-1000
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=0
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// toolCapabilities maps tool-name globs to OAP capability ids, overriding the built-in table.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=tool
	// +optional
	ToolCapabilities []ToolCapability `json:"toolCapabilities,omitempty"`

	// rules are evaluated in order; the first match decides. The list is replaced as a whole
	// (atomic): merging rules from several managers could change their order.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Rules []Rule `json:"rules,omitempty"`

	// requires are CEL conditions that must hold, else the call is denied with their code.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Requires []Requirement `json:"requires,omitempty"`

	// rateLimits cap how often matching tools may be called.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	RateLimits []RateLimit `json:"rateLimits,omitempty"`

	// budgets cap the sum of a numeric argument (e.g. amount) of matching tool calls per passport
	// and period, counting a repeated call_id once.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`

	// inputGuards screen text entering the model's context for prompt injection: user messages
	// (pre_llm_call), tool results (post_tool_call) and, when asked, tool arguments (pre_tool_call).
	// +optional
	InputGuards *InputGuards `json:"inputGuards,omitempty"`

	// responseGuards screen LLM responses (post_llm_call): safety terminations and output patterns.
	// +optional
	ResponseGuards *ResponseGuards `json:"responseGuards,omitempty"`

	// externalEvaluator is consulted when no rule matched, instead of defaultAction.
	// +optional
	ExternalEvaluator *ExternalEvaluator `json:"externalEvaluator,omitempty"`
}

// GuardrailPolicyStatus is the observed state of a GuardrailPolicy.
type GuardrailPolicyStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// enforcedGeneration is the generation the decision endpoints enforce: the newest one that compiled.
	// +optional
	EnforcedGeneration int64 `json:"enforcedGeneration,omitempty"`

	// ruleCount is the number of rules in the enforced generation.
	// +optional
	RuleCount int32 `json:"ruleCount,omitempty"`

	// selectedPassports is the number of passports the policy selects.
	// +optional
	SelectedPassports int32 `json:"selectedPassports,omitempty"`

	// enforcement says how many live decider replicas enforce the current generation (from their
	// DeciderReports); absent when no replica reports.
	// +optional
	Enforcement *PolicyEnforcement `json:"enforcement,omitempty"`

	// conditions are Valid and Ready, plus Reconciling or Stalled while they apply, and Enforced and
	// Degraded once decider replicas report.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PolicyEnforcement is what the decider replicas' reports say about a policy.
type PolicyEnforcement struct {
	// replicas is the number of live decider replicas (a report newer than three intervals).
	// +optional
	Replicas int32 `json:"replicas"`

	// enforcing is how many of them enforce the policy's current generation.
	// +optional
	Enforcing int32 `json:"enforcing"`

	// summary is "enforcing/replicas", e.g. 2/2 (the ENFORCED column).
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Summary string `json:"summary,omitempty"`

	// evaluationErrors is the number of failed evaluations in the replicas' last windows.
	// +optional
	EvaluationErrors int64 `json:"evaluationErrors,omitempty"`

	// failingRule is the rule (policy_id#name) whose evaluation failed last.
	// +kubebuilder:validation:MaxLength=400
	// +optional
	FailingRule string `json:"failingRule,omitempty"`
}

// GuardrailPolicy declares what the AI agents holding the selected passports may do: ordered rules
// over tool calls, requirements, rate limits and LLM input/response guards.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gp,categories=tollgate
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Enforced",type=string,JSONPath=`.status.enforcement.summary`
// +kubebuilder:printcolumn:name="Rules",type=integer,JSONPath=`.status.ruleCount`
// +kubebuilder:printcolumn:name="Enforcement",type=string,JSONPath=`.spec.enforcementAction`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GuardrailPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the policy as declared.
	// +required
	Spec GuardrailPolicySpec `json:"spec"`

	// status is the policy as Tollgate observes it.
	// +optional
	Status GuardrailPolicyStatus `json:"status,omitempty"`
}

// GuardrailPolicyList is a list of GuardrailPolicies.
// +kubebuilder:object:root=true
type GuardrailPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the policies.
	Items []GuardrailPolicy `json:"items"`
}
