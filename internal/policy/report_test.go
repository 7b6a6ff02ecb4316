package policy

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestReportIndex checks that the decisions' policy ids map back to their policies (two policies
// sharing an id are told apart by rule name) and requests to their passports.
func TestReportIndex(t *testing.T) {
	dev := passport("dev", nil, CapCommandExecute)
	dev.Spec.AgentID = "agent-dev"
	b := Bundle{Namespace: "agents", Passports: []Passport{dev, passport("ops", nil, CapCommandExecute)},
		Policies: []Policy{
			{Name: "zeta", Spec: PolicySpec{PolicyID: "shared.v1", Rules: []Rule{{Name: "deny-rm", Tools: []string{"bash"}, Action: ActionDeny}}}},
			{Name: "alpha", Spec: PolicySpec{PolicyID: "shared.v1", Rules: []Rule{{Name: "allow-ls", Tools: []string{"ls"}, Action: ActionAllow}}}},
			{Name: "broken", Spec: PolicySpec{Rules: []Rule{{Name: "bad", Tools: []string{"bash"}, When: "input.command + 1 == 2", Action: ActionDeny}}}},
		}}
	s, err := Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.PolicyNames(), ","); got != "alpha,broken,zeta" {
		t.Fatalf("PolicyNames = %s", got)
	}
	for ref, want := range map[string]int{"shared.v1#deny-rm": 2, "shared.v1#allow-ls": 0, "shared.v1": 0,
		"agents/broken#bad": 1, "agents/broken#external-evaluator": 1, "other#x": -1, "": -1} {
		if got := s.PolicyIndex(ref); got != want {
			t.Errorf("PolicyIndex(%q) = %d, want %d", ref, got, want)
		}
	}
	d := s.Decide(context.Background(), Request{Passport: "dev", ToolName: "bash", ToolInput: map[string]any{"command": "ls"}})
	if d.Reasons[0].Code != CodeEvaluatorError || s.PolicyIndex(d.PolicyID) != 1 {
		t.Fatalf("broken rule: %s %v policy %q", d.Decision, d.Reasons, d.PolicyID)
	}
	for _, c := range []struct {
		passport, agent string
		want            int
	}{{"dev", "", 0}, {"agents/ops", "", 1}, {"", "agent-dev", 0}, {"nobody", "", -1}, {"other/dev", "", -1}} {
		if got := s.PassportIndex(c.passport, c.agent); got != c.want {
			t.Errorf("PassportIndex(%q, %q) = %d, want %d", c.passport, c.agent, got, c.want)
		}
	}
}

// TestAutoSuspension checks that a bundle's automatic suspension denies with a reason saying so
// until its end, and that it does not change the passport's digest.
func TestAutoSuspension(t *testing.T) {
	p := passport("dev", nil, CapCommandExecute)
	digest := PassportDigest(p)
	p.AutoSuspension = &AutoSuspension{Until: testNow.Add(time.Minute), Reason: "3 denials within 10m0s"}
	if PassportDigest(p) != digest {
		t.Fatal("the automatic suspension changed the passport digest")
	}
	now := testNow
	s, err := Compile(Bundle{Namespace: "agents", Passports: []Passport{p}}, WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Passport: "dev", ToolName: "bash", ToolInput: map[string]any{"command": "ls"}}
	d := s.Decide(context.Background(), req)
	if d.Decision != DecisionDeny || d.Reasons[0].Code != CodePassportSuspended ||
		!strings.Contains(d.Reasons[0].Message, "suspended automatically") || !strings.Contains(d.Reasons[0].Message, "3 denials") {
		t.Fatalf("while suspended: %s %v", d.Decision, d.Reasons)
	}
	if d.PassportDigest != digest {
		t.Errorf("decision digest %s, want %s", d.PassportDigest, digest)
	}
	now = testNow.Add(time.Minute)
	if d := s.Decide(context.Background(), req); d.Decision != DecisionAllow {
		t.Fatalf("after the end: %s %v", d.Decision, d.Reasons)
	}
}

func TestAutoSuspendDurations(t *testing.T) {
	a := AutoSuspend{Denials: 1, Within: "5m", For: "-1s"}
	if a.WithinDuration() != 5*time.Minute || a.ForDuration() != DefaultAutoSuspendFor {
		t.Fatalf("durations %v %v", a.WithinDuration(), a.ForDuration())
	}
}
