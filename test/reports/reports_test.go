package reports

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

const wait = 20 * time.Second

// decideRaw asks replica r over HTTP and returns the answer's bytes and decoded decision.
func decideRaw(r *replica, req map[string]any) ([]byte, policy.Decision) {
	GinkgoHelper()
	body, err := json.Marshal(req)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.Post(r.server.URL+"/v1/decide", "application/json", bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(data))
	var d policy.Decision
	Expect(json.Unmarshal(data, &d)).To(Succeed())
	return data, d
}

func code(d policy.Decision) string {
	if len(d.Reasons) == 0 {
		return ""
	}
	return d.Reasons[0].Code
}

func passport(name string, lbls map[string]string, auto *v1.AutoSuspend) *v1.AgentPassport {
	return &v1.AgentPassport{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: teamNS, Labels: lbls},
		Spec: v1.AgentPassportSpec{
			Owner: v1.PassportOwner{ID: "team@example.com", Type: "team"}, AssuranceLevel: "L0", Status: v1.PassportActive,
			Capabilities: []v1.Capability{{ID: "system.command.execute"}},
			Limits:       &apiextensionsv1.JSON{Raw: []byte(`{"system.command.execute":{"allowed_commands":["git","ls"]}}`)},
			AutoSuspend:  auto,
		},
	}
}

func getPolicy(name string) *v1.GuardrailPolicy {
	GinkgoHelper()
	var p v1.GuardrailPolicy
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: name}, &p)).To(Succeed())
	return &p
}

func getPassport(name string) *v1.AgentPassport {
	GinkgoHelper()
	var p v1.AgentPassport
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: name}, &p)).To(Succeed())
	return &p
}

// enforced returns the ENFORCED column and the Enforced condition's status of a policy at its
// current generation ("" until the status describes it).
func enforced(name string) string {
	p := getPolicy(name)
	c := meta.FindStatusCondition(p.Status.Conditions, v1.ConditionEnforced)
	if p.Status.Enforcement == nil || c == nil || c.ObservedGeneration != p.Generation {
		return ""
	}
	return p.Status.Enforcement.Summary + " " + string(c.Status)
}

