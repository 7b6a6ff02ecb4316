package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	tgwebhook "github.com/tollgate-dev/tollgate/internal/webhook"
	"github.com/tollgate-dev/tollgate/internal/webhook/pod"
)

func TestWebhooks(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook suite (envtest)")
}

var h *harness

var _ = BeforeSuite(func() {
	var err error
	h, err = startHarness(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	Expect(err).NotTo(HaveOccurred(), "the envtest control plane and webhook server must start (this suite never skips)")
})

var _ = AfterSuite(func() {
	if h != nil {
		Expect(h.stop()).To(Succeed())
	}
})

// namespaces creates a namespace the webhooks intercept and one they ignore (tollgate.dev/webhook=ignore).
func namespaces(ctx context.Context) (covered, ignored string) {
	c := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "agents-"}}
	i := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ignored-",
		Labels: map[string]string{tgwebhook.LabelWebhook: tgwebhook.WebhookIgnore}}}
	Expect(h.client.Create(ctx, c)).To(Succeed())
	Expect(h.client.Create(ctx, i)).To(Succeed())
	return c.Name, i.Name
}

// admissions sums tollgate_webhook_admissions_total over the webhook paths containing kind, for
// result, as controller-runtime's registry (the manager's /metrics) reports it.
func admissions(kind, result string) float64 {
	families, err := metrics.Registry.Gather()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	sum := 0.0
	for _, f := range families {
		if f.GetName() != "tollgate_webhook_admissions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if strings.Contains(labels["webhook"], kind) && labels["result"] == result {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// causes returns the field → message map of an Invalid API error.
func causes(err error) map[string]string {
	var se *apierrors.StatusError
	ExpectWithOffset(1, errors.As(err, &se)).To(BeTrue(), "want an API status error, got %v", err)
	ExpectWithOffset(1, se.ErrStatus.Details).NotTo(BeNil(), "status has no details: %v", err)
	out := map[string]string{}
	for _, c := range se.ErrStatus.Details.Causes {
		out[c.Field] = c.Message
	}
	return out
}

func activePassport(ns, name string, sas ...string) *guardrailsv1alpha1.AgentPassport {
	return &guardrailsv1alpha1.AgentPassport{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: guardrailsv1alpha1.AgentPassportSpec{
			Owner:    guardrailsv1alpha1.PassportOwner{ID: "platform@example.com"},
			Subjects: guardrailsv1alpha1.PassportSubjects{ServiceAccounts: sas},
		},
	}
}

func agentPod(ns, name string, annotations map[string]string, sa string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations, Labels: map[string]string{"app": "agent"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa,
			Containers: []corev1.Container{
				{Name: "app", Image: "agent:1", Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"}}},
				{Name: "sidecar", Image: "proxy:1"},
			},
		},
	}
}

// comparable strips what legitimately differs between two stored copies of the same pod (identity
// and timestamps; all managed fields when withManagedFields is false), so the rest can be compared
// byte for byte.
func comparable(p *corev1.Pod, withManagedFields bool) []byte {
	c := p.DeepCopy()
	c.Name, c.Namespace, c.UID, c.ResourceVersion, c.GenerateName = "", "", "", "", ""
	c.CreationTimestamp = metav1.Time{}
	for i := range c.ManagedFields {
		c.ManagedFields[i].Time = nil
	}
	if !withManagedFields {
		c.ManagedFields = nil
	}
	b, err := json.Marshal(c)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return b
}

var _ = Describe("GuardrailPolicy admission", func() {
	var ns string
	ctx := context.Background()
	BeforeEach(func() { ns, _ = namespaces(ctx) })

	invalidPolicy := func(name string) *guardrailsv1alpha1.GuardrailPolicy {
		return &guardrailsv1alpha1.GuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: guardrailsv1alpha1.GuardrailPolicySpec{
				Rules: []guardrailsv1alpha1.Rule{
					{Name: "ok", Tools: []string{"ls"}, Action: guardrailsv1alpha1.ActionAllow},
					{Name: "broken", Tools: []string{"bash"}, When: "input.command.startsWith(", Action: guardrailsv1alpha1.ActionDeny},
				},
				Requires: []guardrailsv1alpha1.Requirement{{Name: "not-bool", Expression: "'a string'", Code: "oap.policy_denied"}},
				InputGuards: &guardrailsv1alpha1.InputGuards{Patterns: []guardrailsv1alpha1.InputPattern{
					{Name: "bad-regex", Pattern: "(unclosed", RiskLevel: "HIGH"},
				}},
			},
		}
	}

	It("rejects a policy that does not compile, naming every field path", func() {
		before := admissions("guardrailpolicy", tgwebhook.ResultDenied)
		err := h.client.Create(ctx, invalidPolicy("broken"))
		Expect(admissions("guardrailpolicy", tgwebhook.ResultDenied)).To(BeNumerically(">", before),
			"tollgate_webhook_admissions_total counts the rejection as denied")
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		got := causes(err)
		Expect(got).To(HaveKey("spec.rules[1].when"))
		Expect(got).To(HaveKey("spec.requires[0].expression"))
		Expect(got).To(HaveKey("spec.inputGuards.patterns[0].pattern"))
		Expect(err.Error()).To(ContainSubstring("spec.rules[1].when"))
	})

	It("rejects the same policy on a server-side dry run, as kubectl apply --dry-run=server would", func() {
		err := h.client.Create(ctx, invalidPolicy("dry"), client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(HaveKey("spec.rules[1].when"))
	})

	It("rejects an update that breaks a valid policy", func() {
		p := &guardrailsv1alpha1.GuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later-broken"},
			Spec: guardrailsv1alpha1.GuardrailPolicySpec{Rules: []guardrailsv1alpha1.Rule{
				{Name: "r", Tools: []string{"bash"}, Action: guardrailsv1alpha1.ActionDeny}}},
		}
		Expect(h.client.Create(ctx, p)).To(Succeed())
		p.Spec.Rules[0].When = "tool =="
		err := h.client.Update(ctx, p)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(HaveKey("spec.rules[0].when"))
	})

	It("returns warnings for rules that never match or are shadowed", func() {
		c, w, err := h.warningClient()
		Expect(err).NotTo(HaveOccurred())
		p := &guardrailsv1alpha1.GuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dead-rules"},
			Spec: guardrailsv1alpha1.GuardrailPolicySpec{Rules: []guardrailsv1alpha1.Rule{
				{Name: "deny-shell", Tools: []string{"bash", "sh"}, Action: guardrailsv1alpha1.ActionDeny},
				{Name: "allow-bash", Tools: []string{"bash"}, Action: guardrailsv1alpha1.ActionAllow},
				{Name: "never", Tools: []string{"ls"}, When: "false", Action: guardrailsv1alpha1.ActionAllow},
			}},
		}
		Expect(c.Create(ctx, p)).To(Succeed())
		Expect(w.all()).To(ContainElements(
			ContainSubstring("spec.rules[1] (allow-bash): shadowed by spec.rules[0] (deny-shell)"),
			ContainSubstring("spec.rules[2] (never): when is always false"),
		))
	})

	It("stores the defaults explicitly", func() {
		p := &guardrailsv1alpha1.GuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "minimal"},
			Spec: guardrailsv1alpha1.GuardrailPolicySpec{
				Rules:      []guardrailsv1alpha1.Rule{{Name: "r", Tools: []string{"bash"}, Action: guardrailsv1alpha1.ActionDeny}},
				RateLimits: []guardrailsv1alpha1.RateLimit{{Name: "calls", Limit: 10, Window: metav1.Duration{Duration: 60e9}}},
			},
		}
		Expect(h.client.Create(ctx, p)).To(Succeed())
		stored := &guardrailsv1alpha1.GuardrailPolicy{}
		Expect(h.client.Get(ctx, client.ObjectKeyFromObject(p), stored)).To(Succeed())
		Expect(stored.Spec.EnforcementAction).To(Equal(guardrailsv1alpha1.EnforcementEnforce))
		Expect(stored.Spec.FailurePolicy).To(Equal(guardrailsv1alpha1.FailClosed))
		Expect(stored.Spec.DefaultAction).To(Equal(guardrailsv1alpha1.DefaultAllow))
		Expect(stored.Spec.Priority).To(BeZero())
		Expect(stored.Spec.RateLimits[0].Per).To(BeEquivalentTo("Passport"))

	})

	It("stores a budget's defaults and refuses a budget without a cap", func() {
		p := &guardrailsv1alpha1.GuardrailPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budgets"},
			Spec: guardrailsv1alpha1.GuardrailPolicySpec{
				Budgets: []guardrailsv1alpha1.Budget{{Name: "daily", Tools: []string{"refund"}, Field: "amount", Max: 100}},
			},
		}
		Expect(h.client.Create(ctx, p)).To(Succeed())
		stored := &guardrailsv1alpha1.GuardrailPolicy{}
		Expect(h.client.Get(ctx, client.ObjectKeyFromObject(p), stored)).To(Succeed())
		Expect(stored.Spec.Budgets[0].Per).To(BeEquivalentTo("Passport"))
		Expect(stored.Spec.Budgets[0].Period).NotTo(BeNil())
		Expect(stored.Spec.Budgets[0].Period.Duration).To(Equal(24 * time.Hour))

		bad := p.DeepCopy()
		bad.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "budget-without-cap"}
		bad.Spec.Budgets[0].Max = 0
		err := h.client.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("max or limitKey is required"))
	})
})

