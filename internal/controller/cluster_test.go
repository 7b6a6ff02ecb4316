package controller

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// newLabelledNamespace creates a namespace with labels and returns its name.
func newLabelledNamespace(prefix string, lbls map[string]string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: lbls}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// setNamespaceLabel sets (value != "") or removes label key on namespace ns.
func setNamespaceLabel(ns, key, value string) {
	GinkgoHelper()
	var obj corev1.Namespace
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: ns}, &obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopy())
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	if value == "" {
		delete(obj.Labels, key)
	} else {
		obj.Labels[key] = value
	}
	Expect(k8sClient.Patch(ctx, &obj, patch)).To(Succeed())
}

// newClusterPolicy is a baseline denying recursive deletes in bash for the namespaces labelled
// key=on.
func newClusterPolicy(name, key string) *v1.ClusterGuardrailPolicy {
	return &v1.ClusterGuardrailPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.ClusterGuardrailPolicySpec{
			GuardrailPolicySpec: v1.GuardrailPolicySpec{
				Rules: []v1.Rule{{Name: "no-rm-rf", Tools: []string{"bash"},
					When: `has(input.command) && input.command.startsWith("rm -rf")`, Action: v1.ActionDeny,
					Code: "oap.blocked_pattern", Message: "recursive deletes are not allowed in this cluster"}},
			},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: "on"}},
		},
	}
}

func getClusterPolicy(name string) func(g Gomega) *v1.ClusterGuardrailPolicy {
	return func(g Gomega) *v1.ClusterGuardrailPolicy {
		p := &v1.ClusterGuardrailPolicy{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, p)).To(Succeed())
		return p
	}
}

// holdsClusterPolicy reports whether the stored bundle of ns holds cluster policy name at gen
// (any generation when gen is 0).
func holdsClusterPolicy(ns, name string, gen int64) func(g Gomega) bool {
	return func(g Gomega) bool {
		b := storedBundle(g, ns)
		p, ok := bundlePolicy(b, v1.ClusterPolicyPrefix+name)
		if ok {
			g.Expect(p.ClusterScoped).To(BeTrue(), "a cluster policy is marked cluster-scoped in the bundle")
		}
		return ok && (gen == 0 || p.Generation == gen)
	}
}

// decideStored compiles the stored bundle of ns as a decider does and decides req.
func decideStored(g Gomega, ns string, req policy.Request) policy.Decision {
	snap, err := policy.Compile(storedBundle(g, ns))
	g.Expect(err).NotTo(HaveOccurred())
	return snap.Decide(ctx, req)
}

