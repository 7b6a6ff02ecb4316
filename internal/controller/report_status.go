package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// policyStatus computes a GuardrailPolicy's status (basePolicyStatus) and, when the decider
// replicas report, status.enforcement and the Enforced and Degraded conditions. Neither of them
// touches Ready, Reconciling or Stalled: kstatus reads a degraded policy as Current, and Ready keeps
// meaning "valid and written to the bundle" (Enforced says whether the replicas enforce it).
func policyStatus(p *guardrailsv1alpha1.GuardrailPolicy, f policyFacts) guardrailsv1alpha1.GuardrailPolicyStatus {
	st := basePolicyStatus(p, f)
	r := f.reports
	if r == nil {
		return st
	}
	gen := p.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(&st.Conditions, typ, status, reason, msg, gen, f.now)
	}
	st.Enforcement = &guardrailsv1alpha1.PolicyEnforcement{
		Replicas: r.replicas, Enforcing: r.enforcing, Summary: fmt.Sprintf("%d/%d", r.enforcing, r.replicas),
		EvaluationErrors: r.errors,
	}
	switch {
	case r.replicas == 0:
		st.Enforcement = nil
		set(guardrailsv1alpha1.ConditionEnforced, metav1.ConditionUnknown, guardrailsv1alpha1.ReasonNoReports,
			"no decider replica has reported in the last three report intervals")
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionDegraded)
		return st
	case r.enforcing == r.replicas:
		set(guardrailsv1alpha1.ConditionEnforced, metav1.ConditionTrue, guardrailsv1alpha1.ReasonAllReplicas,
			fmt.Sprintf("generation %d is enforced by %d/%d live decider replicas", gen, r.enforcing, r.replicas))
	default:
		set(guardrailsv1alpha1.ConditionEnforced, metav1.ConditionFalse, guardrailsv1alpha1.ReasonReplicasBehind,
			fmt.Sprintf("generation %d is enforced by %d of %d live decider replicas; the others hold another bundle revision", gen, r.enforcing, r.replicas))
	}
	if r.errors > 0 {
		st.Enforcement.FailingRule = r.rule
		m := fmt.Sprintf("%d evaluation error%s in the decider replicas' last report windows; failing rule %s", r.errors, plural(int(r.errors)), r.rule)
		if r.message != "" {
			m += ": " + r.message
		}
		set(guardrailsv1alpha1.ConditionDegraded, metav1.ConditionTrue, guardrailsv1alpha1.ReasonEvaluationErrors, truncate(m))
	} else {
		set(guardrailsv1alpha1.ConditionDegraded, metav1.ConditionFalse, guardrailsv1alpha1.ReasonNoErrors,
			"no evaluation errors in the decider replicas' last report windows")
	}
	return st
}

// reportEvents records an Event when Enforced or Degraded changed status.
func reportEvents(rec events.EventRecorder, p *guardrailsv1alpha1.GuardrailPolicy, before []metav1.Condition) {
	for _, typ := range []string{guardrailsv1alpha1.ConditionEnforced, guardrailsv1alpha1.ConditionDegraded} {
		now := meta.FindStatusCondition(p.Status.Conditions, typ)
		old := meta.FindStatusCondition(before, typ)
		if now == nil || (old != nil && old.Status == now.Status) || (old == nil && now.Status != metav1.ConditionTrue && typ == guardrailsv1alpha1.ConditionDegraded) {
			continue
		}
		kind := corev1.EventTypeNormal
		bad := (typ == guardrailsv1alpha1.ConditionDegraded && now.Status == metav1.ConditionTrue) ||
			(typ == guardrailsv1alpha1.ConditionEnforced && now.Status == metav1.ConditionFalse && old != nil && old.ObservedGeneration == now.ObservedGeneration)
		if bad {
			kind = corev1.EventTypeWarning
		}
		rec.Eventf(p, nil, kind, now.Reason, typ, "%s", eventNote(now.Message))
	}
}

