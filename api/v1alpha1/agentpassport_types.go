package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PassportStatusValue is the lifecycle state an owner sets on a passport.
// +kubebuilder:validation:Enum=active;suspended;revoked
type PassportStatusValue string

const (
	// PassportActive lets the agent act within its capabilities and limits.
	PassportActive PassportStatusValue = "active"
	// PassportSuspended denies every call until the passport is made active again (the kill switch).
	PassportSuspended PassportStatusValue = "suspended"
	// PassportRevoked denies every call for good; a revoked passport can never become active again.
	PassportRevoked PassportStatusValue = "revoked"
)

// AssuranceLevel is the OAP assurance level of the passport's owner, from self-asserted (L0) to
// financially verified (L4FIN).
// +kubebuilder:validation:Enum=L0;L1;L2;L3;L4KYC;L4FIN
type AssuranceLevel string

// OwnerType says what kind of principal owns an agent.
// +kubebuilder:validation:Enum=user;team;org;service
type OwnerType string

// PassportOwner identifies who is accountable for an agent.
type PassportOwner struct {
	// id is the owner's identifier, e.g. an email address, team name or organisation id.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ID string `json:"id"`

	// type is the kind of owner.
	// +kubebuilder:default=user
	// +optional
	Type OwnerType `json:"type,omitempty"`
}

// Capability grants the agent one OAP capability, e.g. system.command.execute.
type Capability struct {
	// id is the OAP capability id, lowercase dot-separated words (e.g. data.file.read).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+(\.[a-z0-9]+)*$`
	// +required
	ID string `json:"id"`

	// params are free-form capability parameters, passed to CEL expressions as passport.capabilities.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Params *apiextensionsv1.JSON `json:"params,omitempty"`
}

// PassportSubjects lists who may present a passport.
type PassportSubjects struct {
	// serviceAccounts are names of ServiceAccounts in the passport's namespace whose pods may present it.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +listType=set
	// +optional
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`
}

// AgentPassportSpec is an agent's identity and allowance, modelled on the Open Agent Passport.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || oldSelf.status != 'revoked' || (has(self.status) && self.status == 'revoked')",message="a revoked passport cannot be reactivated or suspended; create a new passport",fieldPath=".status"
type AgentPassportSpec struct {
	// agentID is the OAP passport id the agent presents; it defaults to the object's UID when empty.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:-]*$`
	// +optional
	AgentID string `json:"agentID,omitempty"`

	// owner is who is accountable for the agent.
	// +required
	Owner PassportOwner `json:"owner"`

	// assuranceLevel is how strongly the owner's identity was verified.
	// +kubebuilder:default=L0
	// +optional
	AssuranceLevel AssuranceLevel `json:"assuranceLevel,omitempty"`

	// status is the lifecycle state: active, suspended (kill switch) or revoked (terminal).
	// +kubebuilder:default=active
	// +optional
	Status PassportStatusValue `json:"status,omitempty"`

	// capabilities are the OAP capabilities the agent holds; a tool call mapped to a capability not
	// listed here is denied with oap.unknown_capability.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=id
	// +optional
	Capabilities []Capability `json:"capabilities,omitempty"`

	// limits are free-form per-capability limits keyed by capability id, e.g.
	// system.command.execute: {allowed_commands: [git, ls], blocked_patterns: ["rm -rf"]}.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Limits *apiextensionsv1.JSON `json:"limits,omitempty"`

	// regions are the regions the agent may operate in (free text, e.g. eu-west-1).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=64
	// +listType=set
	// +optional
	Regions []string `json:"regions,omitempty"`

	// expiresAt is when the passport stops being valid; past it every call is denied.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// subjects lists who may present this passport.
	// +optional
	Subjects PassportSubjects `json:"subjects,omitempty"`

	// unmappedTools says what happens to a call of a tool that maps to no capability (neither a
	// policy's toolCapabilities nor the built-in table): Deny (the default when empty) answers
	// oap.unknown_capability; Allow lets the policies decide.
	// +kubebuilder:validation:Enum=Deny;Allow
	// +optional
	UnmappedTools string `json:"unmappedTools,omitempty"`

	// autoSuspend suspends the passport automatically when its calls keep being denied: denials
	// denies (oap.passport_suspended ones aside) within the window suspend it for the duration for.
	// The suspension is recorded in status (spec.status is never rewritten) and lifts after for, or
	// when the annotation tollgate.dev/lift-auto-suspend is set to a new value.
	// +optional
	AutoSuspend *AutoSuspend `json:"autoSuspend,omitempty"`
}

