package chartrender

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	tgwebhook "github.com/tollgate-dev/tollgate/internal/webhook"
)

// kustomizeBuild runs `kustomize build dir` in process (the kustomize API the Makefile's pinned
// kustomize binary is built from).
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	objs, err := Parse(string(y))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return objs
}

// The chart, with the release name "tollgate" in "tollgate-system", renders the objects of
// config/default (with cert-manager and network policies on, as there) and of config/cert-rotation.
// Every field of every object is compared, after these documented normalizations of the chart's
// objects (each one checked, not ignored):
//
//   - labels: the chart's object labels (but the CRDs', installed verbatim from crds/) hold the kustomize ones; the only extra or different keys
//     are Helm's recommended labels (helm.sh/chart, app.kubernetes.io/instance, version,
//     managed-by=Helm and app.kubernetes.io/name). Pod template labels and selectors are equal.
//   - the Namespace object: kustomize creates tollgate-system; Helm does not create its release
//     namespace (helm install --create-namespace). The webhooks exclude it by name either way.
//   - imagePullPolicy: the chart sets image.pullPolicy; kustomize leaves the Kubernetes default.
//   - manager flags: the chart passes explicitly the names it chooses (--webhook-port,
//     --webhook-service, --mutating/validating-webhook-configuration, --cert-secret,
//     --decider-url); with this release name each must equal the binary's default, which
//     config/default relies on.
//   - the decider's GOMEMLIMIT: the chart sets it to 80% of the memory limit, the value the
//     decider computes from its cgroup when it is unset (config/decider).
func TestChartMatchesKustomize(t *testing.T) {
	for _, tc := range []struct {
		dir string
		set []string
	}{
		{"config/default", []string{"image.tag=latest", "webhook.certificates.provider=cert-manager", "networkPolicy.enabled=true"}},
		{"config/cert-rotation", []string{"image.tag=latest", "webhook.certificates.provider=rotation", "networkPolicy.enabled=true"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			kust := index(t, kustomizeBuild(t, "../../"+tc.dir))
			chart := index(t, render(t, tc.set...).objs)

			ns := kust["Namespace//tollgate-system"]
			if ns == nil || ns.GetLabels()["tollgate.dev/webhook"] != "ignore" {
				t.Errorf("kustomize's Namespace %v, want tollgate-system labelled tollgate.dev/webhook=ignore", ns)
			}
			delete(kust, "Namespace//tollgate-system")

			if got, want := sortedKeys(chart), sortedKeys(kust); !slices.Equal(got, want) {
				t.Fatalf("objects differ:\n only in the chart:     %v\n only in kustomize: %v", minus(got, want), minus(want, got))
			}
			for k, c := range chart {
				kobj := kust[k]
				if c.GetKind() != "CustomResourceDefinition" { // crds/ is installed verbatim: no Helm labels
					normalizeLabels(t, c, kobj)
				}
				if c.GetKind() == "Deployment" {
					normalizeDeployment(t, c, kobj)
				}
				if diff := cmp.Diff(canonical(t, kobj), canonical(t, c)); diff != "" {
					t.Errorf("%s differs (-kustomize +chart):\n%s", k, diff)
				}
			}
		})
	}
}

// index maps objects by key, failing on duplicates.
func index(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		k := key(o)
		if out[k] != nil {
			t.Fatalf("%s twice", k)
		}
		out[k] = o.DeepCopy()
	}
	return out
}

