package decider

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// packServer serves config/samples as team-a plus an allow-by-default policy for each file, web and
// MCP pack id (the samples' shell-safety policy is system.command.execute.v1), over loopback HTTP.
func packServer(t *testing.T) string {
	t.Helper()
	b := samplesBundle(t, "team-a")
	for _, id := range []string{"data.file.read.v1", "data.file.write.v1", "web.fetch.v1", "mcp.tool.execute.v1"} {
		b.Policies = append(b.Policies, policy.Policy{Name: strings.ReplaceAll(id, ".", "-"), Namespace: "team-a",
			Spec: policy.PolicySpec{PolicyID: id, DefaultAction: "Allow"}})
	}
	store := NewStore()
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{MaxBodyBytes: 4 << 20})
	return ts.URL
}

// TestVerifyPacks: the verify route decides a call under the capability and checks of the policy
// pack its id names, whatever tool the context names or leaves out; a context without what the pack
// needs is a 400 naming the field, never an allow.
func TestVerifyPacks(t *testing.T) {
	url := packServer(t)
	const pp = "team-a/coding-agent"
	type answer struct {
		Decision struct {
			Allow    bool            `json:"allow"`
			Decision string          `json:"decision"`
			Reasons  []policy.Reason `json:"reasons"`
			PolicyID string          `json:"policy_id"`
		} `json:"decision"`
	}
	decided := []struct {
		name, pack string
		context    map[string]any
		allow      bool
	}{
		// The case: no tool named, the pack makes it a shell call.
		{"sudo rm -rf /", "system.command.execute.v1", map[string]any{"passport": pp, "command": "sudo rm -rf /"}, false},
		{"sudo by agent id", "system.command.execute.v1", map[string]any{"agent_id": "ap_coding_agent_01", "command": "sudo rm -rf /"}, false},
		{"rm -rf inside a chain", "system.command.execute.v1", map[string]any{"passport": pp, "command": "ls && rm -rf /"}, false},
		{"command not allowed", "system.command.execute.v1", map[string]any{"passport": pp, "command": "make all"}, false},
		{"argv command", "system.command.execute.v1", map[string]any{"passport": pp, "command": []any{"bash", "-c", "sudo rm -rf /"}}, false},
		{"OAP args folded into the command", "system.command.execute.v1", map[string]any{"passport": pp, "command": "sh", "args": []any{"-c", "sudo rm -rf /"}}, false},
		{"cmd field", "system.command.execute.v1", map[string]any{"passport": pp, "cmd": "sudo id"}, false},
		{"named shell tool", "system.command.execute.v1", map[string]any{"passport": pp, "tool_name": "Bash", "command": "sudo id"}, false},
		{"cwd in ~/.ssh", "system.command.execute.v1", map[string]any{"passport": pp, "command": "ls", "cwd": "~/.ssh"}, false},
		{"allowed command", "system.command.execute.v1", map[string]any{"passport": pp, "command": "git status && ls -la"}, true},
		{"allowed program with args", "system.command.execute.v1", map[string]any{"passport": pp, "command": "git", "args": []any{"log", "--oneline"}}, true},

		{"read /etc/shadow", "data.file.read.v1", map[string]any{"passport": pp, "file_path": "/etc/shadow"}, false},
		{"read /etc/shadow by path", "data.file.read.v1", map[string]any{"passport": pp, "path": "/tmp/../etc//shadow"}, false},
		{"read ssh key", "data.file.read.v1", map[string]any{"passport": pp, "tool_name": "Read", "file_path": "~/.ssh/id_ed25519"}, false},
		{"read a list with one bad path", "data.file.read.v1", map[string]any{"passport": pp, "paths": []any{"README.md", "/etc/shadow"}}, false},
		{"read README", "data.file.read.v1", map[string]any{"passport": pp, "file_path": "README.md"}, true},
		{"write a git hook", "data.file.write.v1", map[string]any{"passport": pp, "file_path": "repo/.git/hooks/pre-commit", "content": "x"}, false},
		{"write over max_file_bytes", "data.file.write.v1", map[string]any{"passport": pp, "file_path": "notes.txt", "content": strings.Repeat("x", 1<<20+1)}, false},
		{"write notes", "data.file.write.v1", map[string]any{"passport": pp, "file_path": "notes.txt", "content": "hello"}, true},

		{"cloud metadata", "web.fetch.v1", map[string]any{"passport": pp, "url": "http://169.254.169.254/"}, false},
		{"cloud metadata, decimal", "web.fetch.v1", map[string]any{"passport": pp, "url": "http://2852039166/latest/meta-data/"}, false},
		{"loopback", "web.fetch.v1", map[string]any{"passport": pp, "tool_name": "WebFetch", "url": "http://127.0.0.1:8080/admin"}, false},
		{"public page", "web.fetch.v1", map[string]any{"passport": pp, "url": "https://example.com/docs"}, true},

		{"MCP tool reading /etc/shadow", "mcp.tool.execute.v1", map[string]any{"passport": pp, "server": "filesystem", "tool": "read_file",
			"parameters": map[string]any{"path": "/etc/shadow"}}, false},
		{"MCP tool fetching metadata", "mcp.tool.execute.v1", map[string]any{"passport": pp, "server": "fetch", "tool": "fetch",
			"parameters": map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}}, false},
		{"MCP tool running sudo", "mcp.tool.execute.v1", map[string]any{"passport": pp, "server": "shell", "tool": "run",
			"parameters": map[string]any{"command": "sudo id"}}, false},
		{"MCP tool", "mcp.tool.execute.v1", map[string]any{"passport": pp, "server": "github", "tool": "list_issues",
			"parameters": map[string]any{"repo": "tollgate-dev/tollgate"}}, true},
	}
	for _, tc := range decided {
		t.Run(tc.name, func(t *testing.T) {
			code, data := call(t, http.MethodPost, url+verifyPrefix+tc.pack, map[string]any{"context": tc.context}, nil)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, data)
			}
			var a answer
			if err := json.Unmarshal(data, &a); err != nil {
				t.Fatal(err)
			}
			if a.Decision.Allow != tc.allow {
				t.Errorf("allow = %v, want %v: %s", a.Decision.Allow, tc.allow, data)
			}
			if tc.allow && !strings.HasPrefix(a.Decision.PolicyID, tc.pack) {
				t.Errorf("policy_id = %q, want the pack's policy", a.Decision.PolicyID)
			}
			t.Logf("%s", data)
		})
	}

	refused := []struct {
		name, pack, body string
		code, field      string
	}{
		{"no command", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent"}}`, ErrCodeMissingField, "context.command"},
		{"no command, shell tool named", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","tool_name":"bash"}}`, ErrCodeMissingField, "context.command"},
		{"blank command", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","command":"  "}}`, ErrCodeMissingField, "context.command"},
		{"empty argv", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","command":[]}}`, ErrCodeMissingField, "context.command"},
		{"null command", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","command":null}}`, ErrCodeInvalidField, "context.command"},
		{"command not a string", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","command":{"x":1}}}`, ErrCodeInvalidField, "context.command"},
		{"argv entry not a string", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","command":["ls",1]}}`, ErrCodeInvalidField, "context.command[1]"},
		{"args not a list", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","command":"ls","args":"-la"}}`, ErrCodeInvalidField, "context.args"},
		{"args after a command line", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","command":"sh #","args":["-c","sudo id"]}}`, ErrCodeInvalidField, "context.command"},
		{"tool of another capability", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","tool_name":"read_file","command":"sudo id"}}`, ErrCodeInvalidField, "context.tool_name"},
		{"unmapped tool", "system.command.execute.v1", `{"context":{"passport":"team-a/coding-agent","tool":"system.command.execute.v1","command":"sudo id"}}`, ErrCodeInvalidField, "context.tool"},
		{"no path", "data.file.read.v1", `{"context":{"passport":"team-a/coding-agent"}}`, ErrCodeMissingField, "context.file_path"},
		{"empty path", "data.file.read.v1", `{"context":{"passport":"team-a/coding-agent","file_path":""}}`, ErrCodeMissingField, "context.file_path"},
		{"path not a string", "data.file.read.v1", `{"context":{"passport":"team-a/coding-agent","path":7}}`, ErrCodeInvalidField, "context.path"},
		{"no path to write", "data.file.write.v1", `{"context":{"passport":"team-a/coding-agent","content":"x"}}`, ErrCodeMissingField, "context.file_path"},
		{"command beside a path to read", "data.file.read.v1", `{"context":{"passport":"team-a/coding-agent","file_path":"/srv/private/x","command":"ls"}}`, ErrCodeInvalidField, "context.command"},
		{"script beside a path to write", "data.file.write.v1", `{"context":{"passport":"team-a/coding-agent","file_path":"x","script":"ls"}}`, ErrCodeInvalidField, "context.script"},
		{"editor view under the write pack", "data.file.write.v1", `{"context":{"passport":"team-a/coding-agent","tool_name":"str_replace_editor","command":"view","path":"x"}}`, ErrCodeInvalidField, "context.command"},
		{"command beside a url", "web.fetch.v1", `{"context":{"passport":"team-a/coding-agent","url":"https://example.com","cmd":"ls"}}`, ErrCodeInvalidField, "context.cmd"},
		{"no url", "web.fetch.v1", `{"context":{"passport":"team-a/coding-agent","method":"GET"}}`, ErrCodeMissingField, "context.url"},
		{"url list with an empty entry", "web.fetch.v1", `{"context":{"passport":"team-a/coding-agent","urls":["https://example.com",""]}}`, ErrCodeInvalidField, "context.urls[1]"},
		{"no server", "mcp.tool.execute.v1", `{"context":{"passport":"team-a/coding-agent","tool":"x"}}`, ErrCodeMissingField, "context.server"},
		{"no tool", "mcp.tool.execute.v1", `{"context":{"passport":"team-a/coding-agent","server":"github"}}`, ErrCodeMissingField, "context.tool"},
		{"ambiguous server", "mcp.tool.execute.v1", `{"context":{"passport":"team-a/coding-agent","server":"a__b","tool":"c"}}`, ErrCodeInvalidField, "context.server"},
		{"parameters not an object", "mcp.tool.execute.v1", `{"context":{"passport":"team-a/coding-agent","server":"s","tool":"t","parameters":"x"}}`, ErrCodeInvalidField, "context.parameters"},
		{"argument given twice", "mcp.tool.execute.v1", `{"context":{"passport":"team-a/coding-agent","server":"s","tool":"t","parameters":{"path":"a"},"path":"/etc/shadow"}}`, ErrCodeInvalidField, "context.path"},
		{"tool name conflicting with server and tool", "mcp.tool.execute.v1", `{"context":{"passport":"team-a/coding-agent","server":"s","tool":"t","tool_name":"mcp__s__u"}}`, ErrCodeInvalidField, "context.tool_name"},
		{"other id without tool", "corp.custom.v1", `{"context":{"passport":"team-a/coding-agent","command":"sudo id"}}`, ErrCodeMissingField, "context.tool_name"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			code, data := call(t, http.MethodPost, url+verifyPrefix+tc.pack, tc.body, nil)
			var e struct {
				Error struct{ Code, Message, Field string }
			}
			_ = json.Unmarshal(data, &e)
			if code != http.StatusBadRequest || e.Error.Code != tc.code || e.Error.Field != tc.field || !strings.HasPrefix(e.Error.Message, tc.field+": ") {
				t.Errorf("got %d %s, want 400 %s naming %s", code, data, tc.code, tc.field)
			}
			if strings.Contains(string(data), `"allow"`) {
				t.Errorf("a refused context carries a decision: %s", data)
			}
			t.Logf("%s", data)
		})
	}

	// Other ids: the context names the tool; the id restricts the policies evaluated.
	code, data := call(t, http.MethodPost, url+verifyPrefix+"git.hygiene.v1",
		`{"context":{"passport":"team-a/coding-agent","tool_name":"bash","command":"sudo id"}}`, nil)
	if code != http.StatusOK || strings.Contains(string(data), `"allow":true`) {
		t.Errorf("sudo under git.hygiene.v1 = %d %s, want a deny", code, data)
	}
}

// TestDecodeVerifyPacks checks what each pack hands the engine.
func TestDecodeVerifyPacks(t *testing.T) {
	cases := []struct {
		pack, body string
		tool       string
		input      map[string]any
	}{
		{"system.command.execute.v1", `{"context":{"agent_id":"a","command":"ls"}}`, "bash", map[string]any{"command": "ls"}},
		{"system.command.execute.v1", `{"context":{"agent_id":"a","tool":"run_terminal_cmd","command":"ls"}}`, "run_terminal_cmd", map[string]any{"command": "ls"}},
		{"system.command.execute.v1", `{"context":{"agent_id":"a","command":"sh","args":["-c","sudo rm -rf /","it's"]}}`, "bash",
			map[string]any{"command": `sh -c 'sudo rm -rf /' 'it'\''s'`}},
		{"system.command.execute.v1", `{"context":{"agent_id":"a","command":["bash","-c"],"args":["id"],"cwd":"/tmp"}}`, "bash",
			map[string]any{"command": []any{"bash", "-c", "id"}, "cwd": "/tmp"}},
		{"data.file.read.v1", `{"context":{"agent_id":"a","file_path":"x","limit":3}}`, "read_file", map[string]any{"file_path": "x", "limit": float64(3)}},
		{"data.file.write.v1", `{"context":{"agent_id":"a","tool_name":"Edit","file_path":"x"}}`, "Edit", map[string]any{"file_path": "x"}},
		{"data.file.write.v1", `{"context":{"agent_id":"a","tool_name":"str_replace_editor","command":"create","path":"x","file_text":"y"}}`, "str_replace_editor",
			map[string]any{"command": "create", "path": "x", "file_text": "y"}},
		{"web.fetch.v1", `{"context":{"agent_id":"a","url":"https://example.com"}}`, "web_fetch", map[string]any{"url": "https://example.com"}},
		{"mcp.tool.execute.v1", `{"context":{"agent_id":"a","server":"github","tool":"create_issue","parameters":{"title":"t"},"session_id":"s"}}`,
			"mcp__github__create_issue", map[string]any{"title": "t", "session_id": "s"}},
		{"mcp.tool.execute.v1", `{"context":{"agent_id":"a","tool_name":"mcp__g__t","server":"g","tool":"t","parameters":{"x":1},"x":1}}`,
			"mcp__g__t", map[string]any{"x": float64(1)}},
		{"corp.custom.v1", `{"context":{"agent_id":"a","tool":"deploy","env":"prod"}}`, "deploy", map[string]any{"env": "prod"}},
	}
	for _, tc := range cases {
		req, err := decodeVerify([]byte(tc.body), tc.pack)
		if err != nil {
			t.Errorf("%s %s: %v", tc.pack, tc.body, err)
			continue
		}
		if req.ToolName != tc.tool || !reflect.DeepEqual(req.ToolInput, tc.input) || req.PolicyID != tc.pack {
			t.Errorf("%s %s: tool %q input %#v policy %q, want %q %#v", tc.pack, tc.body, req.ToolName, req.ToolInput, req.PolicyID, tc.tool, tc.input)
		}
	}
}
