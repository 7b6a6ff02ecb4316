package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// BundleReconciler writes, for each namespace holding passports or policies, a policy.Bundle of its
// valid objects to ConfigMaps in the operator namespace (internal/bundlestore). Its requests are
// keyed by namespace (Request.Name is the namespace), and events are paced per namespace so a burst
// of updates settles with few writes. A bundle is rewritten only when its revision changed.
type BundleReconciler struct {
	client   client.Client
	reader   client.Reader
	opNS     string
	registry *registry
	compiles *compileCache
	pacer    *pacer

	policyEvents   chan<- event.GenericEvent
	passportEvents chan<- event.GenericEvent

	convMu sync.Mutex
	conv   map[string]map[string]convertedPassport // namespace -> name -> conversion

	writes atomic.Int64
}

// convertedPassport caches one passport's conversion for the resourceVersion it was made from.
type convertedPassport struct {
	resourceVersion string
	passport        policy.Passport
	invalid         string
}

// +kubebuilder:rbac:groups="",namespace=tollgate-system,resources=configmaps,verbs=get;list;watch;create;update;patch;delete;deletecollection

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
		if err := r.client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(r.opNS),
			client.MatchingLabels(bundlestore.NamespaceSelector(ns))); err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting the bundle of %s: %w", ns, err)
		}
		r.writes.Add(1)
		r.registry.forget(ns)
		r.forgetConversions(ns)
		log.V(1).Info("deleted bundle: the namespace has no passports or policies left")
		return ctrl.Result{}, nil
	}

	prev, known := r.registry.get(ns)
	if !known {
		prev = r.loadStored(ctx, ns)
	}
	b, next := r.build(ns, passports.Items, policies.Items, prev)
	rev := b.Revision()
	if rev == "" {
		return ctrl.Result{}, fmt.Errorf("bundle of %s cannot be encoded as JSON", ns)
	}
	if rev != prev.revision || prev.writeErr != "" {
		if err := r.store(ctx, ns, b); err != nil {
			r.registry.setWriteErr(ns, err.Error())
			if prev.writeErr == "" {
				r.notifyAll(ctx, ns, passports.Items, policies.Items)
			}
			return ctrl.Result{}, err
		}
		log.V(1).Info("stored bundle", "revision", rev, "passports", len(b.Passports), "policies", len(b.Policies))
	}
	next.revision = rev
	r.registry.put(ns, next)
	if !known || prev.writeErr != "" {
		r.notifyAll(ctx, ns, passports.Items, policies.Items)
	} else {
		r.notifyChanged(ctx, ns, prev, next)
	}
	return ctrl.Result{}, nil
}

// build returns the bundle of ns and the record describing it. Passports are never held back;
// invalid ones and duplicates of an earlier passport's agent id are left out (their calls are
// denied). A policy whose current generation does not compile keeps its enforced generation.
func (r *BundleReconciler) build(ns string, passports []guardrailsv1alpha1.AgentPassport,
	policies []guardrailsv1alpha1.GuardrailPolicy, prev namespaceRecord) (policy.Bundle, namespaceRecord) {
	next := namespaceRecord{policies: map[string]enforcedPolicy{}, excluded: map[string]excludedPassport{}}
	b := policy.Bundle{Version: policy.BundleVersion, Namespace: ns,
		Passports: make([]policy.Passport, 0, len(passports)), Policies: make([]policy.Policy, 0, len(policies))}

	// The earliest passport keeps a contested agent id.
	slices.SortFunc(passports, func(x, y guardrailsv1alpha1.AgentPassport) int {
		return cmp.Or(x.CreationTimestamp.Compare(y.CreationTimestamp.Time), cmp.Compare(x.Name, y.Name))
	})
	convs := r.conversions(ns, passports)
	owners := make(map[string]string, len(passports))
	for i := range passports {
		name := passports[i].Name
		c := convs[name]
		if c.invalid != "" {
			next.excluded[name] = excludedPassport{reason: guardrailsv1alpha1.ReasonInvalid, message: c.invalid}
			continue
		}
		id := c.passport.Spec.AgentID
		if id == "" {
			id = c.passport.UID
		}
		if owner, dup := owners[id]; dup {
			next.excluded[name] = excludedPassport{reason: guardrailsv1alpha1.ReasonDuplicateAgentID,
				message: fmt.Sprintf("agent id %q is already used by passport %q (created earlier); this passport is left out of the bundle, so its calls are denied", id, owner)}
			continue
		}
		owners[id] = name
		b.Passports = append(b.Passports, c.passport)
	}

	for i := range policies {
		p := &policies[i]
		key := types.NamespacedName{Namespace: ns, Name: p.Name}
		conv, err := convert.Policy(p)
		var errs field.ErrorList
		if err != nil {
			errs = field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())}
		} else {
			errs = r.compiles.compile(key, p.UID, p.Generation, conv.Spec)
		}
		switch old, ok := prev.policies[p.Name]; {
		case len(errs) == 0:
			next.policies[p.Name] = enforcedPolicy{uid: p.UID, spec: conv}
		case ok && (old.uid == "" || old.uid == p.UID):
			old.uid = p.UID
			next.policies[p.Name] = old // last known good
		default:
			continue
		}
		b.Policies = append(b.Policies, next.policies[p.Name].spec)
	}
	countSelected(b.Passports, next.policies)
	return b, next
}