func sortedKeys(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// helmLabels are the labels the chart adds to every object (Helm's recommended set).
var helmLabels = map[string]bool{
	"helm.sh/chart": true, "app.kubernetes.io/instance": true, "app.kubernetes.io/version": true,
	"app.kubernetes.io/managed-by": true, "app.kubernetes.io/name": true,
}

// normalizeLabels checks that chart's labels are kust's plus Helm's recommended ones, then gives
// chart kust's labels.
func normalizeLabels(t *testing.T, chart, kust *unstructured.Unstructured) {
	t.Helper()
	cl, kl := chart.GetLabels(), kust.GetLabels()
	for k, v := range kl {
		if k == "app.kubernetes.io/managed-by" {
			continue
		}
		if cl[k] != v {
			t.Errorf("%s: label %s=%q in the chart, %q in kustomize", key(chart), k, cl[k], v)
		}
	}
	for k, v := range cl {
		if _, ok := kl[k]; ok && k != "app.kubernetes.io/managed-by" {
			continue
		}
		if !helmLabels[k] {
			t.Errorf("%s: the chart adds label %s=%s, not one of Helm's recommended labels", key(chart), k, v)
		}
	}
	if got := cl["app.kubernetes.io/managed-by"]; got != "Helm" {
		t.Errorf("%s: app.kubernetes.io/managed-by=%q, want Helm", key(chart), got)
	}
	if len(kl) == 0 {
		unstructured.RemoveNestedField(chart.Object, "metadata", "labels")
		return
	}
	chart.SetLabels(kl)
}

// chartNamedFlags are the manager flags the chart always passes, with the binary's defaults
// (cmd/tollgate/manager_webhooks.go) that config/default relies on.
var chartNamedFlags = map[string]string{
	"--webhook-port":                     "9443",
	"--webhook-service":                  "tollgate-webhook-service",
	"--mutating-webhook-configuration":   tgwebhook.MutatingConfigurationName,
	"--validating-webhook-configuration": tgwebhook.ValidatingConfigurationName,
	"--cert-secret":                      "webhook-server-cert",
	"--decider-url":                      "http://tollgate-decider." + tgwebhook.DefaultOperatorNamespace + ".svc:8080",
}

// normalizeDeployment checks and removes the chart's imagePullPolicy, its explicit manager flags
// and the decider's GOMEMLIMIT.
func normalizeDeployment(t *testing.T, chart, kust *unstructured.Unstructured) {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(chart.Object, "spec", "template", "spec", "containers")
	kcontainers, _, _ := unstructured.NestedSlice(kust.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 || len(kcontainers) != 1 {
		t.Fatalf("%s: %d containers in the chart, %d in kustomize; want 1", key(chart), len(containers), len(kcontainers))
	}
	c, kc := containers[0].(map[string]any), kcontainers[0].(map[string]any)
	if c["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("%s: imagePullPolicy %v, want the chart's default IfNotPresent", key(chart), c["imagePullPolicy"])
	}
	delete(c, "imagePullPolicy")

	switch c["name"] {
	case "manager":
		var args []any
		seen := map[string]bool{}
		for _, a := range c["args"].([]any) {
			name, value, _ := strings.Cut(a.(string), "=")
			want, named := chartNamedFlags[name]
			if !named {
				args = append(args, a)
				continue
			}
			seen[name] = true
			if value != want {
				t.Errorf("%s: the chart passes %s=%s, the binary's default (config/default) is %s", key(chart), name, value, want)
			}
			for _, ka := range kc["args"].([]any) {
				if strings.HasPrefix(ka.(string), name+"=") {
					t.Errorf("%s: kustomize passes %s too; compare it instead", key(chart), ka)
				}
			}
		}
		for name := range chartNamedFlags {
			if !seen[name] {
				t.Errorf("%s: the chart does not pass %s", key(chart), name)
			}
		}
		c["args"] = args
	case "decider":
		limit, _, _ := unstructured.NestedString(kc, "resources", "limits", "memory")
		q, err := resource.ParseQuantity(limit)
		if err != nil {
			t.Fatalf("kustomize's decider memory limit %q: %v", limit, err)
		}
		want := fmt.Sprint(q.Value() * 80 / 100)
		var envs []any
		found := false
		for _, e := range c["env"].([]any) {
			if e.(map[string]any)["name"] == "GOMEMLIMIT" {
				found = true
				if got := e.(map[string]any)["value"]; got != want {
					t.Errorf("%s: GOMEMLIMIT=%v, want 80%% of %s = %s", key(chart), got, limit, want)
				}
				continue
			}
			envs = append(envs, e)
		}
		if !found {
			t.Errorf("%s: no GOMEMLIMIT", key(chart))
		}
		c["env"] = envs
	}
	if err := unstructured.SetNestedSlice(chart.Object, []any{c}, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

// canonical is u's content through JSON, so that both sides have the same number types.
func canonical(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
