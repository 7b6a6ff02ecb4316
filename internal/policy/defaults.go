package policy

// Defaults of the fields a policy or passport may leave empty: the engine reads an empty field as
// its default (DefaultEvaluatorTimeout and DefaultInputGuardHooks are the other two). They are the
// one source of these values: the admission webhook's defaulters write them, and tests check that
// the CRDs' +kubebuilder:default markers (which cannot name a Go constant) carry the same.
const (
	// DefaultEnforcementAction is a policy's spec.enforcementAction when empty.
	DefaultEnforcementAction = EnforcementEnforce
	// DefaultFailurePolicy is a policy's spec.failurePolicy when empty.
	DefaultFailurePolicy = FailClosed
	// DefaultDefaultAction is a policy's spec.defaultAction when empty.
	DefaultDefaultAction = ActionAllow
	// DefaultPriority is a policy's spec.priority when unset.
	DefaultPriority int32 = 0
	// DefaultRateLimitPer is a rate limit's per when empty.
	DefaultRateLimitPer = PerPassport
	// DefaultBlockThreshold is the blockThreshold of input and response guards when empty.
	DefaultBlockThreshold = RiskHigh
	// DefaultInputRiskType is an input pattern's riskType when empty.
	DefaultInputRiskType = RiskTypePromptInjection
	// DefaultOutputRiskType is an output pattern's riskType when empty.
	DefaultOutputRiskType = RiskTypeDataLeak
	// DefaultPassportStatus is a passport's spec.status when empty.
	DefaultPassportStatus = StatusActive
	// DefaultAssuranceLevel is a passport's spec.assuranceLevel when empty (self-asserted).
	DefaultAssuranceLevel = "L0"
	// DefaultOwnerType is a passport's spec.owner.type when empty.
	DefaultOwnerType = "user"
)
