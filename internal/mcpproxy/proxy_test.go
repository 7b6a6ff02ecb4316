package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/pkg/client"
)

// TestToolCalls drives the proxy with the SDK's client against a real MCP server, in each decision
// mode: allowed calls run, denied calls never run and come back as tool errors with the OAP code,
// rewritten calls run with the rewritten arguments, and a result carrying injected instructions is
// blocked by the post_tool_call guards.
func TestToolCalls(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			env := setup(t, mode)
			cs := env.mustConnect(t, codingToken)

			t.Run("allow", func(t *testing.T) {
				res := call(t, cs, "run_command", map[string]any{"command": "git status"})
				if res.IsError || text(res) != "ran git status" {
					t.Fatalf("allowed call: isError=%v text=%q", res.IsError, text(res))
				}
				if got := env.rec.of("run_command"); len(got) != 1 || got[0].args["command"] != "git status" {
					t.Fatalf("upstream calls of run_command = %v, want one with git status", got)
				}
			})

			t.Run("deny by passport limits", func(t *testing.T) {
				before := len(env.rec.of("run_command"))
				res := call(t, cs, "run_command", map[string]any{"command": "ls && rm -rf /"})
				assertDenied(t, res, "denied the call to tool 'mcp__github__run_command'", policy.CodeBlockedPattern)
				if n := len(env.rec.of("run_command")); n != before {
					t.Fatalf("the denied call ran upstream (%d calls, want %d)", n, before)
				}
			})

			t.Run("deny by policy rule", func(t *testing.T) {
				res := call(t, cs, "push", map[string]any{"branch": "main", "force": true})
				assertDenied(t, res, "force pushes are not allowed", policy.CodePolicyDenied)
				if got := res.Meta[DecisionMetaKey].(map[string]any)["policy_id"]; got != "mcp.github.v1#no-force-push" {
					t.Errorf("_meta policy_id = %v, want mcp.github.v1#no-force-push", got)
				}
				if got := env.rec.of("push"); len(got) != 0 {
					t.Fatalf("the denied push ran upstream: %v", got)
				}
				if res := call(t, cs, "push", map[string]any{"branch": "main"}); res.IsError {
					t.Fatalf("a plain push was refused: %s", text(res))
				}
			})

			t.Run("modify", func(t *testing.T) {
				res := call(t, cs, "search", map[string]any{"query": "tollgate", "per_page": 500, "include_private": true})
				if res.IsError {
					t.Fatalf("modified call refused: %s", text(res))
				}
				got := env.rec.of("search")
				if len(got) != 1 {
					t.Fatalf("upstream search calls = %v, want 1", got)
				}
				want := map[string]any{"query": "tollgate", "per_page": float64(10)}
				if !equalJSON(got[0].args, want) {
					t.Fatalf("upstream saw %v, want the rewritten %v", got[0].args, want)
				}
			})

			t.Run("post_tool_call blocks injected instructions", func(t *testing.T) {
				res := call(t, cs, "fetch_page", map[string]any{"url": "https://example.com/evil"})
				assertDenied(t, res, "blocked the result of tool 'mcp__github__fetch_page'", policy.CodePromptInjection)
				if strings.Contains(text(res), "Ignore all previous") {
					t.Fatalf("the blocked result reached the agent: %q", text(res))
				}
				if got := env.rec.of("fetch_page"); len(got) != 1 {
					t.Fatalf("fetch_page upstream calls = %d, want 1 (it ran; its result was blocked)", len(got))
				}
				if res := call(t, cs, "fetch_page", map[string]any{"url": "https://example.com/ok"}); res.IsError || text(res) != "a harmless page" {
					t.Fatalf("harmless page: isError=%v %q", res.IsError, text(res))
				}
			})
		})
	}
}

// assertDenied checks a tool error made by the proxy: isError, the OAP code and the phrase in the
// text the model reads, and the decision in _meta.
func assertDenied(t *testing.T, res *mcp.CallToolResult, phrase, code string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got result %q", text(res))
	}
	msg := text(res)
	if !strings.HasPrefix(msg, "Tollgate ") || !strings.Contains(msg, phrase) || !strings.Contains(msg, code+": ") {
		t.Fatalf("tool error %q: want %q and code %s", msg, phrase, code)
	}
	meta, ok := res.Meta[DecisionMetaKey].(map[string]any)
	if !ok || meta["code"] != code || meta["decision"] != policy.DecisionDeny {
		t.Fatalf("_meta[%s] = %v, want code %s and decision deny", DecisionMetaKey, res.Meta[DecisionMetaKey], code)
	}
}

func equalJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// TestToolsListHidesUnusableTools: tools/list shows an agent only the tools its passport can use. The
// coding agent holds mcp.tool.execute but not mcp.github.admin (delete_* maps to it); the search
// agent holds no MCP capability; the stranger's ServiceAccount presents no passport at all.
func TestToolsListHidesUnusableTools(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			env := setup(t, mode)
			coding := listNames(t, env.mustConnect(t, codingToken))
			want := []string{"fetch_page", "push", "run_command", "search"}
			slices.Sort(coding)
			if !slices.Equal(coding, want) {
				t.Fatalf("coding agent sees %v, want %v (delete_repo hidden)", coding, want)
			}
			cs := env.mustConnect(t, codingToken)
			res := call(t, cs, "delete_repo", map[string]any{"repo": "tollgate"})
			assertDenied(t, res, "needs capability mcp.github.admin", policy.CodeUnknownCapability)
			if got := env.rec.of("delete_repo"); len(got) != 0 {
				t.Fatalf("a hidden tool ran upstream: %v", got)
			}
			if mode == modeDelegated {
				return // the decider authenticates; the others' tokens are checked in TestAuthentication
			}
			for _, tok := range []string{searchToken, strangerToken} {
				if got := listNames(t, env.mustConnect(t, tok)); len(got) != 0 {
					t.Fatalf("an agent whose passport holds no MCP capability sees %v", got)
				}
			}
		})
	}
}

// TestCallsOfOtherPassports: an agent without the capability, or without a passport, is denied and
// the tool never runs.
func TestCallsOfOtherPassports(t *testing.T) {
	env := setup(t, modeInProcess)
	res := call(t, env.mustConnect(t, searchToken), "search", map[string]any{"query": "x"})
	assertDenied(t, res, "needs capability mcp.tool.execute", policy.CodeUnknownCapability)
	res = call(t, env.mustConnect(t, strangerToken), "search", map[string]any{"query": "x"})
	assertDenied(t, res, "no passport lists service account default/stranger", policy.CodePassportNotFound)
	if got := env.rec.of("search"); len(got) != 0 {
		t.Fatalf("denied calls ran upstream: %v", got)
	}

	// A proxy presenting coding-agent for everyone still checks the caller against its subjects.
	env = setup(t, modeInProcess, func(c *Config) { c.Passport = "default/coding-agent" })
	res = call(t, env.mustConnect(t, searchToken), "search", map[string]any{"query": "x"})
	assertDenied(t, res, "may not present passport", policy.CodeSubjectNotAllowed)
	if got := env.rec.of("search"); len(got) != 0 {
		t.Fatalf("denied calls ran upstream: %v", got)
	}
}

// TestAuthentication: an agent without a valid ServiceAccount token is refused (HTTP 401) before any
// MCP message is handled; with delegated authentication the decider refuses it and no tool runs.
func TestAuthentication(t *testing.T) {
	for _, mode := range []string{modeInProcess, modeRemote} {
		t.Run(mode, func(t *testing.T) {
			env := setup(t, mode)
			for _, tok := range []string{"", "not-a-known-token-0123456789"} {
				_, err := env.connect(t, tok)
				if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
					t.Fatalf("token %q: connect error = %v, want 401 Unauthorized", tok, err)
				}
				status := postInitialize(t, env.proxyURL+PathPrefix+"github", tok)
				if status != http.StatusUnauthorized {
					t.Fatalf("token %q: initialize answered %d, want 401", tok, status)
				}
			}
		})
	}
	t.Run(modeDelegated, func(t *testing.T) {
		env := setup(t, modeDelegated)
		if _, err := env.connect(t, ""); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Fatalf("no token: connect error = %v, want 401 Unauthorized", err)
		}
		cs := env.mustConnect(t, "not-a-known-token-0123456789") // the proxy cannot tell; the decider can
		res := call(t, cs, "search", map[string]any{"query": "x"})
		assertDenied(t, res, "did not accept the agent's token", codeUnauthenticated)
		if got := env.rec.of("search"); len(got) != 0 {
			t.Fatalf("an unauthenticated call ran upstream: %v", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := cs.ListTools(ctx, nil); err == nil {
			t.Fatal("tools/list with a token the decider refuses succeeded")
		}
	})
}

