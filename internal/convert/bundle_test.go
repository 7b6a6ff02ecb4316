package convert_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

func builderPassport(name, agentID string) *v1.AgentPassport {
	return &v1.AgentPassport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + strings.ToUpper(name))},
		Spec: v1.AgentPassportSpec{AgentID: agentID, Owner: v1.PassportOwner{ID: "o"}, Capabilities: []v1.Capability{{ID: "system.command.execute"}}}}
}

func builderPolicy(name, when string, gen int64) *v1.GuardrailPolicy {
	return &v1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: gen},
		Spec: v1.GuardrailPolicySpec{Rules: []v1.Rule{{Name: "r", Tools: []string{"bash"}, When: when, Action: v1.ActionDeny}}}}
}

// TestBundleBuilderLeavesOut checks the builder's rules for objects that cannot be served.
func TestBundleBuilderLeavesOut(t *testing.T) {
	bad := builderPassport("bad", "")
	bad.Spec.Owner.ID = ""
	lastGood, err := convert.Policy(builderPolicy("broken", `input.command == "rm"`, 1))
	if err != nil {
		t.Fatal(err)
	}
	built := convert.BundleBuilder{
		LastGood: func(p *v1.GuardrailPolicy) (policy.Policy, bool) { return lastGood, p.Name == "broken" },
	}.Build(convert.Objects{Namespace: "ns",
		Passports: []*v1.AgentPassport{builderPassport("first", "shared"), builderPassport("second", "shared"), bad, builderPassport("other", "")},
		Policies: []*v1.GuardrailPolicy{builderPolicy("ok", `input.command == "ls"`, 4), builderPolicy("broken", `inptu.command`, 2),
			builderPolicy("never", `1 +`, 1)},
	})
	if built.Err != nil || built.Rejected != nil || built.Snapshot == nil {
		t.Fatalf("Err %v, Rejected %v, Snapshot %v: want a compiled bundle", built.Err, built.Rejected, built.Snapshot)
	}
	var names []string
	for _, p := range built.Bundle.Passports {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "first,other" {
		t.Errorf("passports in the bundle: %v, want first and other", names)
	}
	if o := built.Passports["second"]; o.HeldBy != "first" || o.AgentID != "shared" {
		t.Errorf("second: %+v, want held by first", o)
	}
	if e := built.Passports["second"].HeldByError(); e.Field != "spec.agentID" || !strings.Contains(e.Detail, `passport "first"`) {
		t.Errorf("HeldByError = %v", e)
	}
	if o := built.Passports["bad"]; len(o.Errors) != 1 || o.Errors[0].Field != "spec.owner.id" {
		t.Errorf("bad: %+v, want spec.owner.id required", o)
	}
	if o := built.Passports["other"]; o.AgentID != "uid-OTHER" || o.HeldBy != "" || len(o.Errors) > 0 {
		t.Errorf("other: %+v, want kept with its UID as agent id", o)
	}
	if o := built.Policies["ok"]; o.Enforced == nil || o.Enforced.Generation != 4 || o.Selected != 2 {
		t.Errorf("ok: %+v, want generation 4 enforced for 2 passports", o)
	}
	if o := built.Policies["broken"]; len(o.Errors) == 0 || o.Enforced == nil || o.Enforced.Generation != 1 {
		t.Errorf("broken: %+v, want its errors and generation 1 (last good) enforced", o)
	}
	if o := built.Policies["never"]; len(o.Errors) == 0 || o.Enforced != nil {
		t.Errorf("never: %+v, want its errors and nothing enforced", o)
	}
	if len(built.Bundle.Policies) != 2 {
		t.Errorf("the bundle holds %d policies, want ok and broken's last good", len(built.Bundle.Policies))
	}
}

// TestBundleBuilderRefusesABundleOverBudget: policies valid alone but over the per-bundle budget
// together fall back to their last good versions, and the result says why.
func TestBundleBuilderRefusesABundleOverBudget(t *testing.T) {
	bulky := func(i int) *v1.GuardrailPolicy {
		p := &v1.GuardrailPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "ns", Generation: 1}}
		for j := range 8 {
			lit := fmt.Sprintf("%d-%d-", i, j) + strings.Repeat("x", 3850)
			p.Spec.Rules = append(p.Spec.Rules, v1.Rule{Name: fmt.Sprintf("r%d", j), Tools: []string{"bash"},
				When: `input.command == "` + lit + `"`, Action: v1.ActionDeny})
		}
		return p
	}
	objs := convert.Objects{Namespace: "ns", Passports: []*v1.AgentPassport{builderPassport("a", "")}}
	for i := range 5 {
		objs.Policies = append(objs.Policies, bulky(i))
	}
	stored := map[string]policy.Policy{}
	for _, p := range objs.Policies[:4] {
		conv, err := convert.Policy(p)
		if err != nil {
			t.Fatal(err)
		}
		stored[p.Name] = conv
	}
	built := convert.BundleBuilder{LastGood: func(p *v1.GuardrailPolicy) (policy.Policy, bool) {
		lg, ok := stored[p.Name]
		return lg, ok
	}}.Build(objs)
	if built.Err != nil || built.Snapshot == nil {
		t.Fatalf("Err %v: want the last good policies compiled", built.Err)
	}
	if built.Rejected == nil {
		t.Fatal("five bulky policies compiled together: want the bundle refused")
	}
	errs := built.Rejected.Errors()
	if len(errs) == 0 || !strings.HasPrefix(errs[0].Field, "policies[p4].spec.rules[") || !strings.Contains(policy.ErrorMessage(errs[0]), "per-bundle budget") {
		t.Errorf("rejected because %v, want p4's expressions over the per-bundle budget", errs)
	}
	if len(built.Bundle.Policies) != 4 || built.Policies["p4"].Enforced != nil || len(built.Policies["p4"].Errors) > 0 {
		t.Errorf("bundle holds %d policies, p4 %+v: want the four last good ones, p4 valid but left out", len(built.Bundle.Policies), built.Policies["p4"])
	}
	if built.Policies["p0"].Selected != 1 {
		t.Errorf("p0 selects %d passports, want 1", built.Policies["p0"].Selected)
	}
}
