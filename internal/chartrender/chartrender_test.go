package chartrender

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	tgwebhook "github.com/tollgate-dev/tollgate/internal/webhook"
)

const chartDir = "../../charts/tollgate"

// The objects every rendering has, whatever the options (kind/namespace/name).
var alwaysRendered = []string{
	"CustomResourceDefinition//agentpassports.guardrails.tollgate.dev",
	"CustomResourceDefinition//clusterguardrailpolicies.guardrails.tollgate.dev",
	"CustomResourceDefinition//guardrailpolicies.guardrails.tollgate.dev",
	"ServiceAccount/tollgate-system/tollgate-controller-manager",
	"ServiceAccount/tollgate-system/tollgate-decider",
	"ClusterRole//tollgate-manager-role",
	"ClusterRoleBinding//tollgate-manager-rolebinding",
	"Role/tollgate-system/tollgate-manager-role",
	"RoleBinding/tollgate-system/tollgate-manager-rolebinding",
	"Role/tollgate-system/tollgate-leader-election-role",
	"RoleBinding/tollgate-system/tollgate-leader-election-rolebinding",
	"ClusterRole//tollgate-metrics-auth-role",
	"ClusterRoleBinding//tollgate-metrics-auth-rolebinding",
	"ClusterRole//tollgate-metrics-reader",
	"ClusterRole//tollgate-guardrailpolicy-admin-role",
	"ClusterRole//tollgate-guardrailpolicy-editor-role",
	"ClusterRole//tollgate-guardrailpolicy-viewer-role",
	"ClusterRole//tollgate-agentpassport-admin-role",
	"ClusterRole//tollgate-agentpassport-editor-role",
	"ClusterRole//tollgate-agentpassport-viewer-role",
	"ClusterRole//tollgate-clusterguardrailpolicy-admin-role",
	"ClusterRole//tollgate-clusterguardrailpolicy-editor-role",
	"ClusterRole//tollgate-clusterguardrailpolicy-viewer-role",
	"Role/tollgate-system/tollgate-decider-bundle-reader",
	"RoleBinding/tollgate-system/tollgate-decider-bundle-reader",
	"ClusterRole//tollgate-decider-tokenreview",
	"ClusterRoleBinding//tollgate-decider-tokenreview",
	"Deployment/tollgate-system/tollgate-controller-manager",
	"Deployment/tollgate-system/tollgate-decider",
	"Service/tollgate-system/tollgate-decider",
	"PodDisruptionBudget/tollgate-system/tollgate-decider",
	"Service/tollgate-system/tollgate-controller-manager-metrics-service",
	"Service/tollgate-system/tollgate-webhook-service",
	"MutatingWebhookConfiguration//tollgate-mutating-webhook-configuration",
	"ValidatingWebhookConfiguration//tollgate-validating-webhook-configuration",
	"CustomResourceDefinition//deciderreports.guardrails.tollgate.dev",
	"ValidatingAdmissionPolicy//tollgate-decider-reports",
	"ValidatingAdmissionPolicyBinding//tollgate-decider-reports",
}

// The objects of the built-in certificate rotation.
var rotationObjects = []string{
	"Secret/tollgate-system/webhook-server-cert",
	"Role/tollgate-system/tollgate-cert-rotation",
	"RoleBinding/tollgate-system/tollgate-cert-rotation",
	"ClusterRole//tollgate-cert-rotation",
	"ClusterRoleBinding//tollgate-cert-rotation",
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	return unstructured.NestedString(obj, fields...)
}

func sorted(lists ...[]string) []string {
	out := slices.Concat(lists...)
	slices.Sort(out)
	return out
}

// checkWebhooksAfterDeployments: the webhook configurations come after the Deployments, so the
// webhooks' server exists first.
func checkWebhooksAfterDeployments(t *testing.T, r *rendered) {
	t.Helper()
	lastDeployment, firstWebhook := -1, len(r.objs)
	for i, o := range r.objs {
		switch {
		case o.GetKind() == "Deployment":
			lastDeployment = i
		case strings.HasSuffix(o.GetKind(), "WebhookConfiguration") && i < firstWebhook:
			firstWebhook = i
		}
	}
	if firstWebhook < lastDeployment {
		t.Errorf("a webhook configuration (#%d) is installed before a Deployment (#%d)", firstWebhook, lastDeployment)
	}
}

