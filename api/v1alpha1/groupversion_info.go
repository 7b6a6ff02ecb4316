// Package v1alpha1 contains the Tollgate API: GuardrailPolicy and AgentPassport.
// +kubebuilder:object:generate=true
// +groupName=guardrails.tollgate.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the Tollgate API.
	GroupVersion = schema.GroupVersion{Group: "guardrails.tollgate.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Tollgate kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the Tollgate kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&GuardrailPolicy{}, &GuardrailPolicyList{},
		&AgentPassport{}, &AgentPassportList{},
		&DeciderReport{}, &DeciderReportList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
