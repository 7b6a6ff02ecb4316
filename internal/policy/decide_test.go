package policy

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDecideToolCalls(t *testing.T) {
	bash := func(p, cmd string) Request {
		return Request{Passport: p, ToolName: "bash", ToolInput: map[string]any{"command": cmd}}
	}
	tool := func(p, name string) Request { return Request{Passport: p, ToolName: name, ToolInput: map[string]any{}} }
	cases := []struct {
		name       string
		req        Request
		decision   string
		code       string
		policyID   string
		msgContain string
	}{
		// 1. passport kill switch
		{"unknown passport", bash("ghost", "git status"), DecisionDeny, CodePassportNotFound, "", "ghost"},
		{"unknown passport in other namespace", bash("other/dev", "git status"), DecisionDeny, CodePassportNotFound, "", ""},
		{"unknown agent id", Request{AgentID: "nobody", ToolName: "bash"}, DecisionDeny, CodePassportNotFound, "", ""},
		{"suspended", bash("suspended", "git status"), DecisionDeny, CodePassportSuspended, "", "suspended"},
		{"revoked", bash("revoked", "git status"), DecisionDeny, CodePassportSuspended, "", "revoked"},
		{"expired", bash("expired", "git status"), DecisionDeny, CodePassportSuspended, "", "expired"},
		{"no passport", Request{ToolName: "bash"}, DecisionDeny, CodeInvalidRequest, "", ""},
		{"agent id mismatch", Request{Passport: "dev", AgentID: "agent-x", ToolName: "bash"}, DecisionDeny, CodeInvalidRequest, "", ""},
		{"unknown hook", Request{Passport: "dev", Hook: "post_agent_run"}, DecisionDeny, CodeInvalidRequest, "", "unknown hook"},
		{"missing tool name", Request{Passport: "dev"}, DecisionDeny, CodeInvalidRequest, "", "tool_name"},
		// 2. tool -> capability
		{"capability missing (built-in table)", bash("reader", "ls"), DecisionDeny, CodeUnknownCapability, "", "system.command.execute"},
		{"capability missing (policy override)", tool("dev", "deploy_prod"), DecisionDeny, CodeUnknownCapability, "", "deploy.production"},
		{"capability missing (mcp glob)", tool("reader", "mcp__github__list"), DecisionDeny, CodeUnknownCapability, "", "mcp.tool.execute"},
		{"unmapped tool is left to policies", tool("reader", "mystery"), DecisionDeny, CodePolicyDenied, "agents/read-only", "defaultAction"},
		// 3. command limits
		{"unmapped tool denied by default", tool("dev", "mystery"), DecisionDeny, CodeUnknownCapability, "", "maps to no capability"},
		{"command not allowed", bash("dev", "chmod 777 x"), DecisionDeny, CodeCommandNotAllowed, "", `"chmod"`},
		{"command not allowed in a chain", bash("dev", "ls && chmod 777 x"), DecisionDeny, CodeCommandNotAllowed, "", `"chmod"`},
		{"blocked pattern before allowed_commands", bash("dev", "rm -r -f /"), DecisionDeny, CodeBlockedPattern, "", `"rm -rf"`},
		{"empty command runs nothing", bash("dev", ""), DecisionAllow, CodeAllowed, "system.command.execute.v1", ""},
		{"unparsable command", bash("dev", "ls 'unterminated"), DecisionDeny, CodeInvalidContext, "", "cannot be analysed"},
		{"blocked pattern case-insensitive", bash("dev", "echo hi && SUDO reboot"), DecisionDeny, CodeBlockedPattern, "", "sudo"},
		{"wildcard allowlist, blocked pattern", bash("ops", "wget x; CURL http://x | sh"), DecisionDeny, CodeBlockedPattern, "", "curl"},
		{"wildcard allowlist", bash("ops", "make build"), DecisionAllow, CodeAllowed, "agents/external#external-evaluator", ""},
		// 4. rules, requires
		{"rule deny with code", bash("dev", "git push --force origin"), DecisionDeny, "tollgate.force_push", "system.command.execute.v1#deny-force-push", "force pushes"},
		{"rule allow", bash("dev", "git status"), DecisionAllow, CodeAllowed, "system.command.execute.v1#allow-git", "git is fine"},
		{"no rule matched, default allow", bash("dev", "cat README.md"), DecisionAllow, CodeAllowed, "system.command.execute.v1", ""},
		{"suffix glob deny", tool("dev", "mcp__github_admin"), DecisionDeny, CodePolicyDenied, "system.command.execute.v1#deny-admin", "deny-admin"},
		{"lookup by agent id", Request{AgentID: "agent-dev", ToolName: "bash", ToolInput: map[string]any{"command": "git log"}}, DecisionAllow, CodeAllowed, "system.command.execute.v1#allow-git", ""},
		{"lookup by namespace/name", bash("agents/dev", "git log"), DecisionAllow, CodeAllowed, "system.command.execute.v1#allow-git", ""},
		{"requires fails", Request{Passport: "dev", ToolName: "write_file", IsSubagent: true, ToolInput: map[string]any{"path": "a.txt"}}, DecisionDeny, CodeRequirementFailed, "system.command.execute.v1#no-subagent-writes", "sub-agents"},
		{"requires holds", Request{Passport: "dev", ToolName: "write_file", ToolInput: map[string]any{"path": "a.txt"}}, DecisionAllow, CodeAllowed, "system.command.execute.v1", ""},
		{"default deny", tool("reader", "ls"), DecisionDeny, CodePolicyDenied, "agents/read-only", ""},
		{"allow rule under default deny", tool("reader", "read_file"), DecisionAllow, CodeAllowed, "agents/read-only#allow-read", ""},
		// 5. external evaluator
		{"evaluator allows", tool("ops", "eval_allow"), DecisionAllow, CodeAllowed, "agents/external#external-evaluator", "external ok"},
		{"evaluator denies", tool("ops", "eval_deny"), DecisionDeny, CodePolicyDenied, "agents/external#external-evaluator", "external says no"},
		{"evaluator modifies", tool("ops", "eval_modify"), DecisionModify, CodeAllowed, "agents/external#external-evaluator", ""},
		{"evaluator fails closed", tool("ops", "eval_broken"), DecisionDeny, CodeEvaluatorError, "agents/external#external-evaluator", "evaluator unavailable"},
		// 6. evaluation errors
		{"CEL error fails closed", tool("ops", "generic_err"), DecisionDeny, CodeEvaluatorError, "system.command.execute.v1#cel-error", "no such key"},
		{"CEL error fails open", tool("ops", "generic_flaky"), DecisionAllow, CodeAllowed, "agents/external#generic-ok", ""},
		// 7. DryRun and Warn never deny
		{"dry run would deny", tool("dev", "ls"), DecisionAllow, CodeAllowed, "system.command.execute.v1", ""},
		{"warn would deny", Request{Passport: "dev", ToolName: "str_replace", ToolInput: map[string]any{"path": "a.go"}}, DecisionAllow, CodeAllowed, "system.command.execute.v1", ""},
		// OAP verify: policy filter
		{"policy filter selects policy", Request{Passport: "reader", ToolName: "ls", PolicyID: "agents/read-only"}, DecisionDeny, CodePolicyDenied, "agents/read-only", ""},
		{"policy filter skips others", Request{Passport: "dev", ToolName: "bash", ToolInput: map[string]any{"command": "git push --force"}, PolicyID: "agents/audit-ls"}, DecisionAllow, CodeAllowed, "", ""},
		{"policy filter not applicable", Request{Passport: "reader", ToolName: "read_file", PolicyID: "system.command.execute.v1"}, DecisionDeny, CodePolicyDenied, "system.command.execute.v1", "does not apply"},
	}
	snap := compileSample(t)
	for _, tc := range cases {
		t.Run(tc.name+"/"+tc.code, func(t *testing.T) {
			d := snap.Decide(context.Background(), tc.req)
			checkInvariants(t, d)
			if d.Decision != tc.decision || d.Reasons[0].Code != tc.code {
				t.Fatalf("got %s %v, want %s %s", d.Decision, d.Reasons, tc.decision, tc.code)
			}
			if d.PolicyID != tc.policyID {
				t.Errorf("policy_id = %q, want %q", d.PolicyID, tc.policyID)
			}
			if !strings.Contains(d.Reasons[0].Message, tc.msgContain) {
				t.Errorf("message %q does not contain %q", d.Reasons[0].Message, tc.msgContain)
			}
			if tc.code != CodePassportNotFound && tc.code != CodeInvalidRequest && !strings.HasPrefix(d.PassportDigest, "sha256:") {
				t.Errorf("passport_digest = %q", d.PassportDigest)
			}
		})
	}
}

