package fleet

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// TestShapeBuildsAndDecides checks the generated objects: valid, compiled by the controller's
// builder with the cluster policy merged in, and deciding the probe call and the baseline's deny.
func TestShapeBuildsAndDecides(t *testing.T) {
	s := Shape{Namespaces: 2, Passports: 20, Policies: 10, Rules: 10, ClusterPolicies: 2}
	built, err := s.Bundle(1, s.ClusterGuardrailPolicies())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(built.Bundle.Passports); n != 20 {
		t.Fatalf("%d passports in the bundle, want 20", n)
	}
	if n := len(built.Bundle.Policies); n != 12 {
		t.Fatalf("%d policies in the bundle, want 10 namespaced + 2 cluster", n)
	}
	for name, out := range built.Policies {
		if len(out.Errors) > 0 || out.Enforced == nil {
			t.Fatalf("policy %s: %v", name, out.Errors)
		}
	}
	ctx := context.Background()
	if d := built.Snapshot.Decide(ctx, Request(7)); d.Decision != policy.DecisionAllow {
		t.Errorf("probe: got %s %v, want allow", d.Decision, d.Reasons)
	}
	rm := policy.Request{Passport: PassportName(3), ToolName: "bash", ToolInput: map[string]any{"command": "rm -rf /"}}
	if d := built.Snapshot.Decide(ctx, rm); d.Decision != policy.DecisionDeny {
		t.Errorf("rm -rf: got %s %v, want deny", d.Decision, d.Reasons)
	}
	if n := built.Snapshot.SelectedPassports("cluster/" + ClusterPolicyName(1)); n != 20 {
		t.Errorf("the cluster policy selects %d passports, want 20", n)
	}
}

// TestPropagationToThreeReplicas is the small-scale run of the propagation benchmark: the real
// manager and three decider watchers on one envtest API server; every suspension must reach every
// replica, p99 within the 1 s target, and a cluster policy change every namespace of every replica.
func TestPropagationToThreeReplicas(t *testing.T) {
	env, err := testenv.New()
	if err != nil {
		t.Fatalf("envtest: %v (this test never skips)", err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg, env.Scheme, Config{
		Shape:    Shape{Namespaces: 10, Passports: 20, Policies: 3, Rules: 6, ClusterPolicies: 1},
		Replicas: 3, Trials: 20, Warmup: 2, Timeout: 10 * time.Second, Progress: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Suspension) != 20 || len(res.SuspensionPerReplica) != 60 {
		t.Fatalf("%d trials and %d replica times, want 20 and 60", len(res.Suspension), len(res.SuspensionPerReplica))
	}
	lat := slices.Clone(res.Suspension)
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)-1]
	t.Logf("suspension → deny on all 3 replicas: p50 %s, p99 %s; seed %s; cluster policy change %s; %d bundle writes",
		p50, p99, res.Seed, res.ClusterChange, res.BundleWrites)
	if p99 > time.Second {
		t.Errorf("suspension → deny on every replica p99 %s, target ≤ 1s", p99)
	}
	if res.ClusterChange <= 0 || res.Seed <= 0 {
		t.Errorf("seed %s and cluster change %s must be measured", res.Seed, res.ClusterChange)
	}
}

func TestBundlesAreTheBuilderOutputPerNamespace(t *testing.T) {
	s := Shape{Namespaces: 3, Passports: 5, Policies: 2, Rules: 4}
	all, err := s.Bundles()
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range all {
		built, err := s.Bundle(i, s.ClusterGuardrailPolicies())
		if err != nil {
			t.Fatal(err)
		}
		if b.Revision() != built.Bundle.Revision() {
			t.Errorf("namespace %d: the derived bundle differs from the builder's", i)
		}
	}
}
