package v1alpha1

// Condition types. Every Tollgate object carries Ready (kstatus convention); each condition carries
// the observedGeneration it describes.
const (
	// ConditionReady is True when the object is reconciled and enforced as declared.
	ConditionReady = "Ready"
	// ConditionValid is True when the policy's current generation compiles (GuardrailPolicy only).
	ConditionValid = "Valid"
	// ConditionSuspended is True when a passport denies every call (suspended, revoked or expired).
	ConditionSuspended = "Suspended"
	// ConditionReconciling is True while Tollgate works towards the declared state (kstatus).
	ConditionReconciling = "Reconciling"
	// ConditionEnforced is True when every live decider replica enforces the policy's current
	// generation (GuardrailPolicy only; from DeciderReports). Unknown when no replica reports.
	ConditionEnforced = "Enforced"
	// ConditionDegraded is True when evaluations of the policy failed in the live replicas' last
	// report windows (GuardrailPolicy only). It never makes the policy Stalled: kstatus reads it as
	// Current.
	ConditionDegraded = "Degraded"
	// ConditionStalled is True when Tollgate cannot make progress without a change to the object (kstatus).
	ConditionStalled = "Stalled"
)

// Condition reasons.
const (
	// ReasonReconciled surfaces on Ready=True once the object's current generation is enforced.
	ReasonReconciled = "Reconciled"
	// ReasonProgressing surfaces on Ready=Unknown and Reconciling=True while a new generation is being applied.
	ReasonProgressing = "Progressing"
	// ReasonCompiled surfaces on Valid=True when every rule and expression of the policy compiles.
	ReasonCompiled = "Compiled"
	// ReasonCompileError surfaces on Valid=False, Ready=False and Stalled=True when the policy does not
	// compile; the message lists every error with its field path and the generation still enforced.
	ReasonCompileError = "CompileError"
	// ReasonActive surfaces on Suspended=False when the passport is active and unexpired.
	ReasonActive = "Active"
	// ReasonSuspended surfaces on Suspended=True when the passport's status is suspended (kill switch).
	ReasonSuspended = "Suspended"
	// ReasonRevoked surfaces on Suspended=True when the passport's status is revoked (terminal).
	ReasonRevoked = "Revoked"
	// ReasonExpired surfaces on Suspended=True when the passport's expiresAt has passed.
	ReasonExpired = "Expired"
	// ReasonNoPassports surfaces on a policy's Ready condition message when its selector matches no passport.
	ReasonNoPassports = "NoPassportsSelected"
	// ReasonBundleWriteFailed surfaces on Ready=False when the compiled bundle could not be stored.
	ReasonBundleWriteFailed = "BundleWriteFailed"
	// ReasonBundleRejected surfaces on every policy's Ready=False and Stalled=True when the namespace's
	// policies, each valid, do not compile together as a decision endpoint compiles them (e.g. over a
	// per-bundle budget); the message names the field path and the budget. Their new generations are
	// not stored: the last good bundle keeps serving until a policy is simplified, split or deleted.
	ReasonBundleRejected = "BundleRejected"
	// ReasonInvalid surfaces on a passport's Ready=False and Stalled=True when its spec fails the engine's
	// validation (the webhook was bypassed); the passport is left out of the bundle, so its calls are denied.
	ReasonInvalid = "Invalid"
	// ReasonDuplicateAgentID surfaces on a passport's Ready=False and Stalled=True when another passport of
	// the namespace (created earlier) already uses its effective agent id; it is left out of the bundle.
	ReasonDuplicateAgentID = "DuplicateAgentID"
	// ReasonAllReplicas surfaces on Enforced=True.
	ReasonAllReplicas = "AllReplicasEnforce"
	// ReasonReplicasBehind surfaces on Enforced=False while some live replica enforces another generation.
	ReasonReplicasBehind = "ReplicasBehind"
	// ReasonNoReports surfaces on Enforced=Unknown when no decider replica has reported recently.
	ReasonNoReports = "NoReports"
	// ReasonEvaluationErrors surfaces on Degraded=True; the message has the count and the failing rule.
	ReasonEvaluationErrors = "EvaluationErrors"
	// ReasonNoErrors surfaces on Degraded=False.
	ReasonNoErrors = "NoEvaluationErrors"
	// ReasonAutoSuspended surfaces on a passport's Suspended=True while spec.autoSuspend suspended it.
	ReasonAutoSuspended = "AutoSuspended"
	// ReasonAutoSuspendLifted is the reason of the Event recorded when an automatic suspension lifts.
	ReasonAutoSuspendLifted = "AutoSuspendLifted"
)
