package policy

import (
	"context"
	"testing"
)

// clusterBundle is a namespace's bundle holding a permissive namespaced policy and a cluster
// baseline (as the controller merges a ClusterGuardrailPolicy): the baseline denies rm -rf and maps
// kubectl to a capability the passport lacks.
func clusterBundle() Bundle {
	return Bundle{Namespace: "agents",
		Passports: []Passport{passport("bot", nil, "system.command.execute", "data.file.read")},
		Policies: []Policy{
			{Name: "permissive", Spec: PolicySpec{PolicyID: "team.permissive.v1", Priority: 1000,
				ToolCapabilities: []ToolCapability{{Tool: "kubectl", Capability: "data.file.read"}},
				Rules: []Rule{
					{Name: "rewrite", Tools: []string{"bash"}, When: `input.command == "cleanup"`, Action: ActionModify,
						Modify: &InputPatch{Set: []InputField{{Path: "command", Value: `"rm -rf /"`}}}},
					{Name: "allow-all", Tools: []string{"*"}, Action: ActionAllow},
				}}},
			{Name: "cluster/baseline", ClusterScoped: true, Spec: PolicySpec{Priority: -1000,
				ToolCapabilities: []ToolCapability{{Tool: "kubectl", Capability: "cluster.admin"}},
				Rules: []Rule{{Name: "no-rm-rf", Tools: []string{"bash"},
					When: `has(input.command) && input.command.startsWith("rm -rf")`, Action: ActionDeny, Code: "oap.blocked_pattern"}}}},
		}}
}

func TestClusterPolicyCannotBeWeakenedByANamespacedPolicy(t *testing.T) {
	snap, err := Compile(clusterBundle(), WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		req      Request
		code, by string
	}{
		{"a namespaced allow of higher priority", Request{Passport: "bot", ToolName: "bash",
			ToolInput: map[string]any{"command": "rm -rf /tmp"}}, "oap.blocked_pattern", "cluster/baseline#no-rm-rf"},
		{"a namespaced rewrite into what the baseline denies", Request{Passport: "bot", ToolName: "bash",
			ToolInput: map[string]any{"command": "cleanup"}}, "oap.blocked_pattern", "cluster/baseline#no-rm-rf"},
		{"a request naming the namespaced policy's id", Request{Passport: "bot", ToolName: "bash", PolicyID: "team.permissive.v1",
			ToolInput: map[string]any{"command": "rm -rf /tmp"}}, "oap.blocked_pattern", "cluster/baseline#no-rm-rf"},
		{"a namespaced toolCapabilities remapping", Request{Passport: "bot", ToolName: "kubectl",
			ToolInput: map[string]any{"args": "get pods"}}, CodeUnknownCapability, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := snap.Decide(ctx, tc.req)
			if d.Decision != DecisionDeny || d.Reasons[0].Code != tc.code {
				t.Fatalf("got %s %v, want deny %s", d.Decision, d.Reasons, tc.code)
			}
			if tc.by != "" && d.PolicyID != tc.by {
				t.Errorf("decided by %q, want %q", d.PolicyID, tc.by)
			}
		})
	}
	if d := snap.Decide(ctx, Request{Passport: "bot", ToolName: "bash", ToolInput: map[string]any{"command": "ls"}}); d.Decision != DecisionAllow {
		t.Errorf("ls: got %s %v, want allow (the namespace's own allow where the baseline does not deny)", d.Decision, d.Reasons)
	}
	// A request naming a policy id that only a cluster policy carries evaluates it.
	d := snap.Decide(ctx, Request{Passport: "bot", ToolName: "bash", PolicyID: "cluster/baseline", ToolInput: map[string]any{"command": "ls"}})
	if d.Decision != DecisionAllow {
		t.Errorf("naming the cluster policy's id: got %s %v, want allow", d.Decision, d.Reasons)
	}
	if d := snap.Decide(ctx, Request{Passport: "bot", ToolName: "bash", PolicyID: "nobody.v1", ToolInput: map[string]any{"command": "ls"}}); d.Decision != DecisionDeny || d.Reasons[0].Code != CodePolicyDenied {
		t.Errorf("naming an unknown id: got %s %v, want deny %s (a cluster policy alone does not count as the named one)", d.Decision, d.Reasons, CodePolicyDenied)
	}
}

func TestClusterPolicyIDDefaultsToItsName(t *testing.T) {
	b := clusterBundle()
	b.Policies[1].Spec.Rules[0].Code = ""
	snap, err := Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	d := snap.Decide(context.Background(), Request{Passport: "bot", ToolName: "bash", ToolInput: map[string]any{"command": "rm -rf /"}})
	if d.PolicyID != "cluster/baseline#no-rm-rf" {
		t.Errorf("policy id %q, want cluster/baseline#no-rm-rf (not agents/cluster/baseline)", d.PolicyID)
	}
	if n := snap.SelectedPassports("cluster/baseline"); n != 1 {
		t.Errorf("cluster/baseline selects %d passports, want 1", n)
	}
}
