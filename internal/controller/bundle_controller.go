package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/bundlestore"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// BundleReconciler writes, for each namespace holding passports or policies, the bundle
// convert.BundleBuilder builds from its objects to ConfigMaps in the operator namespace
// (internal/bundlestore). Its requests are keyed by namespace (Request.Name is the namespace), and
// events are paced per namespace so a burst of updates settles with few writes. A bundle is
// rewritten only when its revision changed.
type BundleReconciler struct {
	client      client.Client
	reader      client.Reader
	opNS        string
	state       *bundleState
	validations *validations
	pacer       *pacer

	policyEvents        chan<- event.GenericEvent
	passportEvents      chan<- event.GenericEvent
	clusterPolicyEvents chan<- event.GenericEvent

	writes atomic.Int64
}

// +kubebuilder:rbac:groups="",namespace=tollgate-system,resources=configmaps,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Writes returns how many bundle ConfigMap writes (creates, updates and deletes) were made.
func (r *BundleReconciler) Writes() int64 { return r.writes.Load() }

// Reconcile rebuilds the bundle of namespace req.Name and stores it when its revision changed.
func (r *BundleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := req.Name
	log := logf.FromContext(ctx).WithValues("bundleNamespace", ns)
	r.pacer.mark(ns, time.Now())

	var passports guardrailsv1alpha1.AgentPassportList
	if err := r.client.List(ctx, &passports, client.InNamespace(ns)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing passports of %s: %w", ns, err)
	}
	var policies guardrailsv1alpha1.GuardrailPolicyList
	if err := r.client.List(ctx, &policies, client.InNamespace(ns)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing policies of %s: %w", ns, err)
	}

	if len(passports.Items) == 0 && len(policies.Items) == 0 {
		prev, known := r.state.get(ns)
		if known && prev.empty {
			return ctrl.Result{}, nil
		}
		if err := r.client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(r.opNS),
			client.MatchingLabels(bundlestore.NamespaceSelector(ns))); err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting the bundle of %s: %w", ns, err)
		}
		r.writes.Add(1)
		if err := r.client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			r.state.forget(ns) // the namespace is gone: nothing to remember
		} else {
			r.state.put(ns, namespaceRecord{empty: true})
		}
		r.validations.forgetNamespace(ns)
		r.notifyClusterPolicies(ctx, prev.policies)
		log.V(1).Info("deleted bundle: the namespace has no passports or policies left")
		return ctrl.Result{}, nil
	}

	prev, known := r.state.get(ns)
	if known && prev.empty {
		known = false
	}
	if !known {
		prev = r.loadStored(ctx, ns)
	}
	clusterPolicies, err := r.clusterPolicies(ctx, ns, prev)
	if err != nil {
		return ctrl.Result{}, err
	}
	objs := namespaceObjects(ns, passports.Items, policies.Items)
	objs.ClusterPolicies = clusterPolicies
	built := r.builder(prev).Build(objs)
	if built.Err != nil {
		// Not even the last good policies compile together: keep what is stored and retry.
		r.state.setWriteErr(ns, built.Err.Error())
		if prev.writeErr == "" {
			r.notifyAll(ctx, ns, passports.Items, policies.Items)
			r.notifyClusterPolicies(ctx, prev.policies)
		}
		return ctrl.Result{}, built.Err
	}
	rev := built.Bundle.Revision()
	if rev == "" {
		return ctrl.Result{}, fmt.Errorf("bundle of %s cannot be encoded as JSON", ns)
	}
	if rev != prev.revision || prev.writeErr != "" {
		if err := r.store(ctx, ns, built.Bundle); err != nil {
			r.state.setWriteErr(ns, err.Error())
			if prev.writeErr == "" {
				r.notifyAll(ctx, ns, passports.Items, policies.Items)
				r.notifyClusterPolicies(ctx, prev.policies)
			}
			return ctrl.Result{}, err
		}
		log.V(1).Info("stored bundle", "revision", rev, "passports", len(built.Bundle.Passports), "policies", len(built.Bundle.Policies))
	}
	if built.Rejected != nil {
		log.Info("the policies' current generations do not compile together; their last good versions stay in the bundle",
			"errors", policy.JoinErrors(built.Rejected.Errors(), "; "))
	}
	next := record(rev, policies.Items, clusterPolicies, built)
	r.state.put(ns, next)
	if !known || prev.writeErr != "" {
		r.notifyAll(ctx, ns, passports.Items, policies.Items)
		r.notifyClusterPolicies(ctx, prev.policies, next.policies)
	} else {
		r.notifyChanged(ctx, ns, prev, next, policies.Items)
	}
	return ctrl.Result{}, nil
}

