package policy

import (
	"context"
	"strings"
	"testing"
)

// TestCommandFieldNeedsShellCapability: a tool is mapped by its name first, and a call carrying a
// shell command also needs system.command.execute, so a command argument is neither a way around a
// tool's own capability nor a way to run a command without the shell capability.
func TestCommandFieldNeedsShellCapability(t *testing.T) {
	shellOnly := passport("shell-only", nil, CapCommandExecute)
	mcpOnly := passport("mcp-only", nil, CapMCPToolExecute)
	both := passport("both", nil, CapCommandExecute, CapMCPToolExecute, CapFileRead)
	both.Spec.Limits = map[string]any{CapCommandExecute: map[string]any{"blocked_patterns": []any{"rm -rf"}}}
	b := Bundle{Version: BundleVersion, Namespace: "agents", Passports: []Passport{shellOnly, mcpOnly, both}}
	snap, err := Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		passport, tool string
		input          map[string]any
		code, contains string // code "" = allowed
	}{
		{"shell-only", "mcp__github__delete_repo", map[string]any{"repo": "prod", "command": "ls"}, CodeUnknownCapability, "needs capability " + CapMCPToolExecute},
		{"mcp-only", "mcp__shell__run", map[string]any{"command": "ls"}, CodeUnknownCapability, "carries a shell command"},
		{"mcp-only", "mcp__github__search", map[string]any{"query": "x"}, "", ""},
		{"both", "mcp__shell__run", map[string]any{"command": "ls"}, "", ""},
		{"both", "mcp__shell__run", map[string]any{"command": "rm -rf /"}, CodeBlockedPattern, "rm -rf"},
		{"both", "my_runner", map[string]any{"cmd": "rm -r -f ~"}, CodeBlockedPattern, "rm -rf"},
		{"shell-only", "my_runner", map[string]any{"cmd": "ls"}, "", ""},
		{"mcp-only", "my_runner", map[string]any{"cmd": "ls"}, CodeUnknownCapability, "needs capability " + CapCommandExecute},
		{"both", "str_replace_editor", map[string]any{"command": "view", "path": "README.md"}, "", ""},
		{"mcp-only", "str_replace_editor", map[string]any{"command": "view", "path": "README.md"}, CodeUnknownCapability, "needs capability " + CapFileRead},
	}
	for _, tc := range cases {
		d := snap.Decide(context.Background(), Request{Passport: tc.passport, ToolName: tc.tool, ToolInput: tc.input})
		if tc.code == "" {
			if !d.Allow {
				t.Errorf("%s %s %v: %s %v, want allowed", tc.passport, tc.tool, tc.input, d.Decision, d.Reasons)
			}
			continue
		}
		if d.Allow || d.Reasons[0].Code != tc.code || !strings.Contains(d.Reasons[0].Message, tc.contains) {
			t.Errorf("%s %s %v: %s %v, want %s mentioning %q", tc.passport, tc.tool, tc.input, d.Decision, d.Reasons, tc.code, tc.contains)
		}
	}
}
