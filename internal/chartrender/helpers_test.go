package chartrender

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// rendered is one rendering of the chart, with lookups.
type rendered struct {
	t    *testing.T
	objs []*unstructured.Unstructured
}

// render renders the embedded chart with the release "tollgate" in "tollgate-system" and the
// --set values, failing the test on error.
func render(t *testing.T, set ...string) *rendered {
	t.Helper()
	objs, err := Render(Options{Set: set})
	if err != nil {
		t.Fatalf("Render(--set %v): %v", set, err)
	}
	return &rendered{t: t, objs: objs}
}

// key names an object as kind/namespace/name (namespace empty for cluster-scoped objects).
func key(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// keys are the rendered objects' keys, sorted.
func (r *rendered) keys() []string {
	var out []string
	for _, o := range r.objs {
		out = append(out, key(o))
	}
	slices.Sort(out)
	return out
}

// find returns the object of kind and name, or nil.
func (r *rendered) find(kind, name string) *unstructured.Unstructured {
	for _, o := range r.objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// get returns the object of kind and name, failing the test when there is none.
func (r *rendered) get(kind, name string) *unstructured.Unstructured {
	r.t.Helper()
	o := r.find(kind, name)
	if o == nil {
		r.t.Fatalf("no %s %s among %v", kind, name, r.keys())
	}
	return o
}

// ofKind returns the objects of kind.
func (r *rendered) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// absent fails the test when an object of kind and name is rendered.
func (r *rendered) absent(kind, name string) {
	r.t.Helper()
	if o := r.find(kind, name); o != nil {
		r.t.Errorf("%s is rendered, want none", key(o))
	}
}

// deployment returns the Deployment name, typed.
func (r *rendered) deployment(name string) *appsv1.Deployment {
	r.t.Helper()
	var d appsv1.Deployment
	convert(r.t, r.get("Deployment", name), &d)
	return &d
}

// convert converts u into the typed object out, failing the test on error.
func convert(t *testing.T, u *unstructured.Unstructured, out any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatalf("converting %s: %v", key(u), err)
	}
}

// container returns the container name of d.
func container(t *testing.T, d *appsv1.Deployment, name string) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("Deployment %s has no container %s", d.Name, name)
	return corev1.Container{}
}

// env returns the value of the environment variable name of c and whether it is set.
func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// flagValue returns the value of --name=value in args and whether it is there; a bare --name has
// the value "true".
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if a == "--"+name {
			return "true", true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// wantFlag fails the test unless args hold --name=want (--name alone for "true").
func wantFlag(t *testing.T, args []string, name, want string) {
	t.Helper()
	got, ok := flagValue(args, name)
	if !ok {
		t.Errorf("no --%s in %v", name, args)
		return
	}
	if got != want {
		t.Errorf("--%s=%s, want %s", name, got, want)
	}
}

// nested returns the value at fields of u, failing the test when it is missing.
func nested(t *testing.T, u *unstructured.Unstructured, fields ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if err != nil || !ok {
		t.Fatalf("%s has no %s (err %v)", key(u), strings.Join(fields, "."), err)
	}
	return v
}

// selects reports whether every label of selector is in labels with the same value.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// stringMap converts a map[string]any of strings.
func stringMap(t *testing.T, v any) map[string]string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not a map", v)
	}
	out := map[string]string{}
	for k, x := range m {
		out[k] = fmt.Sprint(x)
	}
	return out
}