// builder is the bundle builder of a namespace whose stored bundle prev describes: it validates
// through the cache and falls back to the stored version of a policy (same UID, or loaded from a
// bundle an earlier process wrote).
func (r *BundleReconciler) builder(prev namespaceRecord) convert.BundleBuilder {
	return convert.BundleBuilder{
		Policy:   r.validations.policy,
		Passport: r.validations.passport,
		LastGood: func(p *guardrailsv1alpha1.GuardrailPolicy) (policy.Policy, bool) {
			old, ok := prev.policies[p.Name]
			if !ok || (old.uid != "" && old.uid != p.UID) {
				return policy.Policy{}, false
			}
			return old.spec, true
		},
		ClusterPolicy: r.validations.clusterPolicy,
		LastGoodCluster: func(p *guardrailsv1alpha1.ClusterGuardrailPolicy) (policy.Policy, bool) {
			old, ok := prev.policies[convert.ClusterPolicyName(p.Name)]
			if !ok || (old.uid != "" && old.uid != p.UID) {
				return policy.Policy{}, false
			}
			return old.spec, true
		},
	}
}

// namespaceObjects lists the objects of ns for the builder, passports oldest first (the earliest
// passport keeps a contested agent id) and policies by name (so problems are reported in a stable
// order).
func namespaceObjects(ns string, passports []guardrailsv1alpha1.AgentPassport, policies []guardrailsv1alpha1.GuardrailPolicy) convert.Objects {
	slices.SortFunc(passports, func(x, y guardrailsv1alpha1.AgentPassport) int {
		return cmp.Or(x.CreationTimestamp.Compare(y.CreationTimestamp.Time), cmp.Compare(x.Name, y.Name))
	})
	slices.SortFunc(policies, func(x, y guardrailsv1alpha1.GuardrailPolicy) int { return cmp.Compare(x.Name, y.Name) })
	objs := convert.Objects{Namespace: ns,
		Passports: make([]*guardrailsv1alpha1.AgentPassport, len(passports)),
		Policies:  make([]*guardrailsv1alpha1.GuardrailPolicy, len(policies))}
	for i := range passports {
		objs.Passports[i] = &passports[i]
	}
	for i := range policies {
		objs.Policies[i] = &policies[i]
	}
	return objs
}

// record describes the stored bundle built at revision rev for the status reconcilers.
func record(rev string, policies []guardrailsv1alpha1.GuardrailPolicy, cluster []*guardrailsv1alpha1.ClusterGuardrailPolicy, built convert.BuiltBundle) namespaceRecord {
	rec := namespaceRecord{revision: rev, policies: map[string]enforcedPolicy{}, excluded: map[string]excludedPassport{}}
	if built.Rejected != nil {
		rec.rejected = policy.JoinErrors(built.Rejected.Errors(), "; ")
	}
	for i := range policies {
		p := &policies[i]
		if out := built.Policies[p.Name]; out.Enforced != nil {
			rec.policies[p.Name] = enforcedPolicy{uid: p.UID, spec: *out.Enforced, selected: int32(out.Selected)}
		}
	}
	for _, p := range cluster {
		name := convert.ClusterPolicyName(p.Name)
		if out := built.Policies[name]; out.Enforced != nil {
			rec.policies[name] = enforcedPolicy{uid: p.UID, spec: *out.Enforced, selected: int32(out.Selected)}
		}
	}
	for name, out := range built.Passports {
		switch {
		case len(out.Errors) > 0:
			rec.excluded[name] = excludedPassport{reason: guardrailsv1alpha1.ReasonInvalid, why: joinErrors(out.Errors)}
		case out.HeldBy != "":
			rec.excluded[name] = excludedPassport{reason: guardrailsv1alpha1.ReasonDuplicateAgentID,
				why: fmt.Sprintf("agent id %q is already used by passport %q (created earlier)", out.AgentID, out.HeldBy)}
		}
	}
	return rec
}

