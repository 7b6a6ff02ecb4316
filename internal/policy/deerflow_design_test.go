package policy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Tests named TestDeerFlow… hold Tollgate to DeerFlow's guardrail design (SafetyFinishReasonMiddleware
// and its SafetyTerminationDetectors; GuardrailMiddleware and its providers); TestOAP… to the Open
// Agent Passport decision.

// decideResponse asks post_llm_call about a response.
func decideResponseHook(t *testing.T, snap *Snapshot, pp, finish, stop string, calls []ToolCall) Decision {
	t.Helper()
	d := snap.Decide(context.Background(), Request{Passport: pp, Hook: HookPostLLMCall, FinishReason: finish,
		StopReason: stop, ToolCalls: calls, Content: "partial answer"})
	checkInvariants(t, d)
	return d
}

func TestDeerFlowSafetyTerminationNeedsToolCalls(t *testing.T) {
	snap, err := Compile(guardBundle(PolicySpec{}), WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	calls := []ToolCall{{Name: "write_file", Arguments: map[string]any{"path": "report.md", "content": "half a sent"}}}
	cases := []struct {
		name          string
		finish, stop  string
		calls         []ToolCall
		allow         bool
		inMessage     string
		wantSuppessed bool
	}{
		{"content_filter without tool calls is allowed", "content_filter", "", nil, true, "carries no tool calls", false},
		{"refusal without tool calls is allowed", "", "refusal", nil, true, "carries no tool calls", false},
		{"SAFETY without tool calls is allowed", "SAFETY", "", []ToolCall{}, true, "carries no tool calls", false},
		{"content_filter with a tool call is suppressed", "content_filter", "", calls, false, "suppressing 1 tool call", true},
		{"a normal stop with tool calls is allowed", "tool_calls", "", calls, true, "not a safety termination", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, pp := range []string{"g", "free"} {
				d := decideResponseHook(t, snap, pp, tc.finish, tc.stop, tc.calls)
				if d.Allow != tc.allow || !strings.Contains(d.Reasons[0].Message, tc.inMessage) {
					t.Errorf("%s: got %s %v, want allow=%v …%s…", pp, d.Decision, d.Reasons, tc.allow, tc.inMessage)
				}
				if got := d.Metadata != nil && d.Metadata.Suppressed != nil; got != tc.wantSuppessed {
					t.Errorf("%s: suppressed_tool_calls present = %v, want %v", pp, got, tc.wantSuppessed)
				}
			}
		})
	}
}

