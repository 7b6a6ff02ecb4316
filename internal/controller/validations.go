package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// policyValidation is the validation of one generation of one policy's spec.
type policyValidation struct {
	uid        types.UID
	generation int64
	errs       field.ErrorList
}

// passportValidation is one passport converted and validated at one resourceVersion.
type passportValidation struct {
	uid             types.UID
	resourceVersion string
	passport        policy.Passport
	errs            field.ErrorList
}

// validations remembers the outcome of convert.Validator for each object, so the status reconcilers
// and the bundle writer validate a policy generation (its CEL compile is the costly part) or a
// passport version once, not once per bundle write. All methods are safe for concurrent use.
type validations struct {
	mu        sync.Mutex
	policies  map[types.NamespacedName]policyValidation
	passports map[types.NamespacedName]passportValidation
}

func newValidations() *validations {
	return &validations{
		policies:  map[types.NamespacedName]policyValidation{},
		passports: map[types.NamespacedName]passportValidation{},
	}
}

// policy converts p and validates its spec (cached per UID and generation: labels, which do not
// change the generation, are converted afresh).
func (v *validations) policy(p *guardrailsv1alpha1.GuardrailPolicy) (policy.Policy, field.ErrorList) {
	return convert.Validator{PolicySpec: v.policySpec}.Policy(p)
}

func (v *validations) policySpec(p *guardrailsv1alpha1.GuardrailPolicy, spec policy.PolicySpec) field.ErrorList {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	v.mu.Lock()
	res, ok := v.policies[key]
	v.mu.Unlock()
	if ok && res.uid == p.UID && res.generation == p.Generation {
		return res.errs
	}
	errs := policy.ValidatePolicy(spec)
	v.mu.Lock()
	v.policies[key] = policyValidation{uid: p.UID, generation: p.Generation, errs: errs}
	v.mu.Unlock()
	return errs
}

// clusterPolicy converts cluster policy p and validates its spec (cached per UID and generation,
// under the key of p without a namespace, which no GuardrailPolicy has).
func (v *validations) clusterPolicy(p *guardrailsv1alpha1.ClusterGuardrailPolicy) (policy.Policy, field.ErrorList) {
	return convert.Validator{PolicySpec: v.policySpec}.ClusterPolicy(p)
}

// passport converts and validates p (cached per UID and resourceVersion). The zero Passport means
// p's spec does not convert.
func (v *validations) passport(p *guardrailsv1alpha1.AgentPassport) (policy.Passport, field.ErrorList) {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	v.mu.Lock()
	res, ok := v.passports[key]
	v.mu.Unlock()
	if ok && res.uid == p.UID && res.resourceVersion == p.ResourceVersion {
		return res.passport, res.errs
	}
	conv, errs := convert.ValidatePassport(p)
	v.mu.Lock()
	v.passports[key] = passportValidation{uid: p.UID, resourceVersion: p.ResourceVersion, passport: conv, errs: errs}
	v.mu.Unlock()
	return conv, errs
}

// forgetPolicy drops the validation of a deleted policy.
func (v *validations) forgetPolicy(key types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.policies, key)
}

// forgetPassport drops the validation of a deleted passport.
func (v *validations) forgetPassport(key types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.passports, key)
}

// forgetNamespace drops the validations of every object of ns (its last object is gone).
func (v *validations) forgetNamespace(ns string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k := range v.policies {
		if k.Namespace == ns {
			delete(v.policies, k)
		}
	}
	for k := range v.passports {
		if k.Namespace == ns {
			delete(v.passports, k)
		}
	}
}