// AutoSuspend is the threshold that suspends a passport automatically.
type AutoSuspend struct {
	// denials is how many denies within the window suspend the passport.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +required
	Denials int32 `json:"denials"`

	// within is the sliding window the denials are counted in (e.g. 10m).
	// +kubebuilder:default="10m"
	// +optional
	Within metav1.Duration `json:"within,omitempty"`

	// for is how long the automatic suspension lasts (e.g. 1h).
	// +kubebuilder:default="1h"
	// +optional
	For metav1.Duration `json:"for,omitempty"`
}

// AutoSuspension is an automatic suspension in force.
type AutoSuspension struct {
	// since is when the passport was suspended.
	// +required
	Since metav1.Time `json:"since"`

	// until is when the suspension lifts on its own.
	// +required
	Until metav1.Time `json:"until"`

	// denials is how many denies within the window triggered it.
	// +optional
	Denials int64 `json:"denials,omitempty"`

	// lastDenyCode is the reason code of the last deny before it.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	LastDenyCode string `json:"lastDenyCode,omitempty"`
}

// PassportPhase summarises a passport's effective state.
// +kubebuilder:validation:Enum=Active;Suspended;Revoked;Expired
type PassportPhase string

const (
	// PhaseActive means calls are evaluated against the passport's capabilities and policies.
	PhaseActive PassportPhase = "Active"
	// PhaseSuspended means every call is denied until the passport is reactivated.
	PhaseSuspended PassportPhase = "Suspended"
	// PhaseRevoked means every call is denied for good.
	PhaseRevoked PassportPhase = "Revoked"
	// PhaseExpired means expiresAt has passed and every call is denied.
	PhaseExpired PassportPhase = "Expired"
)

// AgentPassportStatus is the observed state of an AgentPassport.
type AgentPassportStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is the passport's effective state.
	// +optional
	Phase PassportPhase `json:"phase,omitempty"`

	// agentID is the effective OAP passport id (spec.agentID or the object's UID).
	// +kubebuilder:validation:MaxLength=128
	// +optional
	AgentID string `json:"agentID,omitempty"`

	// digest is the sha256 of the RFC 8785 canonical passport, reported in every decision.
	// +kubebuilder:validation:MaxLength=80
	// +optional
	Digest string `json:"digest,omitempty"`

	// recentDenials is how many calls of the passport the live decider replicas denied in their last
	// report windows.
	// +optional
	RecentDenials int64 `json:"recentDenials,omitempty"`

	// lastDenyCode is the reason code of the most recently reported deny.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	LastDenyCode string `json:"lastDenyCode,omitempty"`

	// autoSuspension is set while spec.autoSuspend has suspended the passport.
	// +optional
	AutoSuspension *AutoSuspension `json:"autoSuspension,omitempty"`

	// liftRequest is the last value of the tollgate.dev/lift-auto-suspend annotation acted on.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	LiftRequest string `json:"liftRequest,omitempty"`

	// conditions are Ready and Suspended, plus Reconciling or Stalled while they apply.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AgentPassport is an AI agent's identity and allowance: who owns it, what it may do, its limits, and
// a kill switch (status: suspended).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ap,categories=tollgate
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.status.agentID`
// +kubebuilder:printcolumn:name="Denials",type=integer,JSONPath=`.status.recentDenials`,priority=1
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner.id`
// +kubebuilder:printcolumn:name="Expires",type=string,format=date-time,JSONPath=`.spec.expiresAt`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AgentPassport struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the passport as its owner declares it.
	// +required
	Spec AgentPassportSpec `json:"spec"`

	// status is the passport as Tollgate observes it.
	// +optional
	Status AgentPassportStatus `json:"status,omitempty"`
}

// AgentPassportList is a list of AgentPassports.
// +kubebuilder:object:root=true
type AgentPassportList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the passports.
	Items []AgentPassport `json:"items"`
}
