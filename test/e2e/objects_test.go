package e2e

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tollgate-dev/tollgate/internal/chartrender"
)

// installSource names where the install objects come from (printed by the suite).
const installSource = "the Helm chart charts/tollgate (webhook.certificates.provider=cert-manager)"

// installObjects renders the objects an operator installs: the Helm chart charts/tollgate, rendered
// by Helm's Go packages (internal/chartrender, as `helm template --include-crds` does) as release
// "tollgate" in the operator namespace. It is the suite's one source of install objects; everything
// the suite grants its processes comes from here. The webhook certificate comes from cert-manager
// in these values; the suite generates it instead (cert-manager's objects are not applied).
func installObjects() ([]*unstructured.Unstructured, error) {
	objs, err := chartrender.Render(chartrender.Options{
		Namespace:   operatorNamespace,
		Set:         []string{"webhook.certificates.provider=cert-manager"},
		APIVersions: []string{"cert-manager.io/v1"},
	})
	if err != nil {
		return nil, fmt.Errorf("rendering charts/tollgate: %w", err)
	}
	return objs, nil
}

// skippedKinds are install objects the suite does not apply: the suite runs the workloads itself as
// processes (Deployments and what only selects their pods), and cert-manager is not installed (the
// suite generates the webhook certificate).
var skippedKinds = []string{"Deployment", "PodDisruptionBudget", "Certificate", "Issuer", "ServiceMonitor"}

// applicable splits the install objects into what the suite applies, in order (namespaces and CRDs
// first, webhook configurations last), and what it leaves out.
func applicable(objs []*unstructured.Unstructured) (apply, skipped []*unstructured.Unstructured) {
	rank := func(o *unstructured.Unstructured) int {
		switch o.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			return 3
		default:
			return 2
		}
	}
	for _, o := range objs {
		if slices.Contains(skippedKinds, o.GetKind()) {
			skipped = append(skipped, o)
			continue
		}
		apply = append(apply, o)
	}
	slices.SortStableFunc(apply, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	return apply, skipped
}

// findObject returns the install object of kind and name, or nil.
func findObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// withoutRule returns a copy of the Role or ClusterRole obj without the rules that grant anything
// on resource: the deliberately removed RBAC rule of the negative test.
func withoutRule(obj *unstructured.Unstructured, resource string) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	rules, ok, err := unstructured.NestedSlice(out.Object, "rules")
	if err != nil || !ok {
		return nil, fmt.Errorf("%s %s has no rules: %v", obj.GetKind(), obj.GetName(), err)
	}
	kept := make([]any, 0, len(rules))
	for i, r := range rules {
		rule, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s %s: rule %d is not an object", obj.GetKind(), obj.GetName(), i)
		}
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		if !slices.Contains(resources, resource) {
			kept = append(kept, rule)
		}
	}
	if len(kept) == len(rules) {
		return nil, fmt.Errorf("%s %s has no rule on %s", obj.GetKind(), obj.GetName(), resource)
	}
	if err := unstructured.SetNestedSlice(out.Object, kept, "rules"); err != nil {
		return nil, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return out, nil
}

// roleGranting returns the Role of namespace ns bound (by a RoleBinding of the install objects) to
// ServiceAccount ns/sa that has a rule on resource.
func roleGranting(objs []*unstructured.Unstructured, ns, sa, resource string) (*unstructured.Unstructured, error) {
	for _, b := range objs {
		if b.GetKind() != "RoleBinding" || b.GetNamespace() != ns {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		bound := false
		for _, s := range subjects {
			m, ok := s.(map[string]any)
			if ok && m["kind"] == "ServiceAccount" && m["name"] == sa && m["namespace"] == ns {
				bound = true
			}
		}
		kind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		if !bound || kind != "Role" {
			continue
		}
		for _, r := range objs {
			if r.GetKind() != "Role" || r.GetNamespace() != ns || r.GetName() != name {
				continue
			}
			if _, err := withoutRule(r, resource); err == nil {
				return r, nil
			}
		}
	}
	return nil, fmt.Errorf("no Role of %s bound to ServiceAccount %s grants anything on %s", ns, sa, resource)
}

// clusterRoleGranting returns the name of the ClusterRole of the install objects that grants get on
// the non-resource URL path.
func clusterRoleGranting(objs []*unstructured.Unstructured, path string) (string, error) {
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			rule, ok := r.(map[string]any)
			if !ok {
				continue
			}
			urls, _, _ := unstructured.NestedStringSlice(rule, "nonResourceURLs")
			verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
			if slices.Contains(urls, path) && slices.Contains(verbs, "get") {
				return o.GetName(), nil
			}
		}
	}
	return "", fmt.Errorf("no ClusterRole of the install objects grants get on %s", path)
}
