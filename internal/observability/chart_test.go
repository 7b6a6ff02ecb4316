package observability

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/internal/chartrender"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// TestChartMonitoring renders the Helm chart with Helm's engine (internal/chartrender): with the
// monitoring switches on it ships the dashboard ConfigMap for the Grafana sidecar (the dashboard
// file byte for byte, label grafana_dashboard: "1", extra labels and namespace from values), the
// PrometheusRule with the rule file's groups, and ServiceMonitors that select the chart's own
// Services by their labels, on ports they have, with honorLabels; with the switches off, none of it.
func TestChartMonitoring(t *testing.T) {
	root := testenv.RepoRoot()
	objs, err := chartrender.Render(chartrender.Options{SkipCRDs: true, Set: []string{
		"monitoring.serviceMonitor.enabled=true",
		"monitoring.grafanaDashboard.enabled=true",
		"monitoring.grafanaDashboard.labels.grafana_folder=Tollgate",
		"monitoring.grafanaDashboard.namespace=monitoring",
		"monitoring.prometheusRule.enabled=true",
		"monitoring.prometheusRule.labels.release=kube-prometheus-stack",
	}})
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
	}
	checkChartDashboard(t, root, byKind["ConfigMap"])
	checkChartRule(t, root, byKind["PrometheusRule"])
	checkChartServiceMonitors(t, byKind["ServiceMonitor"], byKind["Service"])

	off, err := chartrender.Render(chartrender.Options{SkipCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range off {
		if o.GetKind() == "PrometheusRule" || o.GetKind() == "ServiceMonitor" || o.GetLabels()["grafana_dashboard"] == "1" {
			t.Errorf("the default values render %s %s", o.GetKind(), o.GetName())
		}
	}
}

// checkChartDashboard checks the rendered dashboard ConfigMap.
func checkChartDashboard(t *testing.T, root string, configMaps []*unstructured.Unstructured) {
	t.Helper()
	dashboard, err := os.ReadFile(filepath.Join(root, dashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	var dashboards []*unstructured.Unstructured
	for _, cm := range configMaps {
		if cm.GetLabels()["grafana_dashboard"] == "1" {
			dashboards = append(dashboards, cm)
		}
	}
	if len(dashboards) != 1 {
		t.Fatalf("%d dashboard ConfigMaps, want 1", len(dashboards))
	}
	cm := dashboards[0]
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "tollgate.json"); got+"\n" != string(dashboard) {
		t.Errorf("the dashboard ConfigMap's tollgate.json (%d bytes) is not %s (%d bytes)", len(got), dashboardPath, len(dashboard))
	}
	if cm.GetNamespace() != "monitoring" || cm.GetLabels()["grafana_folder"] != "Tollgate" {
		t.Errorf("dashboard ConfigMap %s/%s labels %v: values' namespace and labels not applied", cm.GetNamespace(), cm.GetName(), cm.GetLabels())
	}
}

// checkChartRule checks the rendered PrometheusRule.
func checkChartRule(t *testing.T, root string, rules []*unstructured.Unstructured) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, rulesPath))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := yaml.Unmarshal(src, &file); err != nil {
		t.Fatal(err)
	}
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	if groups, _, _ := unstructured.NestedSlice(rules[0].Object, "spec", "groups"); !reflect.DeepEqual(groups, file["groups"]) {
		t.Errorf("the PrometheusRule's spec.groups differ from %s", rulesPath)
	}
	if rules[0].GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule labels %v: values' labels not applied", rules[0].GetLabels())
	}
}

// checkChartServiceMonitors checks that each rendered ServiceMonitor selects one rendered Service,
// on a port it has, with honorLabels, and that the manager and the deciders are both scraped.
func checkChartServiceMonitors(t *testing.T, monitors, services []*unstructured.Unstructured) {
	t.Helper()
	scraped := map[string]bool{}
	for _, sm := range monitors {
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		var matched []*unstructured.Unstructured
		for _, svc := range services {
			if len(sel) > 0 && isSubset(sel, svc.GetLabels()) {
				matched = append(matched, svc)
			}
		}
		if len(matched) != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services, want 1", sm.GetName(), len(matched))
			continue
		}
		scraped[matched[0].GetName()] = true
		ports, _, _ := unstructured.NestedSlice(matched[0].Object, "spec", "ports")
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		for _, e := range endpoints {
			ep, _ := e.(map[string]any)
			found := false
			for _, p := range ports {
				pm, _ := p.(map[string]any)
				found = found || pm["name"] == ep["port"]
			}
			if !found || ep["honorLabels"] != true {
				t.Errorf("ServiceMonitor %s endpoint %v: port on Service %s %v, honorLabels %v", sm.GetName(), ep["port"], matched[0].GetName(), found, ep["honorLabels"])
			}
		}
	}
	for _, want := range []string{"tollgate-controller-manager-metrics-service", "tollgate-decider"} {
		if !scraped[want] {
			t.Errorf("no ServiceMonitor scrapes Service %s (scraped: %v)", want, scraped)
		}
	}
}
