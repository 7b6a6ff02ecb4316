package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	passportGVK = schema.GroupVersionKind{Group: "guardrails.tollgate.dev", Version: "v1alpha1", Kind: "AgentPassport"}
	policyGVK   = schema.GroupVersionKind{Group: "guardrails.tollgate.dev", Version: "v1alpha1", Kind: "GuardrailPolicy"}
)

// The agent's passport: it may run git, ls, cat and rm, never sudo; only pods running as the
// coding-agent ServiceAccount may present it.
const passportYAML = `apiVersion: guardrails.tollgate.dev/v1alpha1
kind: AgentPassport
metadata:
  name: coding-agent
spec:
  agentID: ap_e2e_coding_agent
  owner: {id: platform-team@example.com, type: team}
  status: active
  capabilities:
  - id: system.command.execute
  limits:
    system.command.execute:
      allowed_commands: [git, ls, cat, rm]
      blocked_patterns: [sudo]
  subjects:
    serviceAccounts: [coding-agent]
`

// shellSafetyRule is the policy_id of a decision made by the shell-safety sample's deny rule.
const shellSafetyRule = "system.command.execute.v1#no-destructive-or-privileged-commands"

// userOf is the user name of the suite's manager, decider or agent ServiceAccount.
func userOf(who string) string {
	switch who {
	case "manager":
		return serviceAccountUser(operatorNamespace, suite.manager.serviceAccount)
	case "decider":
		return serviceAccountUser(operatorNamespace, suite.decider.serviceAccount)
	default:
		return serviceAccountUser(agentsNamespace, agentSA)
	}
}

// get reads the object of gvk agents/name from the API server as admin.
func get(ctx context.Context, gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	Expect(suite.c.Get(ctx, client.ObjectKey{Namespace: agentsNamespace, Name: name}, obj)).To(Succeed())
	return obj
}

// conditionStatus returns the status of condition typ of obj ("" when absent) and its reason.
func conditionStatus(obj *unstructured.Unstructured, typ string) (string, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			status, _ := m["status"].(string)
			reason, _ := m["reason"].(string)
			return status, reason
		}
	}
	return "", ""
}

// eventuallyArgo waits until the Argo CD health of gvk agents/name, read from the API server, is
// status and returns the last health.
func eventuallyArgo(ctx context.Context, gvk schema.GroupVersionKind, name, status string) argoHealth {
	ns := agentsNamespace
	GinkgoHelper()
	var h argoHealth
	Eventually(func(g Gomega) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		g.Expect(suite.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
		script, err := healthScript(suite.root)
		g.Expect(err).NotTo(HaveOccurred())
		h, err = runHealthScript(script, obj.Object)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.Status).To(Equal(status), "Argo CD health of %s %s/%s: %s", gvk.Kind, ns, name, h.Message)
	}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return h
}

// mergePatch applies a JSON merge patch to gvk ns/name as admin.
func mergePatch(ctx context.Context, gvk schema.GroupVersionKind, ns, name, patch string) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(ns)
	obj.SetName(name)
	return suite.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// expectDecision asks the suite's decider and checks the outcome and first reason code.
func expectDecision(ctx context.Context, token, command, outcome, code string) decision {
	GinkgoHelper()
	status, d, raw, err := decideOver(ctx, suite.decider.addr, token, command)
	Expect(err).NotTo(HaveOccurred())
	Expect(status).To(Equal(http.StatusOK), raw)
	Expect(d.Decision).To(Equal(outcome), raw)
	Expect(d.code()).To(Equal(code), raw)
	return d
}

