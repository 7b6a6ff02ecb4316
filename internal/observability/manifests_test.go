package observability

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// object is the part of a manifest these tests read.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		// Service
		Ports []struct {
			Name string `json:"name"`
		} `json:"ports"`
		// ServiceMonitor
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			HonorLabels bool   `json:"honorLabels"`
		} `json:"endpoints"`
		// PrometheusRule
		Groups any `json:"groups"`
	} `json:"spec"`
}

// readObjects reads every document of the YAML files (paths relative to the repository root).
func readObjects(t *testing.T, paths ...string) []object {
	t.Helper()
	var out []object
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), p))
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufioReader(data))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			var o object
			if err := yaml.Unmarshal(doc, &o); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if o.Kind != "" {
				out = append(out, o)
			}
		}
	}
	return out
}

// TestServiceMonitors checks that config/prometheus scrapes every Tollgate process: each
// ServiceMonitor selects exactly one of the Services config/default deploys, by labels, and names a
// port that Service has, with honorLabels (the bundle namespace label); the manager and the deciders
// are both covered.
func TestServiceMonitors(t *testing.T) {
	services := readObjects(t, "config/default/metrics_service.yaml", "config/decider/service.yaml", "config/webhook/service.yaml")
	monitors := readObjects(t, "config/prometheus/monitor.yaml")
	scraped := map[string]bool{}
	for _, m := range monitors {
		if m.Kind != "ServiceMonitor" {
			t.Errorf("config/prometheus/monitor.yaml holds a %s", m.Kind)
			continue
		}
		var selected []object
		for _, s := range services {
			if len(m.Spec.Selector.MatchLabels) > 0 && isSubset(m.Spec.Selector.MatchLabels, s.Metadata.Labels) {
				selected = append(selected, s)
			}
		}
		if len(selected) != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services, want 1", m.Metadata.Name, len(selected))
			continue
		}
		svc := selected[0]
		scraped[svc.Metadata.Name] = true
		if len(m.Spec.Endpoints) == 0 {
			t.Errorf("ServiceMonitor %s has no endpoint", m.Metadata.Name)
		}
		for _, ep := range m.Spec.Endpoints {
			found := false
			for _, p := range svc.Spec.Ports {
				found = found || p.Name == ep.Port
			}
			if !found {
				t.Errorf("ServiceMonitor %s scrapes port %q, which Service %s lacks", m.Metadata.Name, ep.Port, svc.Metadata.Name)
			}
			if ep.Path != "/metrics" || !ep.HonorLabels {
				t.Errorf("ServiceMonitor %s endpoint: path %q honorLabels %v, want /metrics and true", m.Metadata.Name, ep.Path, ep.HonorLabels)
			}
		}
	}
	for _, want := range []string{"controller-manager-metrics-service", "decider"} {
		if !scraped[want] {
			t.Errorf("no ServiceMonitor scrapes Service %s", want)
		}
	}
	if scraped["webhook-service"] {
		t.Error("a ServiceMonitor scrapes the webhook Service")
	}

	// Opt-in from config/default, with the way to enable it said next to it.
	def, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config/default/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"#- ../prometheus", "#- ../grafana"} {
		if !bytes.Contains(def, []byte("\n"+line+"\n")) {
			t.Errorf("config/default/kustomization.yaml lacks the opt-in line %q", line)
		}
	}
}

func isSubset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// TestRuleCopies checks that config/prometheus/rules.yaml holds the chart's rule groups (the chart's
// PrometheusRule is checked by TestChartMonitoring).
func TestRuleCopies(t *testing.T) {
	root := testenv.RepoRoot()
	src, err := os.ReadFile(filepath.Join(root, rulesPath))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups any `json:"groups"`
	}
	if err := yaml.Unmarshal(src, &file); err != nil {
		t.Fatal(err)
	}
	objs := readObjects(t, "config/prometheus/rules.yaml")
	if len(objs) != 1 || objs[0].Kind != "PrometheusRule" {
		t.Fatalf("config/prometheus/rules.yaml: want one PrometheusRule, got %d objects", len(objs))
	}
	if !reflect.DeepEqual(objs[0].Spec.Groups, file.Groups) {
		t.Errorf("config/prometheus/rules.yaml's spec.groups differ from %s", rulesPath)
	}

}
