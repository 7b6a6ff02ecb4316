package v1alpha1

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// SetupClusterGuardrailPolicyWebhookWithManager registers the ClusterGuardrailPolicy defaulting and
// validating webhooks with mgr's webhook server.
func SetupClusterGuardrailPolicyWebhookWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &guardrailsv1alpha1.ClusterGuardrailPolicy{}).
		WithDefaulter(ClusterGuardrailPolicyDefaulter{}).
		WithValidator(ClusterGuardrailPolicyValidator{}).
		Complete(); err != nil {
		return fmt.Errorf("registering ClusterGuardrailPolicy webhooks: %w", err)
	}
	return nil
}

// A cluster-scoped object is not in a namespace, so the namespace exclusions of the other webhooks
// do not apply here.

// +kubebuilder:webhook:path=/mutate-guardrails-tollgate-dev-v1alpha1-clusterguardrailpolicy,mutating=true,failurePolicy=fail,sideEffects=None,groups=guardrails.tollgate.dev,resources=clusterguardrailpolicies,verbs=create;update,versions=v1alpha1,name=mclusterguardrailpolicy-v1alpha1.tollgate.dev,admissionReviewVersions=v1,timeoutSeconds=5

// ClusterGuardrailPolicyDefaulter writes a ClusterGuardrailPolicy's defaults explicitly, as
// GuardrailPolicyDefaulter does for the policy spec it embeds.
type ClusterGuardrailPolicyDefaulter struct{}

var _ admission.Defaulter[*guardrailsv1alpha1.ClusterGuardrailPolicy] = ClusterGuardrailPolicyDefaulter{}

// Default sets the defaults on p.
func (ClusterGuardrailPolicyDefaulter) Default(_ context.Context, p *guardrailsv1alpha1.ClusterGuardrailPolicy) error {
	DefaultGuardrailPolicySpec(&p.Spec.GuardrailPolicySpec)
	return nil
}

// +kubebuilder:webhook:path=/validate-guardrails-tollgate-dev-v1alpha1-clusterguardrailpolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=guardrails.tollgate.dev,resources=clusterguardrailpolicies,verbs=create;update,versions=v1alpha1,name=vclusterguardrailpolicy-v1alpha1.tollgate.dev,admissionReviewVersions=v1,timeoutSeconds=5

// ClusterGuardrailPolicyValidator rejects ClusterGuardrailPolicies the engine cannot compile or
// whose namespaceSelector is invalid, listing every problem with its field path, and warns about
// rules that can never match or are shadowed (as GuardrailPolicyValidator does).
type ClusterGuardrailPolicyValidator struct{}

var _ admission.Validator[*guardrailsv1alpha1.ClusterGuardrailPolicy] = ClusterGuardrailPolicyValidator{}

// ValidateCreate compiles the new policy.
func (ClusterGuardrailPolicyValidator) ValidateCreate(_ context.Context, p *guardrailsv1alpha1.ClusterGuardrailPolicy) (admission.Warnings, error) {
	return validateClusterPolicy(p)
}

// ValidateUpdate compiles the updated policy. An update that leaves the spec unchanged or touches an
// object being deleted is never rejected.
func (ClusterGuardrailPolicyValidator) ValidateUpdate(_ context.Context, oldP, newP *guardrailsv1alpha1.ClusterGuardrailPolicy) (admission.Warnings, error) {
	warnings, err := validateClusterPolicy(newP)
	if err != nil && (newP.DeletionTimestamp != nil || equality.Semantic.DeepEqual(oldP.Spec, newP.Spec)) {
		return append(warnings, "the policy does not compile, but the update leaves its spec unchanged: "+err.Error()), nil
	}
	return warnings, err
}

// ValidateDelete allows every delete.
func (ClusterGuardrailPolicyValidator) ValidateDelete(context.Context, *guardrailsv1alpha1.ClusterGuardrailPolicy) (admission.Warnings, error) {
	return nil, nil
}

func validateClusterPolicy(p *guardrailsv1alpha1.ClusterGuardrailPolicy) (admission.Warnings, error) {
	gk := guardrailsv1alpha1.GroupVersion.WithKind("ClusterGuardrailPolicy").GroupKind()
	ep, errs := convert.ValidateClusterPolicy(p)
	return admission.Warnings(policy.PolicyWarnings(ep.Spec)), invalid(gk, p.Name, errs)
}