var _ = Describe("AgentPassport admission", func() {
	var ns string
	ctx := context.Background()
	BeforeEach(func() { ns, _ = namespaces(ctx) })

	It("rejects a passport the engine refuses, with its field path", func() {
		p := activePassport(ns, "bad-limits", "agent")
		p.Spec.Limits = jsonValue(`{"system.command.execute": {"allowed_commands": "git"}}`)
		err := h.client.Create(ctx, p)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(HaveKey("spec.limits[system.command.execute].allowed_commands"))
	})

	It("stores the defaults and warns about a passport no pod can present", func() {
		c, w, err := h.warningClient()
		Expect(err).NotTo(HaveOccurred())
		p := activePassport(ns, "nobody")
		Expect(c.Create(ctx, p)).To(Succeed())
		Expect(w.all()).To(ContainElement(ContainSubstring("spec.subjects.serviceAccounts is empty")))
		stored := &guardrailsv1alpha1.AgentPassport{}
		Expect(h.client.Get(ctx, client.ObjectKeyFromObject(p), stored)).To(Succeed())
		Expect(stored.Spec.Status).To(Equal(guardrailsv1alpha1.PassportActive))
		Expect(stored.Spec.AssuranceLevel).To(BeEquivalentTo("L0"))
		Expect(stored.Spec.Owner.Type).To(BeEquivalentTo("user"))
	})
})

