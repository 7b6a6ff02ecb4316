package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
)

// ClusterPolicyReconciler keeps ClusterGuardrailPolicy status (Valid with every compile error,
// Ready, namespaces, enforcedGeneration, ruleCount, selectedPassports) current from what the bundle
// writer stored for every namespace.
type ClusterPolicyReconciler struct {
	client      client.Client
	recorder    events.EventRecorder
	state       *bundleState
	validations *validations
	clock       func() time.Time
}

// +kubebuilder:rbac:groups=guardrails.tollgate.dev,resources=clusterguardrailpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrails.tollgate.dev,resources=clusterguardrailpolicies/status,verbs=get;update;patch

// Reconcile validates the cluster policy's current generation, gathers what each namespace's bundle
// enforces of it and patches its status once, when it changed.
func (r *ClusterPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var nsList corev1.NamespaceList
	if err := r.client.List(ctx, &nsList); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing namespaces: %w", err)
	}
	key := types.NamespacedName{Name: req.Name}
	return reconcileStatus(ctx, r.client, key,
		func() { r.validations.forgetPolicy(key) },
		func(p *guardrailsv1alpha1.ClusterGuardrailPolicy) any { return p.Status },
		func(p, orig *guardrailsv1alpha1.ClusterGuardrailPolicy) ctrl.Result {
			facts := clusterPolicyFacts{now: r.clock()}
			_, facts.errs = r.validations.clusterPolicy(p)
			facts.namespaces = clusterNamespaces(p, nsList.Items, r.state.clusterPolicy(convert.ClusterPolicyName(p.Name)))
			p.Status = clusterPolicyStatus(p, facts)
			r.validityEvent(p, meta.FindStatusCondition(orig.Status.Conditions, guardrailsv1alpha1.ConditionValid))
			return ctrl.Result{}
		})
}

// clusterNamespaces lists, sorted by name, the namespaces that matter to p's status: those whose
// bundle holds p, and those p's namespaceSelector selects among the namespaces whose bundles the
// writer keeps (held: what each processed namespace's bundle holds of p).
func clusterNamespaces(p *guardrailsv1alpha1.ClusterGuardrailPolicy, nss []corev1.Namespace, held map[string]clusterEnforcement) []clusterNamespaceFact {
	sel, selErr := clusterSelector(p)
	var out []clusterNamespaceFact
	seen := make(map[string]bool, len(held))
	for i := range nss {
		ns := &nss[i]
		h, known := held[ns.Name]
		if !known {
			continue // no passports or policies: no bundle to enforce p in
		}
		seen[ns.Name] = true
		f := clusterNamespaceFact{name: ns.Name, writeErr: h.writeErr, rejected: h.rejected}
		if h.ok && (h.enforced.uid == "" || h.enforced.uid == p.UID) {
			e := h.enforced
			f.enforced = &e
		}
		if selErr == nil {
			f.selected = sel.Matches(labels.Set(ns.Labels))
		} else {
			f.selected = f.enforced != nil // an invalid selector keeps the last good selection
		}
		if f.selected || f.enforced != nil {
			out = append(out, f)
		}
	}
	for name, h := range held {
		if !seen[name] && h.ok && (h.enforced.uid == "" || h.enforced.uid == p.UID) {
			e := h.enforced
			out = append(out, clusterNamespaceFact{name: name, enforced: &e}) // namespace gone, bundle not yet
		}
	}
	slices.SortFunc(out, func(a, b clusterNamespaceFact) int { return cmp.Compare(a.name, b.name) })
	return out
}

// clusterSelector is p's namespaceSelector as a labels.Selector (everything when absent).
func clusterSelector(p *guardrailsv1alpha1.ClusterGuardrailPolicy) (labels.Selector, error) {
	if p.Spec.NamespaceSelector == nil {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("namespaceSelector of ClusterGuardrailPolicy %s: %w", p.Name, err)
	}
	return sel, nil
}

// validityEvent records an Event when the Valid condition changed status.
func (r *ClusterPolicyReconciler) validityEvent(p *guardrailsv1alpha1.ClusterGuardrailPolicy, before *metav1.Condition) {
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

// clusterPolicies returns the cluster policies whose namespaceSelector selects namespace ns, sorted
// by name. A policy whose selector does not parse (the webhook was bypassed) keeps the namespaces
// whose stored bundle (prev) holds it, with its last good version.
func (r *BundleReconciler) clusterPolicies(ctx context.Context, ns string, prev namespaceRecord) ([]*guardrailsv1alpha1.ClusterGuardrailPolicy, error) {
	var list guardrailsv1alpha1.ClusterGuardrailPolicyList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing cluster policies for %s: %w", ns, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	var nsObj corev1.Namespace
	if err := r.client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	nsLabels := labels.Set(nsObj.Labels)
	var out []*guardrailsv1alpha1.ClusterGuardrailPolicy
	for i := range list.Items {
		p := &list.Items[i]
		sel, err := clusterSelector(p)
		switch {
		case err != nil:
			old, ok := prev.policies[convert.ClusterPolicyName(p.Name)]
			if !ok || (old.uid != "" && old.uid != p.UID) {
				continue
			}
			logf.FromContext(ctx).Info("keeping the last good version of a cluster policy whose namespaceSelector does not parse",
				"clusterPolicy", p.Name, "bundleNamespace", ns, "error", err.Error())
		case !sel.Matches(nsLabels):
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(x, y *guardrailsv1alpha1.ClusterGuardrailPolicy) int { return cmp.Compare(x.Name, y.Name) })
	return out, nil
}

// enqueueNamespace adds the bundle request of ns, paced.
func (r *BundleReconciler) enqueueNamespace(ns string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: ns}}
	if d := r.pacer.delay(ns, time.Now()); d > 0 {
		q.AddAfter(req, d)
	} else {
		q.Add(req)
	}
}

// clusterPolicyHandler maps a cluster policy event to the bundles of the namespaces it selected
// before or selects now, and of those whose stored bundle holds it. Status-only updates are ignored.
func (r *BundleReconciler) clusterPolicyHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		var nsList corev1.NamespaceList
		if err := r.client.List(ctx, &nsList); err != nil {
			logf.FromContext(ctx).Error(err, "listing namespaces for a cluster policy event; requeueing the namespaces that hold it")
		}
		targets := map[string]bool{}
		for _, o := range objs {
			p, ok := o.(*guardrailsv1alpha1.ClusterGuardrailPolicy)
			if !ok {
				continue
			}
			for _, ns := range r.state.holding(convert.ClusterPolicyName(p.Name)) {
				targets[ns] = true
			}
			sel, err := clusterSelector(p)
			if err != nil {
				continue
			}
			for i := range nsList.Items {
				ns := &nsList.Items[i]
				if targets[ns.Name] || !sel.Matches(labels.Set(ns.Labels)) {
					continue
				}
				if rec, known := r.state.get(ns.Name); known && rec.empty {
					continue // no passports or policies: nothing to enforce the policy on
				}
				targets[ns.Name] = true
			}
		}
		for ns := range targets {
			r.enqueueNamespace(ns, q)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
				!labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
				enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// namespaceHandler maps a namespace whose labels changed to its bundle, which the changed labels
// may bring under or out of cluster policies. Creations and deletions are left to the namespace's
// passports and policies (a new namespace holds none; a deleted one loses them).
func (r *BundleReconciler) namespaceHandler() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
				return
			}
			if rec, known := r.state.get(e.ObjectNew.GetName()); known && rec.empty {
				return
			}
			r.enqueueNamespace(e.ObjectNew.GetName(), q)
		},
	}
}
