package webhook_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/webhook/pod"
)

// mcpProxyImage is the sidecar image the harness's injector writes.
const mcpProxyImage = "registry.example.com/tollgate:test"

var _ = Describe("MCP gateway sidecar injection", func() {
	var ns string
	ctx := context.Background()
	BeforeEach(func() {
		ns, _ = namespaces(ctx)
		Expect(h.client.Create(ctx, activePassport(ns, "coder", "coding-agent"))).To(Succeed())
	})

	It("adds tollgate mcp-proxy as a native sidecar and gives the agent the proxied URLs; the API server stores the pod", func() {
		p := agentPod(ns, "mcp-agent", map[string]string{
			guardrailsv1alpha1.AnnotationPassport: "coder",
			pod.AnnotationMCPUpstreams:            "github=https://api.githubcopilot.com/mcp/,fs=http://fs.tools.svc:8080/mcp",
		}, "coding-agent")
		Expect(h.client.Create(ctx, p)).To(Succeed())
		got := &corev1.Pod{}
		Expect(h.client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())

		Expect(got.Spec.InitContainers).NotTo(BeEmpty())
		sc := got.Spec.InitContainers[0]
		Expect(sc.Name).To(Equal(pod.MCPProxyContainer))
		Expect(sc.RestartPolicy).NotTo(BeNil())
		Expect(*sc.RestartPolicy).To(Equal(corev1.ContainerRestartPolicyAlways))
		Expect(sc.Image).To(Equal(mcpProxyImage))
		Expect(sc.Args).To(Equal([]string{"mcp-proxy", "--bind-address=127.0.0.1:9190", "--log-format=json",
			"--upstream=github=https://api.githubcopilot.com/mcp/", "--upstream=fs=http://fs.tools.svc:8080/mcp"}))
		Expect(sc.Env).To(ContainElements(
			corev1.EnvVar{Name: pod.EnvURL, Value: deciderURL},
			corev1.EnvVar{Name: pod.EnvPassport, Value: ns + "/coder"},
			corev1.EnvVar{Name: pod.EnvTokenFile, Value: pod.TokenMountPath + "/token"},
		))
		Expect(sc.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: pod.VolumeName, MountPath: pod.TokenMountPath, ReadOnly: true}))
		Expect(sc.StartupProbe).NotTo(BeNil())
		for _, c := range got.Spec.Containers {
			Expect(c.Env).To(ContainElements(
				corev1.EnvVar{Name: "TOLLGATE_MCP_GITHUB_URL", Value: "http://127.0.0.1:9190/mcp/github"},
				corev1.EnvVar{Name: "TOLLGATE_MCP_FS_URL", Value: "http://127.0.0.1:9190/mcp/fs"},
			), "container %s", c.Name)
		}
		Expect(got.Labels).To(HaveKeyWithValue(pod.LabelMCPGateway, "sidecar"))
		Expect(got.Labels).To(HaveKeyWithValue(guardrailsv1alpha1.LabelGuarded, "true"))
	})

	It("refuses a pod whose upstream list cannot be served, saying why", func() {
		p := agentPod(ns, "bad-mcp", map[string]string{
			guardrailsv1alpha1.AnnotationPassport: "coder",
			pod.AnnotationMCPUpstreams:            "github=ftp://example.com",
		}, "coding-agent")
		err := h.client.Create(ctx, p)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("tollgate.dev/mcp-upstreams"))
		Expect(err.Error()).To(ContainSubstring("want an http or https URL"))
	})
})
