package decider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/tollgate-dev/tollgate/internal/bundlestore"
)

// WatchBundlesWithLogger keeps store in step with the bundle ConfigMaps (label
// tollgate.dev/bundle=true) of operatorNamespace, using an informer (watch, no polling), and logs
// loads and errors to log. Each change of a namespace's ConfigMaps decodes and compiles its bundle;
// a bundle that fails to decode or compile is recorded and the last good snapshot keeps serving; a
// namespace whose ConfigMaps are all gone is removed. It blocks until ctx is done (returning nil)
// or the informer cannot sync.
func WatchBundlesWithLogger(ctx context.Context, cs kubernetes.Interface, operatorNamespace string, store *Store, log *slog.Logger) error {
	if operatorNamespace == "" {
		return errors.New("watch bundles: operator namespace is empty")
	}
	sel := labels.SelectorFromSet(bundlestore.Selector()).String()
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithNamespace(operatorNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	inf := factory.Core().V1().ConfigMaps()
	lister := inf.Lister().ConfigMaps(operatorNamespace)

	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "tollgate-bundles"})
	defer queue.ShutDown()

	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			if ns := bundlestore.BundleNamespace(cm); ns != "" {
				queue.Add(ns)
			}
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("watch bundles: adding event handler: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch bundles: cache of %v did not sync", typ)
		}
	}
	log.Info("watching policy bundles", "namespace", operatorNamespace, "selector", sel)

	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		ns, shutdown := queue.Get()
		if shutdown {
			return nil
		}
		if err := syncNamespace(lister, store, ns, log); err != nil {
			// Decode errors may be transient (shards written one by one); retry with backoff. The
			// next change re-enqueues anyway.
			if queue.NumRequeues(ns) < 5 {
				queue.AddRateLimited(ns)
			} else {
				queue.Forget(ns)
			}
		} else {
			queue.Forget(ns)
		}
		queue.Done(ns)
	}
}

// syncNamespace loads the bundle of ns from the lister's cache into store.
func syncNamespace(lister listersv1.ConfigMapNamespaceLister, store *Store, ns string, log *slog.Logger) error {
	objs, err := lister.List(labels.SelectorFromSet(bundlestore.NamespaceSelector(ns)))
	if err != nil {
		return fmt.Errorf("listing bundle ConfigMaps of %s: %w", ns, err)
	}
	if len(objs) == 0 {
		store.Remove(ns)
		log.Info("policy bundle removed", "bundleNamespace", ns)
		return nil
	}
	cms := make([]corev1.ConfigMap, len(objs))
	for i, o := range objs {
		cms[i] = *o
	}
	if rev := bundlestore.Revisions(cms); rev != "" {
		if snap, ok := store.Snapshot(ns); ok && snap.Revision() == rev {
			// Already serving it (a metadata-only change, or a broken update reverted).
			store.clearError(ns)
			return nil
		}
	}
	b, err := bundlestore.Decode(cms)
	if err != nil {
		store.RecordError(ns, err)
		log.Error("policy bundle not loaded; keeping the last good snapshot", "bundleNamespace", ns, "err", err)
		return err
	}
	if err := store.Load(b); err != nil {
		log.Error("policy bundle not loaded; keeping the last good snapshot", "bundleNamespace", ns, "err", err)
		return nil // compile errors are not transient: wait for the next change
	}
	log.Info("policy bundle loaded", "bundleNamespace", ns, "revision", b.Revision(),
		"passports", len(b.Passports), "policies", len(b.Policies))
	return nil
}