func TestRenderDefaults(t *testing.T) {
	r := render(t)
	if got, want := r.keys(), sorted(alwaysRendered, rotationObjects); !slices.Equal(got, want) {
		t.Errorf("default objects:\n got %v\nwant %v", got, want)
	}
	// Helm's install order: the CRDs first, then namespaced basics before the workloads.
	if r.objs[0].GetKind() != "CustomResourceDefinition" || r.objs[1].GetKind() != "CustomResourceDefinition" {
		t.Errorf("the CRDs are not first: %s, %s", key(r.objs[0]), key(r.objs[1]))
	}
	checkWebhooksAfterDeployments(t, r)

	mgr := r.deployment("tollgate-controller-manager")
	if *mgr.Spec.Replicas != 2 {
		t.Errorf("manager replicas %d, want 2", *mgr.Spec.Replicas)
	}
	c := container(t, mgr, "manager")
	if c.Image != "ghcr.io/tollgate-dev/tollgate:0.1.0" || c.ImagePullPolicy != "IfNotPresent" {
		t.Errorf("manager image %s (%s), want the chart's appVersion, IfNotPresent", c.Image, c.ImagePullPolicy)
	}
	if c.Args[0] != "manager" {
		t.Errorf("manager args %v do not start with the subcommand", c.Args)
	}
	wantFlag(t, c.Args, "leader-elect", "true")
	wantFlag(t, c.Args, "cert-rotation", "true")
	wantFlag(t, c.Args, "metrics-bind-address", ":8443")
	wantFlag(t, c.Args, "mcp-proxy-image", "ghcr.io/tollgate-dev/tollgate:0.1.0")
	wantFlag(t, c.Args, "cert-secret", "webhook-server-cert")
	wantFlag(t, c.Args, "webhook-service", "tollgate-webhook-service")
	wantFlag(t, c.Args, "mutating-webhook-configuration", tgwebhook.MutatingConfigurationName)
	wantFlag(t, c.Args, "validating-webhook-configuration", tgwebhook.ValidatingConfigurationName)
	wantFlag(t, c.Args, "decider-url", "http://tollgate-decider.tollgate-system.svc:8080")
	if v := mgr.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != "webhook-server-cert" {
		t.Errorf("manager volumes %+v, want the webhook-server-cert Secret", v)
	}
	if mgr.Spec.Template.Spec.ServiceAccountName != "tollgate-controller-manager" {
		t.Errorf("manager ServiceAccount %s", mgr.Spec.Template.Spec.ServiceAccountName)
	}

	dec := r.deployment("tollgate-decider")
	if *dec.Spec.Replicas != 2 {
		t.Errorf("decider replicas %d, want 2", *dec.Spec.Replicas)
	}
	dc := container(t, dec, "decider")
	if e, _ := env(dc, "GOGC"); e.Value != "200" {
		t.Errorf("GOGC %q, want 200 (as config/decider)", e.Value)
	}
	if e, _ := env(dc, "GOMEMLIMIT"); e.Value != "429496729" {
		t.Errorf("GOMEMLIMIT %q, want 80%% of 512Mi = 429496729", e.Value)
	}
	if e, _ := env(dc, "GOMAXPROCS"); e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil || e.ValueFrom.ResourceFieldRef.Resource != "limits.cpu" {
		t.Errorf("GOMAXPROCS %+v, want the CPU limit", e)
	}
	wantFlag(t, dc.Args, "authentication", "true")
	wantFlag(t, dc.Args, "token-audience", "tollgate")

	var pdb policyv1.PodDisruptionBudget
	convert(t, r.get("PodDisruptionBudget", "tollgate-decider"), &pdb)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("PDB %+v, want minAvailable 1", pdb.Spec)
	}
	if !selects(pdb.Spec.Selector.MatchLabels, dec.Spec.Template.Labels) {
		t.Errorf("PDB selector %v does not select the decider pods %v", pdb.Spec.Selector.MatchLabels, dec.Spec.Template.Labels)
	}

	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, o := range r.ofKind(kind) {
			if _, ok := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
				t.Errorf("%s has cert-manager's CA injection annotation with the built-in rotation", key(o))
			}
		}
	}
	if n := len(r.ofKind("NetworkPolicy")) + len(r.ofKind("ServiceMonitor")) + len(r.ofKind("Certificate")); n != 0 {
		t.Errorf("%d NetworkPolicies, ServiceMonitors or Certificates by default, want none", n)
	}
}

