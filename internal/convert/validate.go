package convert

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Validator converts API objects into the engine's and validates them as the engine compiles them.
// The admission webhooks, the controllers and the file loader all validate through it, so an object
// is judged by the same rules wherever it is read; problems are field errors with paths inside the
// object (spec.rules[2].when). The zero value is ready to use.
type Validator struct {
	// PolicySpec validates a converted policy spec; nil means policy.ValidatePolicy. The controller
	// sets a cache of it keyed by the object's generation.
	PolicySpec func(p *guardrailsv1alpha1.GuardrailPolicy, spec policy.PolicySpec) field.ErrorList
}

// Policy converts p and validates its spec. The returned policy is only meaningful when the list
// is empty, or as the conversion of an invalid spec.
func (v Validator) Policy(p *guardrailsv1alpha1.GuardrailPolicy) (policy.Policy, field.ErrorList) {
	out, err := Policy(p)
	if err != nil {
		return policy.Policy{}, field.ErrorList{specError(err)}
	}
	if v.PolicySpec != nil {
		return out, v.PolicySpec(p, out.Spec)
	}
	return out, policy.ValidatePolicy(out.Spec)
}

// ClusterPolicy converts p and validates its spec: the policy as PolicySpec validates a
// GuardrailPolicy's (through p's conversion into one, so a cache keyed by generation serves both)
// and its namespaceSelector.
func (v Validator) ClusterPolicy(p *guardrailsv1alpha1.ClusterGuardrailPolicy) (policy.Policy, field.ErrorList) {
	out, err := ClusterPolicy(p)
	if err != nil {
		return policy.Policy{}, field.ErrorList{specError(err)}
	}
	var errs field.ErrorList
	if v.PolicySpec != nil {
		errs = v.PolicySpec(AsNamespaced(p), out.Spec)
	} else {
		errs = policy.ValidatePolicy(out.Spec)
	}
	return out, append(errs, ValidateNamespaceSelector(p.Spec.NamespaceSelector)...)
}

// ValidateNamespaceSelector checks a ClusterGuardrailPolicy's namespaceSelector (at
// spec.namespaceSelector) as the API server checks label selectors.
func ValidateNamespaceSelector(sel *metav1.LabelSelector) field.ErrorList {
	return metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{},
		field.NewPath("spec", "namespaceSelector"))
}

// AsNamespaced is p as a GuardrailPolicy without a namespace (same name, UID, generation, labels
// and policy spec), e.g. for caches keyed by GuardrailPolicy.
func AsNamespaced(p *guardrailsv1alpha1.ClusterGuardrailPolicy) *guardrailsv1alpha1.GuardrailPolicy {
	return &guardrailsv1alpha1.GuardrailPolicy{ObjectMeta: p.ObjectMeta, Spec: p.Spec.GuardrailPolicySpec}
}

// ValidateClusterPolicy is Validator{}.ClusterPolicy: p converted, with every problem of its spec.
func ValidateClusterPolicy(p *guardrailsv1alpha1.ClusterGuardrailPolicy) (policy.Policy, field.ErrorList) {
	return Validator{}.ClusterPolicy(p)
}

// Passport converts p and validates its spec.
func (v Validator) Passport(p *guardrailsv1alpha1.AgentPassport) (policy.Passport, field.ErrorList) {
	out, err := Passport(p)
	if err != nil {
		return policy.Passport{}, field.ErrorList{specError(err)}
	}
	return out, policy.ValidatePassport(out.Spec)
}

// ValidatePolicy is Validator{}.Policy: p converted, with every problem of its spec.
func ValidatePolicy(p *guardrailsv1alpha1.GuardrailPolicy) (policy.Policy, field.ErrorList) {
	return Validator{}.Policy(p)
}

// ValidatePassport is Validator{}.Passport: p converted, with every problem of its spec.
func ValidatePassport(p *guardrailsv1alpha1.AgentPassport) (policy.Passport, field.ErrorList) {
	return Validator{}.Passport(p)
}

// specError is a spec that cannot be converted at all.
func specError(err error) *field.Error {
	return field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())
}
