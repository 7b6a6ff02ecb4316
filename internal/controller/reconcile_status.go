package controller

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusObject is a pointer to an API object whose status a reconciler computes.
type statusObject[T any] interface {
	*T
	client.Object
}

// reconcileStatus is the frame of the status reconcilers: it reads the object at key (gone runs
// when it no longer exists), skips an object being deleted, lets compute set the status (orig is
// the object as read) and patches the status once, when status(obj) changed.
func reconcileStatus[T any, P statusObject[T]](ctx context.Context, c client.Client, key types.NamespacedName,
	gone func(), status func(P) any, compute func(obj, orig P) ctrl.Result) (_ ctrl.Result, retErr error) {
	obj := P(new(T))
	if err := c.Get(ctx, key, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			gone()
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading %s: %w", key, err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	orig, ok := obj.DeepCopyObject().(P)
	if !ok {
		return ctrl.Result{}, fmt.Errorf("copying %s: DeepCopyObject returned another type", key)
	}
	defer func() {
		if err := patchStatus(ctx, c, orig, obj, !equality.Semantic.DeepEqual(status(orig), status(obj))); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()
	return compute(obj, orig), nil
}

// patchStatus writes obj's status as a merge patch against orig when changed is true.
func patchStatus(ctx context.Context, c client.Client, orig, obj client.Object, changed bool) error {
	if !changed {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(orig)); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		return fmt.Errorf("patching status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