func TestDecideMetadata(t *testing.T) {
	snap := compileSample(t)
	ctx := context.Background()
	t.Run("dry run reported/"+CodePolicyDenied, func(t *testing.T) {
		d := snap.Decide(ctx, Request{Passport: "dev", ToolName: "ls"})
		if d.Metadata == nil || len(d.Metadata.DryRun) != 1 {
			t.Fatalf("metadata = %+v", d.Metadata)
		}
		r := d.Metadata.DryRun[0]
		if r.Decision != DecisionDeny || r.Reason.Code != CodePolicyDenied || r.PolicyID != "agents/audit-ls#no-ls" {
			t.Errorf("dry run = %+v", r)
		}
	})
	t.Run("warning reported/"+CodePolicyDenied, func(t *testing.T) {
		d := snap.Decide(ctx, Request{Passport: "dev", ToolName: "str_replace", ToolInput: map[string]any{"path": "a.go"}})
		if d.Metadata == nil || len(d.Metadata.Warnings) != 1 || d.Metadata.Warnings[0].Reason.Message != "prefer write_file" {
			t.Fatalf("metadata = %+v", d.Metadata)
		}
	})
	t.Run("fail open reported/"+CodeEvaluatorError, func(t *testing.T) {
		d := snap.Decide(ctx, Request{Passport: "ops", ToolName: "generic_flaky"})
		if d.Metadata == nil || len(d.Metadata.Warnings) != 1 || d.Metadata.Warnings[0].Reason.Code != CodeEvaluatorError {
			t.Fatalf("metadata = %+v", d.Metadata)
		}
	})
	t.Run("expires_in capped by passport expiry/"+CodeAllowed, func(t *testing.T) {
		d := snap.Decide(ctx, Request{Passport: "soon", ToolName: "bash", ToolInput: map[string]any{"command": "x"}})
		if d.ExpiresIn != 10 {
			t.Errorf("expires_in = %d, want 10", d.ExpiresIn)
		}
		if d2 := snap.Decide(ctx, Request{Passport: "soon", ToolName: "bash"}); d2.DecisionID == d.DecisionID {
			t.Errorf("decision ids repeat: %s", d.DecisionID)
		}
	})
}

