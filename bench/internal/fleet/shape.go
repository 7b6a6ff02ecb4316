// Package fleet generates a fleet of namespaces holding AgentPassports, GuardrailPolicies and
// ClusterGuardrailPolicies (as API objects), builds their bundles through convert.BundleBuilder as
// the controller does, and runs the whole system in envtest with several decider replicas to time
// how fast API writes reach every replica (Run).
package fleet

import (
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Label marks the fleet's namespaces; the fleet's cluster policies select it.
const Label = "bench.tollgate.dev/fleet"

// Tool is the tool every probe decision calls; every passport may call it.
const Tool = "tool-1"

// teams is the number of passport teams per namespace the namespaced policies select on.
const teams = 5

// Shape is the size of a fleet.
type Shape struct {
	// Namespaces is the number of namespaces.
	Namespaces int
	// Passports and Policies are per namespace.
	Passports, Policies int
	// Rules is the number of rules of each namespaced policy (name rules, two of them CEL).
	Rules int
	// ClusterPolicies select every fleet namespace (at least one is generated).
	ClusterPolicies int
}

// Total returns the fleet's passports and namespaced policies.
func (s Shape) Total() (passports, policies int) {
	return s.Namespaces * s.Passports, s.Namespaces * s.Policies
}

// String describes the shape, e.g. "1,000 namespaces × (100 passports + 10 policies of 10 rules) + 1 cluster policy".
func (s Shape) String() string {
	return fmt.Sprintf("%d namespaces × (%d passports + %d policies of %d rules) + %d cluster polic%s",
		s.Namespaces, s.Passports, s.Policies, s.Rules, s.clusterPolicies(), map[bool]string{true: "y", false: "ies"}[s.clusterPolicies() == 1])
}

func (s Shape) clusterPolicies() int { return max(s.ClusterPolicies, 1) }

// Namespace returns the name of namespace i.
func (s Shape) Namespace(i int) string { return fmt.Sprintf("fleet-%04d", i) }

// PassportName returns the name of passport j of a namespace.
func PassportName(j int) string { return "agent-" + strconv.Itoa(j) }

// ClusterPolicyName returns the name of cluster policy k.
func ClusterPolicyName(k int) string { return "fleet-baseline-" + strconv.Itoa(k) }

// PassportObjects returns the passports of namespace i.
func (s Shape) PassportObjects(i int) []guardrailsv1alpha1.AgentPassport {
	out := make([]guardrailsv1alpha1.AgentPassport, s.Passports)
	for j := range out {
		out[j] = guardrailsv1alpha1.AgentPassport{
			ObjectMeta: metav1.ObjectMeta{Name: PassportName(j), Namespace: s.Namespace(i),
				Labels: map[string]string{"team": "team-" + strconv.Itoa(j%teams)}},
			Spec: guardrailsv1alpha1.AgentPassportSpec{
				AgentID:        fmt.Sprintf("%s.%s", s.Namespace(i), PassportName(j)),
				Owner:          guardrailsv1alpha1.PassportOwner{ID: "team@example.com", Type: "team"},
				AssuranceLevel: "L1",
				Status:         guardrailsv1alpha1.PassportActive,
				Capabilities: []guardrailsv1alpha1.Capability{{ID: policy.CapCommandExecute}, {ID: policy.CapFileRead},
					{ID: "tool.generic"}},
				Subjects: guardrailsv1alpha1.PassportSubjects{ServiceAccounts: []string{"agent"}},
			},
		}
	}
	return out
}

// GuardrailPolicies returns the namespaced policies of namespace i: each selects one team and
// holds Rules rules over the generated tool names (tool-0, tool-1, …), the last two with CEL.
func (s Shape) GuardrailPolicies(i int) []guardrailsv1alpha1.GuardrailPolicy {
	out := make([]guardrailsv1alpha1.GuardrailPolicy, s.Policies)
	for j := range out {
		rules := make([]guardrailsv1alpha1.Rule, 0, s.Rules)
		for k := range s.Rules {
			r := guardrailsv1alpha1.Rule{Name: "rule-" + strconv.Itoa(k), Tools: []string{"tool-" + strconv.Itoa(k)},
				Action: guardrailsv1alpha1.ActionAllow}
			switch {
			case k >= s.Rules-2 && k >= 2:
				r.Tools, r.Action = []string{"bash"}, guardrailsv1alpha1.ActionDeny
				r.When = fmt.Sprintf(`has(input.command) && input.command.startsWith("forbidden-%d-%d ")`, j, k)
			case k%3 == 0 && k != 1:
				r.Action, r.Code = guardrailsv1alpha1.ActionDeny, "oap.policy_denied"
			}
			rules = append(rules, r)
		}
		out[j] = guardrailsv1alpha1.GuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "policy-" + strconv.Itoa(j), Namespace: s.Namespace(i)},
			Spec: guardrailsv1alpha1.GuardrailPolicySpec{
				PolicyID:         "fleet.policy-" + strconv.Itoa(j),
				Priority:         int32(j % 7),
				PassportSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "team-" + strconv.Itoa(j%teams)}},
				ToolCapabilities: []guardrailsv1alpha1.ToolCapability{{Tool: "tool-*", Capability: "tool.generic"}},
				Rules:            rules,
			},
		}
	}
	return out
}

