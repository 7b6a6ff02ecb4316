package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

type wantCond struct {
	status metav1.ConditionStatus
	reason string
}

// checkConditions asserts the wanted conditions, that no other condition is present, and that every
// condition carries gen.
func checkConditions(t *testing.T, got []metav1.Condition, gen int64, want map[string]wantCond) {
	t.Helper()
	if meta.FindStatusCondition(got, v1.ConditionReady) == nil {
		t.Errorf("Ready is missing: %+v", got)
	}
	if len(got) != len(want) {
		t.Errorf("got %d conditions %+v, want %d", len(got), got, len(want))
	}
	for typ, w := range want {
		c := meta.FindStatusCondition(got, typ)
		if c == nil {
			t.Errorf("condition %s missing", typ)
			continue
		}
		if c.Status != w.status || c.Reason != w.reason {
			t.Errorf("%s = %s/%s, want %s/%s (%s)", typ, c.Status, c.Reason, w.status, w.reason, c.Message)
		}
		if c.ObservedGeneration != gen {
			t.Errorf("%s observedGeneration %d, want %d", typ, c.ObservedGeneration, gen)
		}
	}
}

func passportAt(status v1.PassportStatusValue, expiresIn time.Duration) *v1.AgentPassport {
	p := &v1.AgentPassport{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "uid-1", Generation: 4},
		Spec:       v1.AgentPassportSpec{Owner: v1.PassportOwner{ID: "me"}, Status: status},
	}
	if expiresIn != 0 {
		p.Spec.ExpiresAt = &metav1.Time{Time: now.Add(expiresIn)}
	}
	return p
}

func expiringNow() *v1.AgentPassport {
	p := passportAt(v1.PassportActive, 0)
	p.Spec.ExpiresAt = &metav1.Time{Time: now}
	return p
}

func TestPassportStatus(t *testing.T) {
	const T, F = metav1.ConditionTrue, metav1.ConditionFalse
	tests := []struct {
		name        string
		p           *v1.AgentPassport
		facts       passportFacts
		phase       v1.PassportPhase
		conds       map[string]wantCond
		wantRequeue time.Duration
	}{
		{"active", passportAt(v1.PassportActive, 0), passportFacts{},
			v1.PhaseActive, map[string]wantCond{v1.ConditionReady: {T, v1.ReasonReconciled}, v1.ConditionSuspended: {F, v1.ReasonActive}}, 0},
		{"status defaults to active", passportAt("", 0), passportFacts{},
			v1.PhaseActive, map[string]wantCond{v1.ConditionReady: {T, v1.ReasonReconciled}, v1.ConditionSuspended: {F, v1.ReasonActive}}, 0},
		{"active requeues exactly at expiry", passportAt(v1.PassportActive, 90*time.Second), passportFacts{},
			v1.PhaseActive, map[string]wantCond{v1.ConditionReady: {T, v1.ReasonReconciled}, v1.ConditionSuspended: {F, v1.ReasonActive}}, 90 * time.Second},
		{"expired at the instant", expiringNow(), passportFacts{},
			v1.PhaseExpired, map[string]wantCond{v1.ConditionReady: {F, v1.ReasonExpired}, v1.ConditionSuspended: {T, v1.ReasonExpired}, v1.ConditionStalled: {T, v1.ReasonExpired}}, 0},
		{"expired", passportAt(v1.PassportActive, -time.Second), passportFacts{},
			v1.PhaseExpired, map[string]wantCond{v1.ConditionReady: {F, v1.ReasonExpired}, v1.ConditionSuspended: {T, v1.ReasonExpired}, v1.ConditionStalled: {T, v1.ReasonExpired}}, 0},
		{"suspended", passportAt(v1.PassportSuspended, time.Hour), passportFacts{},
			v1.PhaseSuspended, map[string]wantCond{v1.ConditionReady: {T, v1.ReasonSuspended}, v1.ConditionSuspended: {T, v1.ReasonSuspended}}, 0},
		{"suspended and expired reads expired", passportAt(v1.PassportSuspended, -time.Hour), passportFacts{},
			v1.PhaseExpired, map[string]wantCond{v1.ConditionReady: {F, v1.ReasonExpired}, v1.ConditionSuspended: {T, v1.ReasonExpired}, v1.ConditionStalled: {T, v1.ReasonExpired}}, 0},
		{"revoked wins over expiry", passportAt(v1.PassportRevoked, -time.Hour), passportFacts{},
			v1.PhaseRevoked, map[string]wantCond{v1.ConditionReady: {T, v1.ReasonRevoked}, v1.ConditionSuspended: {T, v1.ReasonRevoked}}, 0},
		{"invalid is stalled", passportAt(v1.PassportActive, 0),
			passportFacts{invalid: field.ErrorList{field.Invalid(field.NewPath("spec", "limits").Key("system.command.execute"), field.OmitValueType{}, "must be an object")}},
			v1.PhaseActive, map[string]wantCond{v1.ConditionReady: {F, v1.ReasonInvalid}, v1.ConditionSuspended: {F, v1.ReasonActive}, v1.ConditionStalled: {T, v1.ReasonInvalid}}, 0},
		{"duplicate agent id is stalled", passportAt(v1.PassportActive, 0),
			passportFacts{excluded: &excludedPassport{reason: v1.ReasonDuplicateAgentID, why: "taken"}},
			v1.PhaseActive, map[string]wantCond{v1.ConditionReady: {F, v1.ReasonDuplicateAgentID}, v1.ConditionSuspended: {F, v1.ReasonActive}, v1.ConditionStalled: {T, v1.ReasonDuplicateAgentID}}, 0},
		{"bundle write failure is reconciling", passportAt(v1.PassportSuspended, 0), passportFacts{writeErr: "forbidden"},
			v1.PhaseSuspended, map[string]wantCond{v1.ConditionReady: {F, v1.ReasonBundleWriteFailed}, v1.ConditionSuspended: {T, v1.ReasonSuspended}, v1.ConditionReconciling: {T, v1.ReasonBundleWriteFailed}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.facts.now, tt.facts.digest = now, "sha256:abc"
			st, requeue := passportStatus(tt.p, tt.facts)
			if st.Phase != tt.phase {
				t.Errorf("phase %s, want %s", st.Phase, tt.phase)
			}
			if requeue != tt.wantRequeue {
				t.Errorf("requeue after %s, want %s", requeue, tt.wantRequeue)
			}
			if st.ObservedGeneration != 4 || st.AgentID != "uid-1" || st.Digest != "sha256:abc" {
				t.Errorf("status %+v: want observedGeneration 4, agentID uid-1, digest sha256:abc", st)
			}
			checkConditions(t, st.Conditions, 4, tt.conds)
		})
	}
}