// TestRenderDeciderReports: by default each decider replica reports (its pod name and UID from the
// downward API) under the admission policy; turned off, neither the flag nor the policy is there.
func TestRenderDeciderReports(t *testing.T) {
	r := render(t)
	c := container(t, r.deployment("tollgate-decider"), "decider")
	for _, arg := range []string{"--report=true", "--report-interval=10s"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("decider args %v lack %s", c.Args, arg)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_UID"] != "metadata.uid" {
		t.Errorf("decider env from the downward API %v, want POD_NAME and POD_UID", env)
	}
	vap := r.ofKind("ValidatingAdmissionPolicyBinding")
	if len(vap) != 1 {
		t.Fatalf("%d admission policy bindings, want 1", len(vap))
	}
	if name, _, _ := unstructuredString(vap[0].Object, "spec", "policyName"); name != "tollgate-decider-reports" {
		t.Errorf("the binding names policy %q", name)
	}

	off := render(t, "decider.reports.enabled=false")
	if !slices.Contains(container(t, off.deployment("tollgate-decider"), "decider").Args, "--report=false") {
		t.Error("decider.reports.enabled=false does not pass --report=false")
	}
	if n := len(off.ofKind("ValidatingAdmissionPolicy")) + len(off.ofKind("ValidatingAdmissionPolicyBinding")); n != 0 {
		t.Errorf("%d admission policy objects with reports off, want none", n)
	}
}

func TestRenderCertManager(t *testing.T) {
	r := render(t, "webhook.certificates.provider=cert-manager")
	if got, want := r.keys(), sorted(alwaysRendered, []string{
		"Issuer/tollgate-system/tollgate-selfsigned-issuer",
		"Certificate/tollgate-system/tollgate-serving-cert",
	}); !slices.Equal(got, want) {
		t.Errorf("cert-manager objects:\n got %v\nwant %v", got, want)
	}
	cert := r.get("Certificate", "tollgate-serving-cert")
	dns := nested(t, cert, "spec", "dnsNames").([]any)
	if len(dns) != 2 || dns[0] != "tollgate-webhook-service.tollgate-system.svc" || dns[1] != "tollgate-webhook-service.tollgate-system.svc.cluster.local" {
		t.Errorf("Certificate dnsNames %v", dns)
	}
	if got := nested(t, cert, "spec", "secretName"); got != "webhook-server-cert" {
		t.Errorf("Certificate secretName %v", got)
	}
	if got := stringMap(t, nested(t, cert, "spec", "issuerRef")); got["kind"] != "Issuer" || got["name"] != "tollgate-selfsigned-issuer" {
		t.Errorf("Certificate issuerRef %v", got)
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		o := r.ofKind(kind)[0]
		if got := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "tollgate-system/tollgate-serving-cert" {
			t.Errorf("%s inject-ca-from %q", key(o), got)
		}
	}
	args := container(t, r.deployment("tollgate-controller-manager"), "manager").Args
	if _, ok := flagValue(args, "cert-rotation"); ok {
		t.Errorf("--cert-rotation with cert-manager: %v", args)
	}
	wantFlag(t, args, "webhook-cert-path", "/tmp/k8s-webhook-server/serving-certs")

	// An existing issuer: no self-signed Issuer.
	r = render(t, "webhook.certificates.provider=cert-manager", "webhook.certificates.certManager.issuerRef.kind=ClusterIssuer",
		"webhook.certificates.certManager.issuerRef.name=corp-ca")
	r.absent("Issuer", "tollgate-selfsigned-issuer")
	if got := stringMap(t, nested(t, r.get("Certificate", "tollgate-serving-cert"), "spec", "issuerRef")); got["kind"] != "ClusterIssuer" || got["name"] != "corp-ca" {
		t.Errorf("Certificate issuerRef %v, want ClusterIssuer corp-ca", got)
	}
}

