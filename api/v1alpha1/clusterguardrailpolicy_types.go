package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterPolicyPrefix prefixes a ClusterGuardrailPolicy's name in the bundles of the namespaces it
// applies to (cluster/<name>). A namespaced object's name cannot contain "/", so a cluster policy
// never collides with a GuardrailPolicy of the namespace; it is also the policy's default policyID.
const ClusterPolicyPrefix = "cluster/"

// ReasonNoNamespaces surfaces on a ClusterGuardrailPolicy's Ready=True when its namespaceSelector
// matches no namespace that holds passports or policies (so no bundle enforces it yet).
const ReasonNoNamespaces = "NoNamespacesSelected"

// ClusterGuardrailPolicySpec is a GuardrailPolicy spec applied to every namespace its
// namespaceSelector matches.
type ClusterGuardrailPolicySpec struct {
	// GuardrailPolicySpec is the policy, as in a GuardrailPolicy; its passportSelector selects
	// passports inside each selected namespace.
	GuardrailPolicySpec `json:",inline"`

	// namespaceSelector selects the namespaces (by label) whose bundles enforce the policy; empty or
	// absent selects every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// ClusterGuardrailPolicyStatus is the observed state of a ClusterGuardrailPolicy.
type ClusterGuardrailPolicyStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// enforcedGeneration is the oldest generation a selected namespace's bundle enforces (the newest
	// one that compiled, once every bundle is written).
	// +optional
	EnforcedGeneration int64 `json:"enforcedGeneration,omitempty"`

	// ruleCount is the number of rules in the enforced generation.
	// +optional
	RuleCount int32 `json:"ruleCount,omitempty"`

	// namespaces is the number of namespaces whose stored bundle enforces the policy.
	// +optional
	Namespaces int32 `json:"namespaces,omitempty"`

	// selectedPassports is the number of passports the policy selects, summed over those namespaces.
	// +optional
	SelectedPassports int32 `json:"selectedPassports,omitempty"`

	// conditions are Valid and Ready, plus Reconciling or Stalled while they apply.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterGuardrailPolicy is a platform team's baseline: a GuardrailPolicy applied to the passports of
// every namespace its namespaceSelector matches, evaluated together with the namespaces' own
// policies (any deny wins; see docs/cluster-policies.md).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cgp,categories=tollgate
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Namespaces",type=integer,JSONPath=`.status.namespaces`
// +kubebuilder:printcolumn:name="Rules",type=integer,JSONPath=`.status.ruleCount`
// +kubebuilder:printcolumn:name="Enforcement",type=string,JSONPath=`.spec.enforcementAction`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterGuardrailPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the policy as declared.
	// +required
	Spec ClusterGuardrailPolicySpec `json:"spec"`

	// status is the policy as Tollgate observes it.
	// +optional
	Status ClusterGuardrailPolicyStatus `json:"status,omitempty"`
}

// ClusterGuardrailPolicyList is a list of ClusterGuardrailPolicies.
// +kubebuilder:object:root=true
type ClusterGuardrailPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the policies.
	Items []ClusterGuardrailPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &ClusterGuardrailPolicy{}, &ClusterGuardrailPolicyList{})
		return nil
	})
}