func TestPassportStatusTransitions(t *testing.T) {
	p := passportAt(v1.PassportActive, 0)
	p.Spec.AgentID = "agent-7"
	st, _ := passportStatus(p, passportFacts{now: now})
	if st.AgentID != "agent-7" {
		t.Errorf("agentID %q, want spec.agentID", st.AgentID)
	}
	p.Status = st

	// Same facts later: nothing changes, transition times included (no write).
	again, _ := passportStatus(p, passportFacts{now: now.Add(time.Hour)})
	if !equalStatus(p.Status.Conditions, again.Conditions) {
		t.Errorf("unchanged passport got a different status:\n%+v\n%+v", p.Status.Conditions, again.Conditions)
	}

	// Suspension: Ready and Suspended transition at the new time; stale conditions are dropped.
	p.Spec.Status = v1.PassportSuspended
	p.Generation++
	p.Status.Conditions = append(p.Status.Conditions, metav1.Condition{Type: v1.ConditionStalled, Status: metav1.ConditionTrue})
	later := now.Add(2 * time.Hour)
	sus, _ := passportStatus(p, passportFacts{now: later})
	if c := meta.FindStatusCondition(sus.Conditions, v1.ConditionSuspended); !c.LastTransitionTime.Time.Equal(later) {
		t.Errorf("Suspended transitioned at %s, want %s", c.LastTransitionTime, later)
	}
	// Ready stays True (suspension is enforced as declared); only its reason changes.
	if c := meta.FindStatusCondition(sus.Conditions, v1.ConditionReady); !c.LastTransitionTime.Time.Equal(now) || c.Reason != v1.ReasonSuspended {
		t.Errorf("Ready %s/%s transitioned at %s, want reason Suspended and the original time %s", c.Status, c.Reason, c.LastTransitionTime, now)
	}
	if meta.FindStatusCondition(sus.Conditions, v1.ConditionStalled) != nil {
		t.Error("a stale Stalled condition survived")
	}
	if len(p.Status.Conditions) != 3 {
		t.Error("passportStatus modified its input's conditions")
	}
}

