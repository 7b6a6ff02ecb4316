package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Budget caps the sum of a numeric argument of matching tool calls per passport (or thread) and
// period, e.g. the amount of payment calls per passport per day (the OAP packs' daily caps). A
// call over the cap is denied with oap.limit_exceeded. A call whose idempotency key (its call_id,
// or the argument named by idempotencyField) was already counted in the last period is not
// counted again; the same key with a different amount is denied with oap.idempotency_conflict.
// The sums live in the decision endpoints' counter store (in memory per replica, or Redis).
// +kubebuilder:validation:XValidation:rule="has(self.max) || has(self.limitKey)",message="max or limitKey is required"
type Budget struct {
	// name identifies the budget in decisions (policy_id#name); unique in a policy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// tools are the tool-name globs the budget counts; empty means every tool.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=atomic
	// +optional
	Tools []string `json:"tools,omitempty"`

	// field is the dotted path of the summed argument in the tool input, e.g. `amount`. Its value
	// must be a non-negative integer (minor units, e.g. cents); a call without it is denied with
	// oap.invalid_context.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`
	// +required
	Field string `json:"field"`

	// max is the cap of the sum per period, used when limitKey is empty or the passport lacks it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000000000
	// +optional
	Max int64 `json:"max,omitempty"`

	// limitKey names the passport limit holding the cap, among the limits of the tool's
	// capability (OAP style, e.g. `max_amount_per_day`); the passport's value overrides max.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`
	// +optional
	LimitKey string `json:"limitKey,omitempty"`

	// period is how long a sum runs: sums reset at multiples of it from the Unix epoch, so 24h
	// is a UTC day. Idempotency keys are remembered for one period.
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:default="24h"
	// +optional
	Period *metav1.Duration `json:"period,omitempty"`

	// per says what the sum is counted per: the passport or the conversation thread.
	// +kubebuilder:default=Passport
	// +optional
	Per RateLimitScope `json:"per,omitempty"`

	// idempotencyField is the dotted path of the argument holding the call's idempotency key
	// (e.g. `idempotency_key`); empty means the request's call_id.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`
	// +optional
	IdempotencyField string `json:"idempotencyField,omitempty"`
}
