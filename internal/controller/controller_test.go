package controller

import (
	"fmt"
	"strings"
	"sync"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

func newPassport(ns, name string) *v1.AgentPassport {
	return &v1.AgentPassport{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"team": "core"}},
		Spec: v1.AgentPassportSpec{
			Owner:        v1.PassportOwner{ID: "team@example.com"},
			Capabilities: []v1.Capability{{ID: "system.command.execute"}},
		},
	}
}

func newPolicy(ns, name string) *v1.GuardrailPolicy {
	return &v1.GuardrailPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.GuardrailPolicySpec{
			PassportSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "core"}},
			Rules: []v1.Rule{
				{Name: "no-rm", Tools: []string{"bash"}, When: `has(input.command) && input.command.startsWith("rm ")`, Action: v1.ActionDeny},
				{Name: "allow-git", Tools: []string{"bash"}, Action: v1.ActionAllow},
			},
		},
	}
}

// cond returns the condition typ of obj's status as last read.
func cond(conds []metav1.Condition, typ string) metav1.Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return metav1.Condition{Type: typ, Status: "Missing"}
	}
	return *c
}

// haveCond matches a condition with status and reason observed at generation gen.
func haveCond(status metav1.ConditionStatus, reason string, gen int64) OmegaMatcher {
	return And(
		HaveField("Status", status), HaveField("Reason", reason), HaveField("ObservedGeneration", gen))
}

func getPassport(ns, name string) func(g Gomega) *v1.AgentPassport {
	return func(g Gomega) *v1.AgentPassport {
		p := &v1.AgentPassport{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
		return p
	}
}

func getPolicy(ns, name string) func(g Gomega) *v1.GuardrailPolicy {
	return func(g Gomega) *v1.GuardrailPolicy {
		p := &v1.GuardrailPolicy{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
		return p
	}
}

// storedBundle returns the namespace's stored bundle, failing g when there is none.
func storedBundle(g Gomega, ns string) policy.Bundle {
	b, _, err := readBundle(ctx, k8sClient, ns)
	g.Expect(err).NotTo(HaveOccurred())
	return b
}

func bundlePassport(b policy.Bundle, name string) (policy.Passport, bool) {
	for _, p := range b.Passports {
		if p.Name == name {
			return p, true
		}
	}
	return policy.Passport{}, false
}

func bundlePolicy(b policy.Bundle, name string) (policy.Policy, bool) {
	for _, p := range b.Policies {
		if p.Name == name {
			return p, true
		}
	}
	return policy.Policy{}, false
}

// eventReasons lists the reasons of the Events regarding the named object.
func eventReasons(ns, name string) func(g Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				out = append(out, e.Reason)
			}
		}
		return out
	}
}

// kstatusOf computes obj's status as Flux does.
func kstatusOf(obj client.Object) kstatus.Status {
	GinkgoHelper()
	st, err := testenv.KStatus(k8sClient, obj)
	Expect(err).NotTo(HaveOccurred())
	return st
}

const timeout = 20 * time.Second

// update reads an object with get, changes it and updates it, again from a fresh read when a
// controller's status write got in between (a conflict). It returns what the update stored.
func update[T client.Object](get func(Gomega) T, change func(T)) T {
	GinkgoHelper()
	var obj T
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj = get(Default)
		change(obj)
		return k8sClient.Update(ctx, obj)
	})).To(Succeed())
	return obj
}

// setPassportStatus sets the passport's spec.status and waits until the stored bundle holds it.
func setPassportStatus(ns, name string, status v1.PassportStatusValue) {
	GinkgoHelper()
	update(getPassport(ns, name), func(p *v1.AgentPassport) { p.Spec.Status = status })
	Eventually(func(g Gomega) string {
		bp, _ := bundlePassport(storedBundle(g, ns), name)
		return bp.Spec.Status
	}, timeout).Should(Equal(string(status)))
}

