package decider

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

var oddStrings = []string{"", "plain", `q"uote\back`, "<html>&amp;", "tab\tnl\nret\r\x00\x1f\x7f", "é ü 日本", "\u2028\u2029", "bad\xffutf8\xc3", "\b\f"}

func TestEncodeMatchesEncodingJSON(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.FixedZone("X", 3600))
	var decisions []policy.Decision
	for _, s := range oddStrings {
		decisions = append(decisions, policy.Decision{DecisionID: s, Decision: s, PolicyID: s, BundleRevision: s, PassportDigest: s,
			Reasons: []policy.Reason{{Code: s, Message: s}, {Code: "c"}}, CreatedAt: now, ExpiresIn: 60})
	}
	decisions = append(decisions, policy.Decision{}, policy.Decision{Allow: true, Decision: "modify",
		ModifiedInput: map[string]any{"command": "git --no-pager log", "n": 1.5},
		Metadata:      &policy.Metadata{DryRun: []policy.PolicyResult{{PolicyID: "p#r", Decision: "deny", Reason: policy.Reason{Code: "x"}}}}})
	for _, d := range decisions {
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendDecision(nil, &d)
		if err != nil || string(got) != string(want) {
			t.Errorf("appendDecision:\n got %s\nwant %s (%v)", got, want, err)
		}
	}
	for _, s := range oddStrings {
		r := LogRecord{DecisionID: s, Time: now, Passport: s, AgentID: s, Caller: s, Hook: s, Tool: s, ThreadID: s, CallID: s,
			Outcome: s, Reasons: []policy.Reason{{Code: s, Message: s}}, PolicyID: s, BundleRevision: s, LatencyMS: 0.012345,
			ChangedFields: []string{s, "x"}, RemovedFields: []string{s},
			DryRun: []LogPolicyResult{{PolicyID: s, ChangedFields: []string{s}}}, Warnings: []LogPolicyResult{{PolicyID: s}},
			ToolInput: map[string]any{s: s}, ModifiedInput: map[string]any{s: s}}
		for _, rec := range []LogRecord{r, {Time: now}} {
			want, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendLogRecord(nil, &rec)
			if err != nil || string(got) != string(want)+"\n" {
				t.Errorf("appendLogRecord:\n got %s\nwant %s (%v)", got, want, err)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}