var _ = Describe("Pod injection", func() {
	var ns, ignored string
	ctx := context.Background()
	BeforeEach(func() {
		ns, ignored = namespaces(ctx)
		Expect(h.client.Create(ctx, activePassport(ns, "coder", "coding-agent"))).To(Succeed())
	})

	get := func(p *corev1.Pod) *corev1.Pod {
		out := &corev1.Pod{}
		ExpectWithOffset(1, h.client.Get(ctx, client.ObjectKeyFromObject(p), out)).To(Succeed())
		return out
	}

	It("mutates the stored pod exactly as specified", func() {
		ann := map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}
		// The same pod in a namespace the webhook ignores is stored with only the API server's defaults.
		baseline := agentPod(ignored, "agent", ann, "coding-agent")
		Expect(h.client.Create(ctx, baseline)).To(Succeed())
		wired := agentPod(ns, "agent", ann, "coding-agent")
		Expect(h.client.Create(ctx, wired)).To(Succeed())

		want := get(baseline)
		want.Labels[guardrailsv1alpha1.LabelGuarded] = "true"
		exp, mode := int64(600), int32(0o644)
		want.Spec.Volumes = append(want.Spec.Volumes, corev1.Volume{Name: pod.VolumeName, VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{{
				ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "tollgate", ExpirationSeconds: &exp, Path: "token"},
			}}},
		}})
		for i := range want.Spec.Containers {
			c := &want.Spec.Containers[i]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: pod.VolumeName, MountPath: pod.TokenMountPath, ReadOnly: true})
			c.Env = append(c.Env,
				corev1.EnvVar{Name: pod.EnvURL, Value: deciderURL},
				corev1.EnvVar{Name: pod.EnvPassport, Value: ns + "/coder"},
				corev1.EnvVar{Name: pod.EnvTokenFile, Value: pod.TokenMountPath + "/token"},
			)
		}
		got := get(wired)
		Expect(got.Labels).To(Equal(want.Labels))
		Expect(got.Annotations).To(Equal(want.Annotations))
		Expect(got.Spec).To(Equal(want.Spec))
	})

	It("leaves a pod without the annotation byte-for-byte unchanged", func() {
		plain := agentPod(ns, "plain", map[string]string{"example.com/other": "x"}, "")
		control := agentPod(ignored, "plain", map[string]string{"example.com/other": "x"}, "")
		Expect(h.client.Create(ctx, plain)).To(Succeed())
		Expect(h.client.Create(ctx, control)).To(Succeed())
		Expect(string(comparable(get(plain), true))).To(Equal(string(comparable(get(control), true))))
	})

	It("is idempotent: an already wired pod is stored unchanged", func() {
		first := agentPod(ns, "first", map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}, "coding-agent")
		Expect(h.client.Create(ctx, first)).To(Succeed())
		wired := get(first)

		again := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "again",
			Labels: wired.Labels, Annotations: wired.Annotations}, Spec: *wired.Spec.DeepCopy()}
		Expect(h.client.Create(ctx, again)).To(Succeed())
		// Field ownership differs (the second request sets the wiring itself); the object does not.
		Expect(string(comparable(get(again), false))).To(Equal(string(comparable(wired, false))))
	})

	It("never overwrites env the user set and wires only the listed containers", func() {
		p := agentPod(ns, "custom", map[string]string{
			guardrailsv1alpha1.AnnotationPassport:   "coder",
			guardrailsv1alpha1.AnnotationContainers: "app",
		}, "coding-agent")
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: pod.EnvURL, Value: "http://my-decider:9000"})
		Expect(h.client.Create(ctx, p)).To(Succeed())
		got := get(p)
		Expect(got.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: pod.EnvURL, Value: "http://my-decider:9000"}))
		Expect(got.Spec.Containers[0].Env).NotTo(ContainElement(corev1.EnvVar{Name: pod.EnvURL, Value: deciderURL}))
		Expect(got.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: pod.EnvPassport, Value: ns + "/coder"}))
		Expect(got.Spec.Containers[1].Env).To(BeEmpty())
		Expect(got.Spec.Containers[1].VolumeMounts).To(BeEmpty())
	})

	It("warns when the passport is suspended", func() {
		pp := activePassport(ns, "paused", "default")
		pp.Spec.Status = guardrailsv1alpha1.PassportSuspended
		Expect(h.client.Create(ctx, pp)).To(Succeed())
		c, w, err := h.warningClient()
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, agentPod(ns, "paused", map[string]string{guardrailsv1alpha1.AnnotationPassport: "paused"}, ""))).To(Succeed())
		Expect(w.all()).To(ContainElement(ContainSubstring("is suspended")))
	})

	DescribeTable("rejects a pod that may not present its passport",
		func(setup func(ns string), annotations map[string]string, sa, want string) {
			if setup != nil {
				setup(ns)
			}
			err := h.client.Create(ctx, agentPod(ns, "rejected", annotations, sa))
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want 403 Forbidden, got %v", err)
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("passport does not exist", nil,
			map[string]string{guardrailsv1alpha1.AnnotationPassport: "missing"}, "coding-agent", "/missing does not exist"),
		Entry("passport is revoked", func(ns string) {
			pp := activePassport(ns, "revoked", "coding-agent")
			pp.Spec.Status = guardrailsv1alpha1.PassportRevoked
			Expect(h.client.Create(ctx, pp)).To(Succeed())
		}, map[string]string{guardrailsv1alpha1.AnnotationPassport: "revoked"}, "coding-agent", "/revoked is revoked"),
		Entry("service account not listed", nil,
			map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}, "intruder", `service account "intruder" may not present AgentPassport`),
		Entry("no service account: default is not listed", nil,
			map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}, "", `service account "default" may not present AgentPassport`),
		Entry("empty annotation", nil,
			map[string]string{guardrailsv1alpha1.AnnotationPassport: ""}, "coding-agent", "annotation tollgate.dev/passport is empty"),
		Entry("unknown container listed", nil,
			map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder", guardrailsv1alpha1.AnnotationContainers: "ghost"}, "coding-agent",
			"names no container of the pod: ghost"),
	)
})

func jsonValue(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