func equalStatus(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPolicyStatus(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	enforced := func(gen int64, rules int, selected int32) *enforcedPolicy {
		return &enforcedPolicy{spec: policy.Policy{Generation: gen, Spec: policy.PolicySpec{Rules: make([]policy.Rule, rules)}}, selected: selected}
	}
	compileErrs := field.ErrorList{
		field.Invalid(field.NewPath("spec", "rules").Index(0).Child("when"), field.OmitValueType{}, "undeclared reference to 'inptu'"),
		field.Invalid(field.NewPath("spec", "rateLimits").Index(1).Child("window"), field.OmitValueType{}, "invalid duration"),
	}
	tests := []struct {
		name       string
		facts      policyFacts
		conds      map[string]wantCond
		enforced   int64
		rules      int32
		selected   int32
		msgHas     []string
		readyHasIn string
	}{
		{"valid and enforced", policyFacts{known: true, enforced: enforced(3, 2, 5)},
			map[string]wantCond{v1.ConditionValid: {T, v1.ReasonCompiled}, v1.ConditionReady: {T, v1.ReasonReconciled}}, 3, 2, 5, nil, "5 passports"},
		{"valid, no passport selected", policyFacts{known: true, enforced: enforced(3, 1, 0)},
			map[string]wantCond{v1.ConditionValid: {T, v1.ReasonCompiled}, v1.ConditionReady: {T, v1.ReasonNoPassports}}, 3, 1, 0, nil, "matches no passport"},
		{"valid, bundle writer has not seen the namespace", policyFacts{},
			map[string]wantCond{v1.ConditionValid: {T, v1.ReasonCompiled}, v1.ConditionReady: {U, v1.ReasonProgressing}, v1.ConditionReconciling: {T, v1.ReasonProgressing}}, 0, 0, 0, nil, "no generation"},
		{"valid, older generation still stored", policyFacts{known: true, enforced: enforced(2, 1, 1)},
			map[string]wantCond{v1.ConditionValid: {T, v1.ReasonCompiled}, v1.ConditionReady: {U, v1.ReasonProgressing}, v1.ConditionReconciling: {T, v1.ReasonProgressing}}, 2, 1, 1, nil, "generation 2 is still enforced"},
		{"invalid keeps the last known good", policyFacts{known: true, errs: compileErrs, enforced: enforced(2, 4, 7)},
			map[string]wantCond{v1.ConditionValid: {F, v1.ReasonCompileError}, v1.ConditionReady: {F, v1.ReasonCompileError}, v1.ConditionStalled: {T, v1.ReasonCompileError}}, 2, 4, 7,
			[]string{"generation 3 does not compile", "generation 2 is still enforced", "2 errors", "spec.rules[0].when: undeclared reference", "spec.rateLimits[1].window: invalid duration"}, "generation 2"},
		{"invalid from the start", policyFacts{known: true, errs: compileErrs[:1]},
			map[string]wantCond{v1.ConditionValid: {F, v1.ReasonCompileError}, v1.ConditionReady: {F, v1.ReasonCompileError}, v1.ConditionStalled: {T, v1.ReasonCompileError}}, 0, 0, 0,
			[]string{"no generation of this policy is enforced", "1 error:"}, "no generation"},
		{"the namespace's policies do not compile together", policyFacts{known: true, enforced: enforced(2, 1, 1),
			rejected: "policies[p].spec.rules[0].when: the bundle's distinct CEL expressions total more than 131072 characters here (the per-bundle budget)"},
			map[string]wantCond{v1.ConditionValid: {T, v1.ReasonCompiled}, v1.ConditionReady: {F, v1.ReasonBundleRejected}, v1.ConditionStalled: {T, v1.ReasonBundleRejected}}, 2, 1, 1,
			nil, "the last good bundle keeps serving (generation 2 is still enforced): policies[p].spec.rules[0].when: "},
		{"bundle write failure", policyFacts{known: true, enforced: enforced(2, 1, 1), writeErr: "configmaps is forbidden"},
			map[string]wantCond{v1.ConditionValid: {T, v1.ReasonCompiled}, v1.ConditionReady: {F, v1.ReasonBundleWriteFailed}, v1.ConditionReconciling: {T, v1.ReasonBundleWriteFailed}}, 2, 1, 1, nil, "forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 3}}
			// Conditions of an earlier state that no longer apply must go.
			p.Status.Conditions = []metav1.Condition{
				{Type: v1.ConditionStalled, Status: T, Reason: "Old", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
				{Type: v1.ConditionReconciling, Status: T, Reason: "Old", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			}
			tt.facts.now = now
			st := policyStatus(p, tt.facts)
			checkConditions(t, st.Conditions, 3, tt.conds)
			if st.ObservedGeneration != 3 || st.EnforcedGeneration != tt.enforced || st.RuleCount != tt.rules || st.SelectedPassports != tt.selected {
				t.Errorf("status %+v: want observedGeneration 3, enforcedGeneration %d, ruleCount %d, selectedPassports %d",
					st, tt.enforced, tt.rules, tt.selected)
			}
			valid := meta.FindStatusCondition(st.Conditions, v1.ConditionValid)
			for _, s := range tt.msgHas {
				if !strings.Contains(valid.Message, s) {
					t.Errorf("Valid message %q lacks %q", valid.Message, s)
				}
			}
			if ready := meta.FindStatusCondition(st.Conditions, v1.ConditionReady); !strings.Contains(ready.Message, tt.readyHasIn) {
				t.Errorf("Ready message %q lacks %q", ready.Message, tt.readyHasIn)
			}
		})
	}
}

func TestPolicyStatusTruncatesHugeErrorLists(t *testing.T) {
	var errs field.ErrorList
	for range 5000 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "rules").Index(0).Child("when"), field.OmitValueType{}, strings.Repeat("é", 10)))
	}
	p := &v1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	st := policyStatus(p, policyFacts{now: now, errs: errs})
	for _, c := range st.Conditions {
		if len(c.Message) > 32768 {
			t.Errorf("%s message is %d bytes, over the API limit", c.Type, len(c.Message))
		}
	}
}