func TestRenderCertRotationRBAC(t *testing.T) {
	r := render(t)
	for _, name := range []string{"tollgate-cert-rotation"} {
		role := r.get("Role", name)
		rules := nested(t, role, "rules").([]any)
		if len(rules) != 1 || !strings.Contains(strings.Join(toStrings(rules[0].(map[string]any)["resources"]), ","), "secrets") {
			t.Errorf("cert-rotation Role rules %v, want the Secrets", rules)
		}
		crb := r.get("ClusterRoleBinding", name)
		subj := nested(t, crb, "subjects").([]any)[0].(map[string]any)
		if subj["name"] != "tollgate-controller-manager" || subj["namespace"] != "tollgate-system" {
			t.Errorf("cert-rotation binding subject %v", subj)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestRenderServiceMonitors(t *testing.T) {
	render(t).absent("ServiceMonitor", "tollgate-controller-manager-metrics-monitor")
	r := render(t, "monitoring.serviceMonitor.enabled=true", "monitoring.serviceMonitor.labels.release=prom",
		"monitoring.serviceMonitor.interval=15s")
	services := r.ofKind("Service")
	for _, tc := range []struct{ monitor, service, port, scheme string }{
		{"tollgate-controller-manager-metrics-monitor", "tollgate-controller-manager-metrics-service", "https", "https"},
		{"tollgate-decider-metrics-monitor", "tollgate-decider", "http", "http"},
	} {
		sm := r.get("ServiceMonitor", tc.monitor)
		if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetLabels()["release"] != "prom" {
			t.Errorf("%s: apiVersion %s labels %v", tc.monitor, sm.GetAPIVersion(), sm.GetLabels())
		}
		sel := stringMap(t, nested(t, sm, "spec", "selector", "matchLabels"))
		var matched []string
		for _, s := range services {
			if selects(sel, s.GetLabels()) {
				matched = append(matched, s.GetName())
			}
		}
		if len(matched) != 1 || matched[0] != tc.service {
			t.Errorf("%s selects Services %v, want exactly %s", tc.monitor, matched, tc.service)
		}
		ep := nested(t, sm, "spec", "endpoints").([]any)[0].(map[string]any)
		if ep["port"] != tc.port || ep["scheme"] != tc.scheme || ep["path"] != "/metrics" || ep["interval"] != "15s" {
			t.Errorf("%s endpoint %v", tc.monitor, ep)
		}
		// The endpoint's port is a named port of the Service.
		svc := r.get("Service", tc.service)
		var names []string
		for _, p := range nested(t, svc, "spec", "ports").([]any) {
			names = append(names, p.(map[string]any)["name"].(string))
		}
		if !slices.Contains(names, tc.port) {
			t.Errorf("%s scrapes port %s; Service %s has %v", tc.monitor, tc.port, tc.service, names)
		}
	}
}

func TestRenderNetworkPolicies(t *testing.T) {
	if n := len(render(t, "networkPolicy.enabled=false").ofKind("NetworkPolicy")); n != 0 {
		t.Errorf("%d NetworkPolicies with networkPolicy.enabled=false", n)
	}
	r := render(t, "networkPolicy.enabled=true", "networkPolicy.metricsNamespaceSelector.matchLabels.team=observability")
	mgrLabels := r.deployment("tollgate-controller-manager").Spec.Template.Labels
	for _, tc := range []struct {
		name string
		port int64
	}{{"tollgate-allow-webhook-traffic", 9443}, {"tollgate-allow-metrics-traffic", 8443}} {
		np := r.get("NetworkPolicy", tc.name)
		if !selects(stringMap(t, nested(t, np, "spec", "podSelector", "matchLabels")), mgrLabels) {
			t.Errorf("%s does not select the manager pods", tc.name)
		}
		rule := nested(t, np, "spec", "ingress").([]any)[0].(map[string]any)
		port := rule["ports"].([]any)[0].(map[string]any)["port"]
		if port != tc.port {
			t.Errorf("%s opens port %v, want %d", tc.name, port, tc.port)
		}
	}
	from := nested(t, r.get("NetworkPolicy", "tollgate-allow-metrics-traffic"), "spec", "ingress").([]any)[0].(map[string]any)["from"]
	sel := from.([]any)[0].(map[string]any)["namespaceSelector"].(map[string]any)["matchLabels"]
	if got := stringMap(t, sel); got["team"] != "observability" || got["metrics"] != "enabled" {
		t.Errorf("metrics namespaceSelector %v", got)
	}
}

func TestRenderReplicasAndPDB(t *testing.T) {
	r := render(t, "manager.replicas=3", "decider.replicas=5", "decider.podDisruptionBudget.maxUnavailable=1")
	if got := *r.deployment("tollgate-controller-manager").Spec.Replicas; got != 3 {
		t.Errorf("manager replicas %d, want 3", got)
	}
	if got := *r.deployment("tollgate-decider").Spec.Replicas; got != 5 {
		t.Errorf("decider replicas %d, want 5", got)
	}
	var pdb policyv1.PodDisruptionBudget
	convert(t, r.get("PodDisruptionBudget", "tollgate-decider"), &pdb)
	if pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) {
		t.Errorf("PDB %+v, want maxUnavailable 1 only", pdb.Spec)
	}
	render(t, "decider.podDisruptionBudget.enabled=false").absent("PodDisruptionBudget", "tollgate-decider")

	r = render(t, "manager.leaderElection=false")
	if _, ok := flagValue(container(t, r.deployment("tollgate-controller-manager"), "manager").Args, "leader-elect"); ok {
		t.Error("--leader-elect with manager.leaderElection=false")
	}
}

func TestRenderResourcesAndGoMemLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string // GOMEMLIMIT; empty: unset
	}{
		{"default 512Mi", nil, "429496729"},
		{"1Gi", []string{"decider.resources.limits.memory=1Gi"}, "858993459"},
		{"decimal 2G", []string{"decider.resources.limits.memory=2G"}, "1600000000"},
		{"percent 90", []string{"decider.resources.limits.memory=1000Mi", "decider.goMemLimitPercent=90"}, "943718400"},
		{"explicit", []string{"decider.goMemLimit=300MiB"}, "300MiB"},
		{"percent 0", []string{"decider.goMemLimitPercent=0"}, ""},
		{"no memory limit", []string{"decider.resources.limits.memory=null"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, tc.set...)
			c := container(t, r.deployment("tollgate-decider"), "decider")
			e, ok := env(c, "GOMEMLIMIT")
			if tc.want == "" {
				if ok {
					t.Errorf("GOMEMLIMIT=%q, want unset", e.Value)
				}
				return
			}
			if e.Value != tc.want {
				t.Errorf("GOMEMLIMIT=%q, want %s", e.Value, tc.want)
			}
			// Whatever the limit, GOMEMLIMIT stays under it.
			if lim, ok := c.Resources.Limits["memory"]; ok && !strings.HasSuffix(tc.want, "B") {
				if got := resource.MustParse(tc.want); got.Cmp(lim) >= 0 {
					t.Errorf("GOMEMLIMIT %s is not under the limit %s", tc.want, lim.String())
				}
			}
		})
	}

	r := render(t, "decider.resources.requests.cpu=250m", "manager.resources.limits.memory=1Gi")
	dc := container(t, r.deployment("tollgate-decider"), "decider")
	if got := dc.Resources.Requests["cpu"]; got.String() != "250m" {
		t.Errorf("decider cpu request %s, want 250m", got.String())
	}
	mc := container(t, r.deployment("tollgate-controller-manager"), "manager")
	if got := mc.Resources.Limits["memory"]; got.String() != "1Gi" {
		t.Errorf("manager memory limit %s, want 1Gi", got.String())
	}
}

