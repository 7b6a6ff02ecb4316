package webhook_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

var _ = Describe("ClusterGuardrailPolicy admission", func() {
	ctx := context.Background()

	It("rejects a cluster policy that does not compile or whose namespaceSelector is invalid, naming every field path", func() {
		p := &guardrailsv1alpha1.ClusterGuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "broken-baseline"},
			Spec: guardrailsv1alpha1.ClusterGuardrailPolicySpec{
				GuardrailPolicySpec: guardrailsv1alpha1.GuardrailPolicySpec{
					Rules: []guardrailsv1alpha1.Rule{
						{Name: "ok", Tools: []string{"ls"}, Action: guardrailsv1alpha1.ActionAllow},
						{Name: "broken", Tools: []string{"bash"}, When: "input.command.startsWith(", Action: guardrailsv1alpha1.ActionDeny},
					},
				},
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: "Bogus", Values: []string{"x"}}}},
			},
		}
		err := h.client.Create(ctx, p)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		got := causes(err)
		Expect(got).To(HaveKey("spec.rules[1].when"))
		Expect(got).To(HaveKey("spec.namespaceSelector.matchExpressions[0].operator"))
		Expect(err.Error()).To(ContainSubstring("ClusterGuardrailPolicy"))
	})

	It("stores the defaults explicitly and rejects an update that breaks a valid cluster policy", func() {
		p := &guardrailsv1alpha1.ClusterGuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "later-broken-baseline"},
			Spec: guardrailsv1alpha1.ClusterGuardrailPolicySpec{
				GuardrailPolicySpec: guardrailsv1alpha1.GuardrailPolicySpec{Rules: []guardrailsv1alpha1.Rule{
					{Name: "r", Tools: []string{"bash"}, Action: guardrailsv1alpha1.ActionDeny}}},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
			},
		}
		Expect(h.client.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(h.client.Delete(ctx, p))).To(Succeed()) })
		stored := &guardrailsv1alpha1.ClusterGuardrailPolicy{}
		Expect(h.client.Get(ctx, client.ObjectKeyFromObject(p), stored)).To(Succeed())
		Expect(stored.Spec.EnforcementAction).To(Equal(guardrailsv1alpha1.EnforcementEnforce))
		Expect(stored.Spec.FailurePolicy).To(Equal(guardrailsv1alpha1.FailClosed))
		Expect(stored.Spec.DefaultAction).To(Equal(guardrailsv1alpha1.DefaultAllow))

		stored.Spec.Rules[0].When = "tool =="
		err := h.client.Update(ctx, stored)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(HaveKey("spec.rules[0].when"))
	})
})
