package controller

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// maxConditionMessage keeps condition messages under the API's 32 KiB limit.
const maxConditionMessage = 30000

// passportFacts is everything the passport status depends on besides the object itself.
type passportFacts struct {
	// now is the reconcile time.
	now time.Time
	// digest is policy.PassportDigest of the passport.
	digest string
	// invalid are the validation errors of the spec (convert.Validator).
	invalid field.ErrorList
	// excluded is set when the bundle writer left the passport out of the bundle.
	excluded *excludedPassport
	// writeErr is the last bundle write error of the namespace ("" when the bundle is stored).
	writeErr string
	// reports is what the decider replicas report about the passport (nil when reports are off).
	reports *passportReports
}

// basePassportStatus computes an AgentPassport's status from the object and facts, and how long
// until the status changes on its own (expiry), 0 when it never does. It is pure: the previous status
// only supplies condition transition times. passportStatus adds what the decider reports say.
//
// Ready means "reconciled and enforced as declared": a suspended or revoked passport is Ready (reason
// Suspended/Revoked) with Suspended=True, so GitOps health checks (kstatus) see it as Current. An
// expired passport is Ready=False and Stalled=True (reason Expired): only a spec change revives it.
func basePassportStatus(p *guardrailsv1alpha1.AgentPassport, f passportFacts) (guardrailsv1alpha1.AgentPassportStatus, time.Duration) {
	gen := p.Generation
	st := guardrailsv1alpha1.AgentPassportStatus{
		ObservedGeneration: gen,
		AgentID:            p.Spec.AgentID,
		Digest:             f.digest,
		Conditions:         cloneConditions(p.Status.Conditions),
	}
	if st.AgentID == "" {
		st.AgentID = string(p.UID)
	}
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(&st.Conditions, typ, status, reason, msg, gen, f.now)
	}

	var requeue time.Duration
	expired := p.Spec.ExpiresAt != nil && !f.now.Before(p.Spec.ExpiresAt.Time)
	var reason, msg string
	switch {
	case p.Spec.Status == guardrailsv1alpha1.PassportRevoked:
		st.Phase, reason, msg = guardrailsv1alpha1.PhaseRevoked, guardrailsv1alpha1.ReasonRevoked,
			"the passport is revoked for good; every call is denied"
	case expired:
		st.Phase, reason, msg = guardrailsv1alpha1.PhaseExpired, guardrailsv1alpha1.ReasonExpired,
			fmt.Sprintf("the passport expired at %s; every call is denied", p.Spec.ExpiresAt.UTC().Format(time.RFC3339))
	case p.Spec.Status == guardrailsv1alpha1.PassportSuspended:
		st.Phase, reason, msg = guardrailsv1alpha1.PhaseSuspended, guardrailsv1alpha1.ReasonSuspended,
			"the passport is suspended; every call is denied until it is made active again"
	default:
		st.Phase = guardrailsv1alpha1.PhaseActive
		if p.Spec.ExpiresAt != nil {
			requeue = p.Spec.ExpiresAt.Sub(f.now)
		}
	}
	if st.Phase == guardrailsv1alpha1.PhaseActive {
		set(guardrailsv1alpha1.ConditionSuspended, metav1.ConditionFalse, guardrailsv1alpha1.ReasonActive, "the passport is active")
	} else {
		set(guardrailsv1alpha1.ConditionSuspended, metav1.ConditionTrue, reason, msg)
	}

	switch {
	case len(f.invalid) > 0 || f.excluded != nil:
		reason, m := guardrailsv1alpha1.ReasonInvalid, ""
		if len(f.invalid) > 0 {
			m = leftOutMessage(joinErrors(f.invalid))
		} else {
			reason, m = f.excluded.reason, leftOutMessage(f.excluded.why)
		}
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionFalse, reason, m)
		set(guardrailsv1alpha1.ConditionStalled, metav1.ConditionTrue, reason, m)
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
	case f.writeErr != "":
		m := truncate("the namespace's bundle could not be stored (retrying): " + f.writeErr)
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionFalse, guardrailsv1alpha1.ReasonBundleWriteFailed, m)
		set(guardrailsv1alpha1.ConditionReconciling, metav1.ConditionTrue, guardrailsv1alpha1.ReasonBundleWriteFailed, m)
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionStalled)
	case st.Phase == guardrailsv1alpha1.PhaseActive:
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionTrue, guardrailsv1alpha1.ReasonReconciled, "the passport is active and enforced")
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionStalled)
	case st.Phase == guardrailsv1alpha1.PhaseExpired:
		// The declared "active until expiresAt" can no longer hold: only a spec change helps.
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
		set(guardrailsv1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
	default:
		// Suspended and revoked are declared states, enforced as declared: Ready, with the reason.
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionTrue, reason, "enforced as declared: "+msg)
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionStalled)
	}
	return st, requeue
}

// policyFacts is everything a policy's status depends on besides the object itself.
type policyFacts struct {
	// now is the reconcile time.
	now time.Time
	// errs are the compile errors of the current generation.
	errs field.ErrorList
	// known is true once the bundle writer processed the namespace.
	known bool
	// enforced is the policy as stored in the bundle; nil when no generation is stored.
	enforced *enforcedPolicy
	// writeErr is the namespace's last bundle write error.
	writeErr string
	// rejected says why the namespace's bundle does not compile as a whole ("" when it does).
	rejected string
	// reports is what the decider replicas report about the policy (nil when reports are off).
	reports *policyReports
}