func TestRenderImageOverrides(t *testing.T) {
	r := render(t, "image.repository=registry.example.com/tollgate", "image.tag=v9.9.9", "image.pullPolicy=Always",
		"imagePullSecrets[0].name=regcred")
	for _, d := range []string{"tollgate-controller-manager", "tollgate-decider"} {
		dep := r.deployment(d)
		c := dep.Spec.Template.Spec.Containers[0]
		if c.Image != "registry.example.com/tollgate:v9.9.9" || c.ImagePullPolicy != "Always" {
			t.Errorf("%s image %s (%s)", d, c.Image, c.ImagePullPolicy)
		}
		if s := dep.Spec.Template.Spec.ImagePullSecrets; len(s) != 1 || s[0].Name != "regcred" {
			t.Errorf("%s imagePullSecrets %v", d, s)
		}
	}
	// The sidecar image follows the tollgate image unless set.
	wantFlag(t, container(t, r.deployment("tollgate-controller-manager"), "manager").Args, "mcp-proxy-image", "registry.example.com/tollgate:v9.9.9")

	digest := "sha256:" + strings.Repeat("ab", 32)
	r = render(t, "image.digest="+digest, "manager.mcpProxyImage.repository=mirror.example.com/tollgate", "manager.mcpProxyImage.tag=v1")
	if c := container(t, r.deployment("tollgate-decider"), "decider"); c.Image != "ghcr.io/tollgate-dev/tollgate@"+digest {
		t.Errorf("decider image %s, want the digest", c.Image)
	}
	wantFlag(t, container(t, r.deployment("tollgate-controller-manager"), "manager").Args, "mcp-proxy-image", "mirror.example.com/tollgate:v1")
}

