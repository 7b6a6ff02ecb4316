package decider

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// TestMetricsCardinality sends thousands of requests whose every caller-chosen part is distinct
// (verify-route policy ids, passports, tools, threads, routes) over real loopback HTTP and checks that
// /metrics stays bounded: every label value comes from a closed set.
func TestMetricsCardinality(t *testing.T) {
	store := NewStore()
	b := samplesBundle(t, "team-a")
	// A rule with a code of its own: the code label must not carry it.
	b.Policies = append(b.Policies, policy.Policy{Name: "custom-code", Spec: policy.PolicySpec{
		PolicyID: "custom.code.v1", Priority: 200,
		Rules: []policy.Rule{{Name: "no-x", Tools: []string{"read_file"}, When: "has(input.path) && input.path == 'deny-me'",
			Action: policy.ActionDeny, Code: "acme.custom_denial"}},
	}})
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{DecisionLog: NewDecisionLog(io.Discard, 0, false)})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}

	const n = 4000
	var sent, decided, verified atomic.Int64
	post := func(path, body string) {
		resp, err := client.Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		sent.Add(1)
		if resp.StatusCode == http.StatusOK {
			decided.Add(1)
			if strings.HasPrefix(path, verifyPrefix) {
				verified.Add(1)
			}
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				id := fmt.Sprintf("attacker.policy-%d.v1", i)
				// Verify route: the policy id comes from the URL.
				post(verifyPrefix+id, `{"context":{"agent_id":"ap_coding_agent_01","tool_name":"ls"}}`)
				// Decide route: distinct passports (unknown), tools, threads and a custom code.
				post("/v1/decide", fmt.Sprintf(`{"passport":"team-a/p-%d","tool_name":"t-%d","thread_id":"th-%d"}`, i, i, i))
				post("/v1/decide", fmt.Sprintf(`{"passport":"ns-%d/coding-agent","tool_name":"ls"}`, i))
				post("/v1/decide", fmt.Sprintf(`{"passport":"team-a/coding-agent","tool_name":"read_file","tool_input":{"path":"deny-me"},"call_id":"c-%d"}`, i))
				// Unknown routes and bad requests.
				post(fmt.Sprintf("/route-%d", i), `{}`)
				post("/v1/decide", fmt.Sprintf(`{"passport":"team-a/coding-agent","hook":"hook-%d","tool_name":"ls"}`, i))
			}
		})
	}
	wg.Wait()
	// The three decide requests per id are answered; verify calls for unknown ids may be refused.
	if decided.Load()-verified.Load() < 3*n {
		t.Fatalf("only %d of %d requests were decided", decided.Load(), sent.Load())
	}

	code, body := call(t, http.MethodGet, ts.URL+"/metrics", nil, nil)
	if code != http.StatusOK {
		t.Fatalf("metrics = %d", code)
	}
	// One sample per line of the text format: "name{labels} value".
	series := map[string]int{}
	total := 0
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, _ := strings.Cut(line, "{")
		if i := strings.IndexByte(name, ' '); i >= 0 {
			name, labels = name[:i], ""
		}
		series[name]++
		total++
		for _, bad := range []string{"attacker", "route-", "custom_denial", `"p-`, `"ns-`, `"th-`, `"t-`, "hook-"} {
			if strings.Contains(labels, bad) {
				t.Errorf("a label is taken from a request: %s", line)
			}
		}
	}
	t.Logf("%d requests (%d decided, %d of them verify calls): /metrics is %d bytes, %d samples; tollgate_decisions_total %d series, tollgate_http_requests_total %d, tollgate_passport_denials_total %d, tollgate_tool_denials_total %d",
		sent.Load(), decided.Load(), verified.Load(), len(body), total, series["tollgate_decisions_total"], series["tollgate_http_requests_total"],
		series["tollgate_passport_denials_total"], series["tollgate_tool_denials_total"])
	// outcomes × codes × policies actually reached is a handful; the bound leaves room for all of them.
	if got := series["tollgate_decisions_total"]; got > 20 {
		t.Errorf("tollgate_decisions_total has %d series, want ≤ 20", got)
	}
	if got := series["tollgate_http_requests_total"]; got > 10 {
		t.Errorf("tollgate_http_requests_total has %d series, want ≤ 10", got)
	}
	// Per-passport and per-tool denials: the passports and tools of the bundle, plus other.
	if got := series["tollgate_passport_denials_total"]; got > 4 {
		t.Errorf("tollgate_passport_denials_total has %d series, want ≤ 4", got)
	}
	if got := series["tollgate_tool_denials_total"]; got > 8 {
		t.Errorf("tollgate_tool_denials_total has %d series, want ≤ 8", got)
	}
	if len(body) > 64<<10 {
		t.Errorf("/metrics is %d bytes, want ≤ 64 KiB", len(body))
	}
	want := []string{
		`tollgate_decisions_total{code="other",outcome="deny",policy="custom.code.v1"}`,
		`tollgate_decisions_total{code="oap.passport_not_found",outcome="deny",policy=""}`,
		`tollgate_http_requests_total{code="404",route="other"}`,
		`tollgate_passport_denials_total{namespace="team-a",passport="coding-agent"}`,
		`tollgate_passport_denials_total{namespace="team-a",passport="other"}`,
		`tollgate_passport_denials_total{namespace="other",passport="other"}`,
		`tollgate_tool_denials_total{namespace="team-a",tool="other"}`,
		`tollgate_tool_denials_total{namespace="team-a",tool="read_file"}`,
	}
	if verified.Load() > 0 { // decided verify calls for ids no snapshot has
		want = append(want, `policy="other"}`)
	}
	for _, w := range want {
		if !bytes.Contains(body, []byte(w)) {
			t.Errorf("metrics lack %s", w)
		}
	}
}

