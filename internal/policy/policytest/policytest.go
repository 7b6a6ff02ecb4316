// Package policytest generates policy bundles for tests and benchmarks: a realistic sample namespace
// and large synthetic bundles matching the engine's performance targets.
package policytest

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// teamLabel is the passport label the generated policies select on.
const teamLabel = "team"

// Namespace is the namespace of generated bundles.
const Namespace = "agents"

// agentCapabilities are granted to every generated passport.
var agentCapabilities = []string{
	policy.CapCommandExecute, policy.CapFileRead, policy.CapFileWrite, policy.CapWebFetch, "tool.generic",
}

// Passport returns an active passport holding the common capabilities and the given labels.
func Passport(name string, lbls map[string]string) policy.Passport {
	caps := make([]policy.Capability, 0, len(agentCapabilities))
	for _, c := range agentCapabilities {
		caps = append(caps, policy.Capability{ID: c})
	}
	return policy.Passport{
		Name: name, Namespace: Namespace, UID: "uid-" + name, Labels: lbls, Generation: 1,
		Spec: policy.PassportSpec{
			AgentID:        "agent-id-" + name,
			Owner:          policy.PassportOwner{ID: "team@example.com", Type: "team"},
			AssuranceLevel: "L1",
			Status:         policy.StatusActive,
			Capabilities:   caps,
			Limits: map[string]any{
				policy.CapCommandExecute: map[string]any{
					"allowed_commands": []any{"git", "ls", "cat", "go", "echo"},
					"blocked_patterns": []any{"rm -rf", "sudo"},
				},
			},
			Subjects: policy.PassportSubjects{ServiceAccounts: []string{"agent"}},
		},
	}
}

// toolCaps maps the generated tool names (tool-0, tool-1, …) to a capability every passport holds.
var toolCaps = []policy.ToolCapability{{Tool: "tool-*", Capability: "tool.generic"}}

// NameRules returns n rules matching on tool names only: rule i covers tool-i; every third denies.
func NameRules(n int) []policy.Rule {
	rules := make([]policy.Rule, 0, n)
	for i := range n {
		r := policy.Rule{Name: "rule-" + strconv.Itoa(i), Tools: []string{"tool-" + strconv.Itoa(i)}, Action: policy.ActionAllow}
		if i%3 == 0 {
			r.Action, r.Code, r.Message = policy.ActionDeny, "oap.policy_denied", "tool "+strconv.Itoa(i)+" is not allowed"
		}
		rules = append(rules, r)
	}
	return rules
}

// celConditions are realistic `when` conditions that do not match ToolRequest's bash input.
var celConditions = []string{
	`has(input.command) && input.command.startsWith("rm ")`,
	`has(input.command) && input.command.contains("curl") && input.command.contains("| sh")`,
	`has(input.command) && input.command.matches("^(shutdown|reboot|halt)\\b")`,
	`has(input.timeout) && input.timeout > 600`,
	`request.is_subagent && tool == "bash"`,
	`has(input.command) && input.command.size() > 4096`,
	`passport.assuranceLevel == "L0"`,
	`has(input.command) && input.command.contains("/etc/shadow")`,
	`has(limits.max_runtime) && has(input.timeout) && input.timeout > limits.max_runtime`,
	`has(input.env) && "AWS_SECRET_ACCESS_KEY" in input.env`,
}

// CELRulesDistinct is CELRules with every condition made distinct (a clause naming the rule), so
// that a decision keeps no result of one rule for another: it evaluates all n expressions.
func CELRulesDistinct(n int) []policy.Rule {
	rules := CELRules(n)
	for i := range rules {
		rules[i].When = "(" + rules[i].When + `) && tool != "tool-` + strconv.Itoa(i) + `"`
	}
	return rules
}

// CELRules returns n rules on bash with CEL `when` conditions, none matching ToolRequest's input,
// so a decision evaluates all n. The rules cycle through 10 conditions: a decision evaluates each
// distinct one once (see CELRulesDistinct).
func CELRules(n int) []policy.Rule {
	rules := make([]policy.Rule, 0, n)
	for i := range n {
		rules = append(rules, policy.Rule{
			Name: "cel-" + strconv.Itoa(i), Tools: []string{"bash"}, When: celConditions[i%len(celConditions)],
			Action: policy.ActionDeny, Code: "oap.policy_denied",
		})
	}
	return rules
}