var _ = Describe("Tollgate installed from "+installSource, Ordered, func() {
	var (
		agentPod *corev1.Pod
		token    string
	)

	It("admits the agents' objects through the webhooks and reports them Ready", func(ctx SpecContext) {
		By("creating namespace agents, the ServiceAccounts coding-agent and other")
		Expect(suite.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentsNamespace}})).To(Succeed())
		for _, sa := range []string{agentSA, "other"} {
			Expect(suite.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: agentsNamespace, Name: sa}})).To(Succeed())
		}

		By("creating the passport and the sample policies shell-safety and git-no-pager (through the defaulting and validating webhooks)")
		passport, err := yamlObject(passportYAML, agentsNamespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(suite.c.Create(ctx, passport)).To(Succeed())
		for _, sample := range []string{"guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml", "guardrails_v1alpha1_guardrailpolicy_modify.yaml"} {
			p, err := sampleObject(sample, agentsNamespace)
			Expect(err).NotTo(HaveOccurred())
			Expect(suite.c.Create(ctx, p)).To(Succeed())
		}

		By("waiting for the manager to report them Ready; Argo CD's health checks read Healthy")
		h := eventuallyArgo(ctx, passportGVK, agentSA, "Healthy")
		Expect(h.Message).To(ContainSubstring("Reconciled"))
		for _, name := range []string{"shell-safety", "git-no-pager"} {
			eventuallyArgo(ctx, policyGVK, name, "Healthy")
			p := get(ctx, policyGVK, name)
			valid, reason := conditionStatus(p, "Valid")
			Expect(valid).To(Equal("True"), reason)
		}

		By("waiting for the decider to load the bundle (/readyz)")
		Expect(suite.decider.proc.waitHTTP(ctx, "http://"+suite.decider.addr+"/readyz", 20*time.Second)).To(Succeed())
	})

	It("refuses a policy that does not compile at admission (the validating webhook, called by URL)", func(ctx SpecContext) {
		bad, err := yamlObject(`apiVersion: guardrails.tollgate.dev/v1alpha1
kind: GuardrailPolicy
metadata: {name: broken}
spec:
  rules:
  - {name: bad-cel, tools: [bash], when: "input.command.contains(", action: Deny}
`, agentsNamespace)
		Expect(err).NotTo(HaveOccurred())
		err = suite.c.Create(ctx, bad)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`admission webhook "vguardrailpolicy-v1alpha1.tollgate.dev" denied the request`))
		Expect(err.Error()).To(ContainSubstring("spec.rules[0].when"))
	})

	It("injects an annotated agent pod (the pod webhook)", func(ctx SpecContext) {
		agentPod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: agentsNamespace, Name: "coding-agent",
				Annotations: map[string]string{"tollgate.dev/passport": agentSA}},
			Spec: corev1.PodSpec{
				ServiceAccountName: agentSA,
				Containers:         []corev1.Container{{Name: "agent", Image: "example.com/agent:1"}},
			},
		}
		Expect(suite.c.Create(ctx, agentPod)).To(Succeed())
		By("reading back the pod the API server stored")
		Expect(suite.c.Get(ctx, client.ObjectKeyFromObject(agentPod), agentPod)).To(Succeed())
		Expect(agentPod.Labels).To(HaveKeyWithValue("tollgate.dev/guarded", "true"))
		env := map[string]string{}
		for _, e := range agentPod.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		Expect(env).To(HaveKeyWithValue("TOLLGATE_URL", "http://"+suite.decider.addr))
		Expect(env).To(HaveKeyWithValue("TOLLGATE_PASSPORT", agentsNamespace+"/"+agentSA))
		Expect(env).To(HaveKey("TOLLGATE_TOKEN_FILE"))
		var audience string
		for _, v := range agentPod.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil && v.Name == "tollgate-token" {
					audience = src.ServiceAccountToken.Audience
				}
			}
		}
		Expect(audience).To(Equal("tollgate"), "the pod has a projected token volume for audience tollgate")
	})

	It("decides over HTTP with the pod's ServiceAccount token (TokenRequest, audience tollgate)", func(ctx SpecContext) {
		By("requesting a token for coding-agent bound to the pod, as the kubelet does for the projected volume")
		tr, err := suite.cs.CoreV1().ServiceAccounts(agentsNamespace).CreateToken(ctx, agentSA, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{
				Audiences:         []string{"tollgate"},
				ExpirationSeconds: ptr.To[int64](600),
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: agentPod.Name, UID: agentPod.UID},
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		token = tr.Status.Token

		By("allow: ls -la")
		expectDecision(ctx, token, "ls -la", "allow", "oap.allowed")
		By("deny: rm -rf /tmp/x (shell-safety)")
		d := expectDecision(ctx, token, "rm -rf /tmp/x", "deny", "oap.blocked_pattern")
		Expect(d.PolicyID).To(Equal(shellSafetyRule))
		By("deny: sudo id (the passport's blocked_patterns)")
		expectDecision(ctx, token, "sudo id", "deny", "oap.blocked_pattern")
		By("modify: git log becomes git --no-pager log (git-no-pager)")
		d = expectDecision(ctx, token, "git log", "modify", "oap.allowed")
		Expect(d.ModifiedInput).To(HaveKeyWithValue("command", "git --no-pager log"))

		By("no token: 401")
		status, _, raw, err := decideOver(ctx, suite.decider.addr, "", "ls")
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(http.StatusUnauthorized), raw)

		By("a token for another audience: 401")
		wrong, err := suite.cs.CoreV1().ServiceAccounts(agentsNamespace).CreateToken(ctx, agentSA, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"someone-else"}, ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		status, _, raw, err = decideOver(ctx, suite.decider.addr, wrong.Status.Token, "ls")
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(http.StatusUnauthorized), raw)

		By("a ServiceAccount the passport does not list: oap.subject_not_allowed")
		other, err := suite.cs.CoreV1().ServiceAccounts(agentsNamespace).CreateToken(ctx, "other", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"tollgate"}, ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		expectDecision(ctx, other.Status.Token, "ls", "deny", "oap.subject_not_allowed")
	})

	It("applies the kill switch: a suspended passport is denied within about a second", func(ctx SpecContext) {
		start := time.Now()
		Expect(mergePatch(ctx, passportGVK, agentsNamespace, agentSA, `{"spec":{"status":"suspended"}}`)).To(Succeed())
		Eventually(func(g Gomega) {
			_, d, raw, err := decideOver(ctx, suite.decider.addr, token, "ls -la")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.code()).To(Equal("oap.passport_suspended"), raw)
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
		latency := time.Since(start)
		By(fmt.Sprintf("suspended → denied with oap.passport_suspended after %s", latency.Round(time.Millisecond)))
		AddReportEntry("kill switch latency", latency.Round(time.Millisecond).String())
		Expect(latency).To(BeNumerically("<", 2*time.Second))

		By("Argo CD reads the suspended passport as Suspended")
		h := eventuallyArgo(ctx, passportGVK, agentSA, "Suspended")
		Expect(h.Message).To(HavePrefix("Suspended"))

		By("reactivating: allowed again, Healthy")
		Expect(mergePatch(ctx, passportGVK, agentsNamespace, agentSA, `{"spec":{"status":"active"}}`)).To(Succeed())
		Eventually(func(g Gomega) {
			_, d, raw, err := decideOver(ctx, suite.decider.addr, token, "ls -la")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Decision).To(Equal("allow"), raw)
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
		eventuallyArgo(ctx, passportGVK, agentSA, "Healthy")
	})

	It("keeps the last good bundle across a manager restart and a bad policy update", func(ctx SpecContext) {
		before := expectDecision(ctx, token, "rm -rf /tmp/x", "deny", "oap.blocked_pattern")

		By("stopping the manager (SIGTERM, as a rolling restart does)")
		Expect(suite.manager.proc.stop()).To(Succeed())
		By("decisions keep working while it is gone")
		d := expectDecision(ctx, token, "rm -rf /tmp/x", "deny", "oap.blocked_pattern")
		Expect(d.BundleRevision).To(Equal(before.BundleRevision))
		expectDecision(ctx, token, "ls -la", "allow", "oap.allowed")

		By("starting a new manager process")
		startComponent(ctx, &suite.manager)
		Consistently(func(g Gomega) {
			_, d, raw, err := decideOver(ctx, suite.decider.addr, token, "rm -rf /tmp/x")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.code()).To(Equal("oap.blocked_pattern"), raw)
		}).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("bypassing the webhooks (namespace label tollgate.dev/webhook=ignore) to store a shell-safety that does not compile")
		Expect(mergePatch(ctx, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", agentsNamespace,
			`{"metadata":{"labels":{"tollgate.dev/webhook":"ignore"}}}`)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(mergePatch(ctx, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", agentsNamespace,
				`{"metadata":{"labels":{"tollgate.dev/webhook":null}}}`)).To(Succeed())
		})
		bad := get(ctx, policyGVK, "shell-safety")
		rules, _, _ := unstructured.NestedSlice(bad.Object, "spec", "rules")
		rule0 := rules[0].(map[string]any)
		rule0["when"] = "call.commands.exists(c,"
		rules[0] = rule0
		Expect(unstructured.SetNestedSlice(bad.Object, rules, "spec", "rules")).To(Succeed())
		Expect(suite.c.Update(ctx, bad)).To(Succeed())

		By("the restarted manager reports Valid=False; Argo CD reads Degraded")
		h := eventuallyArgo(ctx, policyGVK, "shell-safety", "Degraded")
		Expect(h.Message).To(ContainSubstring("CompileError"))
		Expect(h.Message).To(ContainSubstring("spec.rules[0].when"))
		p := get(ctx, policyGVK, "shell-safety")
		enforced, _, _ := unstructured.NestedInt64(p.Object, "status", "enforcedGeneration")
		Expect(enforced).To(BeNumerically("<", p.GetGeneration()), "the last good generation stays enforced")

		By("enforcement stays: rm -rf is still denied by shell-safety")
		Consistently(func(g Gomega) {
			_, d, raw, err := decideOver(ctx, suite.decider.addr, token, "rm -rf /tmp/x")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Decision).To(Equal("deny"), raw)
			g.Expect(d.PolicyID).To(Equal(shellSafetyRule), raw)
		}).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("restoring the sample: Healthy again")
		good, err := sampleObject("guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml", agentsNamespace)
		Expect(err).NotTo(HaveOccurred())
		p = get(ctx, policyGVK, "shell-safety")
		Expect(unstructured.SetNestedField(p.Object, good.Object["spec"], "spec")).To(Succeed())
		Expect(suite.c.Update(ctx, p)).To(Succeed())
		eventuallyArgo(ctx, policyGVK, "shell-safety", "Healthy")
	})

	Describe("RBAC: each ServiceAccount can do what it needs and nothing it should not", func() {
		const (
			manager = "manager"
			decider = "decider"
			agent   = "agent"
		)

		DescribeTable("SelfSubjectAccessReview as the ServiceAccount",
			func(ctx SpecContext, who string, attrs authorizationAttributes, allowed bool) {
				user := userOf(who)
				got, err := canI(ctx, user, attrs)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(Equal(allowed), "%s %+v", user, attrs)
			},
			// What the processes use (they ran above; these document it).
			Entry("decider lists bundle ConfigMaps", decider, attrs("list", "", "configmaps", operatorNamespace), true),
			Entry("decider creates TokenReviews", decider, attrs("create", "authentication.k8s.io", "tokenreviews", ""), true),
			Entry("manager patches policy status", manager, sub(attrs("patch", "guardrails.tollgate.dev", "guardrailpolicies", agentsNamespace), "status"), true),
			Entry("manager writes bundle ConfigMaps", manager, attrs("update", "", "configmaps", operatorNamespace), true),
			// What they must not do.
			Entry("decider cannot create GuardrailPolicies", decider, attrs("create", "guardrails.tollgate.dev", "guardrailpolicies", agentsNamespace), false),
			Entry("decider cannot patch AgentPassports", decider, attrs("patch", "guardrails.tollgate.dev", "agentpassports", agentsNamespace), false),
			Entry("decider cannot write bundle ConfigMaps", decider, attrs("update", "", "configmaps", operatorNamespace), false),
			Entry("decider cannot read ConfigMaps elsewhere", decider, attrs("list", "", "configmaps", agentsNamespace), false),
			Entry("decider cannot read Secrets", decider, attrs("get", "", "secrets", operatorNamespace), false),
			Entry("decider cannot create tokens", decider, sub(attrs("create", "", "serviceaccounts", agentsNamespace), "token"), false),
			Entry("manager cannot change a policy's spec", manager, attrs("update", "guardrails.tollgate.dev", "guardrailpolicies", agentsNamespace), false),
			Entry("manager cannot delete passports", manager, attrs("delete", "guardrails.tollgate.dev", "agentpassports", agentsNamespace), false),
			Entry("manager cannot read Secrets", manager, attrs("list", "", "secrets", ""), false),
			Entry("manager cannot write ConfigMaps outside its namespace", manager, attrs("create", "", "configmaps", agentsNamespace), false),
			Entry("manager cannot create pods", manager, attrs("create", "", "pods", agentsNamespace), false),
			Entry("manager cannot impersonate", manager, attrs("impersonate", "", "serviceaccounts", agentsNamespace), false),
			Entry("agent cannot read the bundles", agent, attrs("get", "", "configmaps", operatorNamespace), false),
			Entry("agent cannot lift its own kill switch", agent, attrs("patch", "guardrails.tollgate.dev", "agentpassports", agentsNamespace), false),
		)

		It("refuses real writes with Forbidden", func(ctx SpecContext) {
			By("the decider creating a GuardrailPolicy")
			p, err := sampleObject("guardrails_v1alpha1_guardrailpolicy_allowlist.yaml", agentsNamespace)
			Expect(err).NotTo(HaveOccurred())
			err = clientAs(userOf(decider)).Create(ctx, p)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)

			By("the decider reading a Secret")
			err = clientAs(userOf(decider)).Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "webhook-server-cert"}, &corev1.Secret{})
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)

			By("the decider overwriting a bundle ConfigMap")
			var cms corev1.ConfigMapList
			Expect(suite.c.List(ctx, &cms, client.InNamespace(operatorNamespace), client.HasLabels{"tollgate.dev/bundle-namespace"})).To(Succeed())
			Expect(cms.Items).NotTo(BeEmpty(), "the manager stored a bundle")
			cm := cms.Items[0].DeepCopy()
			cm.Data = map[string]string{"tampered": "true"}
			err = clientAs(userOf(decider)).Update(ctx, cm)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)

			By("the manager rewriting a policy's spec")
			gp := get(ctx, policyGVK, "git-no-pager")
			Expect(unstructured.SetNestedField(gp.Object, int64(999), "spec", "priority")).To(Succeed())
			err = clientAs(userOf(manager)).Update(ctx, gp)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
		})

		It("serves the manager's metrics only to a ServiceAccount bound to the metrics reader role (TokenReview and SubjectAccessReview as the manager)", func(ctx SpecContext) {
			reader, err := clusterRoleGranting(suite.objects, "/metrics")
			Expect(err).NotTo(HaveOccurred())
			By("binding ServiceAccount agents/scraper to ClusterRole " + reader)
			Expect(suite.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: agentsNamespace, Name: "scraper"}})).To(Succeed())
			Expect(suite.c.Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "e2e-scraper"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: reader},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: agentsNamespace, Name: "scraper"}},
			})).To(Succeed())
			scrape := func(sa string) (int, string) {
				tr, err := suite.cs.CoreV1().ServiceAccounts(agentsNamespace).CreateToken(ctx, sa,
					&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
				return getWithToken(ctx, suite.manager.metrics, tr.Status.Token)
			}
			By("scraping as agents/scraper: 200")
			Eventually(func(g Gomega) {
				status, body := scrape("scraper")
				g.Expect(status).To(Equal(http.StatusOK), body)
				g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
			}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
			By("scraping as agents/other: 403")
			status, body := scrape("other")
			Expect(status).To(Equal(http.StatusForbidden), body)
		})

		It("left no permission error in any process's output", func() {
			for _, p := range suite.procs {
				Expect(strings.ToLower(p.log.String())).NotTo(ContainSubstring("forbidden"), "output of %s", p.name)
			}
		})
	})

	It("fails a decider whose Role lacks its rule on the bundle ConfigMaps (a deliberately removed RBAC rule)", func(ctx SpecContext) {
		role, err := roleGranting(suite.objects, operatorNamespace, suite.decider.serviceAccount, "configmaps")
		Expect(err).NotTo(HaveOccurred())
		broken, err := withoutRule(role, "configmaps")
		Expect(err).NotTo(HaveOccurred())
		By("replacing Role " + role.GetName() + " with one without its configmaps rule")
		applyRole(ctx, broken)
		DeferCleanup(func(ctx SpecContext) { applyRole(ctx, role) })
		decider := userOf("decider")
		Eventually(func() (bool, error) {
			return canI(ctx, decider, attrs("list", "", "configmaps", operatorNamespace))
		}).WithContext(ctx).WithTimeout(10*time.Second).Should(BeFalse(), "the API server's RBAC authorizer sees the new Role")

		By("starting a second decider under it: it never loads a bundle, says why, and allows nothing")
		c := deciderComponent("decider-broken-rbac")
		startComponent(ctx, &c)
		Eventually(c.proc.log.String).WithTimeout(20 * time.Second).Should(
			ContainSubstring(`User \"` + decider + `\" cannot list resource \"configmaps\"`))
		Consistently(func() int { return httpStatus(ctx, "http://"+c.addr+"/readyz") }).
			WithTimeout(2 * time.Second).Should(Equal(http.StatusServiceUnavailable))
		status, d, raw, err := decideOver(ctx, c.addr, token, "ls -la")
		Expect(err).NotTo(HaveOccurred())
		Expect(status != http.StatusOK || d.Decision == "deny").To(BeTrue(), "a decider without its bundle allows nothing: %d %s", status, raw)

		By("restoring the rule: the same process loads the bundle and decides")
		applyRole(ctx, role)
		Expect(c.proc.waitHTTP(ctx, "http://"+c.addr+"/readyz", 60*time.Second)).To(Succeed())
		_, d, raw, err = decideOver(ctx, c.addr, token, "rm -rf /tmp/x")
		Expect(err).NotTo(HaveOccurred())
		Expect(d.code()).To(Equal("oap.blocked_pattern"), raw)
		Expect(c.proc.stop()).To(Succeed())
	})
})
