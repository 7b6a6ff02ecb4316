package policytest_test

import (
	"context"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/policy/policytest"
)

func TestGeneratedBundlesCompileAndDecide(t *testing.T) {
	cases := []struct {
		name   string
		bundle policy.Bundle
		req    policy.Request
		want   string
	}{
		{"name rules allow", policytest.OnePolicyBundle(policytest.NameRules(10)), policytest.ToolRequest("agent", "tool-5"), policy.DecisionAllow},
		{"name rules deny", policytest.OnePolicyBundle(policytest.NameRules(10)), policytest.ToolRequest("agent", "tool-6"), policy.DecisionDeny},
		{"cel rules", policytest.OnePolicyBundle(policytest.CELRules(20)), policytest.ToolRequest("agent", "bash"), policy.DecisionAllow},
		{"sample force push", policytest.Sample(), policy.Request{Passport: "coder", ToolName: "bash", ToolInput: map[string]any{"command": "git push --force"}}, policy.DecisionDeny},
		{"sample fetch", policytest.Sample(), policy.Request{Passport: "coder", ToolName: "web_fetch", ToolInput: map[string]any{"url": "https://example.com/x"}}, policy.DecisionModify},
		{"large", policytest.LargeBundle(200, 20), policytest.ToolRequest("agent-17", "tool-3"), policy.DecisionDeny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := policy.Compile(tc.bundle)
			if err != nil {
				t.Fatal(err)
			}
			if d := snap.Decide(context.Background(), tc.req); d.Decision != tc.want {
				t.Fatalf("got %s %v, want %s", d.Decision, d.Reasons, tc.want)
			}
		})
	}
}
