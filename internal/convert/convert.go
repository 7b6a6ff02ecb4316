// Package convert turns Tollgate API objects into the engine's plain structs. The engine's spec
// structs share the CRD's JSON field names, so a spec converts by one JSON round trip.
package convert

import (
	"encoding/json"
	"fmt"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Passport converts an AgentPassport into the engine's Passport.
func Passport(p *guardrailsv1alpha1.AgentPassport) (policy.Passport, error) {
	out := policy.Passport{
		Name:       p.Name,
		Namespace:  p.Namespace,
		UID:        string(p.UID),
		Labels:     p.Labels,
		Generation: p.Generation,
	}
	if err := roundTrip(p.Spec, &out.Spec); err != nil {
		return policy.Passport{}, fmt.Errorf("converting AgentPassport %s/%s: %w", p.Namespace, p.Name, err)
	}
	return out, nil
}

// Policy converts a GuardrailPolicy into the engine's Policy.
func Policy(p *guardrailsv1alpha1.GuardrailPolicy) (policy.Policy, error) {
	out := policy.Policy{
		Name:       p.Name,
		Namespace:  p.Namespace,
		Labels:     p.Labels,
		Generation: p.Generation,
	}
	if err := roundTrip(p.Spec, &out.Spec); err != nil {
		return policy.Policy{}, fmt.Errorf("converting GuardrailPolicy %s/%s: %w", p.Namespace, p.Name, err)
	}
	return out, nil
}

func roundTrip(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding spec: %w", err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding spec: %w", err)
	}
	return nil
}