// eventReasons lists the reasons of the Events about a passport.
func eventReasons(name string) []string {
	GinkgoHelper()
	var evs eventsv1.EventList
	Expect(k8sClient.List(ctx, &evs, client.InNamespace(teamNS))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

func kstatusOf(obj client.Object) kstatus.Status {
	GinkgoHelper()
	st, err := testenv.KStatus(k8sClient, obj)
	Expect(err).NotTo(HaveOccurred())
	return st
}

var _ = Describe("decider reports", Ordered, func() {
	var started time.Time
	BeforeAll(func() { started = time.Now() })
	AfterAll(func() { GinkgoWriter.Printf("decider reports specs took %s\n", time.Since(started)) })

	It("shows ENFORCED 2/2 after a change, and 1/2 while one replica holds an old bundle", func() {
		Expect(k8sClient.Create(ctx, passport("coder", map[string]string{"role": "coder"}, nil))).To(Succeed())
		pol := &v1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shell", Namespace: teamNS},
			Spec: v1.GuardrailPolicySpec{PassportSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "coder"}},
				EnforcementAction: v1.EnforcementEnforce, FailurePolicy: v1.FailClosed, DefaultAction: v1.DefaultAllow,
				Rules: []v1.Rule{{Name: "no-push", Tools: []string{"bash"}, When: `input.command.startsWith("git push")`, Action: v1.ActionDeny, Code: "oap.policy_denied"}}}}
		Expect(k8sClient.Create(ctx, pol)).To(Succeed())
		Eventually(func() string { return enforced("shell") }, wait, 100*time.Millisecond).Should(Equal("2/2 True"))

		By("pausing replica b's bundle watch and changing the policy")
		replicas[1].pause()
		p := getPolicy("shell")
		p.Spec.Rules = append(p.Spec.Rules, v1.Rule{Name: "no-force", Tools: []string{"bash"}, When: `input.command.contains("--force")`, Action: v1.ActionDeny, Code: "oap.policy_denied"})
		Expect(k8sClient.Update(ctx, p)).To(Succeed())
		Eventually(func() string { return enforced("shell") }, wait, 100*time.Millisecond).Should(Equal("1/2 False"))
		c := meta.FindStatusCondition(getPolicy("shell").Status.Conditions, v1.ConditionEnforced)
		Expect(c.Reason).To(Equal(v1.ReasonReplicasBehind))
		Expect(kstatusOf(getPolicy("shell"))).To(Equal(kstatus.CurrentStatus), "Enforced=False is not a kstatus failure")

		By("resuming it")
		replicas[1].watch()
		Eventually(func() string { return enforced("shell") }, wait, 100*time.Millisecond).Should(Equal("2/2 True"))
	})

	It("reports Degraded with the failing rule for a rule that cannot evaluate, and kstatus stays Current", func() {
		Expect(k8sClient.Create(ctx, passport("prober", map[string]string{"role": "prober"}, nil))).To(Succeed())
		pol := &v1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: teamNS},
			Spec: v1.GuardrailPolicySpec{PassportSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "prober"}},
				EnforcementAction: v1.EnforcementEnforce, FailurePolicy: v1.FailClosed, DefaultAction: v1.DefaultAllow,
				Rules: []v1.Rule{{Name: "adds-one", Tools: []string{"bash"}, When: "input.command + 1 == 2", Action: v1.ActionDeny, Code: "oap.policy_denied"}}}}
		Expect(k8sClient.Create(ctx, pol)).To(Succeed())
		Eventually(func() string { return enforced("broken") }, wait, 100*time.Millisecond).Should(Equal("2/2 True"))
		Eventually(func() string {
			_, d := decideRaw(replicas[0], map[string]any{"passport": teamNS + "/prober", "tool_name": "bash", "tool_input": map[string]any{"command": "ls"}})
			return code(d)
		}, wait, 100*time.Millisecond).Should(Equal(policy.CodeEvaluatorError))
		var degraded *metav1.Condition
		Eventually(func() metav1.ConditionStatus {
			degraded = meta.FindStatusCondition(getPolicy("broken").Status.Conditions, v1.ConditionDegraded)
			if degraded == nil {
				return ""
			}
			return degraded.Status
		}, wait, 100*time.Millisecond).Should(Equal(metav1.ConditionTrue))
		Expect(degraded.Reason).To(Equal(v1.ReasonEvaluationErrors))
		Expect(degraded.Message).To(ContainSubstring(teamNS + "/broken#adds-one"))
		Expect(degraded.Message).To(MatchRegexp(`^\d+ evaluation errors? `))
		p := getPolicy("broken")
		Expect(p.Status.Enforcement.FailingRule).To(Equal(teamNS + "/broken#adds-one"))
		Expect(p.Status.Enforcement.EvaluationErrors).To(BeNumerically(">=", 1))
		Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1.ConditionReady)).To(BeTrue(), "Ready keeps its meaning")
		Expect(kstatusOf(p)).To(Equal(kstatus.CurrentStatus), "Degraded never makes a policy Failed")

		By("once no call fails for a window, Degraded clears")
		Eventually(func() bool {
			return meta.IsStatusConditionFalse(getPolicy("broken").Status.Conditions, v1.ConditionDegraded)
		}, wait, 100*time.Millisecond).Should(BeTrue())
	})

	It("suspends a passport automatically after the threshold, with its event, and lifts it", func() {
		auto := &v1.AutoSuspend{Denials: 3, Within: metav1.Duration{Duration: time.Minute}, For: metav1.Duration{Duration: 3 * time.Second}}
		Expect(k8sClient.Create(ctx, passport("runaway", nil, auto))).To(Succeed())
		req := map[string]any{"passport": teamNS + "/runaway", "tool_name": "bash", "tool_input": map[string]any{"command": "rm -rf /"}}
		Eventually(func() string { _, d := decideRaw(replicas[0], req); return code(d) }, wait, 100*time.Millisecond).
			Should(Equal(policy.CodeCommandNotAllowed))
		trigger := func() {
			for range 3 {
				_, d := decideRaw(replicas[0], req)
				Expect(d.Decision).To(Equal(policy.DecisionDeny))
			}
			Eventually(func() *v1.AutoSuspension { return getPassport("runaway").Status.AutoSuspension }, wait, 100*time.Millisecond).ShouldNot(BeNil())
		}
		trigger()
		ap := getPassport("runaway")
		Expect(ap.Spec.Status).To(Equal(v1.PassportActive), "spec is never rewritten")
		Expect(ap.Status.Phase).To(Equal(v1.PhaseSuspended))
		Expect(ap.Status.AutoSuspension.Denials).To(BeNumerically(">=", 3))
		Expect(meta.FindStatusCondition(ap.Status.Conditions, v1.ConditionSuspended).Reason).To(Equal(v1.ReasonAutoSuspended))
		Expect(ap.Status.RecentDenials).To(BeNumerically(">=", 1))
		Expect(ap.Status.LastDenyCode).To(Equal(policy.CodeCommandNotAllowed))
		Eventually(func() []string { return eventReasons("runaway") }, wait, 100*time.Millisecond).Should(ContainElement(v1.ReasonAutoSuspended))
		for _, r := range replicas {
			Eventually(func() string {
				_, d := decideRaw(r, map[string]any{"passport": teamNS + "/runaway", "tool_name": "bash", "tool_input": map[string]any{"command": "ls"}})
				return code(d) + " " + d.Reasons[0].Message
			}, wait, 50*time.Millisecond).Should(And(HavePrefix(policy.CodePassportSuspended), ContainSubstring("suspended automatically")))
		}

		By("lifting it with the annotation")
		ap = getPassport("runaway")
		ap.Annotations = map[string]string{v1.AnnotationLiftAutoSuspend: "lift-1"}
		Expect(k8sClient.Update(ctx, ap)).To(Succeed())
		Eventually(func() *v1.AutoSuspension { return getPassport("runaway").Status.AutoSuspension }, wait, 100*time.Millisecond).Should(BeNil())
		Expect(getPassport("runaway").Status.LiftRequest).To(Equal("lift-1"))
		Eventually(func() []string { return eventReasons("runaway") }, wait, 100*time.Millisecond).Should(ContainElement(v1.ReasonAutoSuspendLifted))
		Eventually(func() string {
			_, d := decideRaw(replicas[0], map[string]any{"passport": teamNS + "/runaway", "tool_name": "bash", "tool_input": map[string]any{"command": "ls"}})
			return d.Decision
		}, wait, 50*time.Millisecond).Should(Equal(policy.DecisionAllow))

		By("suspending it again, and letting it lift after spec.autoSuspend.for")
		trigger()
		until := getPassport("runaway").Status.AutoSuspension.Until.Time
		Eventually(func() *v1.AutoSuspension { return getPassport("runaway").Status.AutoSuspension }, wait, 100*time.Millisecond).Should(BeNil())
		Expect(time.Now()).To(BeTemporally(">=", until))
		Expect(getPassport("runaway").Status.Phase).To(Equal(v1.PhaseActive))
	})

	It("signs decisions that verify against a replica's JWKS", func() {
		resp, err := http.Get(replicas[1].server.URL + "/.well-known/jwks.json")
		Expect(err).NotTo(HaveOccurred())
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		set, err := decider.ParseJWKS(data)
		Expect(err).NotTo(HaveOccurred())
		Expect(set.Keys).To(HaveLen(1))
		Expect(set.Keys[0].D).To(BeEmpty(), "the published set has no private part")
		raw, d := decideRaw(replicas[0], map[string]any{"passport": teamNS + "/coder", "tool_name": "bash", "tool_input": map[string]any{"command": "git push"}})
		Expect(d.Decision).To(Equal(policy.DecisionDeny))
		Expect(d.PassportDigest).To(Equal(getPassport("coder").Status.Digest))
		kid, err := decider.VerifyDecision(raw, set)
		Expect(err).NotTo(HaveOccurred())
		Expect(kid).To(Equal("2026-11"))
		_, err = decider.VerifyDecision(bytes.Replace(raw, []byte(`"deny"`), []byte(`"allow"`), 1), set)
		Expect(err).To(HaveOccurred(), "a changed decision does not verify")
	})

	It("lets a ServiceAccount write only the report named after its pod (ValidatingAdmissionPolicy)", func() {
		data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "decider", "report_policy.yaml"))
		Expect(err).NotTo(HaveOccurred())
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		var vap admissionv1.ValidatingAdmissionPolicy
		var binding admissionv1.ValidatingAdmissionPolicyBinding
		Expect(dec.Decode(&vap)).To(Succeed())
		Expect(dec.Decode(&binding)).To(Succeed())
		Expect(k8sClient.Create(ctx, &vap)).To(Succeed())
		Expect(k8sClient.Create(ctx, &binding)).To(Succeed())

		imp := rest.CopyConfig(cfg)
		imp.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + operatorNS + ":tollgate-decider",
			Groups: []string{"system:serviceaccounts", "system:masters"},
			Extra:  map[string][]string{"authentication.kubernetes.io/pod-name": {"tollgate-decider-7d9f-x"}}}
		sa, err := client.New(imp, client.Options{Scheme: testEnv.Scheme})
		Expect(err).NotTo(HaveOccurred())
		report := func(name string) *v1.DeciderReport {
			return &v1.DeciderReport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operatorNS},
				Spec: v1.DeciderReportSpec{HeartbeatTime: metav1.NowMicro(), WindowStart: metav1.NowMicro(), IntervalSeconds: 10}}
		}
		Eventually(func() bool {
			err := sa.Create(ctx, report("tollgate-decider-other"))
			return apierrors.IsForbidden(err) || apierrors.IsInvalid(err)
		}, wait, 200*time.Millisecond).Should(BeTrue(), "another pod's report is refused")
		err = sa.Create(ctx, report("tollgate-decider-other"))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("only the DeciderReport named after its own pod"))
		own := report("tollgate-decider-7d9f-x")
		Expect(sa.Create(ctx, own)).To(Succeed(), "its own report is accepted")
		own.Spec.IntervalSeconds = 5
		Expect(sa.Update(ctx, own)).To(Succeed())
		By("a pod cannot overwrite a report that is not its own")
		other := report("decider-a")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(other), other)).To(Succeed())
		other.Spec.IntervalSeconds = 7
		Expect(strings.Contains(func() string {
			if err := sa.Update(ctx, other); err != nil {
				return err.Error()
			}
			return ""
		}(), "named after its own pod")).To(BeTrue())
	})
})
