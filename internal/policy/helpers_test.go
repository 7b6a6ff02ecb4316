package policy

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testNow is the fixed clock of the tests.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return testNow }

func ptrTime(t time.Time) *time.Time { return &t }

func sel(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

func passport(name string, lbls map[string]string, caps ...string) Passport {
	p := Passport{Name: name, Namespace: "agents", UID: "uid-" + name, Labels: lbls, Generation: 1,
		Spec: PassportSpec{Owner: PassportOwner{ID: "owner@example.com", Type: "user"}, AssuranceLevel: "L2"}}
	for _, c := range caps {
		p.Spec.Capabilities = append(p.Spec.Capabilities, Capability{ID: c})
	}
	return p
}

// fakeEvaluator decides by tool name: eval_deny, eval_modify, eval_broken (error), else allow.
type fakeEvaluator struct{}

func (fakeEvaluator) Evaluate(_ context.Context, req Request) (Verdict, error) {
	switch req.ToolName {
	case "eval_broken":
		return Verdict{}, errors.New("evaluator unavailable")
	case "eval_deny":
		return Verdict{Decision: DecisionDeny, Code: "oap.policy_denied", Message: "external says no"}, nil
	case "eval_modify":
		return Verdict{Decision: DecisionModify, ModifiedInput: map[string]any{"safe": true}}, nil
	}
	return Verdict{Decision: DecisionAllow, Message: "external ok"}, nil
}

// sampleBundle is a realistic namespace used by the decision tests and the fuzz seeds.
func sampleBundle() Bundle {
	dev := passport("dev", map[string]string{"team": "dev"}, CapCommandExecute, CapFileRead, CapFileWrite,
		CapWebFetch, CapMCPToolExecute)
	dev.Spec.AgentID = "agent-dev"
	dev.Spec.Limits = map[string]any{CapCommandExecute: map[string]any{
		"allowed_commands": []any{"git", "ls", "cat", "echo"},
		"blocked_patterns": []any{"rm -rf", "sudo"},
	}}
	dev.Spec.Subjects.ServiceAccounts = []string{"coder"}
	suspended := passport("suspended", map[string]string{"team": "dev"}, CapCommandExecute)
	suspended.Spec.Status = StatusSuspended
	revoked := passport("revoked", nil, CapCommandExecute)
	revoked.Spec.Status = StatusRevoked
	expired := passport("expired", nil, CapCommandExecute)
	expired.Spec.ExpiresAt = ptrTime(testNow.Add(-time.Hour))
	soon := passport("soon", nil, CapCommandExecute)
	soon.Spec.ExpiresAt = ptrTime(testNow.Add(10 * time.Second))
	reader := passport("reader", map[string]string{"team": "ro"}, CapFileRead)
	reader.Spec.UnmappedTools = UnmappedAllow
	ops := passport("ops", map[string]string{"team": "ops"}, CapCommandExecute, "tool.generic")
	ops.Spec.Limits = map[string]any{CapCommandExecute: map[string]any{
		"allowed_commands": []any{"*"}, "blocked_patterns": []any{"curl"},
	}}
	return Bundle{
		Version:   BundleVersion,
		Namespace: "agents",
		Passports: []Passport{dev, suspended, revoked, expired, soon, reader, ops},
		Policies: []Policy{
			{Name: "shell-safety", Namespace: "agents", Spec: PolicySpec{
				PolicyID: "system.command.execute.v1",
				Priority: 10,
				PassportSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"dev", "ops"}}}},
				ToolCapabilities: []ToolCapability{{Tool: "deploy_*", Capability: "deploy.production"}, {Tool: "generic_*", Capability: "tool.generic"}},
				Rules: []Rule{
					{Name: "deny-force-push", Tools: []string{"bash"}, When: `input.command.contains("push --force")`,
						Action: ActionDeny, Code: "tollgate.force_push", Message: "force pushes are not allowed"},
					{Name: "allow-git", Tools: []string{"bash"}, When: `input.command.startsWith("git ")`, Action: ActionAllow, Message: "git is fine"},
					{Name: "deny-admin", Tools: []string{"*_admin"}, Action: ActionDeny},
					{Name: "fetch-timeout", Tools: []string{"web_fetch"}, Action: ActionModify,
						Modify: &InputPatch{Set: []InputField{{Path: "timeout", Value: "10"}, {Path: "options.via", Value: `"proxy-" + passport.name`}},
							Remove: []string{"headers.authorization"}}},
					{Name: "cel-error", Tools: []string{"generic_err"}, When: `input.missing == 1`, Action: ActionDeny},
				},
				Requires: []Requirement{{Name: "no-subagent-writes", Tools: []string{"write_file"},
					Expression: `!request.is_subagent`, Code: "oap.requirement_failed", Message: "sub-agents may not write files"}},
			}},
			{Name: "read-only", Namespace: "agents", Spec: PolicySpec{
				PassportSelector: sel("team", "ro"),
				DefaultAction:    ActionDeny,
				Rules:            []Rule{{Name: "allow-read", Tools: []string{"read_file"}, Action: ActionAllow}},
			}},
			{Name: "audit-ls", Namespace: "agents", Spec: PolicySpec{
				PassportSelector:  sel("team", "dev"),
				EnforcementAction: EnforcementDryRun,
				Rules:             []Rule{{Name: "no-ls", Tools: []string{"ls"}, Action: ActionDeny, Message: "ls would be denied"}},
			}},
			{Name: "warn-edits", Namespace: "agents", Spec: PolicySpec{
				PassportSelector:  sel("team", "dev"),
				EnforcementAction: EnforcementWarn,
				Rules:             []Rule{{Name: "no-str-replace", Tools: []string{"str_replace"}, Action: ActionDeny, Message: "prefer write_file"}},
			}},
			{Name: "external", Namespace: "agents", Spec: PolicySpec{
				PassportSelector:  sel("team", "ops"),
				ToolCapabilities:  []ToolCapability{{Tool: "eval_*", Capability: "tool.generic"}},
				Rules:             []Rule{{Name: "generic-ok", Tools: []string{"generic_*"}, Action: ActionAllow}},
				ExternalEvaluator: &ExternalEvaluatorSpec{URL: "http://evaluator.agents.svc:8080/decide", Timeout: "200ms"},
			}},
			{Name: "open-policy", Namespace: "agents", Spec: PolicySpec{
				PassportSelector: sel("team", "ops"),
				FailurePolicy:    FailOpen,
				Rules:            []Rule{{Name: "flaky", Tools: []string{"generic_flaky"}, When: `input.missing == 1`, Action: ActionDeny}},
			}},
		},
	}
}

