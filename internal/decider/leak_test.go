package decider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// secret marks every argument value the leak tests send; no log line, metric or status may carry it
// unless the decision log opts in to input.
const secret = "hunter2SECRET"

// leakBundle is the samples plus a DryRun and a Warn copy of the Modify policy (whose rewritten input
// carries the command, secret included) and a Warn policy that denies tool_w.
func leakBundle(t *testing.T) policy.Bundle {
	t.Helper()
	b := samplesBundle(t, "team-a")
	mod := *policyNamed(t, &b, "git-no-pager")
	for _, action := range []string{policy.EnforcementDryRun, policy.EnforcementWarn} {
		p := mod
		p.Name = "git-no-pager-" + strings.ToLower(action)
		p.Spec.PolicyID = "git.hygiene." + strings.ToLower(action)
		p.Spec.EnforcementAction = action
		p.Spec.Priority = 300
		p.Spec.Rules = slices.Clone(mod.Spec.Rules)
		b.Policies = append(b.Policies, p)
	}
	return b
}

// logLines decides every request over loopback HTTP with a decision log and returns its lines,
// the bodies of /metrics and /v1/status, and the decisions.
func logLines(t *testing.T, withInput bool, reqs []map[string]any) ([]map[string]any, string, string, []policy.Decision) {
	t.Helper()
	store := NewStore()
	if err := store.Load(leakBundle(t)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	srv, ts := startServer(t, store, Options{DecisionLog: NewDecisionLog(&out, 64, withInput)})
	var ds []policy.Decision
	for _, r := range reqs {
		ds = append(ds, decide(t, ts.URL, r, nil))
	}
	_, metrics := call(t, http.MethodGet, ts.URL+"/metrics", nil, nil)
	_, status := call(t, http.MethodGet, ts.URL+"/v1/status", nil, nil)
	ts.Close()
	srv.Close()
	var recs []map[string]any
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		rec["_line"] = sc.Text()
		recs = append(recs, rec)
	}
	if len(recs) != len(reqs) {
		t.Fatalf("%d log lines for %d decisions:\n%s", len(recs), len(reqs), out.String())
	}
	return recs, string(metrics), string(status), ds
}

func TestDecisionLogLeaksNoArguments(t *testing.T) {
	gitCmd := "git log --grep=" + secret
	reqs := []map[string]any{
		// Enforce, DryRun and Warn Modify policies all rewrite this call (command set, env removed).
		{"passport": "team-a/coding-agent", "tool_name": "bash", "thread_id": "th",
			"tool_input": map[string]any{"command": gitCmd, "env": map[string]any{"TOKEN": secret}}},
		// oap.command_not_allowed: the engine's message may quote the command's first word.
		{"passport": "team-a/coding-agent", "tool_name": "bash",
			"tool_input": map[string]any{"command": "TOKEN=" + secret + " curl example.com"}},
		{"passport": "team-a/coding-agent", "tool_name": "bash",
			"tool_input": map[string]any{"command": secret + "-tool --x"}},
		// Shell quoting does not hide the value from the redaction.
		{"passport": "team-a/coding-agent", "tool_name": "bash",
			"tool_input": map[string]any{"command": `TOK"EN=hun"ter2SECRET curl x`}},
		// A denied call whose arguments hold the secret elsewhere.
		{"passport": "team-a/coding-agent", "tool_name": "bash",
			"tool_input": map[string]any{"command": "sudo ls", "note": secret}},
		// A quoted limit (the passport's blocked pattern) is configuration, not an argument: kept.
		{"passport": "team-a/coding-agent", "tool_name": "bash",
			"tool_input": map[string]any{"command": "ls && rm -rf /"}},
	}

	t.Run("default", func(t *testing.T) { checkDefaultLog(t, reqs) })

	t.Run("opt-in", func(t *testing.T) {
		recs, _, _, _ := logLines(t, true, reqs)
		mod := recs[0]
		line := mod["_line"].(string)
		if !strings.Contains(toJSON(t, mod["tool_input"]), secret) {
			t.Errorf("opt-in: tool_input missing: %s", line)
		}
		if got := toJSON(t, mod["modified_input"]); !strings.Contains(got, "git --no-pager log --grep="+secret) {
			t.Errorf("opt-in: modified_input = %s", got)
		}
		dr := mod["dry_run"].([]any)[0].(map[string]any)
		if !strings.Contains(toJSON(t, dr["modified_input"]), secret) {
			t.Errorf("opt-in: dry_run[0].modified_input = %s", toJSON(t, dr))
		}
		if !strings.Contains(toJSON(t, recs[4]["tool_input"]), secret) {
			t.Errorf("opt-in: tool_input of the deny missing: %s", recs[4]["_line"])
		}
	})
}

