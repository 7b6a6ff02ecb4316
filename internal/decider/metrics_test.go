package decider

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// TestDenialAndPassportMetrics checks the per-passport and per-tool deny counters, the passport
// status gauges and the evaluation-error counter over real HTTP, and that series of passports and
// tools that leave the bundle disappear from /metrics.
func TestDenialAndPassportMetrics(t *testing.T) {
	store := NewStore()
	b := samplesBundle(t, "team-a")
	expired := time.Now().Add(-time.Hour)
	old := b.Passports[0]
	old.Name, old.UID, old.Spec.AgentID, old.Spec.ExpiresAt = "old-agent", "uid-old", "ap_old", &expired
	b.Passports = append(b.Passports, old)
	// An active passport suspended automatically (spec.autoSuspend) until an hour from now.
	auto := b.Passports[0]
	auto.Name, auto.UID, auto.Spec.AgentID = "looping-agent", "uid-loop", "ap_loop"
	auto.AutoSuspension = &policy.AutoSuspension{Until: time.Now().Add(time.Hour), Reason: "20 denials within 10m0s"}
	b.Passports = append(b.Passports, auto)
	// A policy naming its own tool, and one whose CEL fails at run time but fails open.
	b.Policies = append(b.Policies,
		policy.Policy{Name: "deploys", Spec: policy.PolicySpec{PolicyID: "deploys.v1", Priority: 300,
			ToolCapabilities: []policy.ToolCapability{{Tool: "deploy_app", Capability: "system.command.execute"}},
			Rules:            []policy.Rule{{Name: "never", Tools: []string{"deploy_app"}, Action: policy.ActionDeny, Code: "acme.no_deploys"}}}},
		policy.Policy{Name: "broken", Spec: policy.PolicySpec{PolicyID: "broken.v1", Priority: 250, FailurePolicy: policy.FailOpen,
			Rules: []policy.Rule{{Name: "bad-cel", Tools: []string{"ls"}, When: "input.command + 1 == 2", Action: policy.ActionDeny}}}},
	)
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{DecisionLog: NewDecisionLog(io.Discard, 0, false)})
	decide := func(body string) {
		t.Helper()
		if code, out := call(t, http.MethodPost, ts.URL+"/v1/decide", body, nil); code != http.StatusOK {
			t.Fatalf("decide %s = %d %s", body, code, out)
		}
	}
	decide(`{"passport":"team-a/coding-agent","tool_name":"deploy_app","tool_input":{}}`)
	decide(`{"passport":"team-a/coding-agent","tool_name":"deploy_app","tool_input":{}}`)
	decide(`{"passport":"team-a/coding-agent","tool_name":"bash","tool_input":{"command":"rm -rf /"}}`)
	decide(`{"passport":"team-a/research-agent","tool_name":"ls","tool_input":{}}`)
	decide(`{"passport":"team-a/old-agent","tool_name":"secret_tool_x","tool_input":{}}`)
	decide(`{"passport":"team-a/coding-agent","tool_name":"ls","tool_input":{"path":"x"}}`) // CEL error, fails open
	decide(`{"passport":"team-a/nobody","tool_name":"ls","tool_input":{}}`)

	body := scrape(t, ts.URL)
	for _, want := range []string{
		`tollgate_passport_denials_total{namespace="team-a",passport="coding-agent"} 3`,
		`tollgate_passport_denials_total{namespace="team-a",passport="research-agent"} 1`,
		`tollgate_passport_denials_total{namespace="team-a",passport="old-agent"} 1`,
		`tollgate_passport_denials_total{namespace="team-a",passport="other"} 1`,
		`tollgate_tool_denials_total{namespace="team-a",tool="deploy_app"} 2`,
		`tollgate_tool_denials_total{namespace="team-a",tool="bash"} 1`,
		`tollgate_tool_denials_total{namespace="team-a",tool="ls"} 2`,
		`tollgate_tool_denials_total{namespace="team-a",tool="other"} 1`,
		`tollgate_passports{namespace="team-a",status="active"} 1`,
		`tollgate_passports{namespace="team-a",status="suspended"} 1`,
		`tollgate_passports{namespace="team-a",status="expired"} 1`,
		`tollgate_passports{namespace="team-a",status="revoked"} 0`,
		`tollgate_passports{namespace="team-a",status="auto_suspended"} 1`,
		`tollgate_passport_suspended{namespace="team-a",passport="looping-agent",status="auto_suspended"} 1`,
		`tollgate_passport_suspended{namespace="team-a",passport="research-agent",status="suspended"} 1`,
		`tollgate_passport_suspended{namespace="team-a",passport="old-agent",status="expired"} 1`,
		`tollgate_evaluation_errors_total{policy="broken.v1"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, bad := range []string{`passport="coding-agent",status=`, "secret_tool_x", `passport="nobody"`} {
		if strings.Contains(body, bad) {
			t.Errorf("metrics hold %s", bad)
		}
	}

	// The next bundle drops old-agent and the deploys policy: their series go, the others stay.
	b.Passports = append(b.Passports[:len(b.Passports)-2], b.Passports[len(b.Passports)-1])
	b.Policies = b.Policies[:len(b.Policies)-2]
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	body = scrape(t, ts.URL)
	for _, gone := range []string{`passport="old-agent"`, `tool="deploy_app"`} {
		if strings.Contains(body, gone) {
			t.Errorf("after the reload, metrics still hold %s", gone)
		}
	}
	for _, want := range []string{
		`tollgate_passport_denials_total{namespace="team-a",passport="coding-agent"} 3`,
		`tollgate_tool_denials_total{namespace="team-a",tool="bash"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("after the reload, metrics lack %s", want)
		}
	}
	// Removing the namespace drops its series altogether.
	store.Remove("team-a")
	if body = scrape(t, ts.URL); strings.Contains(body, `namespace="team-a"`) {
		t.Errorf("after the namespace is removed, metrics still hold it:\n%s", metricLines(body, `namespace="team-a"`))
	}
}

// TestPrunedCounterVecLint runs the client library's metric linter over the decider's registry.
func TestPrunedCounterVecLint(t *testing.T) {
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	srv, _ := startServer(t, store, Options{})
	problems, err := testutil.GatherAndLint(srv.metrics.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// "counter" in tollgate_counter_store_* names the rate-limit counter store, not the type.
		if strings.HasPrefix(p.Metric, "tollgate_counter_store_") && strings.Contains(p.Text, "type 'counter'") {
			continue
		}
		if strings.HasPrefix(p.Metric, "tollgate_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

func scrape(t *testing.T, base string) string {
	t.Helper()
	code, body := call(t, http.MethodGet, base+"/metrics", nil, nil)
	if code != http.StatusOK {
		t.Fatalf("metrics = %d", code)
	}
	return string(body)
}

func metricLines(body, sub string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
