package pod

import (
	"os"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestNetworkPolicyExample: config/network-policy/mcp-gateway-example.yaml decodes strictly into
// its kinds, and its policies select pods by the labels the injector sets.
func TestNetworkPolicyExample(t *testing.T) {
	data, err := os.ReadFile("../../../config/network-policy/mcp-gateway-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	selected := map[string]bool{}
	kinds := map[string]int{}
	var gatewayArgs []string
	for i, doc := range strings.Split(string(data), "\n---\n") {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		switch meta.Kind {
		case "NetworkPolicy":
			np := &networkingv1.NetworkPolicy{}
			if err := yaml.UnmarshalStrict([]byte(doc), np); err != nil {
				t.Fatalf("document %d: %v", i, err)
			}
			for k, v := range np.Spec.PodSelector.MatchLabels {
				selected[k+"="+v] = true
			}
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := yaml.UnmarshalStrict([]byte(doc), d); err != nil {
				t.Fatalf("document %d: %v", i, err)
			}
			gatewayArgs = d.Spec.Template.Spec.Containers[0].Args
		case "Service":
			if err := yaml.UnmarshalStrict([]byte(doc), &corev1.Service{}); err != nil {
				t.Fatalf("document %d: %v", i, err)
			}
		default:
			t.Fatalf("document %d: unexpected kind %q", i, meta.Kind)
		}
		kinds[meta.Kind]++
	}
	if kinds["NetworkPolicy"] != 4 || kinds["Deployment"] != 1 || kinds["Service"] != 1 {
		t.Fatalf("kinds = %v", kinds)
	}
	for _, want := range []string{LabelMCPGateway + "=sidecar", guardrailsv1alpha1.LabelGuarded + "=true"} {
		if !selected[want] {
			t.Errorf("no policy selects %s (selected: %v)", want, selected)
		}
	}
	if len(gatewayArgs) == 0 || gatewayArgs[0] != "mcp-proxy" || !strings.Contains(strings.Join(gatewayArgs, " "),
		"--bind-address=:"+strconv.Itoa(DefaultMCPProxyPort)) {
		t.Errorf("gateway args %q", gatewayArgs)
	}
}