// checkDefaultLog checks that the default decision log, /metrics and /v1/status carry no argument
// value of reqs (the requests of TestDecisionLogLeaksNoArguments).
func checkDefaultLog(t *testing.T, reqs []map[string]any) {
	recs, metrics, status, ds := logLines(t, false, reqs)
	if ds[0].Decision != policy.DecisionModify || ds[0].Metadata == nil || len(ds[0].Metadata.DryRun) == 0 || len(ds[0].Metadata.Warnings) == 0 {
		t.Fatalf("the Modify request should be modified with dry-run and warning results: %+v", ds[0])
	}
	if !strings.Contains(toJSON(t, ds[0].Metadata.DryRun), secret) {
		t.Fatalf("test premise: the dry-run result carries the rewritten input: %s", toJSON(t, ds[0].Metadata))
	}
	for i, rec := range recs {
		line := rec["_line"].(string)
		if strings.Contains(line, secret) || strings.Contains(line, "hun") || strings.Contains(line, "ter2") {
			t.Errorf("log line %d carries an argument value: %s", i, line)
		}
		for _, k := range []string{"tool_input", "modified_input"} {
			if _, ok := rec[k]; ok {
				t.Errorf("log line %d has %s: %s", i, k, line)
			}
		}
	}
	checkModifyLogLine(t, recs[0])
	// The deny that quoted a command word still says which check denied it.
	for _, i := range []int{1, 2, 3} {
		if firstCode(ds[i]) != policy.CodeCommandNotAllowed {
			t.Fatalf("request %d: %v, want %s", i, ds[i].Reasons, policy.CodeCommandNotAllowed)
		}
		reasons := toJSON(t, recs[i]["reasons"])
		if !strings.Contains(reasons, policy.CodeCommandNotAllowed) {
			t.Errorf("log line %d reasons = %s", i, reasons)
		}
	}
	if ds[5].Allow {
		t.Errorf("rm -rf allowed: %v", ds[5].Reasons)
	}
	if len(ds[5].Reasons) > 0 && strings.Contains(ds[5].Reasons[0].Message, `"rm -rf"`) &&
		!strings.Contains(toJSON(t, recs[5]["reasons"]), `\"rm -rf\"`) {
		t.Errorf("the blocked pattern's quote was redacted: %s", toJSON(t, recs[5]["reasons"]))
	}
	for name, body := range map[string]string{"/metrics": metrics, "/v1/status": status} {
		if strings.Contains(body, secret) || strings.Contains(body, "hun") {
			t.Errorf("%s carries an argument value", name)
		}
	}
}