var _ = Describe("AgentPassport reconciler", func() {
	It("walks every phase with conditions, digest, events and the bundle following", func() {
		ns := newNamespace("passport")
		p := newPassport(ns, "agent")
		Expect(k8sClient.Create(ctx, p)).To(Succeed())

		By("an active passport is Ready with Suspended=False")
		Eventually(getPassport(ns, "agent"), timeout).Should(And(
			HaveField("Status.Phase", v1.PhaseActive),
			HaveField("Status.ObservedGeneration", int64(1)),
			HaveField("Status.AgentID", string(p.UID)),
			HaveField("Status.Digest", HavePrefix("sha256:")),
			WithTransform(func(p *v1.AgentPassport) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionReady) },
				haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 1)),
			WithTransform(func(p *v1.AgentPassport) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionSuspended) },
				haveCond(metav1.ConditionFalse, v1.ReasonActive, 1)),
		))
		Eventually(func(g Gomega) {
			bp, ok := bundlePassport(storedBundle(g, ns), "agent")
			g.Expect(ok).To(BeTrue())
			g.Expect(bp.Spec.Status).To(Equal("active"))
		}, timeout).Should(Succeed())
		active := getPassport(ns, "agent")(Default)
		Expect(kstatusOf(active)).To(Equal(kstatus.CurrentStatus))

		steps := []struct {
			status v1.PassportStatusValue
			phase  v1.PassportPhase
			reason string
		}{
			{v1.PassportSuspended, v1.PhaseSuspended, v1.ReasonSuspended},
			{v1.PassportActive, v1.PhaseActive, v1.ReasonActive},
			{v1.PassportRevoked, v1.PhaseRevoked, v1.ReasonRevoked},
		}
		digest := active.Status.Digest
		for i, step := range steps {
			gen := int64(i + 2)
			By(fmt.Sprintf("spec.status %s gives phase %s", step.status, step.phase))
			update(getPassport(ns, "agent"), func(p *v1.AgentPassport) { p.Spec.Status = step.status })
			readyStatus, readyReason, suspStatus := metav1.ConditionTrue, step.reason, metav1.ConditionTrue
			if step.phase == v1.PhaseActive {
				readyStatus, readyReason, suspStatus = metav1.ConditionTrue, v1.ReasonReconciled, metav1.ConditionFalse
			}
			Eventually(getPassport(ns, "agent"), timeout).Should(And(
				HaveField("Status.Phase", step.phase),
				HaveField("Status.ObservedGeneration", gen),
				WithTransform(func(p *v1.AgentPassport) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionReady) },
					haveCond(readyStatus, readyReason, gen)),
				WithTransform(func(p *v1.AgentPassport) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionSuspended) },
					haveCond(suspStatus, step.reason, gen)),
			))
			Eventually(func(g Gomega) string {
				bp, ok := bundlePassport(storedBundle(g, ns), "agent")
				g.Expect(ok).To(BeTrue())
				return bp.Spec.Status
			}, timeout).Should(Equal(string(step.status)), "passports are never held back")
			now := getPassport(ns, "agent")(Default)
			Expect(now.Status.Digest).NotTo(Equal(digest), "the digest covers the spec")
			digest = now.Status.Digest
			Expect(kstatusOf(now)).To(Equal(kstatus.CurrentStatus))
		}
		By("an Event marks every phase change")
		Eventually(eventReasons(ns, "agent"), timeout).Should(ContainElements("Active", "Suspended", "Revoked"))
	})

	It("flips Ready and Suspended at expiresAt with no other write", func() {
		ns := newNamespace("expiry")
		p := newPassport(ns, "short-lived")
		expires := time.Now().Add(8 * time.Second).Truncate(time.Second)
		p.Spec.ExpiresAt = &metav1.Time{Time: expires}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Eventually(getPassport(ns, "short-lived"), timeout).Should(HaveField("Status.Phase", v1.PhaseActive))
		Expect(time.Now()).To(BeTemporally("<", expires), "Active must be observed before expiresAt")

		// No write from here on: only the requeue at expiresAt can flip the status.
		Eventually(getPassport(ns, "short-lived"), timeout).Should(And(
			HaveField("Status.Phase", v1.PhaseExpired),
			WithTransform(func(p *v1.AgentPassport) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionReady) },
				haveCond(metav1.ConditionFalse, v1.ReasonExpired, 1)),
			WithTransform(func(p *v1.AgentPassport) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionSuspended) },
				haveCond(metav1.ConditionTrue, v1.ReasonExpired, 1)),
		))
		exp := getPassport(ns, "short-lived")(Default)
		flipped := cond(exp.Status.Conditions, v1.ConditionSuspended).LastTransitionTime.Time
		Expect(flipped).To(BeTemporally(">=", expires), "the flip happens at expiresAt, not before")
		Expect(flipped).To(BeTemporally("<", expires.Add(3*time.Second)), "the flip happens at expiresAt, not at a later resync")
		Expect(kstatusOf(exp)).To(Equal(kstatus.FailedStatus), "an expired passport needs a spec change")
		Eventually(eventReasons(ns, "short-lived"), timeout).Should(ContainElement("Expired"))
	})

	It("leaves invalid passports and duplicate agent ids out of the bundle as Stalled", func() {
		ns := newNamespace("bad-passports")
		good := newPassport(ns, "first")
		good.Spec.AgentID = "shared-id"
		Expect(k8sClient.Create(ctx, good)).To(Succeed())
		Eventually(getPassport(ns, "first"), timeout).Should(HaveField("Status.Phase", v1.PhaseActive))

		dup := newPassport(ns, "second")
		dup.Spec.AgentID = "shared-id"
		Expect(k8sClient.Create(ctx, dup)).To(Succeed())
		bad := newPassport(ns, "bad-limits")
		bad.Spec.Limits = &apiextensionsv1.JSON{Raw: []byte(`{"system.command.execute": "everything"}`)}
		Expect(k8sClient.Create(ctx, bad)).To(Succeed())

		Eventually(func(g Gomega) metav1.Condition {
			return cond(getPassport(ns, "second")(g).Status.Conditions, v1.ConditionReady)
		}, timeout).Should(haveCond(metav1.ConditionFalse, v1.ReasonDuplicateAgentID, 1))
		Eventually(func(g Gomega) metav1.Condition {
			return cond(getPassport(ns, "bad-limits")(g).Status.Conditions, v1.ConditionStalled)
		}, timeout).Should(And(haveCond(metav1.ConditionTrue, v1.ReasonInvalid, 1),
			HaveField("Message", ContainSubstring("spec.limits[system.command.execute]"))))
		Expect(kstatusOf(getPassport(ns, "second")(Default))).To(Equal(kstatus.FailedStatus))

		Eventually(func(g Gomega) []string {
			var names []string
			for _, p := range storedBundle(g, ns).Passports {
				names = append(names, p.Name)
			}
			return names
		}, timeout).Should(ConsistOf("first"))
		b := storedBundle(Default, ns)
		_, err := policy.Compile(b)
		Expect(err).NotTo(HaveOccurred(), "the stored bundle always compiles")

		By("removing the older holder of the id lets the duplicate in")
		Expect(k8sClient.Delete(ctx, good)).To(Succeed())
		Eventually(func(g Gomega) metav1.Condition {
			return cond(getPassport(ns, "second")(g).Status.Conditions, v1.ConditionReady)
		}, timeout).Should(haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 1))
		Expect(meta.FindStatusCondition(getPassport(ns, "second")(Default).Status.Conditions, v1.ConditionStalled)).To(BeNil())
	})
})

