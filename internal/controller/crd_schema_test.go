package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// readSample loads one config/samples file as an unstructured object in namespace ns.
func readSample(file, ns string) *unstructured.Unstructured {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", file))
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed())
	obj.SetNamespace(ns)
	return obj
}

func newNamespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// expectInvalid asserts the API server rejected an object as Invalid, naming field.
func expectInvalid(err error, field string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the API server must reject the object")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	var causes []string
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			causes = append(causes, c.Field)
		}
	}
	Expect(causes).To(ContainElement(field), "error %q should name field %s", err.Error(), field)
}

var _ = Describe("CRD schema", func() {
	It("accepts every sample in config/samples", func() {
		ns := newNamespace("samples")
		entries, err := os.ReadDir(filepath.Join(testenv.RepoRoot(), "config", "samples"))
		Expect(err).NotTo(HaveOccurred())
		created := 0
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "guardrails_") {
				continue
			}
			obj := readSample(e.Name(), ns)
			Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "sample %s", e.Name())
			created++
		}
		Expect(created).To(BeNumerically(">=", 5))
	})

	It("applies the schema defaults on the stored object", func() {
		ns := newNamespace("defaults")
		policy := readSample("guardrails_v1alpha1_guardrailpolicy_allowlist.yaml", ns)
		Expect(k8sClient.Create(ctx, policy)).To(Succeed())
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(policy.GroupVersionKind())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(policy), stored)).To(Succeed())
		Expect(stored.Object["spec"]).To(HaveKeyWithValue("enforcementAction", "Enforce"))
		Expect(stored.Object["spec"]).To(HaveKeyWithValue("failurePolicy", "Closed"))
	})

	type invalidCase struct {
		sample string
		mutate func(obj map[string]any)
		field  string
	}
	rules := func(obj map[string]any) []any { return obj["spec"].(map[string]any)["rules"].([]any) }
	DescribeTable("rejects invalid objects with their field paths",
		func(c invalidCase) {
			obj := readSample(c.sample, newNamespace("invalid"))
			c.mutate(obj.Object)
			expectInvalid(k8sClient.Create(ctx, obj), c.field)
		},
		Entry("bad enforcementAction enum", invalidCase{
			sample: "guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml",
			mutate: func(o map[string]any) { o["spec"].(map[string]any)["enforcementAction"] = "Block" },
			field:  "spec.enforcementAction",
		}),
		Entry("bad rule action enum", invalidCase{
			sample: "guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml",
			mutate: func(o map[string]any) { rules(o)[0].(map[string]any)["action"] = "Block" },
			field:  "spec.rules[0].action",
		}),
		Entry("bad capability id", invalidCase{
			sample: "guardrails_v1alpha1_agentpassport.yaml",
			mutate: func(o map[string]any) {
				o["spec"].(map[string]any)["capabilities"] = []any{map[string]any{"id": "System.Command Execute"}}
			},
			field: "spec.capabilities[0].id",
		}),
		Entry("bad reason code", invalidCase{
			sample: "guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml",
			mutate: func(o map[string]any) { rules(o)[0].(map[string]any)["code"] = "Blocked Pattern!" },
			field:  "spec.rules[0].code",
		}),
		Entry("over-long list", invalidCase{
			sample: "guardrails_v1alpha1_agentpassport.yaml",
			mutate: func(o map[string]any) {
				regions := make([]any, 33)
				for i := range regions {
					regions[i] = fmt.Sprintf("region-%d", i)
				}
				o["spec"].(map[string]any)["regions"] = regions
			},
			field: "spec.regions",
		}),
		Entry("over-long string", invalidCase{
			sample: "guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml",
			mutate: func(o map[string]any) { rules(o)[0].(map[string]any)["message"] = strings.Repeat("x", 1025) },
			field:  "spec.rules[0].message",
		}),
		Entry("duplicate rule name", invalidCase{
			sample: "guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml",
			mutate: func(o map[string]any) { rules(o)[1].(map[string]any)["name"] = "no-destructive-or-privileged-commands" },
			field:  "spec.rules",
		}),
		Entry("modify on a Deny rule", invalidCase{
			sample: "guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml",
			mutate: func(o map[string]any) {
				rules(o)[0].(map[string]any)["modify"] = map[string]any{"remove": []any{"env"}}
			},
			field: "spec.rules[0].modify",
		}),
		Entry("Modify rule without a patch", invalidCase{
			sample: "guardrails_v1alpha1_guardrailpolicy_modify.yaml",
			mutate: func(o map[string]any) { delete(rules(o)[0].(map[string]any), "modify") },
			field:  "spec.rules[0].modify",
		}),
		Entry("code on an Allow rule", invalidCase{
			sample: "guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml",
			mutate: func(o map[string]any) { rules(o)[1].(map[string]any)["code"] = "oap.allowed" },
			field:  "spec.rules[1].code",
		}),
		Entry("stop listed as a safety finish reason", invalidCase{
			sample: "guardrails_v1alpha1_guardrailpolicy_dryrun.yaml",
			mutate: func(o map[string]any) {
				o["spec"].(map[string]any)["responseGuards"] = map[string]any{"safetyFinishReasons": []any{"content_filter", "stop"}}
			},
			field: "spec.responseGuards.safetyFinishReasons",
		}),
		Entry("bad passport status", invalidCase{
			sample: "guardrails_v1alpha1_agentpassport.yaml",
			mutate: func(o map[string]any) { o["spec"].(map[string]any)["status"] = "paused" },
			field:  "spec.status",
		}),
	)

	It("never lets a revoked passport become active again", func() {
		ns := newNamespace("revoked")
		passport := readSample("guardrails_v1alpha1_agentpassport.yaml", ns)
		Expect(unstructured.SetNestedField(passport.Object, "revoked", "spec", "status")).To(Succeed())
		Expect(k8sClient.Create(ctx, passport)).To(Succeed())

		for _, next := range []string{"active", "suspended"} {
			// The controllers write status concurrently: retry on conflict so the answer is about validation.
			expectInvalid(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				update := passport.DeepCopy()
				if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(update), update); err != nil {
					return err
				}
				Expect(unstructured.SetNestedField(update.Object, next, "spec", "status")).To(Succeed())
				return k8sClient.Update(ctx, update)
			}), "spec.status")
		}

		By("a suspended passport may still be reactivated")
		other := readSample("guardrails_v1alpha1_agentpassport_suspended.yaml", ns)
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
				return err
			}
			Expect(unstructured.SetNestedField(other.Object, "active", "spec", "status")).To(Succeed())
			return k8sClient.Update(ctx, other)
		})).To(Succeed())
	})
})