// checkModifyLogLine checks the log line of the Modify decision: it names the fields each policy that
// rewrote the call changed, without the rewritten input.
func checkModifyLogLine(t *testing.T, mod map[string]any) {
	t.Helper()
	if got := toJSON(t, mod["changed_fields"]); got != `["command"]` {
		t.Errorf("changed_fields = %s", got)
	}
	if got := toJSON(t, mod["removed_fields"]); got != `["env"]` {
		t.Errorf("removed_fields = %s", got)
	}
	for _, k := range []string{"dry_run", "warnings"} {
		rs, _ := mod[k].([]any)
		if len(rs) == 0 {
			t.Fatalf("no %s in %s", k, mod["_line"])
		}
		r := rs[0].(map[string]any)
		if r["decision"] != policy.DecisionModify || toJSON(t, r["changed_fields"]) != `["command"]` ||
			toJSON(t, r["removed_fields"]) != `["env"]` || r["modified_input"] != nil {
			t.Errorf("%s[0] = %s", k, toJSON(t, r))
		}
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestRedactMessage(t *testing.T) {
	input := map[string]any{"command": "TOKEN=abc123 curl x", "n": 42.0, "list": []any{"deep value"}}
	for _, tc := range []struct{ code, msg, want string }{
		{"acme.x", `plain message`, `plain message`},
		{"acme.x", `value "abc123" seen`, `value "[redacted]" seen`},
		{"acme.x", `number "42" and "deep value" and "policy text"`, `number "[redacted]" and "[redacted]" and "policy text"`},
		{policy.CodeCommandNotAllowed, `command "policy text" is not allowed`, `command "[redacted]" is not allowed`},
		{"acme.x", `unterminated "abc123`, `unterminated "abc123`},
		{"acme.x", `empty ""`, `empty ""`},
	} {
		r := redactor{input: input}
		if got := r.message(policy.Reason{Code: tc.code, Message: tc.msg}); got != tc.want {
			t.Errorf("message(%s, %q) = %q, want %q", tc.code, tc.msg, got, tc.want)
		}
	}
	// A fragment that is a string of the passport's limits is configuration: kept.
	r := redactor{input: map[string]any{"command": "ls && rm -rf /"}, limits: func() any {
		return map[string]any{"system.command.execute": map[string]any{"blocked_patterns": []any{"rm -rf", "sudo"}}}
	}}
	if got := r.message(policy.Reason{Code: policy.CodeBlockedPattern, Message: `blocked pattern "rm -rf" and "ls"`}); got != `blocked pattern "rm -rf" and "[redacted]"` {
		t.Errorf("limits: %q", got)
	}
	// Arguments too large to search: every quoted fragment is redacted.
	r = redactor{input: map[string]any{"big": strings.Repeat("x", maxScanBytes+1)}}
	if got := r.message(policy.Reason{Code: "c", Message: `"unrelated"`}); got != redactedQuote {
		t.Errorf("over the scan bound: %q", got)
	}
	// The reasons slice is shared with the answered decision: it is copied, not changed.
	rs := []policy.Reason{{Code: "c", Message: `"abc123"`}}
	out := (&redactor{input: input}).reasons(rs)
	if rs[0].Message != `"abc123"` || out[0].Message != redactedQuote {
		t.Errorf("reasons: in %v out %v", rs, out)
	}
}

func TestDiffFields(t *testing.T) {
	in := map[string]any{"a": "1", "b": map[string]any{"c": 1.0, "d": []any{"x"}}, "gone": true}
	out := map[string]any{"a": "2", "b": map[string]any{"c": 1.0, "d": []any{"y"}, "e": "new"}}
	changed, removed := diffFields(in, out)
	if toJSON(t, changed) != `["a","b.d","b.e"]` || toJSON(t, removed) != `["gone"]` {
		t.Errorf("diffFields = %v, %v", changed, removed)
	}
	many := map[string]any{}
	for i := range 100 {
		many[strings.Repeat("k", 200)+string(rune('A'+i%26))+strings.Repeat("z", i)] = i
	}
	changed, _ = diffFields(nil, many)
	if len(changed) != maxLoggedFields+1 || changed[maxLoggedFields] != "…" {
		t.Errorf("%d changed fields, want %d and an ellipsis", len(changed), maxLoggedFields)
	}
	for _, f := range changed {
		if len(f) > maxFieldPathLen+len("…") {
			t.Errorf("field path of %d bytes", len(f))
		}
	}
}