// passportStatus computes an AgentPassport's status (basePassportStatus) with what the decider
// replicas report (recent denies, the last deny's code) and spec.autoSuspend: an automatic
// suspension starts when the reported denies within the window reach the threshold, and lifts at
// its end, when the lift annotation takes a new value, or when autoSuspend is removed. The
// suspension lives in status only (spec.status is never rewritten); the bundle carries it.
func passportStatus(p *guardrailsv1alpha1.AgentPassport, f passportFacts) (guardrailsv1alpha1.AgentPassportStatus, time.Duration) {
	st, requeue := basePassportStatus(p, f)
	st.LiftRequest = p.Status.LiftRequest
	if r := f.reports; r != nil {
		st.RecentDenials, st.LastDenyCode = r.recent, r.code
		if r.recent == 0 {
			st.LastDenyCode = p.Status.LastDenyCode // keep the last known code
		}
	} else {
		st.RecentDenials, st.LastDenyCode = p.Status.RecentDenials, p.Status.LastDenyCode
	}
	cur := p.Status.AutoSuspension.DeepCopy()
	if ann := p.Annotations[guardrailsv1alpha1.AnnotationLiftAutoSuspend]; ann != "" && ann != p.Status.LiftRequest {
		st.LiftRequest = ann
		cur = nil
	}
	a := p.Spec.AutoSuspend
	if cur != nil && (a == nil || !f.now.Before(cur.Until.Time)) {
		cur = nil
	}
	if cur == nil && a != nil && f.reports != nil && st.Phase == guardrailsv1alpha1.PhaseActive && p.Status.AutoSuspension == nil &&
		f.reports.window >= int64(a.Denials) {
		cur = &guardrailsv1alpha1.AutoSuspension{
			Since: metav1.NewTime(f.now.Truncate(time.Second)), Until: metav1.NewTime(f.now.Add(autoSuspendFor(a)).Truncate(time.Second)),
			Denials: f.reports.window, LastDenyCode: f.reports.windowCode,
		}
	}
	st.AutoSuspension = cur
	if cur == nil || st.Phase != guardrailsv1alpha1.PhaseActive {
		return st, requeue
	}
	msg := fmt.Sprintf("suspended automatically until %s: %d denials within %s (spec.autoSuspend); set the annotation %s to a new value to lift it earlier",
		cur.Until.UTC().Format(time.RFC3339), cur.Denials, autoSuspendWithin(a), guardrailsv1alpha1.AnnotationLiftAutoSuspend)
	st.Phase = guardrailsv1alpha1.PhaseSuspended
	setCondition(&st.Conditions, guardrailsv1alpha1.ConditionSuspended, metav1.ConditionTrue, guardrailsv1alpha1.ReasonAutoSuspended, msg, p.Generation, f.now)
	if c := meta.FindStatusCondition(st.Conditions, guardrailsv1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
		setCondition(&st.Conditions, guardrailsv1alpha1.ConditionReady, metav1.ConditionTrue, guardrailsv1alpha1.ReasonAutoSuspended,
			"enforced: "+msg, p.Generation, f.now)
	}
	left := max(cur.Until.Sub(f.now), time.Second)
	if requeue <= 0 || left < requeue {
		requeue = left
	}
	return st, requeue
}

func autoSuspendFor(a *guardrailsv1alpha1.AutoSuspend) time.Duration {
	if a.For.Duration > 0 {
		return a.For.Duration
	}
	return policy.DefaultAutoSuspendFor
}

func autoSuspendWithin(a *guardrailsv1alpha1.AutoSuspend) time.Duration {
	if a != nil && a.Within.Duration > 0 {
		return a.Within.Duration
	}
	return policy.DefaultAutoSuspendWithin
}

// autoSuspendEvent records AutoSuspended when an automatic suspension starts and AutoSuspendLifted
// (saying why) when it ends; it reports whether either happened.
func autoSuspendEvent(rec events.EventRecorder, p *guardrailsv1alpha1.AgentPassport, before *guardrailsv1alpha1.AutoSuspension, now time.Time) bool {
	after := p.Status.AutoSuspension
	switch {
	case before == nil && after != nil:
		rec.Eventf(p, nil, corev1.EventTypeWarning, guardrailsv1alpha1.ReasonAutoSuspended, "AutoSuspend",
			"%d denials within %s (last %s): every call is denied with oap.passport_suspended until %s",
			after.Denials, autoSuspendWithin(p.Spec.AutoSuspend), after.LastDenyCode, after.Until.UTC().Format(time.RFC3339))
		return true
	case before != nil && after == nil:
		why := "its time is up"
		switch {
		case p.Spec.AutoSuspend == nil:
			why = "spec.autoSuspend was removed"
		case now.Before(before.Until.Time):
			why = "the annotation " + guardrailsv1alpha1.AnnotationLiftAutoSuspend + " was set to " + p.Status.LiftRequest
		}
		rec.Eventf(p, nil, corev1.EventTypeNormal, guardrailsv1alpha1.ReasonAutoSuspendLifted, "AutoSuspend",
			"the automatic suspension (until %s) is lifted: %s", before.Until.UTC().Format(time.RFC3339), why)
		return true
	}
	return false
}

// autoSuspensionChanged reports whether an update changed a passport's automatic suspension, which
// the bundle carries.
func autoSuspensionChanged(old, cur client.Object) bool {
	o, ok1 := old.(*guardrailsv1alpha1.AgentPassport)
	n, ok2 := cur.(*guardrailsv1alpha1.AgentPassport)
	if !ok1 || !ok2 {
		return false
	}
	a, b := o.Status.AutoSuspension, n.Status.AutoSuspension
	if a == nil || b == nil {
		return a != b
	}
	return !a.Until.Equal(&b.Until) || a.Denials != b.Denials || a.LastDenyCode != b.LastDenyCode
}
