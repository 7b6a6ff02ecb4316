package convert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// TestSamplesConvertLosslessly checks that every sample's spec survives conversion into the engine
// structs: re-encoding the engine spec gives back the same JSON document.
func TestSamplesConvertLosslessly(t *testing.T) {
	files, err := filepath.Glob("../../config/samples/guardrails_*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(data, &meta); err != nil {
				t.Fatal(err)
			}
			var apiSpec, engineSpec any
			switch meta.Kind {
			case "AgentPassport":
				var p guardrailsv1alpha1.AgentPassport
				if err := yaml.UnmarshalStrict(data, &p); err != nil {
					t.Fatal(err)
				}
				out, err := Passport(&p)
				if err != nil {
					t.Fatal(err)
				}
				apiSpec, engineSpec = p.Spec, out.Spec
			case "GuardrailPolicy":
				var p guardrailsv1alpha1.GuardrailPolicy
				if err := yaml.UnmarshalStrict(data, &p); err != nil {
					t.Fatal(err)
				}
				out, err := Policy(&p)
				if err != nil {
					t.Fatal(err)
				}
				apiSpec, engineSpec = p.Spec, out.Spec
			default:
				t.Fatalf("unexpected kind %q", meta.Kind)
			}
			want, got := canonical(t, apiSpec), canonical(t, engineSpec)
			if want != got {
				t.Errorf("spec changed in conversion:\n api: %s\n got: %s", want, got)
			}
		})
	}
}

// TestRoundTripRejectsFieldsTheEngineLacks: a spec with a field the engine's structs do not have
// does not convert (rather than losing the field).
func TestRoundTripRejectsFieldsTheEngineLacks(t *testing.T) {
	var spec policy.PassportSpec
	if err := roundTrip(map[string]any{"owner": map[string]any{"id": "x"}}, &spec); err != nil {
		t.Fatalf("a known field: %v", err)
	}
	err := roundTrip(map[string]any{"owner": map[string]any{"id": "x"}, "newField": true}, &spec)
	if err == nil || !strings.Contains(err.Error(), "newField") {
		t.Errorf("a field the engine lacks converts: err = %v", err)
	}
	p := &guardrailsv1alpha1.AgentPassport{}
	p.Name, p.Namespace = "p", "ns"
	p.Spec.Owner.ID = "x"
	if _, err := Passport(p); err != nil {
		t.Errorf("Passport: %v", err)
	}
}

func canonical(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