func TestRenderPodSettings(t *testing.T) {
	r := render(t,
		"manager.nodeSelector.pool=system", "decider.nodeSelector.pool=edge",
		"decider.tolerations[0].key=dedicated", "decider.tolerations[0].operator=Exists",
		"manager.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=arch",
		"manager.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
		"decider.podSecurityContext.fsGroup=2000", "decider.podAnnotations.team=ai", "manager.podLabels.tier=control",
		"decider.extraArgs[0]=--token-cache-ttl=5m", "decider.priorityClassName=system-cluster-critical")
	mgr, dec := r.deployment("tollgate-controller-manager"), r.deployment("tollgate-decider")
	if mgr.Spec.Template.Spec.NodeSelector["pool"] != "system" || dec.Spec.Template.Spec.NodeSelector["pool"] != "edge" {
		t.Errorf("nodeSelectors %v %v", mgr.Spec.Template.Spec.NodeSelector, dec.Spec.Template.Spec.NodeSelector)
	}
	if tl := dec.Spec.Template.Spec.Tolerations; len(tl) != 1 || tl[0].Key != "dedicated" {
		t.Errorf("decider tolerations %v", tl)
	}
	if a := mgr.Spec.Template.Spec.Affinity; a == nil || a.NodeAffinity == nil || a.PodAntiAffinity != nil {
		t.Errorf("manager affinity %+v, want the given node affinity replacing the default spread", a)
	}
	if a := dec.Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity == nil {
		t.Errorf("decider affinity %+v, want the default spread over nodes", a)
	}
	if sc := dec.Spec.Template.Spec.SecurityContext; sc == nil || sc.FSGroup == nil || *sc.FSGroup != 2000 || sc.RunAsUser == nil {
		t.Errorf("decider podSecurityContext %+v, want fsGroup merged into the defaults", sc)
	}
	if dec.Spec.Template.Annotations["team"] != "ai" || mgr.Spec.Template.Labels["tier"] != "control" {
		t.Errorf("pod annotations %v, labels %v", dec.Spec.Template.Annotations, mgr.Spec.Template.Labels)
	}
	if !selects(mgr.Spec.Selector.MatchLabels, mgr.Spec.Template.Labels) {
		t.Error("the manager's selector no longer selects its pods")
	}
	wantFlag(t, container(t, dec, "decider").Args, "token-cache-ttl", "5m")
	if dec.Spec.Template.Spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("decider priorityClassName %q", dec.Spec.Template.Spec.PriorityClassName)
	}
}

