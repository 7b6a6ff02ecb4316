package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// DefaultReportRetention is how long after its last heartbeat a DeciderReport is deleted, when
// garbage collection has not removed it with its pod (a replica outside a pod, or an orphan).
const DefaultReportRetention = time.Hour

// ReportReconciler folds the decider replicas' DeciderReports into the controllers' view and asks
// the status reconcilers to revisit the policies and passports a report concerns: when a report
// arrives, and again when it goes stale (three intervals after its heartbeat).
type ReportReconciler struct {
	client    client.Client
	view      *reportView
	state     *bundleState
	retention time.Duration
	clock     func() time.Time

	policyEvents   chan<- event.GenericEvent
	passportEvents chan<- event.GenericEvent
}

// +kubebuilder:rbac:groups=guardrails.tollgate.dev,resources=deciderreports,verbs=get;list;watch;delete

// Reconcile reads the report and notifies the objects it and its previous version concern.
func (r *ReportReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rep guardrailsv1alpha1.DeciderReport
	if err := r.client.Get(ctx, req.NamespacedName, &rep); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("reading DeciderReport %s: %w", req.NamespacedName, err)
		}
		if prev := r.view.remove(req.Name); prev != nil {
			r.notify(ctx, prev, nil)
		}
		return ctrl.Result{}, nil
	}
	now := r.clock()
	if r.retention > 0 && now.Sub(rep.Spec.HeartbeatTime.Time) > r.retention {
		logf.FromContext(ctx).Info("deleting a DeciderReport whose replica stopped reporting", "report", req.NamespacedName,
			"heartbeat", rep.Spec.HeartbeatTime.Time)
		if err := r.client.Delete(ctx, &rep); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting DeciderReport %s: %w", req.NamespacedName, err)
		}
		return ctrl.Result{}, nil
	}
	spec := rep.Spec.DeepCopy()
	prev := r.view.put(req.Name, spec)
	r.notify(ctx, prev, spec)
	if at := staleAt(spec); at.After(now) {
		// Revisit when the report goes stale, so that the replica stops counting.
		return ctrl.Result{RequeueAfter: at.Sub(now) + 10*time.Millisecond}, nil
	}
	if r.retention > 0 {
		return ctrl.Result{RequeueAfter: rep.Spec.HeartbeatTime.Add(r.retention).Sub(now) + time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// notify asks for every policy of the namespaces either report covers, and every passport either
// report lists, to be reconciled.
func (r *ReportReconciler) notify(ctx context.Context, specs ...*guardrailsv1alpha1.DeciderReportSpec) {
	namespaces := map[string]bool{}
	passports := map[[2]string]bool{}
	for _, s := range specs {
		if s == nil {
			continue
		}
		for i := range s.Namespaces {
			nr := &s.Namespaces[i]
			namespaces[nr.Namespace] = true
			for _, p := range nr.Passports {
				passports[[2]string{nr.Namespace, p.Name}] = true
			}
		}
	}
	for ns := range namespaces {
		rec, ok := r.state.get(ns)
		if !ok {
			continue
		}
		for name := range rec.policies {
			r.send(ctx, r.policyEvents, &guardrailsv1alpha1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		}
	}
	for k := range passports {
		r.send(ctx, r.passportEvents, &guardrailsv1alpha1.AgentPassport{ObjectMeta: metav1.ObjectMeta{Namespace: k[0], Name: k[1]}})
	}
}

func (r *ReportReconciler) send(ctx context.Context, ch chan<- event.GenericEvent, obj client.Object) {
	select {
	case ch <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}

// setupReports registers the DeciderReport reconciler and gives the status reconcilers the view.
func setupReports(mgr ctrl.Manager, opts Options, c *Controllers, state *bundleState, copts controller.Options,
	policyEvents, passportEvents chan<- event.GenericEvent) error {
	ns := opts.ReportNamespace
	if ns == "" {
		ns = opts.OperatorNamespace
	}
	retention := opts.ReportRetention
	if retention == 0 {
		retention = DefaultReportRetention
	}
	view := newReportView()
	c.Policies.reports, c.Passports.reports = view, view
	c.Reports = &ReportReconciler{client: mgr.GetClient(), view: view, state: state, retention: max(retention, 0), clock: time.Now,
		policyEvents: policyEvents, passportEvents: passportEvents}
	inNS := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == ns })
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("deciderreport").
		For(&guardrailsv1alpha1.DeciderReport{}, builder.WithPredicates(inNS)).
		WithOptions(copts).
		Complete(c.Reports); err != nil {
		return fmt.Errorf("setting up the DeciderReport controller: %w", err)
	}
	return nil
}
