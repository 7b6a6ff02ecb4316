package v1alpha1

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// SetupAgentPassportWebhookWithManager registers the AgentPassport defaulting and validating
// webhooks with mgr's webhook server.
func SetupAgentPassportWebhookWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &guardrailsv1alpha1.AgentPassport{}).
		WithDefaulter(AgentPassportDefaulter{}).
		WithValidator(AgentPassportValidator{Now: time.Now}).
		Complete(); err != nil {
		return fmt.Errorf("registering AgentPassport webhooks: %w", err)
	}
	return nil
}

// +kubebuilder:webhook:path=/mutate-guardrails-tollgate-dev-v1alpha1-agentpassport,mutating=true,failurePolicy=fail,sideEffects=None,groups=guardrails.tollgate.dev,resources=agentpassports,verbs=create;update,versions=v1alpha1,name=magentpassport-v1alpha1.tollgate.dev,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","tollgate-system"]},{"key":"tollgate.dev/webhook","operator":"NotIn","values":["ignore"]}]}}`

// AgentPassportDefaulter writes a passport's defaults explicitly (the engine's policy.Default* values,
// which the CRD schema's markers repeat): status active, assuranceLevel L0, owner type user.
type AgentPassportDefaulter struct{}

var _ admission.Defaulter[*guardrailsv1alpha1.AgentPassport] = AgentPassportDefaulter{}

// Default sets the defaults on p.
func (AgentPassportDefaulter) Default(_ context.Context, p *guardrailsv1alpha1.AgentPassport) error {
	orDefault(&p.Spec.Status, policy.DefaultPassportStatus)
	orDefault(&p.Spec.AssuranceLevel, policy.DefaultAssuranceLevel)
	orDefault(&p.Spec.Owner.Type, policy.DefaultOwnerType)
	if a := p.Spec.AutoSuspend; a != nil {
		if a.Within.Duration <= 0 {
			a.Within.Duration = policy.DefaultAutoSuspendWithin
		}
		if a.For.Duration <= 0 {
			a.For.Duration = policy.DefaultAutoSuspendFor
		}
	}
	return nil
}

// +kubebuilder:webhook:path=/validate-guardrails-tollgate-dev-v1alpha1-agentpassport,mutating=false,failurePolicy=fail,sideEffects=None,groups=guardrails.tollgate.dev,resources=agentpassports,verbs=create;update,versions=v1alpha1,name=vagentpassport-v1alpha1.tollgate.dev,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","tollgate-system"]},{"key":"tollgate.dev/webhook","operator":"NotIn","values":["ignore"]}]}}`

// AgentPassportValidator rejects passports the engine would refuse, and a revoked passport that is
// brought back; it warns about passports no pod can present and passports already expired.
type AgentPassportValidator struct {
	// Now is the clock used for the expiry warning (time.Now when nil).
	Now func() time.Time
}

var _ admission.Validator[*guardrailsv1alpha1.AgentPassport] = AgentPassportValidator{}

// ValidateCreate validates a new passport.
func (v AgentPassportValidator) ValidateCreate(_ context.Context, p *guardrailsv1alpha1.AgentPassport) (admission.Warnings, error) {
	return v.validate(nil, p)
}

// ValidateUpdate validates an updated passport; revocation is terminal. An update that leaves the
// spec unchanged or touches an object being deleted is never rejected.
func (v AgentPassportValidator) ValidateUpdate(_ context.Context, oldP, newP *guardrailsv1alpha1.AgentPassport) (admission.Warnings, error) {
	warnings, err := v.validate(oldP, newP)
	if err != nil && (newP.DeletionTimestamp != nil || equality.Semantic.DeepEqual(oldP.Spec, newP.Spec)) {
		return append(warnings, "the passport is invalid, but the update leaves its spec unchanged: "+err.Error()), nil
	}
	return warnings, err
}

// ValidateDelete allows every delete.
func (AgentPassportValidator) ValidateDelete(context.Context, *guardrailsv1alpha1.AgentPassport) (admission.Warnings, error) {
	return nil, nil
}

func (v AgentPassportValidator) validate(oldP, p *guardrailsv1alpha1.AgentPassport) (admission.Warnings, error) {
	gk := guardrailsv1alpha1.GroupVersion.WithKind("AgentPassport").GroupKind()
	_, list := convert.ValidatePassport(p)
	if oldP != nil && oldP.Spec.Status == guardrailsv1alpha1.PassportRevoked && p.Spec.Status != guardrailsv1alpha1.PassportRevoked {
		list = append(list, field.Forbidden(field.NewPath("spec", "status"),
			"a revoked passport cannot be reactivated or suspended; create a new passport"))
	}
	var warnings admission.Warnings
	if len(p.Spec.Subjects.ServiceAccounts) == 0 {
		warnings = append(warnings, "spec.subjects.serviceAccounts is empty: no pod can present this passport, and pods annotated "+
			guardrailsv1alpha1.AnnotationPassport+": "+p.Name+" are rejected")
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	if p.Spec.ExpiresAt != nil && !p.Spec.ExpiresAt.After(now()) {
		warnings = append(warnings, fmt.Sprintf("spec.expiresAt (%s) has passed: every call presenting this passport is denied",
			p.Spec.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	return warnings, invalid(gk, p.Name, list)
}
