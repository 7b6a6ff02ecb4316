package policy

import (
	"context"
	"testing"
)

// decideWhen compiles one Deny rule with when on every tool and decides a bash call of command for
// the passport "dev" of sampleBundle (whose limits allow git, ls, cat and echo).
func decideWhen(t *testing.T, when, command string) Decision {
	t.Helper()
	b := sampleBundle()
	b.Policies = []Policy{{Name: "p", Namespace: "agents", Generation: 1, Spec: PolicySpec{
		PolicyID: "p.v1", DefaultAction: ActionAllow,
		Rules: []Rule{{Name: "r", Tools: []string{"*"}, When: when, Action: ActionDeny, Code: "oap.policy_denied"}},
	}}}
	snap, err := Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatalf("compile %q: %v", when, err)
	}
	decide := func() Decision {
		return snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "bash",
			ToolInput: map[string]any{"command": command}})
	}
	// The first decision converts call.commands for itself; later ones read the value kept with
	// the cached analysis. Both must answer alike.
	first, again := decide(), decide()
	if first.Decision != again.Decision || first.Reasons[0] != again.Reasons[0] {
		t.Fatalf("%s on %q: first %s %v, then %s %v", when, command, first.Decision, first.Reasons, again.Decision, again.Reasons)
	}
	return first
}

// TestCallCommands checks call.commands (the guard's analysis) and the lazily converted command maps
// of shell.commands(): every field, presence tests, iteration over keys, conversion and errors.
func TestCallCommands(t *testing.T) {
	cases := []struct {
		name, when, command string
		deny                bool
	}{
		{"name", "call.commands.exists(c, c.name == 'git')", "ls && git status", true},
		{"name absent", "call.commands.exists(c, c.name == 'cat')", "ls && git status", false},
		{"short flag", "call.commands.exists(c, c.name == 'git' && 'f' in c.flags)", "ls; git push -f origin", true},
		{"long flag alias", "call.commands.exists(c, c.name == 'git' && 'f' in c.flags)", "git push --force origin", true},
		{"refspec force", "call.commands.exists(c, c.name == 'git' && 'f' in c.flags)", "git push origin +main", true},
		{"no force", "call.commands.exists(c, c.name == 'git' && 'f' in c.flags)", "git push origin main", false},
		{"positionals", "call.commands.exists(c, 'origin' in c.positionals)", "git push origin main", true},
		{"args keep flags", "call.commands[0].args == ['log', '-3']", "git log -3", true},
		{"program keeps directory", "call.commands[0].program == '/usr/bin/git'", "/usr/bin/git status", true},
		{"wrappers", "shell.commands('env ls').exists(c, c.name == 'ls' && c.wrappers == ['env'])", "ls", true},
		{"no wrappers", "call.commands[0].wrappers.size() == 0", "ls", true},
		{"redirects", "call.commands[0].redirects[0].target == 'out.txt' && call.commands[0].redirects[0].write", "echo hi > out.txt", true},
		{"via", "call.commands.exists(c, c.via == 'bash -c')", "echo hi | cat", false},
		{"code empty", "call.commands.all(c, c.code == '')", "git status | cat", true},
		{"dynamic false", "call.commands.exists(c, c.dynamic)", "git status", false},
		{"has field", "has(call.commands[0].name) && !has(call.commands[0].nosuch)", "ls", true},
		{"keys", "call.commands[0].exists(k, k == 'positionals') && call.commands[0].size() == 10", "ls", true},
		{"size", "call.commands.size() == 3", "git status && ls | cat", true},
		{"same as shell.commands", "call.commands == shell.commands(call.command)", "git log -3 | cat > x", true},
		{"map equality", "call.commands[0] == shell.commands('ls')[0]", "ls", true},
		{"map inequality", "call.commands[0] != shell.commands('ls -l')[0]", "ls", true},
		{"shell.commands of another string", "shell.commands('rm -r -f /')[0].flags == ['f', 'r']", "ls", true},
		{"empty command", "call.commands.size() == 0", "", true},
		{"call.command", "call.command == 'ls -l'", "ls -l", true},
		{"call keys", "call.size() == 4 && call.exists(k, k == 'urls') && has(call.commands) && !has(call.nosuch)", "ls", true},
		{"call.paths and urls of a shell call", "call.paths.size() == 0 && call.urls.size() == 0", "ls", true},
		{"call as a map", "call == {'paths': [], 'urls': [], 'command': 'ls', 'commands': shell.commands('ls')}", "ls", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decideWhen(t, tc.when, tc.command)
			if denied := d.Decision == DecisionDeny; denied != tc.deny {
				t.Fatalf("%s on %q: decision %s %v, want deny=%v", tc.when, tc.command, d.Decision, d.Reasons, tc.deny)
			}
			if tc.deny && d.Reasons[0].Code != "oap.policy_denied" {
				t.Fatalf("%s: denied by %v, want the rule", tc.when, d.Reasons)
			}
		})
	}
}

