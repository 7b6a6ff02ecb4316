package pod

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

const testImage = "registry.example.com/tollgate:v0.2.0"

func mcpInjector(t *testing.T, image string) *Injector {
	t.Helper()
	s := testScheme(t)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(passport("coder", guardrailsv1alpha1.PassportActive, "coding-agent")).Build()
	inj, err := NewInjector(c, nil, admission.NewDecoder(s), Options{DeciderURL: testURL, TokenExpiration: 15 * time.Minute, MCPProxyImage: image})
	if err != nil {
		t.Fatal(err)
	}
	return inj
}

func mcpPod(upstreams string) *corev1.Pod {
	return agentPod(map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder", AnnotationMCPUpstreams: upstreams}, "coding-agent")
}

func env(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func TestMCPSidecarInjected(t *testing.T) {
	inj := mcpInjector(t, testImage)
	raw, _ := json.Marshal(mcpPod("github=https://api.githubcopilot.com/mcp/, fs-local=http://fs.tools.svc:8080/mcp"))
	once, _ := admit(t, inj, raw)
	got := decodePod(t, once)

	if len(got.Spec.InitContainers) != 2 || got.Spec.InitContainers[0].Name != MCPProxyContainer || got.Spec.InitContainers[1].Name != "init" {
		t.Fatalf("init containers = %v, want the sidecar first, then init", names(got.Spec.InitContainers))
	}
	sc := got.Spec.InitContainers[0]
	if sc.RestartPolicy == nil || *sc.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Fatalf("the sidecar is not a native sidecar (restartPolicy %v)", sc.RestartPolicy)
	}
	wantArgs := []string{"mcp-proxy", "--bind-address=127.0.0.1:9190", "--log-format=json",
		"--upstream=github=https://api.githubcopilot.com/mcp/", "--upstream=fs-local=http://fs.tools.svc:8080/mcp"}
	if sc.Image != testImage || !slices.Equal(sc.Args, wantArgs) {
		t.Fatalf("sidecar image %q args %q, want %q %q", sc.Image, sc.Args, testImage, wantArgs)
	}
	for name, want := range map[string]string{EnvURL: testURL, EnvPassport: "agents/coder", EnvTokenFile: TokenMountPath + "/token"} {
		if v, _ := env(&sc, name); v != want {
			t.Errorf("sidecar %s = %q, want %q", name, v, want)
		}
	}
	if len(sc.VolumeMounts) != 1 || sc.VolumeMounts[0].Name != VolumeName || !sc.VolumeMounts[0].ReadOnly {
		t.Errorf("sidecar mounts %v, want the token volume read-only", sc.VolumeMounts)
	}
	if sc.StartupProbe == nil || sc.StartupProbe.Exec == nil || !slices.Equal(sc.StartupProbe.Exec.Command,
		[]string{"/tollgate", "mcp-proxy", "--probe", "127.0.0.1:9190"}) {
		t.Errorf("startup probe %v", sc.StartupProbe)
	}
	if s := sc.SecurityContext; s == nil || !*s.RunAsNonRoot || *s.AllowPrivilegeEscalation || !*s.ReadOnlyRootFilesystem {
		t.Errorf("sidecar security context %v", sc.SecurityContext)
	}
	for _, c := range got.Spec.Containers {
		if v, _ := env(&c, "TOLLGATE_MCP_GITHUB_URL"); v != "http://127.0.0.1:9190/mcp/github" {
			t.Errorf("%s: TOLLGATE_MCP_GITHUB_URL = %q", c.Name, v)
		}
		if v, _ := env(&c, "TOLLGATE_MCP_FS_LOCAL_URL"); v != "http://127.0.0.1:9190/mcp/fs-local" {
			t.Errorf("%s: TOLLGATE_MCP_FS_LOCAL_URL = %q", c.Name, v)
		}
	}
	if _, ok := env(&got.Spec.InitContainers[1], "TOLLGATE_MCP_GITHUB_URL"); ok {
		t.Error("an init container not named by tollgate.dev/containers got an MCP URL")
	}
	if got.Labels[LabelMCPGateway] != "sidecar" || got.Labels[guardrailsv1alpha1.LabelGuarded] != "true" {
		t.Errorf("labels %v", got.Labels)
	}

	twice, resp := admit(t, inj, once)
	if len(resp.Patches) != 0 || !equality.Semantic.DeepEqual(decodePod(t, twice), got) {
		t.Fatalf("a second admission changed the pod: %v", resp.Patches)
	}
}

func names(cs []corev1.Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func TestMCPSidecarRefusals(t *testing.T) {
	hostNet := mcpPod("github=https://x.example/mcp")
	hostNet.Spec.HostNetwork = true
	for _, tc := range []struct {
		name  string
		image string
		pod   *corev1.Pod
		want  string
	}{
		{"bad list", testImage, mcpPod("github"), "want name=URL"},
		{"bad name", testImage, mcpPod("GitHub=https://x.example"), "upstream name"},
		{"variables collide", testImage, mcpPod("a-b=https://x.example,a_b=https://y.example"), "share the variable TOLLGATE_MCP_A_B_URL"},
		{"no image", "", mcpPod("github=https://x.example"), "without --mcp-proxy-image"},
		{"host network", testImage, hostNet, "hostNetwork"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := mcpInjector(t, tc.image).Handle(context.Background(), request(t, tc.pod))
			if resp.Allowed || !strings.Contains(resp.Result.Message, tc.want) {
				t.Fatalf("allowed=%v message %q, want a denial containing %q", resp.Allowed, resp.Result.Message, tc.want)
			}
		})
	}
	// Without the annotation nothing of the gateway is added.
	raw, _ := json.Marshal(agentPod(map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}, "coding-agent"))
	out, _ := admit(t, mcpInjector(t, testImage), raw)
	if p := decodePod(t, out); len(p.Spec.InitContainers) != 1 || p.Labels[LabelMCPGateway] != "" {
		t.Fatalf("a pod without %s got the sidecar", AnnotationMCPUpstreams)
	}
}