// conversions returns the converted passports of ns, reusing conversions of unchanged objects.
func (r *BundleReconciler) conversions(ns string, passports []guardrailsv1alpha1.AgentPassport) map[string]convertedPassport {
	r.convMu.Lock()
	old := r.conv[ns]
	r.convMu.Unlock()
	out := make(map[string]convertedPassport, len(passports))
	for i := range passports {
		p := &passports[i]
		if c, ok := old[p.Name]; ok && c.resourceVersion == p.ResourceVersion && c.passport.UID == string(p.UID) {
			out[p.Name] = c
			continue
		}
		c := convertedPassport{resourceVersion: p.ResourceVersion}
		conv, err := convert.Passport(p)
		switch {
		case err != nil:
			c.invalid = err.Error()
		default:
			c.passport = conv
			if fe := policy.ValidatePassport(conv.Spec); len(fe) > 0 {
				c.invalid = truncate("the passport is left out of the bundle, so its calls are denied: " + joinErrors(fe))
			}
		}
		out[p.Name] = c
	}
	r.convMu.Lock()
	r.conv[ns] = out
	r.convMu.Unlock()
	return out
}

func (r *BundleReconciler) forgetConversions(ns string) {
	r.convMu.Lock()
	defer r.convMu.Unlock()
	delete(r.conv, ns)
}

// countSelected sets each enforced policy's selected count over the bundle's passports.
func countSelected(passports []policy.Passport, policies map[string]enforcedPolicy) {
	groups := map[string]labels.Set{}
	counts := map[string]int32{}
	for i := range passports {
		k := labels.Set(passports[i].Labels).String()
		if _, ok := groups[k]; !ok {
			groups[k] = labels.Set(passports[i].Labels)
		}
		counts[k]++
	}
	for name, ep := range policies {
		sel := labels.Everything()
		if ls := ep.spec.Spec.PassportSelector; ls != nil {
			s, err := metav1.LabelSelectorAsSelector(ls)
			if err != nil {
				sel = labels.Nothing()
			} else {
				sel = s
			}
		}
		var n int32
		for k, set := range groups {
			if sel.Matches(set) {
				n += counts[k]
			}
		}
		ep.selected = n
		policies[name] = ep
	}
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

// notifyChanged asks the status reconcilers to revisit the objects whose enforcement changed.
func (r *BundleReconciler) notifyChanged(ctx context.Context, ns string, prev, next namespaceRecord) {
	for name, n := range next.policies {
		o, ok := prev.policies[name]
		if !ok || o.uid != n.uid || o.spec.Generation != n.spec.Generation || o.selected != n.selected ||
			len(o.spec.Spec.Rules) != len(n.spec.Spec.Rules) {
			r.send(ctx, r.policyEvents, &guardrailsv1alpha1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		}
	}
	for name := range prev.policies {
		if _, ok := next.policies[name]; !ok {
			r.send(ctx, r.policyEvents, &guardrailsv1alpha1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
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
				!labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
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