func compileSample(t testing.TB, opts ...Option) *Snapshot {
	t.Helper()
	opts = append([]Option{WithClock(fixedClock), WithEvaluators(func(ExternalEvaluatorSpec) Evaluator { return fakeEvaluator{} })}, opts...)
	s, err := Compile(sampleBundle(), opts...)
	if err != nil {
		t.Fatalf("compile sample: %v", err)
	}
	return s
}

// checkInvariants verifies what every decision must carry.
func checkInvariants(t testing.TB, d Decision) {
	t.Helper()
	if d.DecisionID == "" || d.BundleRevision == "" || d.CreatedAt.IsZero() {
		t.Errorf("decision lacks id, revision or time: %+v", d)
	}
	if len(d.Reasons) == 0 || d.Reasons[0].Code == "" {
		t.Errorf("decision has no reason: %+v", d)
	}
	switch d.Decision {
	case DecisionAllow:
		if !d.Allow || d.Reasons[0].Code != CodeAllowed {
			t.Errorf("allow decision inconsistent: %+v", d)
		}
	case DecisionModify:
		if !d.Allow || d.ModifiedInput == nil {
			t.Errorf("modify decision inconsistent: %+v", d)
		}
	case DecisionDeny:
		if d.Allow {
			t.Errorf("deny decision allows: %+v", d)
		}
	default:
		t.Errorf("unknown decision %q", d.Decision)
	}
}
