package decider

import (
	"context"
	"strings"
	"testing"
	"time"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// TestReporterCounts decides over HTTP with reporting on and checks the window's report: the
// revision, per-policy decisions, denies, evaluation errors (with the failing rule, no argument
// values) and dry-run would-denies, per-passport denies with the last code; the next window is empty.
func TestReporterCounts(t *testing.T) {
	store := NewStore()
	b := samplesBundle(t, "team-a")
	b.Policies = append(b.Policies,
		policy.Policy{Name: "broken", Spec: policy.PolicySpec{Rules: []policy.Rule{
			{Name: "adds-one", Tools: []string{"bash"}, When: "input.command + 1 == 2", Action: policy.ActionDeny}}}},
		policy.Policy{Name: "audit", Spec: policy.PolicySpec{EnforcementAction: policy.EnforcementDryRun, Rules: []policy.Rule{
			{Name: "no-ls", Tools: []string{"ls"}, Action: policy.ActionDeny}}}})
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	rep := NewReporter(store, ReporterOptions{})
	_, ts := startServer(t, store, Options{Reporter: rep})
	const secret = "s3cr3t-argument-value"
	for range 3 {
		decide(t, ts.URL, map[string]any{"passport": "team-a/coding-agent", "tool_name": "bash",
			"tool_input": map[string]any{"command": "git status " + secret}}, nil)
	}
	decide(t, ts.URL, map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}, nil)
	decide(t, ts.URL, map[string]any{"passport": "team-a/research-agent", "tool_name": "ls"}, nil)

	spec := rep.Snapshot()
	if len(spec.Namespaces) != 1 || spec.Namespaces[0].Revision != b.Revision() || spec.NamespaceCount != 1 {
		t.Fatalf("namespaces %+v", spec.Namespaces)
	}
	if !spec.HeartbeatTime.After(spec.WindowStart.Time) && !spec.HeartbeatTime.Equal(&spec.WindowStart) {
		t.Errorf("window %v .. %v", spec.WindowStart, spec.HeartbeatTime)
	}
	ns := spec.Namespaces[0]
	pols := map[string]int{}
	for i, p := range ns.Policies {
		pols[p.Name] = i
	}
	broken, ok := pols["broken"]
	if !ok {
		t.Fatalf("no broken policy in %+v", ns.Policies)
	}
	bp := ns.Policies[broken]
	if bp.EvaluationErrors != 3 || bp.Denies != 3 || bp.Decisions != 3 || bp.LastError == nil ||
		bp.LastError.Rule != "team-a/broken#adds-one" {
		t.Fatalf("broken policy %+v %+v", bp, bp.LastError)
	}
	if strings.Contains(bp.LastError.Message, secret) {
		t.Fatalf("report carries an argument value: %q", bp.LastError.Message)
	}
	if a, ok := pols["audit"]; !ok || ns.Policies[a].DryRunDenies != 1 || ns.Policies[a].Decisions != 0 {
		t.Fatalf("audit policy %+v", ns.Policies)
	}
	checkPassportCounts(t, ns.Passports)
	next := rep.Snapshot()
	if len(next.Namespaces) != 1 || len(next.Namespaces[0].Policies) != 0 || len(next.Namespaces[0].Passports) != 0 {
		t.Fatalf("next window not empty: %+v", next.Namespaces)
	}
	if !next.WindowStart.Equal(&spec.HeartbeatTime) {
		t.Errorf("next window starts %v, want %v", next.WindowStart, spec.HeartbeatTime)
	}
}

// checkPassportCounts checks the passports' denies of TestReporterCounts.
func checkPassportCounts(t *testing.T, ps []guardrailsv1alpha1.PassportReport) {
	t.Helper()
	got := map[string]guardrailsv1alpha1.PassportReport{}
	for _, p := range ps {
		got[p.Name] = p
	}
	if c := got["coding-agent"]; c.Denies != 3 || c.LastDenyCode != policy.CodeEvaluatorError || c.SuspendedDenies != 0 {
		t.Errorf("coding-agent %+v", c)
	}
	if r := got["research-agent"]; r.Denies != 1 || r.LastDenyCode != policy.CodePassportSuspended || r.SuspendedDenies != 1 {
		t.Errorf("research-agent %+v", r)
	}
}

// TestReporterRunNeedsClient refuses to run without somewhere to write.
func TestReporterRunNeedsClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := NewReporter(NewStore(), ReporterOptions{}).Run(ctx); err == nil {
		t.Fatal("Run without a client succeeded")
	}
}

// BenchmarkDecideReporting measures the decision service with reporting off and on (the counters
// on the hot path), deciding the samples' mix in parallel.
func BenchmarkDecideReporting(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run("reporting="+name, func(b *testing.B) {
			store := NewStore()
			if err := store.Load(samplesBundle(b, "team-a")); err != nil {
				b.Fatal(err)
			}
			opts := ServiceOptions{}
			if on {
				opts.Reporter = NewReporter(store, ReporterOptions{})
			}
			svc := NewService(store, opts)
			reqs := []policy.Request{
				{Passport: "team-a/coding-agent", ToolName: "bash", ToolInput: map[string]any{"command": "git status"}},
				{Passport: "team-a/coding-agent", ToolName: "bash", ToolInput: map[string]any{"command": "rm -rf /"}},
				{Passport: "team-a/research-agent", ToolName: "ls"},
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					req := reqs[i%len(reqs)]
					i++
					if _, err := svc.Decide(context.Background(), &req, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
