package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

var reportNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// TestPolicyStatusFromReports checks the enforcement summary and the Enforced and Degraded
// conditions for no reports, all replicas, some replicas and failing evaluations.
func TestPolicyStatusFromReports(t *testing.T) {
	p := &v1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 2}}
	facts := func(r *policyReports) policyFacts { return policyFacts{now: reportNow, reports: r} }

	if st := policyStatus(p, facts(nil)); meta.FindStatusCondition(st.Conditions, v1.ConditionEnforced) != nil || st.Enforcement != nil {
		t.Fatalf("reports off: %+v", st)
	}
	st := policyStatus(p, facts(&policyReports{}))
	if c := meta.FindStatusCondition(st.Conditions, v1.ConditionEnforced); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != v1.ReasonNoReports || st.Enforcement != nil {
		t.Fatalf("no replicas: %+v", st)
	}
	st = policyStatus(p, facts(&policyReports{replicas: 2, enforcing: 2}))
	if st.Enforcement.Summary != "2/2" || !meta.IsStatusConditionTrue(st.Conditions, v1.ConditionEnforced) ||
		!meta.IsStatusConditionFalse(st.Conditions, v1.ConditionDegraded) {
		t.Fatalf("all enforce: %+v", st)
	}
	st = policyStatus(p, facts(&policyReports{replicas: 2, enforcing: 1, errors: 4, rule: "ns/p#r", message: "no such overload"}))
	d := meta.FindStatusCondition(st.Conditions, v1.ConditionDegraded)
	if st.Enforcement.Summary != "1/2" || !meta.IsStatusConditionFalse(st.Conditions, v1.ConditionEnforced) ||
		d == nil || d.Status != metav1.ConditionTrue || d.Message != "4 evaluation errors in the decider replicas' last report windows; failing rule ns/p#r: no such overload" ||
		st.Enforcement.FailingRule != "ns/p#r" || meta.FindStatusCondition(st.Conditions, v1.ConditionStalled) != nil {
		t.Fatalf("behind and degraded: %+v", st)
	}
}

// TestPassportAutoSuspend walks an automatic suspension through its start, the threshold not yet
// reached, its lift by time, by annotation and by removing autoSuspend.
func TestPassportAutoSuspend(t *testing.T) {
	auto := &v1.AutoSuspend{Denials: 3, Within: metav1.Duration{Duration: time.Minute}, For: metav1.Duration{Duration: time.Hour}}
	p := &v1.AgentPassport{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Generation: 1},
		Spec: v1.AgentPassportSpec{Status: v1.PassportActive, AutoSuspend: auto}}
	f := passportFacts{now: reportNow, reports: &passportReports{reporting: true, recent: 2, code: "oap.blocked_pattern", window: 2, windowCode: "oap.blocked_pattern"}}
	st, _ := passportStatus(p, f)
	if st.AutoSuspension != nil || st.Phase != v1.PhaseActive || st.RecentDenials != 2 || st.LastDenyCode != "oap.blocked_pattern" {
		t.Fatalf("under the threshold: %+v", st)
	}
	f.reports.window = 3
	st, requeue := passportStatus(p, f)
	if st.AutoSuspension == nil || st.Phase != v1.PhaseSuspended || !st.AutoSuspension.Until.Equal(&metav1.Time{Time: reportNow.Add(time.Hour)}) ||
		requeue != time.Hour || meta.FindStatusCondition(st.Conditions, v1.ConditionSuspended).Reason != v1.ReasonAutoSuspended {
		t.Fatalf("at the threshold: %+v requeue %v", st, requeue)
	}
	p.Status = st
	// Still suspended a minute later, whatever the window says.
	f.now, f.reports.window = reportNow.Add(time.Minute), 0
	if st, _ := passportStatus(p, f); st.AutoSuspension == nil {
		t.Fatal("lifted early")
	}
	// Lifted at its end.
	f.now = reportNow.Add(time.Hour)
	if st, _ := passportStatus(p, f); st.AutoSuspension != nil || st.Phase != v1.PhaseActive {
		t.Fatalf("after its end: %+v", st)
	}
	// Lifted by the annotation, which is remembered so it lifts only once.
	f.now = reportNow.Add(time.Minute)
	p.Annotations = map[string]string{v1.AnnotationLiftAutoSuspend: "now"}
	st, _ = passportStatus(p, f)
	if st.AutoSuspension != nil || st.LiftRequest != "now" {
		t.Fatalf("annotation: %+v", st)
	}
	p.Status.LiftRequest = "now"
	if st, _ := passportStatus(p, f); st.AutoSuspension == nil {
		t.Fatal("an annotation already acted on lifted it again")
	}
	// Removing autoSuspend lifts it.
	p.Spec.AutoSuspend = nil
	if st, _ := passportStatus(p, f); st.AutoSuspension != nil {
		t.Fatal("removing autoSuspend did not lift it")
	}
}

// TestReportView checks liveness, the revision mapping and the denial window.
func TestReportView(t *testing.T) {
	v := newReportView()
	h := newRevisionHistory()
	h.remember("ns", &namespaceRecord{revision: "r1", policies: map[string]enforcedPolicy{"p": {uid: "u", spec: policySpecGen(1)}}})
	h.remember("ns", &namespaceRecord{revision: "r2", policies: map[string]enforcedPolicy{"p": {uid: "u", spec: policySpecGen(2)}}})
	rep := func(rev string, at time.Time, denies int64) *v1.DeciderReportSpec {
		return &v1.DeciderReportSpec{HeartbeatTime: metav1.NewMicroTime(at), IntervalSeconds: 10, Namespaces: []v1.NamespaceReport{{
			Namespace: "ns", Revision: rev, Passports: []v1.PassportReport{{Name: "a", Denies: denies, SuspendedDenies: 1, LastDenyCode: "oap.x"}}}}}
	}
	v.put("a", rep("r2", reportNow, 5))
	v.put("b", rep("r1", reportNow.Add(-time.Second), 3))
	v.put("c", rep("r2", reportNow.Add(-31*time.Second), 9)) // stale
	holds := func(rev string) bool { return h.holds("ns", rev, "p", "u", 2) }
	if got := v.policy("ns", "p", reportNow, holds); got.replicas != 2 || got.enforcing != 1 {
		t.Fatalf("policy view %+v", got)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	got := v.passport(key, reportNow, time.Minute)
	if got.recent != 8 || got.code != "oap.x" || got.window != 4+2+8 { // a stale report's denies happened within the window too
		t.Fatalf("passport view %+v", got)
	}
	v.put("a", rep("r2", reportNow, 5)) // the same heartbeat again: not counted twice
	if got := v.passport(key, reportNow, time.Minute); got.window != 14 {
		t.Fatalf("refolded: %+v", got)
	}
	v.resetDenials(key, reportNow)
	if got := v.passport(key, reportNow, time.Minute); got.window != 0 {
		t.Fatalf("after reset: %+v", got)
	}
}

func policySpecGen(gen int64) policy.Policy { return policy.Policy{Name: "p", Generation: gen} }