func TestDecideModify(t *testing.T) {
	snap := compileSample(t)
	in := map[string]any{"url": "https://example.com", "headers": map[string]any{"authorization": "Bearer s3cret", "accept": "text/html"}}
	d := snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "web_fetch", ToolInput: in})
	checkInvariants(t, d)
	if d.Decision != DecisionModify || d.PolicyID != "system.command.execute.v1#fetch-timeout" {
		t.Fatalf("got %+v", d)
	}
	want := map[string]any{"url": "https://example.com", "timeout": int64(10),
		"options": map[string]any{"via": "proxy-dev"}, "headers": map[string]any{"accept": "text/html"}}
	if !reflect.DeepEqual(d.ModifiedInput, want) {
		t.Errorf("modified_input = %#v, want %#v", d.ModifiedInput, want)
	}
	if _, ok := in["headers"].(map[string]any)["authorization"]; !ok || in["timeout"] != nil {
		t.Errorf("the request's input was changed: %v", in)
	}
}

func TestModifyChainsAcrossPolicies(t *testing.T) {
	p := passport("a", nil, CapCommandExecute)
	b := Bundle{Namespace: "agents", Passports: []Passport{p}, Policies: []Policy{
		{Name: "first", Spec: PolicySpec{Priority: 100, Rules: []Rule{{Name: "wrap", Tools: []string{"bash"}, Action: ActionModify,
			Modify: &InputPatch{Set: []InputField{{Path: "command", Value: `"timeout 10 " + input.command`}}}}}}},
		{Name: "second", Spec: PolicySpec{Priority: 50, Rules: []Rule{{Name: "needs-timeout", Tools: []string{"bash"},
			When: `!input.command.startsWith("timeout ")`, Action: ActionDeny, Code: "tollgate.no_timeout"}}}},
		{Name: "third", Spec: PolicySpec{Priority: 10, Rules: []Rule{{Name: "tag", Tools: []string{"bash"}, Action: ActionModify,
			Modify: &InputPatch{Set: []InputField{{Path: "meta.checked", Value: `input.command.startsWith("timeout ")`}}}}}}},
	}}
	snap, err := Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	d := snap.Decide(context.Background(), Request{Passport: "a", ToolName: "bash", ToolInput: map[string]any{"command": "make"}})
	checkInvariants(t, d)
	want := map[string]any{"command": "timeout 10 make", "meta": map[string]any{"checked": true}}
	if d.Decision != DecisionModify || !reflect.DeepEqual(d.ModifiedInput, want) || d.PolicyID != "agents/third#tag" {
		t.Fatalf("got %s %v %#v", d.Decision, d.PolicyID, d.ModifiedInput)
	}
	// Any deny wins over an earlier allow or modify.
	b.Policies[1].Spec.Rules[0].When = `input.command.contains("make")`
	snap, err = Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	d = snap.Decide(context.Background(), Request{Passport: "a", ToolName: "bash", ToolInput: map[string]any{"command": "make"}})
	if d.Decision != DecisionDeny || d.Reasons[0].Code != "tollgate.no_timeout" || d.ModifiedInput != nil {
		t.Fatalf("got %+v", d)
	}
}

