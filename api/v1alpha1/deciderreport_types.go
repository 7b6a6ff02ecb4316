package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeciderReport is what one decision-endpoint replica reports about itself: the bundle revision it
// enforces in every namespace and what its policies and passports did since its previous report.
// Each replica writes only its own report (named after its pod, owned by the pod so that garbage
// collection removes it with the pod) once per interval; the controllers fold the live reports into
// GuardrailPolicy and AgentPassport status. A report whose heartbeat is older than three intervals
// is stale and ignored. Reports never carry tool arguments.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dr,categories=tollgate
// +kubebuilder:printcolumn:name="Heartbeat",type=date,JSONPath=`.spec.heartbeatTime`
// +kubebuilder:printcolumn:name="Interval",type=integer,JSONPath=`.spec.intervalSeconds`
// +kubebuilder:printcolumn:name="Namespaces",type=integer,JSONPath=`.spec.namespaceCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DeciderReport struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata; the name is the replica's pod name.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the report as the replica wrote it.
	// +required
	Spec DeciderReportSpec `json:"spec"`
}

// DeciderReportSpec is one replica's report.
type DeciderReportSpec struct {
	// heartbeatTime is when the replica wrote this report; the window it covers ends here.
	// +required
	HeartbeatTime metav1.MicroTime `json:"heartbeatTime"`

	// windowStart is when the window of the counts began (the previous report's heartbeat).
	// +required
	WindowStart metav1.MicroTime `json:"windowStart"`

	// intervalSeconds is the replica's report interval; the report is stale three intervals after
	// its heartbeat.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +required
	IntervalSeconds int32 `json:"intervalSeconds"`

	// namespaceCount is the number of namespaces whose bundle the replica enforces.
	// +optional
	NamespaceCount int32 `json:"namespaceCount,omitempty"`

	// namespaces are the bundles the replica enforces, with the window's counts.
	// +kubebuilder:validation:MaxItems=10000
	// +listType=map
	// +listMapKey=namespace
	// +optional
	Namespaces []NamespaceReport `json:"namespaces,omitempty"`

	// truncated is the number of policy and passport entries left out to keep the report small.
	// +optional
	Truncated int32 `json:"truncated,omitempty"`
}

// NamespaceReport is what a replica enforces in one namespace and what happened there.
type NamespaceReport struct {
	// namespace is the bundle's namespace.
	// +kubebuilder:validation:MaxLength=63
	// +required
	Namespace string `json:"namespace"`

	// revision is the bundle revision the replica enforces.
	// +kubebuilder:validation:MaxLength=80
	// +required
	Revision string `json:"revision"`

	// policies are the window's counts of the policies that decided or failed (others are left out).
	// +kubebuilder:validation:MaxItems=5000
	// +listType=map
	// +listMapKey=name
	// +optional
	Policies []PolicyReport `json:"policies,omitempty"`

	// passports are the window's denies of the passports denied at least once.
	// +kubebuilder:validation:MaxItems=5000
	// +listType=map
	// +listMapKey=name
	// +optional
	Passports []PassportReport `json:"passports,omitempty"`
}

// PolicyReport counts one policy's decisions of a window.
type PolicyReport struct {
	// name is the GuardrailPolicy's name.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// decisions is how many decisions the policy made (it is the decision's policy_id).
	// +optional
	Decisions int64 `json:"decisions,omitempty"`

	// denies is how many of them were denies.
	// +optional
	Denies int64 `json:"denies,omitempty"`

	// evaluationErrors is how many evaluations of the policy failed (CEL errors, deadlines, evaluator
	// failures), whatever its failurePolicy and enforcementAction made of them.
	// +optional
	EvaluationErrors int64 `json:"evaluationErrors,omitempty"`

	// dryRunDenies is how many calls the policy would have denied had it not been DryRun.
	// +optional
	DryRunDenies int64 `json:"dryRunDenies,omitempty"`

	// lastError is the first evaluation error of the window.
	// +optional
	LastError *EvaluationErrorReport `json:"lastError,omitempty"`
}

// EvaluationErrorReport names a failing rule.
type EvaluationErrorReport struct {
	// rule is the failing rule, requirement or evaluator as policy_id#name.
	// +kubebuilder:validation:MaxLength=400
	// +required
	Rule string `json:"rule"`

	// message is the error, with quoted text that comes from the tool arguments redacted.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
}

// PassportReport counts one passport's denies of a window.
type PassportReport struct {
	// name is the AgentPassport's name.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// denies is how many of its calls were denied.
	// +optional
	Denies int64 `json:"denies,omitempty"`

	// suspendedDenies is how many of them were denied because the passport was suspended
	// (oap.passport_suspended); auto-suspension does not count them.
	// +optional
	SuspendedDenies int64 `json:"suspendedDenies,omitempty"`

	// lastDenyCode is the reason code of the window's last deny.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	LastDenyCode string `json:"lastDenyCode,omitempty"`
}

// DeciderReportList is a list of DeciderReports.
// +kubebuilder:object:root=true
type DeciderReportList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the reports.
	Items []DeciderReport `json:"items"`
}