// loadStored reads what an earlier process stored for ns: its revision and its policies (the last
// known good generations). A missing or unreadable bundle yields an empty record.
func (r *BundleReconciler) loadStored(ctx context.Context, ns string) namespaceRecord {
	rec := namespaceRecord{policies: map[string]enforcedPolicy{}}
	var cms corev1.ConfigMapList
	if err := r.reader.List(ctx, &cms, client.InNamespace(r.opNS), client.MatchingLabels(bundlestore.NamespaceSelector(ns))); err != nil {
		logf.FromContext(ctx).Error(err, "reading the stored bundle; rewriting it", "bundleNamespace", ns)
		return rec
	}
	if len(cms.Items) == 0 {
		return rec
	}
	b, err := bundlestore.Decode(cms.Items)
	if err != nil {
		logf.FromContext(ctx).Error(err, "decoding the stored bundle; rewriting it", "bundleNamespace", ns)
		return rec
	}
	rec.revision = bundlestore.Revisions(cms.Items)
	for _, p := range b.Policies {
		rec.policies[p.Name] = enforcedPolicy{spec: p}
	}
	return rec
}

// store writes b's ConfigMaps and deletes stale shards of an earlier encoding.
func (r *BundleReconciler) store(ctx context.Context, ns string, b policy.Bundle) error {
	cms, err := bundlestore.Encode(r.opNS, b)
	if err != nil {
		return err
	}
	existing := &metav1.PartialObjectMetadataList{}
	existing.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := r.reader.List(ctx, existing, client.InNamespace(r.opNS), client.MatchingLabels(bundlestore.NamespaceSelector(ns))); err != nil {
		return fmt.Errorf("listing the bundle ConfigMaps of %s: %w", ns, err)
	}
	have := map[string]string{}
	for _, m := range existing.Items {
		have[m.Name] = m.Annotations[bundlestore.AnnotationRevision]
	}
	// Later shards first, so a reader that sees shard 0 at the new revision usually sees them all.
	for i := len(cms) - 1; i >= 0; i-- {
		cm := &cms[i]
		rev, ok := have[cm.Name]
		switch {
		case ok && rev == cm.Annotations[bundlestore.AnnotationRevision]:
			continue
		case ok:
			err = r.client.Update(ctx, cm)
		default:
			err = r.client.Create(ctx, cm)
			if apierrors.IsAlreadyExists(err) {
				err = fmt.Errorf("ConfigMap %s/%s exists but does not hold the bundle of %s (name collision): %w", r.opNS, cm.Name, ns, err)
			}
		}
		if err != nil {
			return fmt.Errorf("storing the bundle of %s: %w", ns, err)
		}
		r.writes.Add(1)
	}
	for name := range have {
		if slices.ContainsFunc(cms, func(cm corev1.ConfigMap) bool { return cm.Name == name }) {
			continue
		}
		stale := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.opNS}}
		if err := r.client.Delete(ctx, stale); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting stale bundle shard %s of %s: %w", name, ns, err)
		}
		r.writes.Add(1)
	}
	return nil
}