func TestRenderReleaseNameAndNamespace(t *testing.T) {
	objs, err := Render(Options{ReleaseName: "prod", Namespace: "guard", Set: []string{"webhook.certificates.provider=cert-manager"}})
	if err != nil {
		t.Fatal(err)
	}
	r := &rendered{t: t, objs: objs}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(o.GetName(), "prod-tollgate-") && o.GetName() != "webhook-server-cert" {
			t.Errorf("%s is not named after the release", key(o))
		}
		if ns := o.GetNamespace(); ns != "" && ns != "guard" {
			t.Errorf("%s is not in the release namespace", key(o))
		}
	}
	args := container(t, r.deployment("prod-tollgate-controller-manager"), "manager").Args
	wantFlag(t, args, "webhook-service", "prod-tollgate-webhook-service")
	wantFlag(t, args, "mutating-webhook-configuration", "prod-tollgate-mutating-webhook-configuration")
	wantFlag(t, args, "decider-url", "http://prod-tollgate-decider.guard.svc:8080")
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, o := range r.ofKind(kind) {
			for _, w := range nested(t, o, "webhooks").([]any) {
				wh := w.(map[string]any)
				svc := wh["clientConfig"].(map[string]any)["service"].(map[string]any)
				if svc["name"] != "prod-tollgate-webhook-service" || svc["namespace"] != "guard" {
					t.Errorf("%s webhook %s calls %v", kind, wh["name"], svc)
				}
				if strings.HasPrefix(wh["name"].(string), "mclusterguardrailpolicy") || strings.HasPrefix(wh["name"].(string), "vclusterguardrailpolicy") {
					if wh["namespaceSelector"] != nil {
						t.Errorf("%s webhook %s of a cluster-scoped kind has a namespaceSelector", kind, wh["name"])
					}
					continue // cluster-scoped objects are in no namespace
				}
				excluded := wh["namespaceSelector"].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)["values"]
				if !slices.Contains(toStrings(excluded), "guard") {
					t.Errorf("%s webhook %s does not exclude the release namespace: %v", kind, wh["name"], excluded)
				}
			}
		}
	}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, o := range r.ofKind(kind) {
			for _, s := range nested(t, o, "subjects").([]any) {
				if ns := s.(map[string]any)["namespace"]; ns != "guard" {
					t.Errorf("%s binds a subject in %v", key(o), ns)
				}
			}
		}
	}
	// A release name longer than the limit is cut so the longest Service name stays a DNS label.
	objs, err = Render(Options{ReleaseName: "a-very-long-release-name-for-tollgate-in-production"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Service" && len(o.GetName()) > 63 {
			t.Errorf("Service name %s is longer than 63", o.GetName())
		}
	}
}

func TestRenderWebhooksDisabled(t *testing.T) {
	r := render(t, "webhook.enabled=false")
	for _, k := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Secret", "Certificate"} {
		if n := len(r.ofKind(k)); n != 0 {
			t.Errorf("%d %s with webhook.enabled=false", n, k)
		}
	}
	r.absent("Service", "tollgate-webhook-service")
	r.absent("ClusterRole", "tollgate-cert-rotation")
	mgr := r.deployment("tollgate-controller-manager")
	wantFlag(t, container(t, mgr, "manager").Args, "enable-webhooks", "false")
	if len(mgr.Spec.Template.Spec.Volumes) != 0 {
		t.Errorf("manager volumes %v with webhooks off", mgr.Spec.Template.Spec.Volumes)
	}
}

