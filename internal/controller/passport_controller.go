package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// PassportReconciler keeps AgentPassport status (phase, agentID, digest, Ready, Suspended) current,
// and requeues each active passport exactly at its expiresAt so expiry shows without another event.
type PassportReconciler struct {
	client      client.Client
	recorder    events.EventRecorder
	state       *bundleState
	validations *validations
	clock       func() time.Time
	reports     *reportView // nil when decider reports are off
}

// +kubebuilder:rbac:groups=guardrails.tollgate.dev,resources=agentpassports,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrails.tollgate.dev,resources=agentpassports/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile computes the passport's status and patches it when it changed.
func (r *PassportReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileStatus(ctx, r.client, req.NamespacedName,
		func() {
			r.validations.forgetPassport(req.NamespacedName)
			if r.reports != nil {
				r.reports.forgetPassport(req.NamespacedName)
			}
		},
		func(p *guardrailsv1alpha1.AgentPassport) any { return p.Status },
		func(p, orig *guardrailsv1alpha1.AgentPassport) ctrl.Result {
			facts := passportFacts{now: r.clock()}
			conv, errs := r.validations.passport(p)
			facts.invalid = errs
			if conv.Name != "" { // a spec that does not convert has no digest
				facts.digest = policy.PassportDigest(conv)
			}
			if ex, ok, rec, _ := r.state.passport(p.Namespace, p.Name); ok {
				facts.excluded = &ex
			} else {
				facts.writeErr = rec.writeErr
			}
			if r.reports != nil {
				rep := r.reports.passport(req.NamespacedName, facts.now, autoSuspendWithin(p.Spec.AutoSuspend))
				facts.reports = &rep
			}
			status, expiresIn := passportStatus(p, facts)
			p.Status = status
			if orig.Status.Phase != status.Phase {
				r.phaseEvent(p, orig.Status.Phase)
			}
			if autoSuspendEvent(r.recorder, p, orig.Status.AutoSuspension, facts.now) && r.reports != nil {
				r.reports.resetDenials(req.NamespacedName, facts.now) // count afresh after a suspension or lift
			}
			// An active passport is revisited exactly at its expiresAt.
			return ctrl.Result{RequeueAfter: max(expiresIn, 0)}
		})
}

func (r *PassportReconciler) phaseEvent(p *guardrailsv1alpha1.AgentPassport, from guardrailsv1alpha1.PassportPhase) {
	typ := corev1.EventTypeNormal
	if p.Status.Phase == guardrailsv1alpha1.PhaseExpired {
		typ = corev1.EventTypeWarning
	}
	note := fmt.Sprintf("passport phase is %s", p.Status.Phase)
	if from != "" {
		note = fmt.Sprintf("passport phase changed from %s to %s", from, p.Status.Phase)
	}
	r.recorder.Eventf(p, nil, typ, string(p.Status.Phase), "PhaseChange", "%s", note)
}