var _ = Describe("GuardrailPolicy reconciler", func() {
	It("reports Valid and Ready through compile errors, keeping the last known good in the bundle", func() {
		ns := newNamespace("policy")
		for _, name := range []string{"a1", "a2"} {
			Expect(k8sClient.Create(ctx, newPassport(ns, name))).To(Succeed())
		}
		other := newPassport(ns, "other-team")
		other.Labels = map[string]string{"team": "other"}
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		pol := newPolicy(ns, "shell")
		Expect(k8sClient.Create(ctx, pol)).To(Succeed())

		By("a valid policy is Valid, Ready and enforced")
		Eventually(getPolicy(ns, "shell"), timeout).Should(And(
			HaveField("Status.ObservedGeneration", int64(1)),
			HaveField("Status.EnforcedGeneration", int64(1)),
			HaveField("Status.RuleCount", int32(2)),
			HaveField("Status.SelectedPassports", int32(2)),
			WithTransform(func(p *v1.GuardrailPolicy) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionValid) },
				haveCond(metav1.ConditionTrue, v1.ReasonCompiled, 1)),
			WithTransform(func(p *v1.GuardrailPolicy) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionReady) },
				haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 1)),
		))
		Expect(kstatusOf(getPolicy(ns, "shell")(Default))).To(Equal(kstatus.CurrentStatus))

		By("a new generation is InProgress until reconciled")
		cur := update(getPolicy(ns, "shell"), func(p *v1.GuardrailPolicy) { p.Spec.Rules[1].Message = "git is fine" })
		Expect(cur.Generation).To(Equal(int64(2)))
		Expect(kstatusOf(cur)).To(Equal(kstatus.InProgressStatus), "the API server's answer to the update predates any reconcile")
		Eventually(getPolicy(ns, "shell"), timeout).Should(And(
			HaveField("Status.EnforcedGeneration", int64(2)),
			WithTransform(func(p *v1.GuardrailPolicy) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionReady) },
				haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 2)),
		))

		By("a generation that does not compile is Valid=False naming every error; generation 2 stays enforced")
		update(getPolicy(ns, "shell"), func(p *v1.GuardrailPolicy) {
			p.Spec.Rules[0].When = `inptu.command == "rm"`
			p.Spec.RateLimits = []v1.RateLimit{{Name: "slow", Limit: 1, Window: metav1.Duration{Duration: -time.Minute}}}
		})
		Eventually(getPolicy(ns, "shell"), timeout).Should(And(
			HaveField("Status.ObservedGeneration", int64(3)),
			HaveField("Status.EnforcedGeneration", int64(2)),
			HaveField("Status.RuleCount", int32(2)),
			WithTransform(func(p *v1.GuardrailPolicy) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionValid) },
				And(haveCond(metav1.ConditionFalse, v1.ReasonCompileError, 3),
					HaveField("Message", And(ContainSubstring("spec.rules[0].when"), ContainSubstring("spec.rateLimits[0].window"),
						ContainSubstring("generation 2 is still enforced"))))),
			WithTransform(func(p *v1.GuardrailPolicy) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionReady) },
				haveCond(metav1.ConditionFalse, v1.ReasonCompileError, 3)),
			WithTransform(func(p *v1.GuardrailPolicy) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionStalled) },
				haveCond(metav1.ConditionTrue, v1.ReasonCompileError, 3)),
		))
		Expect(kstatusOf(getPolicy(ns, "shell")(Default))).To(Equal(kstatus.FailedStatus))
		bp, ok := bundlePolicy(storedBundle(Default, ns), "shell")
		Expect(ok).To(BeTrue())
		Expect(bp.Generation).To(Equal(int64(2)), "last known good")
		Expect(bp.Spec.Rules[0].When).To(ContainSubstring("input.command"))
		Expect(bp.Spec.Rules[1].Message).To(Equal("git is fine"))

		By("a suspension still reaches the bundle while the policy is broken")
		setPassportStatus(ns, "a1", v1.PassportSuspended)
		bp, _ = bundlePolicy(storedBundle(Default, ns), "shell")
		Expect(bp.Generation).To(Equal(int64(2)))
		_, err := policy.Compile(storedBundle(Default, ns))
		Expect(err).NotTo(HaveOccurred())

		By("fixing the policy makes it Valid and enforced again")
		update(getPolicy(ns, "shell"), func(p *v1.GuardrailPolicy) {
			p.Spec.Rules[0].When = `has(input.command) && input.command.startsWith("rm ")`
			p.Spec.RateLimits = nil
		})
		Eventually(getPolicy(ns, "shell"), timeout).Should(And(
			HaveField("Status.EnforcedGeneration", int64(4)),
			WithTransform(func(p *v1.GuardrailPolicy) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionValid) },
				haveCond(metav1.ConditionTrue, v1.ReasonCompiled, 4)),
			WithTransform(func(p *v1.GuardrailPolicy) metav1.Condition { return cond(p.Status.Conditions, v1.ConditionReady) },
				haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 4)),
			WithTransform(func(p *v1.GuardrailPolicy) *metav1.Condition {
				return meta.FindStatusCondition(p.Status.Conditions, v1.ConditionStalled)
			}, BeNil()),
		))
		Expect(kstatusOf(getPolicy(ns, "shell")(Default))).To(Equal(kstatus.CurrentStatus))
		Eventually(eventReasons(ns, "shell"), timeout).Should(ContainElements(v1.ReasonCompiled, v1.ReasonCompileError))

		By("relabelling a passport updates selectedPassports")
		update(getPassport(ns, "other-team"), func(p *v1.AgentPassport) { p.Labels["team"] = "core" })
		Eventually(getPolicy(ns, "shell"), timeout).Should(HaveField("Status.SelectedPassports", int32(3)))
	})

	It("never enforces a policy that never compiled", func() {
		ns := newNamespace("never-valid")
		Expect(k8sClient.Create(ctx, newPassport(ns, "a"))).To(Succeed())
		pol := newPolicy(ns, "broken")
		pol.Spec.Rules[0].When = `1 + `
		Expect(k8sClient.Create(ctx, pol)).To(Succeed())
		Eventually(func(g Gomega) metav1.Condition {
			return cond(getPolicy(ns, "broken")(g).Status.Conditions, v1.ConditionValid)
		}, timeout).Should(And(haveCond(metav1.ConditionFalse, v1.ReasonCompileError, 1),
			HaveField("Message", ContainSubstring("no generation of this policy is enforced"))))
		Expect(getPolicy(ns, "broken")(Default).Status.EnforcedGeneration).To(BeZero())
		Eventually(func(g Gomega) int { return len(storedBundle(g, ns).Passports) }, timeout).Should(Equal(1))
		_, ok := bundlePolicy(storedBundle(Default, ns), "broken")
		Expect(ok).To(BeFalse())
		Expect(kstatusOf(getPolicy(ns, "broken")(Default))).To(Equal(kstatus.FailedStatus))
		Eventually(eventReasons(ns, "broken"), timeout).Should(ContainElement(v1.ReasonCompileError))
	})
})

