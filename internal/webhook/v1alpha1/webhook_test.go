package v1alpha1

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func badPolicy() *guardrailsv1alpha1.GuardrailPolicy {
	return &guardrailsv1alpha1.GuardrailPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "agents"},
		Spec: guardrailsv1alpha1.GuardrailPolicySpec{
			Rules: []guardrailsv1alpha1.Rule{
				{Name: "broken-when", Tools: []string{"bash"}, When: "input.command ==", Action: guardrailsv1alpha1.ActionDeny},
			},
			Requires: []guardrailsv1alpha1.Requirement{{Name: "not-bool", Expression: "'x'", Code: "oap.policy_denied"}},
		},
	}
}

func causes(t *testing.T, err error) map[string]string {
	t.Helper()
	var se *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errors.As(err, &se) {
		t.Fatalf("want an Invalid status error, got %T %v", err, err)
	}
	out := map[string]string{}
	for _, c := range se.ErrStatus.Details.Causes {
		out[c.Field] = c.Message
	}
	return out
}

func TestPolicyValidatorReportsEveryFieldPath(t *testing.T) {
	_, err := GuardrailPolicyValidator{}.ValidateCreate(context.Background(), badPolicy())
	got := causes(t, err)
	for _, path := range []string{"spec.rules[0].when", "spec.requires[0].expression"} {
		if _, ok := got[path]; !ok {
			t.Errorf("no cause at %s; causes: %v", path, got)
		}
	}
}

func TestPolicyValidatorWarnsAboutDeadRules(t *testing.T) {
	p := &guardrailsv1alpha1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: guardrailsv1alpha1.GuardrailPolicySpec{
		Rules: []guardrailsv1alpha1.Rule{
			{Name: "all", Tools: []string{"*"}, Action: guardrailsv1alpha1.ActionDeny},
			{Name: "shadowed", Tools: []string{"bash"}, Action: guardrailsv1alpha1.ActionAllow},
			{Name: "never", Tools: []string{"ls"}, When: "false", Action: guardrailsv1alpha1.ActionAllow},
		},
	}}
	warnings, err := GuardrailPolicyValidator{}.ValidateCreate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"spec.rules[1] (shadowed): shadowed by spec.rules[0]", "spec.rules[2] (never): when is always false"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
}

func TestPolicyUpdateWithUnchangedSpecIsNotRejected(t *testing.T) {
	oldP := badPolicy()
	newP := badPolicy()
	newP.Finalizers = []string{"tollgate.dev/bundle"}
	warnings, err := GuardrailPolicyValidator{}.ValidateUpdate(context.Background(), oldP, newP)
	if err != nil || len(warnings) == 0 {
		t.Fatalf("want a warning and no error, got %v, %v", warnings, err)
	}
	newP.Spec.Priority = 5
	if _, err := (GuardrailPolicyValidator{}).ValidateUpdate(context.Background(), oldP, newP); err == nil {
		t.Fatal("a spec change that does not compile must be rejected")
	}
}

func TestPolicyDefaulter(t *testing.T) {
	p := &guardrailsv1alpha1.GuardrailPolicy{Spec: guardrailsv1alpha1.GuardrailPolicySpec{
		RateLimits:        []guardrailsv1alpha1.RateLimit{{Name: "r", Limit: 1, Window: metav1.Duration{Duration: time.Minute}}},
		InputGuards:       &guardrailsv1alpha1.InputGuards{Patterns: []guardrailsv1alpha1.InputPattern{{Name: "x", Pattern: "x", RiskLevel: "LOW"}}},
		ExternalEvaluator: &guardrailsv1alpha1.ExternalEvaluator{URL: "http://e"},
	}}
	if err := (GuardrailPolicyDefaulter{}).Default(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	if s.EnforcementAction != "Enforce" || s.FailurePolicy != "Closed" || s.DefaultAction != "Allow" ||
		s.RateLimits[0].Per != "Passport" || s.InputGuards.BlockThreshold != "HIGH" || s.InputGuards.Patterns[0].RiskType != "prompt_injection" ||
		s.ExternalEvaluator.Timeout.Duration != 500*time.Millisecond {
		t.Fatalf("defaults not written: %+v", s)
	}
}

func TestPassportValidator(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	v := AgentPassportValidator{Now: func() time.Time { return now }}
	p := &guardrailsv1alpha1.AgentPassport{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: guardrailsv1alpha1.AgentPassportSpec{
		Owner:     guardrailsv1alpha1.PassportOwner{ID: "me"},
		Status:    guardrailsv1alpha1.PassportRevoked,
		ExpiresAt: &metav1.Time{Time: now.Add(-time.Hour)},
	}}
	warnings, err := v.ValidateCreate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 2 {
		t.Fatalf("want warnings for no service accounts and expiry, got %v", warnings)
	}
	reactivated := p.DeepCopy()
	reactivated.Spec.Status = guardrailsv1alpha1.PassportActive
	_, err = v.ValidateUpdate(context.Background(), p, reactivated)
	if _, ok := causes(t, err)["spec.status"]; !ok {
		t.Fatalf("reactivating a revoked passport must fail at spec.status: %v", err)
	}
	p.Spec.Owner.ID = ""
	_, err = v.ValidateCreate(context.Background(), p)
	if _, ok := causes(t, err)["spec.owner.id"]; !ok {
		t.Fatalf("missing owner id must fail at spec.owner.id: %v", err)
	}
}

func TestPassportDefaulter(t *testing.T) {
	p := &guardrailsv1alpha1.AgentPassport{}
	if err := (AgentPassportDefaulter{}).Default(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Status != "active" || p.Spec.AssuranceLevel != "L0" || p.Spec.Owner.Type != "user" {
		t.Fatalf("defaults not written: %+v", p.Spec)
	}
}

// BenchmarkValidatePolicy is the GuardrailPolicy validator's own cost (engine compile and warnings)
// on a policy like the shell-safety sample, without decoding or transport.
func BenchmarkValidatePolicy(b *testing.B) {
	p := &guardrailsv1alpha1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shell-safety"}, Spec: guardrailsv1alpha1.GuardrailPolicySpec{
		Rules: []guardrailsv1alpha1.Rule{
			{Name: "no-recursive-delete", Tools: []string{"bash"}, When: "has(input.command) && input.command.lowerAscii().contains('rm -rf')",
				Action: guardrailsv1alpha1.ActionDeny, Code: "oap.blocked_pattern"},
			{Name: "no-sudo", Tools: []string{"bash"}, When: `has(input.command) && input.command.matches('(^|[;&|\\s])sudo(\\s|$)')`,
				Action: guardrailsv1alpha1.ActionDeny, Code: "oap.blocked_pattern"},
			{Name: "read-only-tools", Tools: []string{"read_file", "ls", "grep", "web_search"}, Action: guardrailsv1alpha1.ActionAllow},
		},
	}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (GuardrailPolicyValidator{}).ValidateCreate(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