// basePolicyStatus computes a GuardrailPolicy's status from the object and facts. It is pure: the
// previous status only supplies condition transition times. policyStatus adds what the decider
// reports say.
func basePolicyStatus(p *guardrailsv1alpha1.GuardrailPolicy, f policyFacts) guardrailsv1alpha1.GuardrailPolicyStatus {
	gen := p.Generation
	st := guardrailsv1alpha1.GuardrailPolicyStatus{
		ObservedGeneration: gen,
		Conditions:         cloneConditions(p.Status.Conditions),
	}
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(&st.Conditions, typ, status, reason, msg, gen, f.now)
	}
	var enforcedGen int64
	if f.enforced != nil {
		enforcedGen = f.enforced.spec.Generation
		st.EnforcedGeneration = enforcedGen
		st.RuleCount = int32(len(f.enforced.spec.Spec.Rules))
		st.SelectedPassports = f.enforced.selected
	}
	still := "no generation of this policy is enforced"
	if enforcedGen > 0 {
		still = fmt.Sprintf("generation %d is still enforced", enforcedGen)
	}

	if !setValidity(&st.Conditions, set, gen, still, f.errs) {
		return st
	}

	switch {
	case f.writeErr != "":
		m := truncate(fmt.Sprintf("the namespace's bundle could not be stored (retrying; %s): %s", still, f.writeErr))
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionFalse, guardrailsv1alpha1.ReasonBundleWriteFailed, m)
		set(guardrailsv1alpha1.ConditionReconciling, metav1.ConditionTrue, guardrailsv1alpha1.ReasonBundleWriteFailed, m)
	case f.rejected != "":
		// Valid alone, but the namespace's policies together are too much for a decision endpoint.
		m := truncate(fmt.Sprintf("the namespace's policies do not compile together, so their new generations are not stored "+
			"and the last good bundle keeps serving (%s): %s", still, f.rejected))
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionFalse, guardrailsv1alpha1.ReasonBundleRejected, m)
		set(guardrailsv1alpha1.ConditionStalled, metav1.ConditionTrue, guardrailsv1alpha1.ReasonBundleRejected, m)
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
	case !f.known || enforcedGen != gen:
		m := fmt.Sprintf("generation %d is being written to the bundle (%s)", gen, still)
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionUnknown, guardrailsv1alpha1.ReasonProgressing, m)
		set(guardrailsv1alpha1.ConditionReconciling, metav1.ConditionTrue, guardrailsv1alpha1.ReasonProgressing, m)
	case st.SelectedPassports == 0:
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionTrue, guardrailsv1alpha1.ReasonNoPassports,
			fmt.Sprintf("generation %d is enforced, but its passportSelector matches no passport", gen))
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
	default:
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionTrue, guardrailsv1alpha1.ReasonReconciled,
			fmt.Sprintf("generation %d is enforced for %d passport%s", gen, st.SelectedPassports, plural(int(st.SelectedPassports))))
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
	}
	return st
}

// setCondition sets one condition, keeping its transition time when its status is unchanged.
func setCondition(conds *[]metav1.Condition, typ string, status metav1.ConditionStatus, reason, msg string, gen int64, now time.Time) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: gen,
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
	})
}

func cloneConditions(in []metav1.Condition) []metav1.Condition {
	if in == nil {
		return nil
	}
	out := make([]metav1.Condition, len(in))
	copy(out, in)
	return out
}

// leftOutMessage is the condition message of a passport the bundle does not hold, and why.
func leftOutMessage(why string) string {
	return truncate("the passport is left out of the bundle, so its calls are denied: " + why)
}

// setValidity sets a policy's Valid condition for generation gen. With compile errors it also sets
// Ready=False and Stalled=True (the message says what is still enforced), drops Reconciling and
// returns false; otherwise it drops Stalled and returns true.
func setValidity(conds *[]metav1.Condition, set func(typ string, status metav1.ConditionStatus, reason, msg string),
	gen int64, still string, errs field.ErrorList) bool {
	if len(errs) > 0 {
		noun := "errors"
		if len(errs) == 1 {
			noun = "error"
		}
		m := truncate(fmt.Sprintf("generation %d does not compile (%s); %d %s: %s", gen, still, len(errs), noun, joinErrors(errs)))
		set(guardrailsv1alpha1.ConditionValid, metav1.ConditionFalse, guardrailsv1alpha1.ReasonCompileError, m)
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionFalse, guardrailsv1alpha1.ReasonCompileError, m)
		set(guardrailsv1alpha1.ConditionStalled, metav1.ConditionTrue, guardrailsv1alpha1.ReasonCompileError, m)
		meta.RemoveStatusCondition(conds, guardrailsv1alpha1.ConditionReconciling)
		return false
	}
	set(guardrailsv1alpha1.ConditionValid, metav1.ConditionTrue, guardrailsv1alpha1.ReasonCompiled,
		fmt.Sprintf("generation %d compiles", gen))
	meta.RemoveStatusCondition(conds, guardrailsv1alpha1.ConditionStalled)
	return true
}

func joinErrors(fe field.ErrorList) string {
	return policy.JoinErrors(fe, "; ")
}

func truncate(s string) string {
	if len(s) <= maxConditionMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxConditionMessage], "") + " …(truncated)"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