func TestDeerFlowSafetyTerminationDetectors(t *testing.T) {
	glmExtra := PolicySpec{ResponseGuards: &ResponseGuards{SafetyFinishReasons: []string{"sensitive"}}}
	glmDetector := PolicySpec{ResponseGuards: &ResponseGuards{Detectors: []SafetyDetector{
		{Provider: ProviderOpenAICompatible, Reasons: []string{"content_filter", "sensitive", "violation"}}}}}
	anthropicFirst := PolicySpec{ResponseGuards: &ResponseGuards{Detectors: []SafetyDetector{
		{Provider: ProviderAnthropic}, {Provider: ProviderOpenAICompatible}}}}
	type tcase struct {
		name         string
		spec         PolicySpec
		finish, stop string
		detector     string // "" when no detector fires
	}
	cases := []tcase{
		// OpenAI-compatible: finish_reason content_filter, case-insensitive.
		{"openai content_filter", PolicySpec{}, "content_filter", "", DetectorOpenAIContentFilter},
		{"openai CONTENT_FILTER", PolicySpec{}, "CONTENT_FILTER", "", DetectorOpenAIContentFilter},
		{"openai stop", PolicySpec{}, "stop", "", ""},
		{"openai tool_calls", PolicySpec{}, "tool_calls", "", ""},
		{"openai length", PolicySpec{}, "length", "", ""},
		// Anthropic: stop_reason refusal; never read from finish_reason, never stealing it.
		{"anthropic refusal", PolicySpec{}, "", "refusal", DetectorAnthropicRefusal},
		{"anthropic end_turn", PolicySpec{}, "", "end_turn", ""},
		{"anthropic tool_use", PolicySpec{}, "", "tool_use", ""},
		{"anthropic max_tokens", PolicySpec{}, "", "max_tokens", ""},
		{"finish_reason refusal is not Anthropic's signal", PolicySpec{}, "refusal", "", ""},
		{"stop_reason content_filter is not OpenAI's signal", PolicySpec{}, "", "content_filter", ""},
		{"stop_reason refusal beside finish_reason stop", PolicySpec{}, "stop", "refusal", DetectorAnthropicRefusal},
		{"both fields: the first detector in order wins", PolicySpec{}, "content_filter", "refusal", DetectorOpenAIContentFilter},
		{"both fields: configured order", anthropicFirst, "content_filter", "refusal", DetectorAnthropicRefusal},
		// GLM's sensitive only when configured.
		{"glm sensitive by default", PolicySpec{}, "sensitive", "", ""},
		{"glm sensitive via safetyFinishReasons", glmExtra, "sensitive", "", DetectorOpenAIContentFilter},
		{"safetyFinishReasons keeps Gemini", glmExtra, "SAFETY", "", DetectorGeminiSafety},
		{"glm sensitive via the detector's reasons", glmDetector, "sensitive", "", DetectorOpenAIContentFilter},
		{"glm violation via the detector's reasons", glmDetector, "violation", "", DetectorOpenAIContentFilter},
		{"a detector list leaves Gemini out", glmDetector, "SAFETY", "", ""},
		{"a detector list leaves Anthropic out", glmDetector, "", "refusal", ""},
	}
	for _, r := range DefaultGeminiSafetyReasons {
		cases = append(cases, tcase{"gemini " + r, PolicySpec{}, r, "", DetectorGeminiSafety})
	}
	cases = append(cases, tcase{"gemini safety in lower case", PolicySpec{}, "safety", "", DetectorGeminiSafety})
	for _, r := range []string{"STOP", "MAX_TOKENS", "LANGUAGE", "NO_IMAGE", "OTHER", "IMAGE_OTHER",
		"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "FINISH_REASON_UNSPECIFIED"} {
		cases = append(cases, tcase{"gemini " + r + " is not safety", PolicySpec{}, r, "", ""})
	}
	calls := []ToolCall{{Name: "bash", Arguments: map[string]any{"command": "cat /etc/SECRET-ARG"}},
		{Name: "write_file", Arguments: `{"path":"SECRET-PATH"}`}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := Compile(guardBundle(tc.spec), WithClock(fixedClock))
			if err != nil {
				t.Fatal(err)
			}
			d := decideResponseHook(t, snap, "g", tc.finish, tc.stop, calls)
			if tc.detector == "" {
				if !d.Allow || (d.Metadata != nil && d.Metadata.Suppressed != nil) {
					t.Fatalf("got %s %v %+v, want allow without suppression", d.Decision, d.Reasons, d.Metadata)
				}
				return
			}
			if d.Allow || d.Reasons[0].Code != CodeResponseBlocked {
				t.Fatalf("got %s %v, want deny %s", d.Decision, d.Reasons, CodeResponseBlocked)
			}
			field, value := "finish_reason", tc.finish
			if tc.detector == DetectorAnthropicRefusal {
				field, value = "stop_reason", tc.stop
			}
			want := Suppression{Detector: tc.detector, ReasonField: field, ReasonValue: value,
				ToolNames: []string{"bash", "write_file"}, Count: 2}
			if s := d.Metadata.Suppressed; s == nil || s.Detector != want.Detector || s.ReasonField != want.ReasonField ||
				s.ReasonValue != want.ReasonValue || !slices.Equal(s.ToolNames, want.ToolNames) || s.Count != want.Count {
				t.Errorf("suppressed_tool_calls = %+v, want %+v", d.Metadata.Suppressed, want)
			}
			data, _ := json.Marshal(d)
			if strings.Contains(string(data), "SECRET") {
				t.Errorf("the decision echoes tool call arguments: %s", data)
			}
		})
	}
	// Normal terminations cannot be configured as safety reasons, whatever their case.
	for _, spec := range []PolicySpec{
		{ResponseGuards: &ResponseGuards{SafetyFinishReasons: []string{"STOP"}}},
		{ResponseGuards: &ResponseGuards{Detectors: []SafetyDetector{{Provider: ProviderAnthropic, Reasons: []string{"end_turn"}}}}},
		{ResponseGuards: &ResponseGuards{Detectors: []SafetyDetector{{Provider: "Bedrock"}}}},
		{ResponseGuards: &ResponseGuards{Detectors: []SafetyDetector{{Provider: ProviderGemini}, {Provider: ProviderGemini}}}},
	} {
		if fe := ValidatePolicy(spec); len(fe) != 1 || !strings.HasPrefix(fe[0].Field, "spec.responseGuards.") {
			t.Errorf("%+v: got %v, want one error under spec.responseGuards", spec.ResponseGuards, fe)
		}
	}
}