// OnePolicyBundle returns a bundle with the passport "agent" and one policy "bench" with rules.
func OnePolicyBundle(rules []policy.Rule) policy.Bundle {
	return policy.Bundle{
		Version:   policy.BundleVersion,
		Namespace: Namespace,
		Passports: []policy.Passport{Passport("agent", map[string]string{teamLabel: "team-0"})},
		Policies: []policy.Policy{{Name: "bench", Namespace: Namespace, Generation: 1, Spec: policy.PolicySpec{
			PolicyID: "bench.v1", ToolCapabilities: toolCaps, Rules: rules,
		}}},
	}
}

// LargeBundle returns a bundle of passports "agent-<i>" spread over max(policies/2, 1) teams (label
// team=team-<k>) and policies "policy-<j>", each selecting one team (so every passport is selected by
// about two policies) with 100 name-only rules and two CEL rules on bash.
func LargeBundle(passports, policies int) policy.Bundle {
	teams := max(policies/2, 1)
	b := policy.Bundle{Version: policy.BundleVersion, Namespace: Namespace,
		Passports: make([]policy.Passport, 0, passports), Policies: make([]policy.Policy, 0, policies)}
	for i := range passports {
		b.Passports = append(b.Passports, Passport("agent-"+strconv.Itoa(i),
			map[string]string{teamLabel: "team-" + strconv.Itoa(i%teams), "tier": "standard"}))
	}
	for j := range policies {
		rules := NameRules(100)
		for k := range 2 {
			rules = append(rules, policy.Rule{Name: fmt.Sprintf("cel-%d", k), Tools: []string{"bash"},
				When: celConditions[(j+k)%len(celConditions)], Action: policy.ActionDeny})
		}
		b.Policies = append(b.Policies, policy.Policy{Name: "policy-" + strconv.Itoa(j), Namespace: Namespace, Generation: 1,
			Spec: policy.PolicySpec{
				PolicyID:         "generated.policy-" + strconv.Itoa(j),
				Priority:         int32(j % 7),
				PassportSelector: &metav1.LabelSelector{MatchLabels: map[string]string{teamLabel: "team-" + strconv.Itoa(j%teams)}},
				ToolCapabilities: toolCaps,
				Rules:            rules,
			}})
	}
	return b
}

// ToolRequest returns a pre_tool_call request for passport and tool with a harmless bash-like input.
func ToolRequest(passport, tool string) policy.Request {
	return policy.Request{
		Passport:  passport,
		ToolName:  tool,
		ToolInput: map[string]any{"command": "git status", "timeout": 30},
		ThreadID:  "thread-1",
		CallID:    "call-1",
	}
}

// Sample returns a small realistic namespace: passport "coder" (team=dev, git/ls/cat/go/echo allowed,
// rm -rf and sudo blocked), passport "suspended", and the policy "shell-safety" (policyID
// system.command.execute.v1) that denies force pushes, allows git, rewrites web_fetch timeouts,
// limits web_fetch to 30 calls a minute per thread and guards LLM input and responses.
func Sample() policy.Bundle {
	coder := Passport("coder", map[string]string{teamLabel: "dev"})
	suspended := Passport("suspended", map[string]string{teamLabel: "dev"})
	suspended.Spec.Status = policy.StatusSuspended
	return policy.Bundle{
		Version:   policy.BundleVersion,
		Namespace: Namespace,
		Passports: []policy.Passport{coder, suspended},
		Policies: []policy.Policy{{Name: "shell-safety", Namespace: Namespace, Generation: 1, Spec: policy.PolicySpec{
			PolicyID:         "system.command.execute.v1",
			PassportSelector: &metav1.LabelSelector{MatchLabels: map[string]string{teamLabel: "dev"}},
			Rules: []policy.Rule{
				{Name: "deny-force-push", Tools: []string{"bash"}, When: `has(input.command) && input.command.contains("push --force")`,
					Action: policy.ActionDeny, Code: "oap.policy_denied", Message: "force pushes are not allowed"},
				{Name: "allow-git", Tools: []string{"bash"}, When: `has(input.command) && input.command.startsWith("git ")`, Action: policy.ActionAllow},
				{Name: "fetch-timeout", Tools: []string{"web_fetch"}, Action: policy.ActionModify,
					Modify: &policy.InputPatch{Set: []policy.InputField{{Path: "timeout", Value: "10"}}}},
			},
			RateLimits:     []policy.RateLimit{{Name: "fetches", Tools: []string{"web_fetch"}, Limit: 30, Window: "1m", Per: policy.PerThread}},
			InputGuards:    &policy.InputGuards{BlockThreshold: policy.RiskHigh},
			ResponseGuards: &policy.ResponseGuards{SafetyFinishReasons: append([]string{"sensitive"}, policy.DefaultSafetyFinishReasons...)},
		}}},
	}
}
