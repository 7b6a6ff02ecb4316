package decider

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

var oddStrings = []string{"", "plain", `q"uote\back`, "<html>&amp;", "tab\tnl\nret\r\x00\x1f\x7f", "é ü 日本", "\u2028\u2029", "bad\xffutf8\xc3", "\b\f",
	// Longer than the 8 bytes appendString skips at a time, with a byte to escape at each offset.
	"sha256:4064c0c148c0c798b506ee076967b9eb09731845629cb0b39e25f7b6c94964ed", "01234567<", "0123456789abcde>", "abcdefgh\"ijklmnop",
	"1234567&89", "12345678é12345678", "1234567\x7f89abcdef\x1f", "aaaaaaaaaaaaaaaa\u2028bbbbbbbb", "aaaaaaa\xff", "\\aaaaaaaaaaaaaaaa"}

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

// TestEncodeMetadataMatchesEncodingJSON covers every field of a decision's metadata and of the
// logged policy results, empty and set.
func TestEncodeMetadataMatchesEncodingJSON(t *testing.T) {
	results := []policy.PolicyResult{
		{PolicyID: "p#r", Decision: "deny", Reason: policy.Reason{Code: "x", Message: "m <&>"}},
		{PolicyID: "q", Decision: "modify", Reason: policy.Reason{Code: "y"}, ModifiedInput: map[string]any{"b": 1.0, "a": []any{"s", nil, true}}},
		{},
	}
	metas := []*policy.Metadata{
		{},
		{DryRun: results},
		{Warnings: results[:1], ModifiedBy: []string{"a#b", "c"}},
		{DryRun: []policy.PolicyResult{}, Warnings: []policy.PolicyResult{}, ModifiedBy: []string{}},
		{Risk: &policy.RiskAssessment{HasRisk: true, RiskLevel: "HIGH", RiskType: "t", Confidence: 0.5, Details: []string{"d"}}},
		{Suppressed: &policy.Suppression{Detector: "d", ReasonField: "f", ReasonValue: "v", ToolNames: []string{"bash"}, Count: 1}},
		{DryRun: results, Warnings: results, Risk: &policy.RiskAssessment{RiskLevel: "SAFE"}, Suppressed: &policy.Suppression{}, ModifiedBy: []string{"x"}},
	}
	for _, m := range metas {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendMetadata(nil, m)
		if err != nil || string(got) != string(want) {
			t.Errorf("appendMetadata:\n got %s\nwant %s (%v)", got, want, err)
		}
	}
	logged := []LogPolicyResult{
		{PolicyID: "p", Decision: "d", Reason: policy.Reason{Code: "c", Message: "m"}},
		{PolicyID: "p", ChangedFields: []string{"a", "b.c"}, RemovedFields: []string{"z"}, ModifiedInput: map[string]any{"k": "v"}},
		{ChangedFields: []string{}, RemovedFields: []string{}, ModifiedInput: map[string]any{}},
	}
	want, err := json.Marshal(logged)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := appendLogPolicyResults(nil, logged); err != nil || string(got) != string(want) {
		t.Errorf("appendLogPolicyResults:\n got %s\nwant %s (%v)", got, want, err)
	}
}

// TestAppendValueMatchesEncodingJSON covers the values appendValue encodes by hand and those it
// leaves to encoding/json (other types, NaN, values nested deeper than maxAppendDepth).
func TestAppendValueMatchesEncodingJSON(t *testing.T) {
	deep := any("leaf")
	for range maxAppendDepth + 5 {
		deep = map[string]any{"k": []any{deep}}
	}
	values := []any{
		nil, "s", true, false, 0.0, math.Copysign(0, -1), 1.0, -1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, 5e-324, math.MaxFloat64,
		map[string]any{}, map[string]any(nil), []any{}, []any(nil),
		map[string]any{"z": 1.0, "a": "x", "<": "&", "é": []any{1.0, map[string]any{"n": nil}}, "": false},
		map[string]any{"int": 3, "ints": []int{1, 2}, "m": map[string]string{"a": "b"}, "s": []string(nil), "t": time.Unix(0, 0).UTC()},
		deep,
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendValue(nil, v, 0)
		if err != nil || string(got) != string(want) {
			t.Errorf("appendValue(%#v):\n got %s\nwant %s (%v)", v, got, want, err)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"x": math.Inf(-1)}} {
		if _, err := appendValue(nil, v, 0); err == nil {
			t.Errorf("appendValue(%v) succeeded, want encoding/json's error", v)
		}
	}
}

// FuzzAppendValue compares appendValue with json.Marshal on any JSON value decoded into an any.
func FuzzAppendValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-0,1e300,1e-9,"x\u2028<"],"b":{"c":null,"d":true}}`, `[]`, `"\ud800"`, `12345678901234567890`, `{"":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendValue(nil, v, 0)
		if err != nil || string(got) != string(want) {
			t.Fatalf("appendValue(%s):\n got %s\nwant %s (%v)", data, got, want, err)
		}
	})
}