func TestDeerFlowAllowlistDefaultReason(t *testing.T) {
	allowlist := func(reason *DefaultReason) PolicySpec {
		return PolicySpec{PolicyID: "allowlist", DefaultAction: ActionDeny, DefaultReason: reason,
			Rules: []Rule{{Name: "allowed-tools", Tools: []string{"web_search", "read_file"}, Action: ActionAllow}}}
	}
	cases := []struct {
		name   string
		spec   PolicySpec
		tool   string
		code   string
		msg    string
		policy string
	}{
		{"allowlisted tool", allowlist(&DefaultReason{Code: CodeToolNotAllowed}), "web_search", CodeAllowed, "", "allowlist#allowed-tools"},
		{"DeerFlow's code for a tool outside the allowlist", allowlist(&DefaultReason{Code: CodeToolNotAllowed, Message: "tool not in allowlist"}),
			"bash", CodeToolNotAllowed, "tool not in allowlist", "allowlist"},
		{"a code alone keeps the default message", allowlist(&DefaultReason{Code: CodeToolNotAllowed}),
			"bash", CodeToolNotAllowed, "no rule of policy allowlist matched and its defaultAction is Deny", "allowlist"},
		{"a message alone keeps oap.policy_denied", allowlist(&DefaultReason{Message: "ask the platform team"}),
			"bash", CodePolicyDenied, "ask the platform team", "allowlist"},
		{"no defaultReason", allowlist(nil), "bash", CodePolicyDenied, "defaultAction is Deny", "allowlist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := Bundle{Namespace: "agents", Passports: []Passport{passport("p", nil, CapCommandExecute, CapWebSearch)},
				Policies: []Policy{{Name: "allowlist", Spec: tc.spec}}}
			b.Passports[0].Spec.Limits = map[string]any{CapCommandExecute: map[string]any{"allowed_commands": []any{"*"}}}
			snap, err := Compile(b, WithClock(fixedClock))
			if err != nil {
				t.Fatal(err)
			}
			d := snap.Decide(context.Background(), Request{Passport: "p", ToolName: tc.tool, ToolInput: map[string]any{"command": "ls"}})
			checkInvariants(t, d)
			if d.Reasons[0].Code != tc.code || !strings.Contains(d.Reasons[0].Message, tc.msg) || d.PolicyID != tc.policy {
				t.Errorf("got %s %v %s, want %s …%s… %s", d.Decision, d.Reasons, d.PolicyID, tc.code, tc.msg, tc.policy)
			}
		})
	}
	for _, tc := range []struct {
		spec PolicySpec
		path string
	}{
		{PolicySpec{DefaultReason: &DefaultReason{Code: CodeToolNotAllowed}}, "spec.defaultReason"},
		{PolicySpec{DefaultAction: ActionDeny, DefaultReason: &DefaultReason{Code: "Tool Not Allowed"}}, "spec.defaultReason.code"},
		{PolicySpec{DefaultAction: ActionDeny, DefaultReason: &DefaultReason{}}, "spec.defaultReason"},
	} {
		if fe := ValidatePolicy(tc.spec); len(fe) != 1 || fe[0].Field != tc.path {
			t.Errorf("%+v: got %v, want one error at %s", tc.spec.DefaultReason, fe, tc.path)
		}
	}
}

func TestOAPChainedModifyNamesEveryPolicy(t *testing.T) {
	modify := func(id string, prio int32, path, value string) Policy {
		return Policy{Name: id, Spec: PolicySpec{PolicyID: id, Priority: prio, Rules: []Rule{{Name: "set-" + path,
			Tools: []string{"web_fetch"}, Action: ActionModify, Modify: &InputPatch{Set: []InputField{{Path: path, Value: value}}}}}}}
	}
	b := Bundle{Namespace: "agents", Passports: []Passport{passport("p", nil, CapWebFetch)}, Policies: []Policy{
		modify("timeouts", 30, "timeout", "10"),
		{Name: "audit", Spec: PolicySpec{PolicyID: "audit", Priority: 20}}, // allows, changes nothing
		modify("headers", 10, "headers.user_agent", "'tollgate'"),
		modify("retries", 0, "retries", "input.timeout * 2"), // sees the first policy's change
	}}
	snap, err := Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	d := snap.Decide(context.Background(), Request{Passport: "p", ToolName: "web_fetch", ToolInput: map[string]any{"url": "https://example.com"}})
	checkInvariants(t, d)
	want := []string{"timeouts#set-timeout", "headers#set-headers.user_agent", "retries#set-retries"}
	if d.Decision != DecisionModify || d.Metadata == nil || !slices.Equal(d.Metadata.ModifiedBy, want) {
		t.Fatalf("got %s, modified_by %+v, want %v", d.Decision, d.Metadata, want)
	}
	if len(d.Reasons) != len(want) {
		t.Fatalf("reasons %v, want one per modifying policy", d.Reasons)
	}
	for i, ref := range want {
		if d.Reasons[i].Code != CodeAllowed || d.Reasons[i].Message != "input modified by "+ref {
			t.Errorf("reasons[%d] = %+v, want oap.allowed naming %s", i, d.Reasons[i], ref)
		}
	}
	if d.PolicyID != want[len(want)-1] {
		t.Errorf("policy_id = %s, want the last modifying policy %s", d.PolicyID, want[len(want)-1])
	}
	in := d.ModifiedInput
	ua, _ := in["headers"].(map[string]any)
	if in["timeout"] != int64(10) || in["retries"] != int64(20) || ua["user_agent"] != "tollgate" || in["url"] != "https://example.com" {
		t.Errorf("modified_input = %v", in)
	}
	// One modifying policy: one reason, and modified_by names it.
	b.Policies = b.Policies[:2]
	snap, err = Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	d = snap.Decide(context.Background(), Request{Passport: "p", ToolName: "web_fetch", ToolInput: map[string]any{"url": "https://example.com"}})
	if len(d.Reasons) != 1 || d.PolicyID != "timeouts#set-timeout" || !slices.Equal(d.Metadata.ModifiedBy, []string{"timeouts#set-timeout"}) {
		t.Errorf("single modify: reasons %v policy %s metadata %+v", d.Reasons, d.PolicyID, d.Metadata)
	}
}
