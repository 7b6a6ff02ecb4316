package manifest

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader, which parses untrusted files: it must return objects
// or an error, never panic, and every object it returns must be convertible into a bundle.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(passportYAML))
	f.Add([]byte(policyYAML + "---\n" + passportYAML))
	f.Add([]byte(`[{"apiVersion":"guardrails.tollgate.dev/v1alpha1","kind":"AgentPassport","metadata":{"name":"a"},"spec":{"owner":{"id":"x"}}}]`))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: guardrails.tollgate.dev/v1alpha1, kind: GuardrailPolicy, metadata: {name: p}, spec: {}}\n"))
	f.Add([]byte("--- |\n  text\n...\n---\n"))
	samples, _ := filepath.Glob("../../config/samples/*.yaml")
	for _, s := range samples {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Parse("fuzz.yaml", data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		for _, o := range set.Objects {
			if o.Name() == "" || (o.Namespace() == "") != (o.ClusterPolicy != nil) {
				t.Fatalf("object without name or namespace: %+v", o.Source)
			}
		}
		if _, err := set.Bundles(); err != nil {
			t.Fatalf("loaded objects do not convert: %v", err)
		}
		_, _ = set.Compile() // compile errors are fine; panics are not
	})
}