var _ = Describe("Bundle writer", func() {
	It("deletes the bundle when the namespace's last object goes", func() {
		ns := newNamespace("deletion")
		p := newPassport(ns, "only")
		pol := newPolicy(ns, "only")
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Expect(k8sClient.Create(ctx, pol)).To(Succeed())
		Eventually(func(g Gomega) {
			b := storedBundle(g, ns)
			g.Expect(b.Passports).To(HaveLen(1))
			g.Expect(b.Policies).To(HaveLen(1))
		}, timeout).Should(Succeed())

		Expect(k8sClient.Delete(ctx, pol)).To(Succeed())
		Eventually(func(g Gomega) []policy.Policy { return storedBundle(g, ns).Policies }, timeout).Should(BeEmpty())
		Expect(k8sClient.Delete(ctx, p)).To(Succeed())
		Eventually(func() error {
			_, _, err := readBundle(ctx, k8sClient, ns)
			return err
		}, timeout).Should(MatchError(errNoBundle))
	})

	It("refuses a bundle whose policies together exceed the per-bundle budget; the last good bundle keeps serving", func() {
		ns := newNamespace("over-budget")
		Expect(k8sClient.Create(ctx, newPassport(ns, "agent"))).To(Succeed())
		// Each policy holds 8 distinct expressions of about 3,880 characters: within the per-policy
		// budget (policy.MaxPolicyExpressionBytes), four of them within the per-bundle budget
		// (policy.MaxBundleExpressionBytes), five over it.
		const rulesPer, exprBytes = 8, 3880
		Expect(rulesPer * (exprBytes + 50)).To(BeNumerically("<", policy.MaxPolicyExpressionBytes))
		Expect(4 * rulesPer * (exprBytes + 50)).To(BeNumerically("<", policy.MaxBundleExpressionBytes))
		Expect(5 * rulesPer * exprBytes).To(BeNumerically(">", policy.MaxBundleExpressionBytes))
		bulky := func(name string) *v1.GuardrailPolicy {
			p := &v1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			for j := range rulesPer {
				lit := fmt.Sprintf("%s-%d-", name, j) + strings.Repeat("x", exprBytes-len(`input.command == ""`)-len(name)-3)
				p.Spec.Rules = append(p.Spec.Rules, v1.Rule{Name: fmt.Sprintf("r%d", j), Tools: []string{"bash"},
					When: `input.command == "` + lit + `"`, Action: v1.ActionDeny})
			}
			return p
		}
		curl := policy.Request{Passport: "agent", ToolName: "bash", ToolInput: map[string]any{"command": "curl https://example.com"}}
		decide := func(g Gomega) policy.Decision {
			snap, err := policy.Compile(storedBundle(g, ns))
			g.Expect(err).NotTo(HaveOccurred(), "the stored bundle always compiles")
			return snap.Decide(ctx, curl)
		}
		readyOf := func(name string) func(g Gomega) metav1.Condition {
			return func(g Gomega) metav1.Condition {
				return cond(getPolicy(ns, name)(g).Status.Conditions, v1.ConditionReady)
			}
		}

		By("four bulky policies compile together and are enforced")
		for _, name := range []string{"p1", "p2", "p3", "p4"} {
			p := bulky(name)
			if name == "p1" {
				p.Spec.Rules = append([]v1.Rule{{Name: "no-curl", Tools: []string{"bash"}, When: `input.command.startsWith("curl ")`, Action: v1.ActionDeny}}, p.Spec.Rules...)
			}
			Expect(k8sClient.Create(ctx, p)).To(Succeed())
		}
		Eventually(func(g Gomega) int { return len(storedBundle(g, ns).Policies) }, timeout).Should(Equal(4))
		for _, name := range []string{"p1", "p2", "p3", "p4"} {
			Eventually(readyOf(name), timeout).Should(haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 1))
		}
		Expect(decide(Default).Decision).To(Equal(policy.DecisionDeny), "p1's no-curl rule applies")
		_, lastGood, err := readBundle(ctx, k8sClient, ns)
		Expect(err).NotTo(HaveOccurred())

		By("a fifth, valid alone, puts the namespace over the per-bundle budget: the bundle is refused")
		p5 := bulky("p5")
		p5.Spec.Rules = append([]v1.Rule{{Name: "no-wget", Tools: []string{"bash"}, When: `input.command.startsWith("wget ")`, Action: v1.ActionDeny}}, p5.Spec.Rules...)
		Expect(k8sClient.Create(ctx, p5)).To(Succeed())
		rejected := And(haveCond(metav1.ConditionFalse, v1.ReasonBundleRejected, 1),
			HaveField("Message", And(ContainSubstring("policies[p"), ContainSubstring(".when: "),
				ContainSubstring("the per-bundle budget"), ContainSubstring("the last good bundle keeps serving"))))
		Eventually(readyOf("p5"), timeout).Should(rejected)
		Eventually(readyOf("p1"), timeout).Should(rejected)
		p5Status := getPolicy(ns, "p5")(Default)
		Expect(cond(p5Status.Status.Conditions, v1.ConditionValid)).To(haveCond(metav1.ConditionTrue, v1.ReasonCompiled, 1), "p5 compiles on its own")
		Expect(cond(p5Status.Status.Conditions, v1.ConditionStalled)).To(haveCond(metav1.ConditionTrue, v1.ReasonBundleRejected, 1))
		Expect(p5Status.Status.EnforcedGeneration).To(BeZero())
		Expect(kstatusOf(p5Status)).To(Equal(kstatus.FailedStatus))

		b, rev, err := readBundle(ctx, k8sClient, ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(rev).To(Equal(lastGood), "the refused bundle is not stored")
		_, ok := bundlePolicy(b, "p5")
		Expect(ok).To(BeFalse())
		wget := curl
		wget.ToolInput = map[string]any{"command": "wget https://example.com"}
		snap, err := policy.Compile(b)
		Expect(err).NotTo(HaveOccurred())
		Expect(snap.Decide(ctx, wget).Decision).To(Equal(policy.DecisionAllow), "the previous bundle's policies decide: p5 is not enforced")

		By("a suspension still reaches the bundle while the policies are over budget")
		setPassportStatus(ns, "agent", v1.PassportSuspended)
		Expect(decide(Default).Reasons[0].Code).To(Equal(policy.CodePassportSuspended))
		setPassportStatus(ns, "agent", v1.PassportActive)
		_, ok = bundlePolicy(storedBundle(Default, ns), "p5")
		Expect(ok).To(BeFalse(), "p5 is still left out")

		By("deleting one policy brings the namespace under budget: p5 is enforced and the condition clears")
		Expect(k8sClient.Delete(ctx, getPolicy(ns, "p1")(Default))).To(Succeed())
		Eventually(readyOf("p5"), timeout).Should(haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 1))
		for _, name := range []string{"p2", "p3", "p4"} {
			Eventually(readyOf(name), timeout).Should(haveCond(metav1.ConditionTrue, v1.ReasonReconciled, 1))
			Expect(meta.FindStatusCondition(getPolicy(ns, name)(Default).Status.Conditions, v1.ConditionStalled)).To(BeNil())
		}
		Eventually(func(g Gomega) string { return decide(g).Decision }, timeout).Should(Equal(policy.DecisionAllow), "p1's no-curl rule is gone")
		Eventually(func(g Gomega) string {
			snap, err := policy.Compile(storedBundle(g, ns))
			g.Expect(err).NotTo(HaveOccurred())
			return snap.Decide(ctx, wget).Decision
		}, timeout).Should(Equal(policy.DecisionDeny), "p5 is enforced")
		Expect(getPolicy(ns, "p5")(Default).Status.EnforcedGeneration).To(Equal(int64(1)))
	})

	It("stores a 10,000-passport namespace as a bundle policy.Compile loads", func() {
		const n = 10000
		ns := newNamespace("large")
		Expect(k8sClient.Create(ctx, newPolicy(ns, "shell"))).To(Succeed())
		names := make(chan string, n)
		for i := range n {
			names <- fmt.Sprintf("agent-%05d", i)
		}
		close(names)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range 16 {
			wg.Go(func() {
				for name := range names {
					p := newPassport(ns, name)
					p.Spec.Limits = &apiextensionsv1.JSON{Raw: []byte(`{"system.command.execute": {"allowed_commands": ["git", "ls"], "blocked_patterns": ["rm -rf", "sudo"]}}`)}
					if err := k8sClient.Create(ctx, p); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}

		var b policy.Bundle
		Eventually(func(g Gomega) int {
			b = storedBundle(g, ns)
			return len(b.Passports)
		}, 3*time.Minute, time.Second).Should(Equal(n))
		snap, err := policy.Compile(b)
		Expect(err).NotTo(HaveOccurred())
		Expect(snap.SelectedPassports("shell")).To(Equal(n))
		_, ok := snap.Passport("agent-09999")
		Expect(ok).To(BeTrue())
		Eventually(getPolicy(ns, "shell"), time.Minute).Should(HaveField("Status.SelectedPassports", int32(n)))

		By("every passport's status is reconciled, so no backlog spills into the next spec")
		Eventually(func(g Gomega) int {
			var list v1.AgentPassportList
			g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			reconciled := 0
			for i := range list.Items {
				if list.Items[i].Status.Phase == v1.PhaseActive {
					reconciled++
				}
			}
			return reconciled
		}, 5*time.Minute, 2*time.Second).Should(Equal(n))
	})
})
