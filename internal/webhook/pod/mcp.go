package pod

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tollgate-dev/tollgate/internal/mcpproxy"
)

// The MCP gateway sidecar. A pod annotated tollgate.dev/mcp-upstreams: "github=https://...,fs=http://..."
// (beside tollgate.dev/passport) gets `tollgate mcp-proxy` as a native sidecar (an init container
// with restartPolicy Always, started and probed before the pod's containers) listening on the pod's
// loopback, and each wired container gets the proxied URL of every upstream in
// TOLLGATE_MCP_<NAME>_URL. The proxy presents the pod's passport and projected token to the decision
// endpoint; it listens on loopback only, so only the pod's own containers (which run as the same
// ServiceAccount) reach it.
const (
	// AnnotationMCPUpstreams lists the MCP servers to guard: name=URL pairs separated by commas.
	AnnotationMCPUpstreams = "tollgate.dev/mcp-upstreams"
	// LabelMCPGateway marks pods with the sidecar (value "sidecar"), for NetworkPolicies.
	LabelMCPGateway = "tollgate.dev/mcp-gateway"
	// MCPProxyContainer is the sidecar's name.
	MCPProxyContainer = "tollgate-mcp-proxy"
	// DefaultMCPProxyPort is the sidecar's loopback port.
	DefaultMCPProxyPort = 9190
	// mcpProxyBinary is the tollgate binary in the image (see the Dockerfile).
	mcpProxyBinary = "/tollgate"
	// mcpProxyUID is the image's non-root user.
	mcpProxyUID = 65532
)

// MCPEnvName is the variable holding an upstream's proxied URL: TOLLGATE_MCP_<NAME>_URL, the name
// upper-cased with - turned into _.
func MCPEnvName(upstream string) string {
	return "TOLLGATE_MCP_" + strings.ToUpper(strings.ReplaceAll(upstream, "-", "_")) + "_URL"
}

// mcpWiring is what injectMCP adds.
type mcpWiring struct {
	upstreams []mcpproxy.Upstream
	image     string
	port      int32
}

// parseMCP reads the annotation; ok is false when the pod does not ask for the sidecar. A pod that
// asks but cannot have it is an error (the pod is refused, saying why).
func parseMCP(pod *corev1.Pod, image string, port int32) (mcpWiring, bool, error) {
	raw, ok := pod.Annotations[AnnotationMCPUpstreams]
	if !ok {
		return mcpWiring{}, false, nil
	}
	ups, err := mcpproxy.ParseUpstreams(raw)
	if err != nil {
		return mcpWiring{}, true, fmt.Errorf("annotation %s: %w", AnnotationMCPUpstreams, err)
	}
	envs := map[string]string{}
	for _, up := range ups {
		env := MCPEnvName(up.Name)
		if other, dup := envs[env]; dup {
			return mcpWiring{}, true, fmt.Errorf("annotation %s: upstreams %s and %s would share the variable %s; rename one",
				AnnotationMCPUpstreams, other, up.Name, env)
		}
		envs[env] = up.Name
	}
	if image == "" {
		return mcpWiring{}, true, fmt.Errorf("annotation %s asks for the MCP gateway sidecar, but the operator runs without --mcp-proxy-image",
			AnnotationMCPUpstreams)
	}
	if pod.Spec.HostNetwork {
		return mcpWiring{}, true, fmt.Errorf("annotation %s: a hostNetwork pod shares the node's loopback, where the sidecar would serve "+
			"the pod's passport to every process of the node; run the pod without hostNetwork", AnnotationMCPUpstreams)
	}
	if port <= 0 {
		port = DefaultMCPProxyPort
	}
	return mcpWiring{upstreams: ups, image: image, port: port}, true, nil
}

// injectMCP adds the sidecar and the URL variables. Like inject, it only adds: a container already
// named MCPProxyContainer, or a variable already set, is left as it is.
func injectMCP(pod *corev1.Pod, w wiring, m mcpWiring) error {
	targets, err := targetContainers(pod)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(int(m.port))
	for _, c := range targets {
		if c.Name == MCPProxyContainer {
			continue
		}
		for _, up := range m.upstreams {
			addEnv(c, MCPEnvName(up.Name), "http://"+addr+mcpproxy.PathPrefix+up.Name)
		}
	}
	has := func(c corev1.Container) bool { return c.Name == MCPProxyContainer }
	if !slices.ContainsFunc(pod.Spec.InitContainers, has) && !slices.ContainsFunc(pod.Spec.Containers, has) {
		// First among the init containers: it is started (and probed) before the others run.
		pod.Spec.InitContainers = slices.Insert(pod.Spec.InitContainers, 0, mcpSidecar(w, m, addr))
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelMCPGateway] = "sidecar"
	return nil
}

// mcpSidecar is the proxy container: remote decisions from the decision endpoint, with the pod's
// passport and projected token.
func mcpSidecar(w wiring, m mcpWiring, addr string) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	args := []string{"mcp-proxy", "--bind-address=" + addr, "--log-format=json"}
	for _, up := range m.upstreams {
		args = append(args, "--upstream="+up.Name+"="+up.URL)
	}
	no, yes := false, true
	uid := int64(mcpProxyUID)
	return corev1.Container{
		Name:          MCPProxyContainer,
		Image:         m.image,
		Args:          args,
		RestartPolicy: &always,
		Env: []corev1.EnvVar{
			{Name: EnvURL, Value: w.url},
			{Name: EnvPassport, Value: w.passport},
			{Name: EnvTokenFile, Value: TokenMountPath + "/" + TokenFile},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: VolumeName, MountPath: TokenMountPath, ReadOnly: true}},
		StartupProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
				Command: []string{mcpProxyBinary, "mcp-proxy", "--probe", addr}}},
			PeriodSeconds: 1, FailureThreshold: 30, TimeoutSeconds: 3,
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &uid, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}