// notifyChanged asks the status reconcilers to revisit the objects whose enforcement changed, and
// every policy when whether the namespace's policies compile together changed.
func (r *BundleReconciler) notifyChanged(ctx context.Context, ns string, prev, next namespaceRecord, policies []guardrailsv1alpha1.GuardrailPolicy) {
	if prev.rejected != next.rejected {
		// Every policy of the namespace reports whether the namespace's bundle compiles.
		for i := range policies {
			r.send(ctx, r.policyEvents, &guardrailsv1alpha1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: policies[i].Name}})
		}
		r.notifyClusterPolicies(ctx, prev.policies, next.policies)
	}
	for name, n := range next.policies {
		o, ok := prev.policies[name]
		if !ok || o.uid != n.uid || o.spec.Generation != n.spec.Generation || o.selected != n.selected ||
			len(o.spec.Spec.Rules) != len(n.spec.Spec.Rules) {
			r.notifyPolicy(ctx, ns, name)
		}
	}
	for name := range prev.policies {
		if _, ok := next.policies[name]; !ok {
			r.notifyPolicy(ctx, ns, name)
		}
	}
	for name, n := range next.excluded {
		if o, ok := prev.excluded[name]; !ok || o != n {
			r.send(ctx, r.passportEvents, &guardrailsv1alpha1.AgentPassport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		}
	}
	for name := range prev.excluded {
		if _, ok := next.excluded[name]; !ok {
			r.send(ctx, r.passportEvents, &guardrailsv1alpha1.AgentPassport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		}
	}
}

// notifyAll asks the status reconcilers to revisit every object of ns.
func (r *BundleReconciler) notifyAll(ctx context.Context, ns string, passports []guardrailsv1alpha1.AgentPassport, policies []guardrailsv1alpha1.GuardrailPolicy) {
	for i := range policies {
		r.send(ctx, r.policyEvents, &guardrailsv1alpha1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: policies[i].Name}})
	}
	for i := range passports {
		r.send(ctx, r.passportEvents, &guardrailsv1alpha1.AgentPassport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: passports[i].Name}})
	}
}

// notifyPolicy asks the status reconciler of policy name of ns's bundle (a GuardrailPolicy, or a
// ClusterGuardrailPolicy as cluster/<name>) to revisit it.
func (r *BundleReconciler) notifyPolicy(ctx context.Context, ns, name string) {
	if cluster, ok := strings.CutPrefix(name, guardrailsv1alpha1.ClusterPolicyPrefix); ok {
		r.send(ctx, r.clusterPolicyEvents, &guardrailsv1alpha1.ClusterGuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: cluster}})
		return
	}
	r.send(ctx, r.policyEvents, &guardrailsv1alpha1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
}

// notifyClusterPolicies asks the ClusterGuardrailPolicy status reconciler to revisit every cluster
// policy of the given bundle records.
func (r *BundleReconciler) notifyClusterPolicies(ctx context.Context, records ...map[string]enforcedPolicy) {
	for _, rec := range records {
		for name := range rec {
			if cluster, ok := strings.CutPrefix(name, guardrailsv1alpha1.ClusterPolicyPrefix); ok {
				r.send(ctx, r.clusterPolicyEvents, &guardrailsv1alpha1.ClusterGuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: cluster}})
			}
		}
	}
}

func (r *BundleReconciler) send(ctx context.Context, ch chan<- event.GenericEvent, obj client.Object) {
	select {
	case ch <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}

// eventHandler maps passport and policy events to their namespace's bundle request, paced.
func (r *BundleReconciler) eventHandler() handler.EventHandler {
	enqueue := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		ns := obj.GetNamespace()
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: ns}}
		if d := r.pacer.delay(ns, time.Now()); d > 0 {
			q.AddAfter(req, d)
		} else {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// Status-only writes do not change the bundle.
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
				!labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
				autoSuspensionChanged(e.ObjectOld, e.ObjectNew) { // the bundle carries it
				enqueue(e.ObjectNew, q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
	}
}

// pacer spaces the bundle writes of one namespace at least interval apart: the first event after a
// quiet period is handled at once, later ones wait and coalesce into one reconcile.
type pacer struct {
	mu       sync.Mutex
	interval time.Duration
	last     map[string]time.Time
}

func newPacer(interval time.Duration) *pacer {
	return &pacer{interval: interval, last: map[string]time.Time{}}
}

// delay returns how long an event for ns should wait.
func (p *pacer) delay(ns string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[ns]
	if !ok {
		return 0
	}
	return max(0, last.Add(p.interval).Sub(now))
}

// mark records that a reconcile of ns starts at now.
func (p *pacer) mark(ns string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[ns] = now
	if len(p.last) > 256 {
		for k, t := range p.last {
			if now.Sub(t) > p.interval {
				delete(p.last, k)
			}
		}
	}
}