// ClusterGuardrailPolicies returns the fleet's cluster policies: baselines for every passport of
// every fleet namespace.
func (s Shape) ClusterGuardrailPolicies() []guardrailsv1alpha1.ClusterGuardrailPolicy {
	out := make([]guardrailsv1alpha1.ClusterGuardrailPolicy, s.clusterPolicies())
	for k := range out {
		out[k] = guardrailsv1alpha1.ClusterGuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: ClusterPolicyName(k)},
			Spec: guardrailsv1alpha1.ClusterGuardrailPolicySpec{
				GuardrailPolicySpec: guardrailsv1alpha1.GuardrailPolicySpec{
					Rules: []guardrailsv1alpha1.Rule{{Name: "no-rm-rf", Tools: []string{"bash"},
						When: `has(input.command) && input.command.startsWith("rm -rf")`, Action: guardrailsv1alpha1.ActionDeny,
						Code: "oap.blocked_pattern"}},
				},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{Label: "on"}},
			},
		}
	}
	return out
}

// Bundle builds the bundle of namespace i from its API objects with convert.BundleBuilder, as the
// controller does (cluster policies merged in as cluster/<name>).
func (s Shape) Bundle(i int, cluster []guardrailsv1alpha1.ClusterGuardrailPolicy, opts ...policy.Option) (convert.BuiltBundle, error) {
	passports, policies := s.PassportObjects(i), s.GuardrailPolicies(i)
	objs := convert.Objects{Namespace: s.Namespace(i)}
	for j := range passports {
		objs.Passports = append(objs.Passports, &passports[j])
	}
	for j := range policies {
		objs.Policies = append(objs.Policies, &policies[j])
	}
	for j := range cluster {
		objs.ClusterPolicies = append(objs.ClusterPolicies, &cluster[j])
	}
	built := convert.BundleBuilder{Options: opts}.Build(objs)
	if built.Err != nil {
		return built, built.Err
	}
	if built.Rejected != nil {
		return built, fmt.Errorf("the bundle of %s does not compile: %w", s.Namespace(i), built.Rejected)
	}
	return built, nil
}

// Request is a probe tool call by passport j.
func Request(j int) policy.Request {
	return policy.Request{Passport: PassportName(j), ToolName: Tool, ToolInput: map[string]any{"arg": "x"}}
}

// Bundles returns every namespace's bundle. The first is built by Bundle (convert.BundleBuilder,
// compiled); the others are copies of it with their own namespace and agent ids, as Bundle would
// build them, so a large fleet is generated without compiling every namespace twice.
func (s Shape) Bundles() ([]policy.Bundle, error) {
	first, err := s.Bundle(0, s.ClusterGuardrailPolicies())
	if err != nil {
		return nil, err
	}
	tmpl := first.Bundle
	out := make([]policy.Bundle, s.Namespaces)
	for i := range out {
		b := tmpl
		b.Namespace = s.Namespace(i)
		b.Passports = slices.Clone(tmpl.Passports)
		for j := range b.Passports {
			b.Passports[j].Namespace = b.Namespace
			b.Passports[j].Spec.AgentID = fmt.Sprintf("%s.%s", b.Namespace, b.Passports[j].Name)
		}
		b.Policies = slices.Clone(tmpl.Policies)
		for j := range b.Policies {
			if !b.Policies[j].ClusterScoped {
				b.Policies[j].Namespace = b.Namespace
			}
		}
		out[i] = b
	}
	return out, nil
}
