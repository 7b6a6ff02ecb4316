// Package webhook registers Tollgate's admission webhooks: defaulting and validation of
// GuardrailPolicies, ClusterGuardrailPolicies and AgentPassports (package v1alpha1) and the opt-in pod injector (package pod).
//
// Every webhook configuration ignores kube-system, the operator's namespace and namespaces labelled
// tollgate.dev/webhook=ignore; the pod injector is only called for pods carrying
// tollgate.dev/passport (a matchCondition), with failurePolicy Fail, so an opted-in pod is never
// admitted unguarded and other pods never depend on Tollgate. See docs/webhooks.md.
package webhook

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/webhook/pod"
	"github.com/tollgate-dev/tollgate/internal/webhook/v1alpha1"
)

// Namespace exclusion shared by every webhook configuration (the +kubebuilder:webhook markers
// repeat these values because markers cannot reference constants).
const (
	// LabelWebhook on a namespace with value WebhookIgnore excludes it from every Tollgate webhook.
	LabelWebhook = "tollgate.dev/webhook"
	// WebhookIgnore is the LabelWebhook value that excludes a namespace.
	WebhookIgnore = "ignore"
	// DefaultOperatorNamespace is the operator's namespace in the shipped manifests; it is excluded
	// by name as well as by label.
	DefaultOperatorNamespace = "tollgate-system"
)

// Webhook configuration names in the shipped manifests (after kustomize's namePrefix).
const (
	// MutatingConfigurationName is the MutatingWebhookConfiguration holding the defaulters and the pod injector.
	MutatingConfigurationName = "tollgate-mutating-webhook-configuration"
	// ValidatingConfigurationName is the ValidatingWebhookConfiguration holding the validators.
	ValidatingConfigurationName = "tollgate-validating-webhook-configuration"
)

// Options configure the admission webhooks.
type Options struct {
	// Pod configures the pod injector.
	Pod pod.Options
}

// Setup registers every Tollgate admission webhook with mgr's webhook server and starts the
// AgentPassport informer the pod injector reads from, so the first pod admission does not wait
// for it.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if err := opts.Pod.Validate(); err != nil {
		return fmt.Errorf("pod injector: %w", err)
	}
	if _, err := mgr.GetCache().GetInformer(ctx, &guardrailsv1alpha1.AgentPassport{}); err != nil {
		return fmt.Errorf("starting the AgentPassport informer: %w", err)
	}
	if err := v1alpha1.SetupGuardrailPolicyWebhookWithManager(mgr); err != nil {
		return err
	}
	if err := v1alpha1.SetupClusterGuardrailPolicyWebhookWithManager(mgr); err != nil {
		return err
	}
	if err := v1alpha1.SetupAgentPassportWebhookWithManager(mgr); err != nil {
		return err
	}
	if err := pod.SetupWithManager(mgr, opts.Pod); err != nil {
		return fmt.Errorf("registering the pod injector: %w", err)
	}
	return nil
}
