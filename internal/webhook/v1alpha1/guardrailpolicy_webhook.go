package v1alpha1

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// SetupGuardrailPolicyWebhookWithManager registers the GuardrailPolicy defaulting and validating
// webhooks with mgr's webhook server.
func SetupGuardrailPolicyWebhookWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &guardrailsv1alpha1.GuardrailPolicy{}).
		WithDefaulter(GuardrailPolicyDefaulter{}).
		WithValidator(GuardrailPolicyValidator{}).
		Complete(); err != nil {
		return fmt.Errorf("registering GuardrailPolicy webhooks: %w", err)
	}
	return nil
}

// +kubebuilder:webhook:path=/mutate-guardrails-tollgate-dev-v1alpha1-guardrailpolicy,mutating=true,failurePolicy=fail,sideEffects=None,groups=guardrails.tollgate.dev,resources=guardrailpolicies,verbs=create;update,versions=v1alpha1,name=mguardrailpolicy-v1alpha1.tollgate.dev,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","tollgate-system"]},{"key":"tollgate.dev/webhook","operator":"NotIn","values":["ignore"]}]}}`

// GuardrailPolicyDefaulter writes a GuardrailPolicy's defaults explicitly (the engine's policy.Default*
// values, which the CRD schema's markers repeat): enforcementAction Enforce, failurePolicy Closed,
// defaultAction Allow, priority (always serialized, 0 when unset), rate-limit scopes, the guards'
// thresholds, the patterns' risk types and the evaluator timeout.
type GuardrailPolicyDefaulter struct{}

var _ admission.Defaulter[*guardrailsv1alpha1.GuardrailPolicy] = GuardrailPolicyDefaulter{}

// Default sets the defaults on p.
func (GuardrailPolicyDefaulter) Default(_ context.Context, p *guardrailsv1alpha1.GuardrailPolicy) error {
	DefaultGuardrailPolicySpec(&p.Spec)
	return nil
}

// DefaultGuardrailPolicySpec fills every unset defaultable field of s.
func DefaultGuardrailPolicySpec(s *guardrailsv1alpha1.GuardrailPolicySpec) {
	orDefault(&s.EnforcementAction, policy.DefaultEnforcementAction)
	orDefault(&s.FailurePolicy, policy.DefaultFailurePolicy)
	orDefault(&s.DefaultAction, policy.DefaultDefaultAction)
	for i := range s.RateLimits {
		orDefault(&s.RateLimits[i].Per, policy.DefaultRateLimitPer)
	}
	for i := range s.Budgets {
		b := &s.Budgets[i]
		orDefault(&b.Per, policy.DefaultBudgetPer)
		if b.Period == nil {
			b.Period = &metav1.Duration{Duration: policy.DefaultBudgetPeriod}
		}
	}
	if g := s.InputGuards; g != nil {
		orDefault(&g.BlockThreshold, policy.DefaultBlockThreshold)
		for i := range g.Patterns {
			orDefault(&g.Patterns[i].RiskType, policy.DefaultInputRiskType)
		}
	}
	if g := s.ResponseGuards; g != nil {
		orDefault(&g.BlockThreshold, policy.DefaultBlockThreshold)
		for i := range g.Patterns {
			orDefault(&g.Patterns[i].RiskType, policy.DefaultOutputRiskType)
		}
	}
	if e := s.ExternalEvaluator; e != nil && e.Timeout == nil {
		e.Timeout = &metav1.Duration{Duration: policy.DefaultEvaluatorTimeout}
	}
}

// orDefault sets *v to def when it is empty.
func orDefault[T ~string](v *T, def T) {
	if *v == "" {
		*v = def
	}
}

// +kubebuilder:webhook:path=/validate-guardrails-tollgate-dev-v1alpha1-guardrailpolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=guardrails.tollgate.dev,resources=guardrailpolicies,verbs=create;update,versions=v1alpha1,name=vguardrailpolicy-v1alpha1.tollgate.dev,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","tollgate-system"]},{"key":"tollgate.dev/webhook","operator":"NotIn","values":["ignore"]}]}}`

// GuardrailPolicyValidator rejects GuardrailPolicies the engine cannot compile, listing every
// problem with its field path, and warns about rules that can never match or are shadowed.
type GuardrailPolicyValidator struct{}

var _ admission.Validator[*guardrailsv1alpha1.GuardrailPolicy] = GuardrailPolicyValidator{}

// ValidateCreate compiles the new policy.
func (GuardrailPolicyValidator) ValidateCreate(_ context.Context, p *guardrailsv1alpha1.GuardrailPolicy) (admission.Warnings, error) {
	return validatePolicy(p)
}

// ValidateUpdate compiles the updated policy. An update that leaves the spec unchanged (labels,
// annotations, finalizers) or touches an object being deleted is never rejected, so a policy that
// entered while the webhook was down can still be relabelled, finalized and deleted.
func (GuardrailPolicyValidator) ValidateUpdate(_ context.Context, oldP, newP *guardrailsv1alpha1.GuardrailPolicy) (admission.Warnings, error) {
	warnings, err := validatePolicy(newP)
	if err != nil && (newP.DeletionTimestamp != nil || equality.Semantic.DeepEqual(oldP.Spec, newP.Spec)) {
		return append(warnings, "the policy does not compile, but the update leaves its spec unchanged: "+err.Error()), nil
	}
	return warnings, err
}

// ValidateDelete allows every delete.
func (GuardrailPolicyValidator) ValidateDelete(context.Context, *guardrailsv1alpha1.GuardrailPolicy) (admission.Warnings, error) {
	return nil, nil
}

func validatePolicy(p *guardrailsv1alpha1.GuardrailPolicy) (admission.Warnings, error) {
	gk := guardrailsv1alpha1.GroupVersion.WithKind("GuardrailPolicy").GroupKind()
	ep, errs := convert.ValidatePolicy(p)
	return admission.Warnings(policy.PolicyWarnings(ep.Spec)), invalid(gk, p.Name, errs)
}