// TestPolicyLabels checks the policy label set follows the served snapshots.
func TestPolicyLabels(t *testing.T) {
	store := NewStore()
	if got := store.policyLabel("system.command.execute.v1#no-sudo"); got != labelOther {
		t.Errorf("before any load: %q", got)
	}
	b := samplesBundle(t, "team-a")
	b.Policies = append(b.Policies, policy.Policy{Name: "no-id", Spec: policy.PolicySpec{}})
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"system.command.execute.v1#no-sudo": "system.command.execute.v1",
		"system.command.execute.v1":         "system.command.execute.v1",
		"team-a/no-id":                      "team-a/no-id",
		"":                                  "",
		"system.command.execute.v2":         labelOther,
		"#x":                                "",
	} {
		if got := store.policyLabel(id); got != want {
			t.Errorf("policyLabel(%q) = %q, want %q", id, got, want)
		}
	}
	store.Remove("team-a")
	if got := store.policyLabel("system.command.execute.v1"); got != labelOther {
		t.Errorf("after the namespace is removed: %q", got)
	}
	if got := closedLabel(codeLabels, "acme.x"); got != labelOther {
		t.Errorf("custom code label = %q", got)
	}
	// The guard's codes and the built-in patterns' risk codes are labelled as themselves; a risk type
	// a policy author chose is not.
	for _, c := range []string{policy.CodeLimitExceeded, policy.CodeInvalidContext, policy.CodeToolNotAllowed,
		policy.CodePromptInjection, "oap.data_leak"} {
		if got := closedLabel(codeLabels, c); got != c {
			t.Errorf("code label of %s = %q", c, got)
		}
	}
	if got := closedLabel(codeLabels, "oap.secret_leak"); got != labelOther {
		t.Errorf("a policy's own risk code is labelled %q", got)
	}
	if got := closedLabel(outcomeLabels, "maybe"); got != labelOther {
		t.Errorf("outcome label = %q", got)
	}
}
