package convert

import (
	"strings"
	"testing"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

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
