// Package v1alpha1 holds the validating and defaulting admission webhooks of Tollgate's
// guardrails.tollgate.dev/v1alpha1 kinds. Validation calls convert.Validator, the validator the
// controllers and the file loader use too (the policy engine's compile), so every problem the
// decision endpoints would hit is reported at admission time with its field path. Defaults are the
// engine's (policy.Default*).
package v1alpha1

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// invalid returns the 422 Invalid status error listing every problem of the named object, or nil
// when list is empty.
func invalid(gk schema.GroupKind, name string, list field.ErrorList) error {
	if len(list) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, list)
}
