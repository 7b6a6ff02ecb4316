package controller

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// PolicyReconciler keeps GuardrailPolicy status (Valid with every compile error, Ready,
// enforcedGeneration, ruleCount, selectedPassports) current.
type PolicyReconciler struct {
	client      client.Client
	recorder    events.EventRecorder
	state       *bundleState
	validations *validations
	clock       func() time.Time
	reports     *reportView // nil when decider reports are off
}

// +kubebuilder:rbac:groups=guardrails.tollgate.dev,resources=guardrailpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrails.tollgate.dev,resources=guardrailpolicies/status,verbs=get;update;patch

// Reconcile validates the policy's current generation and patches its status when it changed.
func (r *PolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileStatus(ctx, r.client, req.NamespacedName,
		func() { r.validations.forgetPolicy(req.NamespacedName) },
		func(p *guardrailsv1alpha1.GuardrailPolicy) any { return p.Status },
		func(p, orig *guardrailsv1alpha1.GuardrailPolicy) ctrl.Result {
			facts := policyFacts{now: r.clock()}
			_, facts.errs = r.validations.policy(p)
			enf, ok, rec, known := r.state.policy(p.Namespace, p.Name)
			facts.known, facts.writeErr, facts.rejected = known, rec.writeErr, rec.rejected
			if ok && (enf.uid == "" || enf.uid == p.UID) {
				facts.enforced = &enf
			}
			if r.reports != nil {
				rep := r.reports.policy(p.Namespace, p.Name, facts.now, func(rev string) bool {
					return r.state.history.holds(p.Namespace, rev, p.Name, p.UID, p.Generation)
				})
				facts.reports = &rep
			}
			p.Status = policyStatus(p, facts)
			r.validityEvent(p, meta.FindStatusCondition(orig.Status.Conditions, guardrailsv1alpha1.ConditionValid))
			reportEvents(r.recorder, p, orig.Status.Conditions)
			return ctrl.Result{}
		})
}

// validityEvent records an Event when the Valid condition changed status.
func (r *PolicyReconciler) validityEvent(p *guardrailsv1alpha1.GuardrailPolicy, before *metav1.Condition) {
	now := meta.FindStatusCondition(p.Status.Conditions, guardrailsv1alpha1.ConditionValid)
	if now == nil || (before != nil && before.Status == now.Status) {
		return
	}
	typ := corev1.EventTypeNormal
	if now.Status != metav1.ConditionTrue {
		typ = corev1.EventTypeWarning
	}
	r.recorder.Eventf(p, nil, typ, now.Reason, "Compile", "%s", eventNote(now.Message))
}

// eventNote keeps an Event note under the API's 1 KiB limit.
func eventNote(s string) string {
	const limit = 1000
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + " …"
}
