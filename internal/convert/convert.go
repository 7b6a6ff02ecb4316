// Package convert turns Tollgate API objects into the engine's inputs: one object into the engine's
// plain struct (Policy, Passport), validated as the engine compiles it (Validator, returning
// field.ErrorList), and a namespace's objects into the bundle the decision endpoints serve
// (BundleBuilder). The admission webhooks, the controllers and the file loader all go through it.
//
// The engine's spec structs share the CRD's JSON field names, so a spec converts by one JSON round
// trip. The decoding refuses fields the engine's structs lack, so an API field added without its
// engine counterpart fails loudly instead of being dropped (the tests set every API field).
package convert

import (
	"bytes"
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

// ClusterPolicy converts a ClusterGuardrailPolicy into the engine's Policy as the bundles of the
// namespaces it selects hold it: named cluster/<name>, cluster-scoped, without a namespace.
func ClusterPolicy(p *guardrailsv1alpha1.ClusterGuardrailPolicy) (policy.Policy, error) {
	out := policy.Policy{
		Name:          ClusterPolicyName(p.Name),
		Labels:        p.Labels,
		Generation:    p.Generation,
		ClusterScoped: true,
	}
	if err := roundTrip(p.Spec.GuardrailPolicySpec, &out.Spec); err != nil {
		return policy.Policy{}, fmt.Errorf("converting ClusterGuardrailPolicy %s: %w", p.Name, err)
	}
	return out, nil
}

// ClusterPolicyName is the name of ClusterGuardrailPolicy name in a namespace's bundle.
func ClusterPolicyName(name string) string { return guardrailsv1alpha1.ClusterPolicyPrefix + name }

func roundTrip(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding spec: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decoding spec: %w", err)
	}
	return nil
}