// TestCountSelected checks the selectedPassports the bundle writer records: the engine's selection
// (Snapshot.SelectedPassports) of the bundle's passports by each enforced policy.
func TestCountSelected(t *testing.T) {
	passport := func(name string, lbls map[string]string) v1.AgentPassport {
		return v1.AgentPassport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: lbls},
			Spec: v1.AgentPassportSpec{Owner: v1.PassportOwner{ID: "o"}}}
	}
	pp := []v1.AgentPassport{
		passport("a", map[string]string{"team": "x"}),
		passport("b", map[string]string{"team": "x"}),
		passport("c", map[string]string{"team": "y"}),
		passport("d", nil),
	}
	sel := func(name string, ls *metav1.LabelSelector) v1.GuardrailPolicy {
		return v1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.GuardrailPolicySpec{PassportSelector: ls}}
	}
	pols := []v1.GuardrailPolicy{
		sel("all", nil),
		sel("empty", &metav1.LabelSelector{}),
		sel("x", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}),
		sel("not-x", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}}}}),
		sel("bad", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}}),
	}
	built := convert.BundleBuilder{}.Build(namespaceObjects("ns", pp, pols))
	if built.Err != nil {
		t.Fatal(built.Err)
	}
	rec := record(built.Bundle.Revision(), pols, nil, built)
	want := map[string]int32{"all": 4, "empty": 4, "x": 2, "not-x": 2, "bad": 0}
	for name, n := range want {
		if rec.policies[name].selected != n {
			t.Errorf("%s selects %d, want %d", name, rec.policies[name].selected, n)
		}
	}
}

func TestPacer(t *testing.T) {
	p := newPacer(100 * time.Millisecond)
	if d := p.delay("ns", now); d != 0 {
		t.Errorf("first event waits %s, want 0", d)
	}
	p.mark("ns", now)
	if d := p.delay("ns", now.Add(30*time.Millisecond)); d != 70*time.Millisecond {
		t.Errorf("event 30ms after a write waits %s, want 70ms", d)
	}
	if d := p.delay("ns", now.Add(time.Second)); d != 0 {
		t.Errorf("event after a quiet period waits %s, want 0", d)
	}
	if d := p.delay("other", now); d != 0 {
		t.Errorf("another namespace waits %s, want 0", d)
	}
	for i := range 300 {
		p.mark(string(rune('a'+i%26))+strings.Repeat("x", i), now.Add(-time.Hour))
	}
	p.mark("ns", now)
	if len(p.last) > 257 {
		t.Errorf("pacer keeps %d namespaces, want old ones pruned", len(p.last))
	}
}