var _ = Describe("ClusterGuardrailPolicy", func() {
	It("applies to the labelled namespaces only, follows relabelling and counts its namespaces in status", func() {
		key := "cgp-test.tollgate.dev/" + rand.String(6)
		inside := newLabelledNamespace("cgp-in", map[string]string{key: "on"})
		outside := newLabelledNamespace("cgp-out", nil)
		for _, ns := range []string{inside, outside} {
			Expect(k8sClient.Create(ctx, newPassport(ns, "agent"))).To(Succeed())
		}
		name := "baseline-" + rand.String(5)
		cp := newClusterPolicy(name, key)
		Expect(k8sClient.Create(ctx, cp)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, cp))).To(Succeed()) })

		By("merging it into the selected namespace's bundle only")
		Eventually(holdsClusterPolicy(inside, name, 1), timeout).Should(BeTrue())
		Consistently(holdsClusterPolicy(outside, name, 0), time.Second).Should(BeFalse())
		rmrf := policy.Request{Passport: "agent", ToolName: "bash", ToolInput: map[string]any{"command": "rm -rf /tmp/x"}}
		Eventually(func(g Gomega) string { return decideStored(g, inside, rmrf).PolicyID }, timeout).
			Should(Equal("cluster/" + name + "#no-rm-rf"))
		Expect(decideStored(Default, outside, rmrf).Decision).To(Equal(policy.DecisionAllow))

		By("reporting one namespace and the passports it selects there")
		Eventually(func(g Gomega) {
			p := getClusterPolicy(name)(g)
			g.Expect(p.Status.ObservedGeneration).To(Equal(int64(1)))
			g.Expect(p.Status.Namespaces).To(Equal(int32(1)))
			g.Expect(p.Status.SelectedPassports).To(Equal(int32(1)))
			g.Expect(p.Status.EnforcedGeneration).To(Equal(int64(1)))
			g.Expect(p.Status.RuleCount).To(Equal(int32(1)))
			g.Expect(cond(p.Status.Conditions, v1.ConditionValid)).To(haveCond(metav1.ConditionTrue, v1.ReasonCompiled, 1))
			g.Expect(cond(p.Status.Conditions, v1.ConditionReady)).To(haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 1))
		}, timeout).Should(Succeed())

		By("moving with the label: off the first namespace, onto the second")
		setNamespaceLabel(inside, key, "")
		setNamespaceLabel(outside, key, "on")
		Eventually(holdsClusterPolicy(inside, name, 0), timeout).Should(BeFalse())
		Eventually(holdsClusterPolicy(outside, name, 1), timeout).Should(BeTrue())
		Eventually(func(g Gomega) string { return decideStored(g, outside, rmrf).Decision }, timeout).Should(Equal(policy.DecisionDeny))
		Expect(decideStored(Default, inside, rmrf).Decision).To(Equal(policy.DecisionAllow))

		By("counting both namespaces once both are labelled")
		setNamespaceLabel(inside, key, "on")
		Eventually(func(g Gomega) int32 { return getClusterPolicy(name)(g).Status.Namespaces }, timeout).Should(Equal(int32(2)))
		Expect(kstatusOf(getClusterPolicy(name)(Default)).String()).To(Equal("Current"))

		By("leaving every bundle when deleted")
		Expect(k8sClient.Delete(ctx, cp)).To(Succeed())
		for _, ns := range []string{inside, outside} {
			Eventually(holdsClusterPolicy(ns, name, 0), timeout).Should(BeFalse())
		}
	})

	It("reports no namespaces, Ready, when its selector matches no namespace holding passports", func() {
		name := "nobody-" + rand.String(5)
		cp := newClusterPolicy(name, "cgp-test.tollgate.dev/"+rand.String(6))
		Expect(k8sClient.Create(ctx, cp)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, cp))).To(Succeed()) })
		Eventually(func(g Gomega) {
			p := getClusterPolicy(name)(g)
			g.Expect(p.Status.Namespaces).To(BeZero())
			g.Expect(cond(p.Status.Conditions, v1.ConditionReady)).To(haveCond(metav1.ConditionTrue, v1.ReasonNoNamespaces, 1))
		}, timeout).Should(Succeed())
	})

	It("cannot be overridden by a namespaced policy: an allow, a higher priority, a rewrite or a policy id do not weaken its deny", func() {
		key := "cgp-test.tollgate.dev/" + rand.String(6)
		ns := newLabelledNamespace("cgp-override", map[string]string{key: "on"})
		Expect(k8sClient.Create(ctx, newPassport(ns, "agent"))).To(Succeed())
		local := &v1.GuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "permissive", Namespace: ns},
			Spec: v1.GuardrailPolicySpec{
				PolicyID: "team.permissive.v1",
				Priority: 1000,
				Rules: []v1.Rule{
					// A rewrite into what the baseline denies: the baseline judges the rewritten input.
					{Name: "rewrite", Tools: []string{"bash"}, When: `input.command == "cleanup"`, Action: v1.ActionModify,
						Modify: &v1.InputPatch{Set: []v1.InputField{{Path: "command", Value: `"rm -rf /"`}}}},
					{Name: "allow-everything", Tools: []string{"*"}, Action: v1.ActionAllow},
				},
			},
		}
		Expect(k8sClient.Create(ctx, local)).To(Succeed())
		name := "floor-" + rand.String(5)
		cp := newClusterPolicy(name, key)
		cp.Spec.Priority = -1000
		Expect(k8sClient.Create(ctx, cp)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, cp))).To(Succeed()) })
		Eventually(func(g Gomega) {
			_, local := bundlePolicy(storedBundle(g, ns), "permissive")
			g.Expect(local).To(BeTrue())
			g.Expect(holdsClusterPolicy(ns, name, 1)(g)).To(BeTrue())
		}, timeout).Should(Succeed())

		for _, req := range []policy.Request{
			{Passport: "agent", ToolName: "bash", ToolInput: map[string]any{"command": "rm -rf /tmp/x"}},
			{Passport: "agent", ToolName: "bash", ToolInput: map[string]any{"command": "cleanup"}},
			{Passport: "agent", ToolName: "bash", ToolInput: map[string]any{"command": "rm -rf /tmp/x"}, PolicyID: "team.permissive.v1"},
		} {
			d := decideStored(Default, ns, req)
			Expect(d.Decision).To(Equal(policy.DecisionDeny), "request %v", req.ToolInput)
			Expect(d.Reasons[0].Code).To(Equal("oap.blocked_pattern"))
			Expect(d.PolicyID).To(Equal("cluster/" + name + "#no-rm-rf"))
		}
		ok := decideStored(Default, ns, policy.Request{Passport: "agent", ToolName: "bash", ToolInput: map[string]any{"command": "ls"}})
		Expect(ok.Decision).To(Equal(policy.DecisionAllow), "the namespace's own allow still applies where the baseline does not deny")
	})

	It("keeps enforcing the last good generation when an update does not compile", func() {
		key := "cgp-test.tollgate.dev/" + rand.String(6)
		ns := newLabelledNamespace("cgp-bad", map[string]string{key: "on"})
		Expect(k8sClient.Create(ctx, newPassport(ns, "agent"))).To(Succeed())
		name := "bad-update-" + rand.String(5)
		cp := newClusterPolicy(name, key)
		Expect(k8sClient.Create(ctx, cp)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, cp))).To(Succeed()) })
		Eventually(func(g Gomega) int64 { return getClusterPolicy(name)(g).Status.EnforcedGeneration }, timeout).Should(Equal(int64(1)))

		By("storing a generation whose CEL does not compile (the webhook is not in this suite)")
		update(getClusterPolicy(name), func(p *v1.ClusterGuardrailPolicy) { p.Spec.Rules[0].When = "input.command.startsWith(" })
		Eventually(func(g Gomega) {
			p := getClusterPolicy(name)(g)
			g.Expect(p.Status.ObservedGeneration).To(Equal(int64(2)))
			g.Expect(p.Status.EnforcedGeneration).To(Equal(int64(1)))
			g.Expect(p.Status.Namespaces).To(Equal(int32(1)))
			valid := cond(p.Status.Conditions, v1.ConditionValid)
			g.Expect(valid).To(haveCond(metav1.ConditionFalse, v1.ReasonCompileError, 2))
			g.Expect(valid.Message).To(ContainSubstring("spec.rules[0].when"))
			g.Expect(valid.Message).To(ContainSubstring("generation 1 is still enforced in 1 namespace"))
			g.Expect(cond(p.Status.Conditions, v1.ConditionReady)).To(haveCond(metav1.ConditionFalse, v1.ReasonCompileError, 2))
		}, timeout).Should(Succeed())
		Consistently(holdsClusterPolicy(ns, name, 1), time.Second).Should(BeTrue())
		d := decideStored(Default, ns, policy.Request{Passport: "agent", ToolName: "bash", ToolInput: map[string]any{"command": "rm -rf /"}})
		Expect(d.Decision).To(Equal(policy.DecisionDeny), "the last good generation keeps denying")

		By("keeping the last good version in a namespace whose bundle is rebuilt meanwhile")
		Expect(k8sClient.Create(ctx, newPassport(ns, "second"))).To(Succeed())
		Eventually(func(g Gomega) bool { _, ok := bundlePassport(storedBundle(g, ns), "second"); return ok }, timeout).Should(BeTrue())
		Expect(holdsClusterPolicy(ns, name, 1)(Default)).To(BeTrue())

		By("enforcing the fixed generation")
		update(getClusterPolicy(name), func(p *v1.ClusterGuardrailPolicy) { p.Spec.Rules[0].When = `input.command.startsWith("rm ")` })
		Eventually(holdsClusterPolicy(ns, name, 3), timeout).Should(BeTrue())
		Eventually(func(g Gomega) {
			p := getClusterPolicy(name)(g)
			g.Expect(p.Status.EnforcedGeneration).To(Equal(int64(3)))
			g.Expect(p.Status.SelectedPassports).To(Equal(int32(2)))
			g.Expect(cond(p.Status.Conditions, v1.ConditionReady)).To(haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 3))
		}, timeout).Should(Succeed())
	})

	It("never collides with a namespaced policy of the same name: the bundle holds it as cluster/<name>", func() {
		key := "cgp-test.tollgate.dev/" + rand.String(6)
		ns := newLabelledNamespace("cgp-names", map[string]string{key: "on"})
		Expect(k8sClient.Create(ctx, newPassport(ns, "agent"))).To(Succeed())
		name := "same-name-" + rand.String(5)
		Expect(k8sClient.Create(ctx, newPolicy(ns, name))).To(Succeed())
		cp := newClusterPolicy(name, key)
		Expect(k8sClient.Create(ctx, cp)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, cp))).To(Succeed()) })
		Eventually(func(g Gomega) {
			b := storedBundle(g, ns)
			_, local := bundlePolicy(b, name)
			g.Expect(local).To(BeTrue(), fmt.Sprintf("both %s and cluster/%s are in the bundle", name, name))
			g.Expect(holdsClusterPolicy(ns, name, 1)(g)).To(BeTrue())
		}, timeout).Should(Succeed())
		Eventually(func(g Gomega) metav1.Condition {
			return cond(getPolicy(ns, name)(g).Status.Conditions, v1.ConditionReady)
		}, timeout).Should(haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 1))
	})
})