func TestRenderAggregatedRolesOptional(t *testing.T) {
	r := render(t, "rbac.aggregatedRoles=false")
	for _, o := range r.ofKind("ClusterRole") {
		if strings.HasSuffix(o.GetName(), "-admin-role") || strings.HasSuffix(o.GetName(), "-viewer-role") {
			t.Errorf("%s with rbac.aggregatedRoles=false", key(o))
		}
	}
	r = render(t)
	if got := r.get("ClusterRole", "tollgate-agentpassport-viewer-role").GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"]; got != "true" {
		t.Errorf("viewer role aggregate label %q", got)
	}
}

// The schema rejects bad values before any template runs.
func TestSchemaRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"negative replicas", []string{"decider.replicas=-1"}, "decider/replicas"},
		{"pull policy", []string{"image.pullPolicy=Sometimes"}, "pullPolicy"},
		{"certificate provider", []string{"webhook.certificates.provider=vault"}, "provider"},
		{"unknown key", []string{"replicaCount=2"}, "replicaCount"},
		{"typo in a section", []string{"decider.replica=2"}, "replica"},
		{"memory GOMEMLIMIT cannot use", []string{"decider.resources.limits.memory=1.5Gi"}, "memory"},
		{"extra arg not a flag", []string{"manager.extraArgs[0]=verbose"}, "extraArgs"},
		{"serviceMonitor switch type", []string{"monitoring.serviceMonitor.enabled=yes"}, "enabled"},
		{"failure policy", []string{"webhook.failurePolicy=Sometimes"}, "failurePolicy"},
		{"percent over 100", []string{"decider.goMemLimitPercent=150"}, "goMemLimitPercent"},
		{"GOMEMLIMIT syntax", []string{"decider.goMemLimit=400Mi"}, "goMemLimit"},
		{"port range", []string{"decider.port=70000"}, "port"},
		{"digest", []string{"image.digest=latest"}, "digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(Options{Set: tc.set})
			if err == nil {
				t.Fatalf("--set %v rendered; want a schema error", tc.set)
			}
			if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--set %v: %v; want a schema error naming %s", tc.set, err, tc.want)
			}
		})
	}
	// The switches the observability templates use are in the schema (and accept more keys).
	if _, err := Render(Options{Set: []string{"monitoring.grafanaDashboard.enabled=false", "monitoring.prometheusRule.enabled=false"}}); err != nil {
		t.Errorf("monitoring switches: %v", err)
	}
}

// The CRDs the chart installs are config/crd/bases, byte for byte (make manifests copies them).
func TestChartCRDsMatchConfig(t *testing.T) {
	bases, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(bases) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	inChart, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if !slices.Equal(names(bases), names(inChart)) {
		t.Fatalf("chart CRDs %v, config/crd/bases %v; run make manifests", names(inChart), names(bases))
	}
	for _, b := range bases {
		want, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(b)))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("charts/tollgate/crds/%s differs from config/crd/bases; run make manifests", filepath.Base(b))
		}
	}
	// And Render returns them as objects.
	r := render(t)
	for _, o := range r.ofKind("CustomResourceDefinition") {
		if group, _, _ := unstructured.NestedString(o.Object, "spec", "group"); group != "guardrails.tollgate.dev" {
			t.Errorf("%s group %q", key(o), group)
		}
	}
}

func TestManifestParsesToRender(t *testing.T) {
	m, err := Manifest(Options{Set: []string{"monitoring.serviceMonitor.enabled=true"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m, "# Source: tollgate/templates/manager-deployment.yaml") {
		t.Error("the manifest has no # Source: comments")
	}
	fromText, err := Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	r := render(t, "monitoring.serviceMonitor.enabled=true")
	got := &rendered{t: t, objs: fromText}
	if !slices.Equal(got.keys(), r.keys()) {
		t.Errorf("Manifest objects %v, Render objects %v", got.keys(), r.keys())
	}
}

func TestRenderRejectsOldKubernetes(t *testing.T) {
	if _, err := Render(Options{KubeVersion: "v1.29.0"}); err == nil || !strings.Contains(err.Error(), "needs Kubernetes") {
		t.Errorf("Kubernetes 1.29: %v, want the chart's kubeVersion to refuse it", err)
	}
}