// TestCallCommandsErrors checks that reading a missing key of a command is an evaluation error,
// which fails closed.
func TestCallCommandsErrors(t *testing.T) {
	d := decideWhen(t, "call.commands[0].nosuch == 'x'", "ls")
	if d.Allow || d.Reasons[0].Code != CodeEvaluatorError {
		t.Fatalf("missing key: %+v, want %s", d, CodeEvaluatorError)
	}
}

// TestCallCommandsAfterModify checks that call.commands follows the input a Modify rule rewrote
// (the guard's analysis belongs to the original input).
func TestCallCommandsAfterModify(t *testing.T) {
	b := sampleBundle()
	b.Policies = []Policy{
		{Name: "rewrite", Namespace: "agents", Generation: 1, Spec: PolicySpec{PolicyID: "rewrite.v1", Priority: 2,
			DefaultAction: ActionAllow,
			Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: "call.commands.exists(c, c.name == 'ls')", Action: ActionModify,
				Modify: &InputPatch{Set: []InputField{{Path: "command", Value: "'cat notes.txt'"}}}}}}},
		{Name: "check", Namespace: "agents", Generation: 1, Spec: PolicySpec{PolicyID: "check.v1", Priority: 1,
			DefaultAction: ActionAllow,
			Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: "call.commands.exists(c, c.name == 'ls')", Action: ActionDeny,
				Code: "oap.policy_denied"}}}},
	}
	snap, err := Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	d := snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "bash", ToolInput: map[string]any{"command": "ls -la"}})
	if d.Decision != DecisionModify || d.ModifiedInput["command"] != "cat notes.txt" {
		t.Fatalf("decision %s %v %v, want Modify to cat notes.txt (the second policy sees the rewritten command)", d.Decision, d.Reasons, d.ModifiedInput)
	}
}

// TestCallPathsAndURLs checks call.paths (canonical, whatever the field is called) and call.urls.
func TestCallPathsAndURLs(t *testing.T) {
	b := sampleBundle()
	b.Policies = []Policy{{Name: "p", Namespace: "agents", Generation: 1, Spec: PolicySpec{
		PolicyID: "p.v1", DefaultAction: ActionAllow,
		Rules: []Rule{
			{Name: "paths", Tools: []string{"read_file"}, When: "call.paths == ['docs/README.md'] && call.command == ''",
				Action: ActionDeny, Code: "oap.policy_denied"},
			{Name: "urls", Tools: []string{"web_fetch"}, When: "call.urls == ['https://example.com/a'] && call.commands.size() == 0",
				Action: ActionDeny, Code: "oap.policy_denied"},
		},
	}}}
	snap, err := Compile(b, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []Request{
		{Passport: "dev", ToolName: "read_file", ToolInput: map[string]any{"file_path": "docs/./x/../README.md"}},
		{Passport: "dev", ToolName: "web_fetch", ToolInput: map[string]any{"url": "https://example.com/a"}},
	} {
		d := snap.Decide(context.Background(), req)
		if d.Decision != DecisionDeny || d.Reasons[0].Code != "oap.policy_denied" {
			t.Errorf("%s %v: %s %v, want the rule to deny", req.ToolName, req.ToolInput, d.Decision, d.Reasons)
		}
	}
}