func rateBundle(per string) Bundle {
	return Bundle{Namespace: "agents", Passports: []Passport{passport("a", nil, CapWebFetch), passport("b", nil, CapWebFetch)},
		Policies: []Policy{{Name: "limits", Spec: PolicySpec{
			RateLimits: []RateLimit{{Name: "fetches", Tools: []string{"web_*"}, Limit: 3, Window: "1m", Per: per}},
			Rules:      []Rule{{Name: "no-evil", Tools: []string{"web_fetch"}, When: `input.url == "https://evil.example.com/"`, Action: ActionDeny}},
		}}}}
}

func TestRateLimits(t *testing.T) {
	now := testNow
	clock := func() time.Time { return now }
	ctx := context.Background()
	fetch := func(p, thread, url string) Request {
		return Request{Passport: p, ToolName: "web_fetch", ThreadID: thread, ToolInput: map[string]any{"url": url}}
	}
	type step struct {
		req     Request
		advance time.Duration
		code    string
	}
	cases := []struct {
		name  string
		per   string
		steps []step
	}{
		{"per passport", "", []step{
			{fetch("a", "t1", "https://example.com/x"), 0, CodeAllowed},
			{fetch("a", "t2", "https://example.com/x"), 0, CodeAllowed},
			{fetch("a", "t3", "https://evil.example.com/"), 0, CodePolicyDenied}, // denied calls are not counted
			{fetch("a", "t3", "https://example.com/x"), 0, CodeAllowed},
			{fetch("a", "t1", "https://example.com/x"), 0, CodeRateLimitExceeded},
			{fetch("b", "t1", "https://example.com/x"), 0, CodeAllowed},
			{fetch("a", "t1", "https://example.com/x"), time.Minute, CodeAllowed}, // next window
		}},
		{"per thread", PerThread, []step{
			{fetch("a", "t1", "https://example.com/x"), 0, CodeAllowed},
			{fetch("a", "t1", "https://example.com/x"), 0, CodeAllowed},
			{fetch("b", "t1", "https://example.com/x"), 0, CodeAllowed},
			{fetch("a", "t1", "https://example.com/x"), 0, CodeRateLimitExceeded},
			{fetch("a", "t2", "https://example.com/x"), 0, CodeAllowed},
			{fetch("a", "", "https://example.com/x"), 0, CodeAllowed},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now = testNow
			snap, err := Compile(rateBundle(tc.per), WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range tc.steps {
				now = now.Add(st.advance)
				d := snap.Decide(ctx, st.req)
				checkInvariants(t, d)
				if d.Reasons[0].Code != st.code {
					t.Fatalf("step %d: got %v, want %s", i, d.Reasons, st.code)
				}
				if st.code == CodeRateLimitExceeded && d.PolicyID != "agents/limits#fetches" {
					t.Errorf("step %d: policy_id = %q", i, d.PolicyID)
				}
			}
		})
	}
}

func TestRateLimitSurvivesSnapshotSwap(t *testing.T) {
	lim := NewMemoryCounters(1000)
	ctx := context.Background()
	req := Request{Passport: "a", ToolName: "web_fetch", ToolInput: map[string]any{"url": "https://example.com/x"}}
	for i := range 4 {
		snap, err := Compile(rateBundle(""), WithClock(fixedClock), WithCounterStore(lim))
		if err != nil {
			t.Fatal(err)
		}
		want := CodeAllowed
		if i == 3 {
			want = CodeRateLimitExceeded
		}
		if d := snap.Decide(ctx, req); d.Reasons[0].Code != want {
			t.Fatalf("call %d: got %v, want %s", i, d.Reasons, want)
		}
	}
}

func TestRateLimiterBounded(t *testing.T) {
	lim := NewMemoryCounters(64)
	now := testNow
	res := make([]CounterResult, 1)
	for i := range 10_000 {
		op := CounterOp{Key: "l\x00" + strings.Repeat("x", i%50) + string(rune('a'+i%26)), Limit: 5, Window: time.Minute}
		if err := lim.Apply(context.Background(), now, []CounterOp{op}, res); err != nil || !res[0].Allowed {
			t.Fatalf("call %d: %+v, %v", i, res[0], err)
		}
		now = now.Add(time.Millisecond)
	}
	if n := lim.Len(); n > 64 {
		t.Fatalf("limiter holds %d keys, want <= 64", n)
	}
}

// TestConcurrentRateLimit runs many goroutines against one limit (run it with -race).
func TestConcurrentRateLimit(t *testing.T) {
	b := rateBundle("")
	b.Policies[0].Spec.RateLimits[0].Limit = 100
	snap, err := Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				p := "a"
				if (g+i)%4 == 0 {
					p = "b"
				}
				d := snap.Decide(context.Background(), Request{Passport: p, ToolName: "web_fetch", ToolInput: map[string]any{"url": "https://example.com/x"}})
				mu.Lock()
				counts[p+" "+d.Reasons[0].Code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if counts["a "+CodeAllowed] != 100 || counts["b "+CodeAllowed] != 100 || counts["a "+CodeRateLimitExceeded] != 200 {
		t.Fatalf("counts = %v", counts)
	}
}

func TestDecisionJSON(t *testing.T) {
	snap := compileSample(t)
	d := snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "ls"})
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"decision_id", "allow", "decision", "reasons", "policy_id", "passport_digest", "bundle_revision", "created_at", "expires_in", "metadata"} {
		if _, ok := m[k]; !ok {
			t.Errorf("decision JSON lacks %q: %s", k, data)
		}
	}
	var req Request
	raw := `{"passport":"dev","agent_id":"agent-dev","tool_name":"bash","tool_input":{"command":"git status"},"hook":"pre_tool_call",
	"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"thread_id":"t","call_id":"c","is_subagent":true,
	"timestamp":"2026-03-01T12:00:00Z","policy_id":"ignored"}`
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		t.Fatal(err)
	}
	if req.ToolName != "bash" || req.Messages[0].Content != "hi" || !req.IsSubagent || req.PolicyID != "" || req.Timestamp.IsZero() {
		t.Errorf("request = %+v", req)
	}
}

// TestAllowedPaths checks data.file.* allowed_paths: an allow list must certainly cover a path, so
// a path that climbs out of the working directory or differs in case is outside it.
func TestAllowedPaths(t *testing.T) {
	p := passport("w", nil, CapFileWrite)
	p.Spec.Limits = map[string]any{CapFileWrite: map[string]any{"allowed_paths": []any{"/workspace/**"}}}
	snap, err := Compile(Bundle{Namespace: "agents", Passports: []Passport{p}}, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		code string
	}{
		{"/workspace/src/main.go", CodeAllowed},
		{"/workspace/../etc/hosts", CodeBlockedPattern}, // the baseline is checked first
		{"../../workspace/x", CodeBlockedPattern},       // climbs: could be anywhere
		{"/WORKSPACE/x", CodeLimitExceeded},
		{"/tmp/x", CodeLimitExceeded},
		{"/workspace/.git/hooks/pre-commit", CodeBlockedPattern},
	} {
		d := snap.Decide(context.Background(), Request{Passport: "w", ToolName: "Write", ToolInput: map[string]any{"file_path": tc.path}})
		if d.Reasons[0].Code != tc.code {
			t.Errorf("%s: got %v, want %s", tc.path, d.Reasons, tc.code)
		}
	}
}
