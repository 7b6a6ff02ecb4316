package policy

import (
	"context"
	"strings"
	"testing"
)

// TestDecideChecksTheCaller checks the caller/subject check of Request.Caller: the passport's
// spec.subjects.serviceAccounts must list the caller's ServiceAccount in the passport's namespace
// (any namespace for AnyNamespace), whichever way the passport is named; a refused caller gets a
// deny oap.subject_not_allowed that is never cacheable, and no caller means no check.
func TestDecideChecksTheCaller(t *testing.T) {
	s := compileSample(t)
	call := func(c *Caller, passport, agentID string) Decision {
		return s.Decide(context.Background(), Request{Passport: passport, AgentID: agentID, ToolName: "bash",
			ToolInput: map[string]any{"command": "git status"}, Caller: c})
	}
	allowed := []struct {
		name     string
		caller   *Caller
		passport string
		agentID  string
	}{
		{"no caller (authentication off)", nil, "dev", ""},
		{"listed ServiceAccount of the namespace", &Caller{Namespace: "agents", ServiceAccount: "coder"}, "dev", ""},
		{"by namespace/name", &Caller{Namespace: "agents", ServiceAccount: "coder"}, "agents/dev", ""},
		{"by agent id", &Caller{Namespace: "agents", ServiceAccount: "coder"}, "", "agent-dev"},
		{"plain name from any namespace", &Caller{ServiceAccount: "coder", AnyNamespace: true}, "dev", ""},
	}
	for _, tc := range allowed {
		if d := call(tc.caller, tc.passport, tc.agentID); d.Decision != DecisionAllow {
			t.Errorf("%s: got %s %v, want allow", tc.name, d.Decision, d.Reasons)
		}
	}
	refused := []struct {
		name     string
		caller   *Caller
		passport string
		agentID  string
	}{
		{"ServiceAccount of another namespace", &Caller{Namespace: "other", ServiceAccount: "coder"}, "dev", ""},
		{"unlisted ServiceAccount", &Caller{Namespace: "agents", ServiceAccount: "intruder"}, "dev", ""},
		{"unlisted, by agent id", &Caller{Namespace: "agents", ServiceAccount: "intruder"}, "", "agent-dev"},
		{"empty ServiceAccount", &Caller{Namespace: "agents"}, "dev", ""},
		{"passport listing no one", &Caller{Namespace: "agents", ServiceAccount: "coder"}, "ops", ""},
		{"before the agent id check", &Caller{Namespace: "agents", ServiceAccount: "intruder"}, "dev", "someone-else"},
		{"before the status check", &Caller{Namespace: "agents", ServiceAccount: "coder"}, "suspended", ""},
	}
	for _, tc := range refused {
		d := call(tc.caller, tc.passport, tc.agentID)
		if d.Allow || d.Decision != DecisionDeny || len(d.Reasons) != 1 || d.Reasons[0].Code != CodeSubjectNotAllowed {
			t.Errorf("%s: got %s %v, want deny %s", tc.name, d.Decision, d.Reasons, CodeSubjectNotAllowed)
			continue
		}
		if d.ExpiresIn != 0 || d.PassportDigest == "" || d.BundleRevision != s.Revision() || d.PolicyID != "" {
			t.Errorf("%s: expires_in %d, digest %q, revision %q, policy %q: want 0, the passport's digest, %q and none",
				tc.name, d.ExpiresIn, d.PassportDigest, d.BundleRevision, d.PolicyID, s.Revision())
		}
		if msg := d.Reasons[0].Message; !strings.Contains(msg, "may not present passport agents/") ||
			!strings.Contains(msg, tc.caller.String()) {
			t.Errorf("%s: message %q does not name the caller and the passport", tc.name, msg)
		}
	}
	// An unknown passport stays oap.passport_not_found, whoever asks.
	if d := call(&Caller{Namespace: "agents", ServiceAccount: "intruder"}, "nobody", ""); d.Reasons[0].Code != CodePassportNotFound {
		t.Errorf("unknown passport: got %v, want %s", d.Reasons, CodePassportNotFound)
	}
}