// postInitialize sends a raw initialize request and returns the HTTP status.
func postInitialize(t *testing.T, endpoint, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestArgumentsReadStrictly: arguments that parsers read differently (a repeated key, keys differing
// only in case) are refused, never forwarded; the upstream only ever gets what was decided.
func TestArgumentsReadStrictly(t *testing.T) {
	env := setup(t, modeInProcess)
	cs := env.mustConnect(t, codingToken)
	for _, raw := range []string{
		`{"command":"git status","command":"rm -rf /"}`,
		`{"command":"git status","Command":"rm -rf /"}`,
		`["rm","-rf","/"]`,
	} {
		res := call(t, cs, "run_command", json.RawMessage(raw))
		assertDenied(t, res, "arguments", policy.CodeInvalidRequest)
	}
	if got := env.rec.of("run_command"); len(got) != 0 {
		t.Fatalf("ambiguous arguments reached the upstream: %v", got)
	}
	res := call(t, cs, "no such tool!", map[string]any{})
	assertDenied(t, res, "tool names are 1 to 128 characters", policy.CodeInvalidRequest)
}

// TestDecisionLog: in process, the proxy's decisions go to the decision service's log, named as
// coding agents name MCP tools, with the caller and without argument values.
func TestDecisionLog(t *testing.T) {
	env := setup(t, modeInProcess)
	cs := env.mustConnect(t, codingToken)
	call(t, cs, "run_command", map[string]any{"command": "ls && rm -rf /secret-dir"})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(env.logBuf.String(), `"tool":"mcp__github__run_command"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no decision record for mcp__github__run_command in %q", env.logBuf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	log := env.logBuf.String()
	for _, want := range []string{`"caller":"default/coding-agent"`, `"outcome":"deny"`, policy.CodeBlockedPattern} {
		if !strings.Contains(log, want) {
			t.Errorf("decision log lacks %s: %s", want, log)
		}
	}
	if strings.Contains(log, "secret-dir") {
		t.Errorf("the decision log shows an argument value: %s", log)
	}
	// tools/list asks visibility probes, which the log marks as such.
	listNames(t, cs)
	for !strings.Contains(env.logBuf.String(), `"call_id":"`+VisibilityProbeCallID+`"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no visibility probe record in %q", env.logBuf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStdioUpstream: a local stdio server (this test binary, see TestMain) behind the proxy.
func TestStdioUpstream(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := setup(t, modeInProcess, func(c *Config) {
		c.Upstreams = []Upstream{{Name: "github", Command: []string{self}, Env: []string{envStdioServer + "=1"}}}
	})
	cs := env.mustConnect(t, codingToken)
	names := listNames(t, cs)
	if slices.Contains(names, "delete_repo") || !slices.Contains(names, "run_command") {
		t.Fatalf("stdio upstream: tools/list = %v", names)
	}
	if res := call(t, cs, "run_command", map[string]any{"command": "git log -1"}); res.IsError || text(res) != "ran git log -1" {
		t.Fatalf("stdio upstream, allowed call: isError=%v %q", res.IsError, text(res))
	}
	res := call(t, cs, "run_command", map[string]any{"command": "sudo reboot"})
	assertDenied(t, res, "mcp__github__run_command", policy.CodeBlockedPattern)
	// A second agent session shares the one server process.
	if res := call(t, env.mustConnect(t, codingToken), "search", map[string]any{"query": "q"}); res.IsError || text(res) != "results for q" {
		t.Fatalf("second session: isError=%v %q", res.IsError, text(res))
	}
}

// TestFailsClosed: when the decision endpoint cannot answer, nothing runs and the agent is told why.
func TestFailsClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens there any more
	env := setup(t, modeRemote, func(c *Config) {
		c.Decider = &Remote{Client: &client.Client{URL: dead, HTTPClient: &http.Client{Timeout: 2 * time.Second}}}
	})
	cs := env.mustConnect(t, codingToken)
	res := call(t, cs, "search", map[string]any{"query": "x"})
	assertDenied(t, res, "fails closed", policy.CodeEvaluatorError)
	if got := env.rec.of("search"); len(got) != 0 {
		t.Fatalf("a call ran without a decision: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cs.ListTools(ctx, nil)
	var werr interface{ Error() string }
	if err == nil || !errors.As(err, &werr) {
		t.Fatalf("tools/list without a decision endpoint: err = %v, want an error", err)
	}
}

// TestNotFound: paths other than the upstreams' are 404s naming them.
func TestNotFound(t *testing.T) {
	env := setup(t, modeInProcess)
	resp, err := http.Get(env.proxyURL + "/mcp/nope")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /mcp/nope = %d, want 404", resp.StatusCode)
	}
	if _, err := New(Config{Upstreams: []Upstream{{Name: "Bad__Name", URL: "http://x"}}, Decider: &Remote{}}); err == nil {
		t.Fatal("New accepted an invalid upstream name")
	}
}

// TestStdioAgentSide: an agent speaking to the proxy's server over a pipe (as over stdio; the Go
// SDK's client then uses the 2026-07-28 protocol, with protocol keys in every request's _meta) is
// guarded the same, and the upstream never receives the agent's protocol keys.
func TestStdioAgentSide(t *testing.T) {
	env := setup(t, modeInProcess, func(c *Config) { c.Authenticator, c.Passport = nil, "default/coding-agent" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := env.proxy.Server("github").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-agent", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := listNames(t, cs); slices.Contains(got, "delete_repo") || len(got) != 4 {
		t.Fatalf("tools over the pipe: %v", got)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "git status"},
		Meta: mcp.Meta{"trace": "t-1", "progressToken": "p-1"}})
	if err != nil || res.IsError {
		t.Fatalf("allowed call over the pipe: %v %v", err, res)
	}
	assertDenied(t, call(t, cs, "run_command", map[string]any{"command": "rm -rf ~"}), "run_command", policy.CodeBlockedPattern)
	if n := len(env.rec.of("run_command")); n != 1 {
		t.Fatalf("run_command ran %d times upstream, want 1", n)
	}
	in := mcp.Meta{"trace": "t-1", "progressToken": "p-1", "io.modelcontextprotocol/protocolVersion": "2026-07-28"}
	if got := forwardedMeta(in); len(got) != 1 || got["trace"] != "t-1" {
		t.Fatalf("forwardedMeta(%v) = %v, want only the agent's own key", in, got)
	}
}

// TestCommandArgumentIsNoWayAroundTheCapability: a command argument does not turn an MCP call into a
// shell call that a passport holding system.command.execute but not mcp.tool.execute may make
// (mcp__github__delete_repo {"repo": …, "command": "ls"}): the engine maps the tool by its name and
// denies it, and the gateway hides and refuses it too, so the tool never runs.
func TestCommandArgumentIsNoWayAroundTheCapability(t *testing.T) {
	for _, mode := range []string{modeInProcess, modeRemote} {
		t.Run(mode, func(t *testing.T) {
			env := setup(t, mode, func(c *Config) {
				if mode == modeRemote {
					c.Passport = "default/shell-agent"
				}
			})
			cs := env.mustConnect(t, shellToken)
			if got := listNames(t, cs); len(got) != 0 {
				t.Fatalf("a passport without mcp.tool.execute sees %v", got)
			}
			for tool, phrase := range map[string]string{
				"search":      "needs capability mcp.tool.execute",
				"run_command": "needs capability mcp.tool.execute",
				"delete_repo": "needs capability mcp.github.admin", // mapped by name in testdata: the engine denies it
			} {
				res := call(t, cs, tool, map[string]any{"repo": "prod", "query": "x", "command": "ls"})
				assertDenied(t, res, phrase, policy.CodeUnknownCapability)
				if got := env.rec.of(tool); len(got) != 0 {
					t.Fatalf("%s ran upstream for a passport without mcp.tool.execute: %v", tool, got)
				}
			}
		})
	}
}
