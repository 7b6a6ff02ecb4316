// Package v1alpha1 contains the Tollgate API: GuardrailPolicy and AgentPassport.
// +kubebuilder:object:generate=true
// +groupName=guardrails.tollgate.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the Tollgate API.
	GroupVersion = schema.GroupVersion{Group: "guardrails.tollgate.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Tollgate kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Tollgate kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
