package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/pkg/client"
)

// `tollgate hook <agent>` is a coding agent's pre-tool hook: it reads the hook event the agent
// writes on stdin (Claude Code's PreToolUse, Gemini CLI's BeforeTool, Cursor's
// beforeShellExecution, beforeMCPExecution and beforeReadFile), asks the decision endpoint about
// the call, and writes the agent's own answer on stdout. It fails closed: whatever goes wrong (no
// endpoint configured, an unreadable event, an endpoint that cannot be reached or refuses the
// request) is a deny that says why, because an agent runs the tool when a hook crashes or prints
// nothing it understands. --on-unreachable ask hands an unreachable endpoint's calls to the user
// instead, where the agent can ask.

// Defaults of the hook command.
const (
	defaultHookTimeout = 4 * time.Second
	// maxHookInput bounds the hook event read from stdin (a Write call carries the whole file).
	maxHookInput = 16 << 20
)

// hookVerdict is what the hook tells the agent.
type hookVerdict string

const (
	verdictAllow  hookVerdict = "allow"
	verdictDeny   hookVerdict = "deny"
	verdictAsk    hookVerdict = "ask"
	verdictModify hookVerdict = "modify"
)

// hookCall is the tool call an agent's hook event describes, in Tollgate's terms.
type hookCall struct {
	// event is the agent's event name (hook_event_name).
	event string
	// toolName and toolInput are the call as Tollgate decides it.
	toolName  string
	toolInput map[string]any
	// threadID, callID and isSubagent are passed through to the decision request.
	threadID, callID string
	isSubagent       bool
}

// hookOutcome is the hook's answer before it is put in the agent's words.
type hookOutcome struct {
	verdict hookVerdict
	// reason says why, with the OAP code (shown to the model on deny, to the user on ask).
	reason string
	// input is the rewritten tool input of a modify (the whole input).
	input map[string]any
}

// hookAgent reads one agent's hook events and writes its answers.
type hookAgent struct {
	// name is the agent as named on the command line.
	name string
	// parse turns the event JSON into the call to decide. An error means the event cannot be
	// decided; it is answered with a deny.
	parse func(ev map[string]any) (hookCall, error)
	// answer renders the outcome in the agent's format; call is the zero hookCall when the event
	// could not be parsed.
	answer func(call hookCall, out hookOutcome) any
}

// errUnsupportedEvent is an event the hook cannot answer in its agent's format.
var errUnsupportedEvent = errors.New("unsupported hook event")

func hookAgents() map[string]hookAgent {
	return map[string]hookAgent{
		"claude-code": {name: "claude-code", parse: parseClaudeCode, answer: answerClaudeCode},
		"gemini-cli":  {name: "gemini-cli", parse: parseGeminiCLI, answer: answerGeminiCLI},
		"cursor":      {name: "cursor", parse: parseCursor, answer: answerCursor},
	}
}

// hookCommand is `tollgate hook <claude-code|gemini-cli|cursor> [flags]`.
type hookCommand struct {
	url, passport, tokenFile string
	timeout                  time.Duration
	onUnreachable            string
}

func newHookCommand() command {
	return &hookCommand{
		url: os.Getenv(client.EnvURL), passport: os.Getenv(client.EnvPassport), tokenFile: os.Getenv(client.EnvTokenFile),
		timeout: defaultHookTimeout, onUnreachable: string(verdictDeny),
	}
}

// BindFlags registers the hook's flags.
func (c *hookCommand) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", c.url, "decision endpoint base URL (default $"+client.EnvURL+")")
	fs.StringVar(&c.passport, "passport", c.passport, "passport presented, \"namespace/name\" or \"name\" (default $"+client.EnvPassport+")")
	fs.StringVar(&c.tokenFile, "token-file", c.tokenFile, "file holding the bearer token (default $"+client.EnvTokenFile+")")
	fs.DurationVar(&c.timeout, "timeout", c.timeout, "how long to wait for the endpoint; keep it below the agent's hook timeout")
	fs.StringVar(&c.onUnreachable, "on-unreachable", c.onUnreachable,
		"what an endpoint that cannot be reached means: deny, or ask the user (where the agent can ask)")
}

// Run takes the agent's name, then the flags, and answers the event on stdin. A bad command line is
// answered too (with a deny), so that it cannot let calls through.
func (c *hookCommand) Run(ctx context.Context, cio *cmdIO, args []string) error {
	agents := hookAgents()
	names := slices.Sorted(maps.Keys(agents))
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		hookUsage(cio.stderr, names)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			return nil
		}
		return usageError("name the agent whose hook event arrives on stdin: %s", strings.Join(names, ", "))
	}
	agent, ok := agents[args[0]]
	if !ok {
		hookUsage(cio.stderr, names)
		return usageError("unknown agent %q: want %s", args[0], strings.Join(names, ", "))
	}
	fs := newFlagSet("hook "+agent.name, "[--url URL] [--passport NS/NAME] [--token-file FILE] [flags] < event.json", cio.stderr)
	c.BindFlags(fs)
	rest, err := parseFlags(fs, args[1:])
	if err == nil && len(rest) > 0 {
		err = usageError("unexpected arguments %q: the hook event is read from stdin", rest)
	}
	if err == nil && c.onUnreachable != string(verdictDeny) && c.onUnreachable != string(verdictAsk) {
		err = usageError("--on-unreachable %q: want deny or ask", c.onUnreachable)
	}
	if err != nil {
		if errors.Is(err, errHelpShown) {
			return nil
		}
		// A broken hook command line must not let calls through: deny them, saying why.
		if werr := writeHookAnswer(cio.stdout, cio.stderr, agent.answer(hookCall{}, hookOutcome{verdict: verdictDeny,
			reason: "Tollgate hook is misconfigured: " + err.Error()})); werr != nil {
			return &exitError{code: exitUsage, err: errors.Join(err, werr)}
		}
		return err
	}

	call, out := decideHook(ctx, agent, cio.stdin, hookConfig{
		url: c.url, passport: c.passport, tokenFile: c.tokenFile, timeout: c.timeout,
		onUnreachable: hookVerdict(c.onUnreachable),
	})
	if errors.Is(out.err, errUnsupportedEvent) {
		// The event has another answer format: print nothing the agent could misread and exit 2,
		// which Claude Code and Gemini CLI read as "block" with stderr as the reason.
		return &exitError{code: exitUsage, err: out.err}
	}
	if out.err != nil {
		fmt.Fprintf(cio.stderr, "tollgate hook %s: %v\n", agent.name, out.err)
	}
	return writeHookAnswer(cio.stdout, cio.stderr, agent.answer(call, out.hookOutcome))
}

func hookUsage(w io.Writer, agents []string) {
	fmt.Fprintf(w, "Usage: tollgate hook <%s> [flags] < event.json\n\n", strings.Join(agents, "|"))
	fmt.Fprintln(w, "Reads a coding agent's pre-tool hook event on stdin, asks the Tollgate decision endpoint")
	fmt.Fprintln(w, "and prints the agent's answer (allow, deny with the OAP reason, or the rewritten input).")
	fmt.Fprintln(w, "Run 'tollgate hook <agent> -h' for the flags; see docs/coding-agents.md for the settings.")
}

func writeHookAnswer(stdout, stderr io.Writer, answer any) error {
	data, err := json.Marshal(answer)
	if err != nil {
		return fmt.Errorf("encoding the hook answer: %w", err)
	}
	if _, err := stdout.Write(append(data, '\n')); err != nil {
		fmt.Fprintf(stderr, "tollgate hook: writing the answer: %v\n", err)
		return fmt.Errorf("writing the hook answer: %w", err)
	}
	return nil
}

// hookConfig is where and how the hook asks.
type hookConfig struct {
	url, passport, tokenFile string
	timeout                  time.Duration
	onUnreachable            hookVerdict
}

// hookResult is an outcome and, for the log on stderr, what went wrong.
type hookResult struct {
	hookOutcome
	err error
}

// decideHook reads the event and asks the endpoint. It never fails: every problem is a deny (or an
// ask, for an unreachable endpoint with --on-unreachable ask) with the problem in the reason.
func decideHook(ctx context.Context, agent hookAgent, stdin io.Reader, cfg hookConfig) (hookCall, hookResult) {
	deny := func(format string, args ...any) hookResult {
		err := fmt.Errorf(format, args...)
		return hookResult{hookOutcome{verdict: verdictDeny, reason: "Tollgate denied the call: " + err.Error()}, err}
	}
	data, err := io.ReadAll(io.LimitReader(stdin, maxHookInput+1))
	switch {
	case err != nil:
		return hookCall{}, deny("reading the hook event: %v", err)
	case len(data) > maxHookInput:
		return hookCall{}, deny("the hook event is larger than %d bytes", maxHookInput)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil || ev == nil {
		return hookCall{}, deny("the hook event on stdin is not a JSON object (%v)", err)
	}
	call, err := agent.parse(ev)
	if errors.Is(err, errUnsupportedEvent) {
		return call, hookResult{err: err}
	}
	if err != nil {
		return call, deny("%v", err)
	}
	if cfg.url == "" {
		return call, deny("no decision endpoint: set --url or %s", client.EnvURL)
	}
	if cfg.passport == "" && cfg.tokenFile == "" {
		return call, deny("no passport: set --passport or %s (or %s, to present the passport of the token's ServiceAccount)",
			client.EnvPassport, client.EnvTokenFile)
	}
	c := &client.Client{URL: cfg.url, Passport: cfg.passport, TokenFile: cfg.tokenFile,
		HTTPClient: &http.Client{Timeout: cfg.timeout}}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	d, err := c.Decide(ctx, client.Request{
		ToolName: call.toolName, ToolInput: call.toolInput, Hook: client.HookPreToolCall,
		ThreadID: call.threadID, CallID: call.callID, IsSubagent: call.isSubagent,
	})
	if err != nil {
		if unreachable(err) {
			reason := fmt.Sprintf("the Tollgate decision endpoint %s cannot be reached (%v)", cfg.url, err)
			if cfg.onUnreachable == verdictAsk {
				return call, hookResult{hookOutcome{verdict: verdictAsk, reason: "Tollgate could not decide: " + reason}, err}
			}
			return call, hookResult{hookOutcome{verdict: verdictDeny, reason: "Tollgate denied the call: " + reason}, err}
		}
		return call, deny("the decision endpoint refused the request: %v", err)
	}
	return call, hookResult{hookOutcome: outcomeOf(call, d)}
}

// unreachable reports an error that says nothing about the call: the endpoint could not be
// reached in time, was overloaded (429) or answered 5xx.
func unreachable(err error) bool {
	var ae *client.APIError
	if errors.As(err, &ae) {
		return ae.StatusCode >= 500 || ae.StatusCode == http.StatusTooManyRequests
	}
	var ue *url.Error
	return errors.As(err, &ue) || errors.Is(err, context.DeadlineExceeded)
}

// outcomeOf turns a decision into the hook's outcome.
func outcomeOf(call hookCall, d client.Decision) hookOutcome {
	reason := decisionReason(d)
	switch {
	case d.Decision == "modify" && d.Allow && d.ModifiedInput != nil:
		if sameJSON(d.ModifiedInput, call.toolInput) {
			return hookOutcome{verdict: verdictAllow, reason: reason}
		}
		return hookOutcome{verdict: verdictModify, reason: reason, input: d.ModifiedInput}
	case d.Decision == "allow" && d.Allow:
		return hookOutcome{verdict: verdictAllow, reason: reason}
	}
	// deny, and anything this hook does not know (a modify without input, an unknown decision)
	return hookOutcome{verdict: verdictDeny, reason: reason}
}

// decisionReason is "Tollgate <decision>: <code>: <message>; … (policy <id>, decision <id>)".
func decisionReason(d client.Decision) string {
	var b strings.Builder
	b.WriteString("Tollgate ")
	b.WriteString(d.Decision)
	for i, r := range d.Reasons {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(r.Code)
		if r.Message != "" {
			b.WriteString(": ")
			b.WriteString(r.Message)
		}
	}
	var refs []string
	if d.PolicyID != "" {
		refs = append(refs, "policy "+d.PolicyID)
	}
	if d.DecisionID != "" {
		refs = append(refs, "decision "+d.DecisionID)
	}
	if len(refs) > 0 {
		b.WriteString(" (" + strings.Join(refs, ", ") + ")")
	}
	return b.String()
}

// sameJSON reports whether a and b encode to the same JSON value.
func sameJSON(a, b map[string]any) bool {
	norm := func(m map[string]any) any {
		data, err := json.Marshal(m)
		if err != nil {
			return nil
		}
		var v any
		if json.Unmarshal(data, &v) != nil {
			return nil
		}
		return v
	}
	na, nb := norm(a), norm(b)
	return na != nil && reflect.DeepEqual(na, nb)
}

// str returns ev[key] when it is a string.
func str(ev map[string]any, key string) string {
	s, _ := ev[key].(string)
	return s
}

// toolInput reads a tool input: an object, or a string holding a JSON object (Cursor's MCP
// arguments).
func toolInput(v any, field string) (map[string]any, error) {
	switch t := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return t, nil
	case string:
		if strings.TrimSpace(t) == "" {
			return map[string]any{}, nil
		}
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil || m == nil {
			return nil, fmt.Errorf("%s is a string that does not hold a JSON object", field)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%s is not an object", field)
}

// Claude Code: PreToolUse (https://code.claude.com/docs/en/hooks). The event carries session_id,
// tool_name, tool_input, tool_use_id and, inside a sub-agent, agent_id; the answer is
// hookSpecificOutput with permissionDecision allow|deny|ask, permissionDecisionReason and, to run
// the call with other arguments, updatedInput (which replaces the whole input).

func parseClaudeCode(ev map[string]any) (hookCall, error) {
	event := str(ev, "hook_event_name")
	if event != "" && event != "PreToolUse" {
		return hookCall{event: event}, fmt.Errorf("%w %q: tollgate hook claude-code answers PreToolUse", errUnsupportedEvent, event)
	}
	call := hookCall{event: "PreToolUse", toolName: str(ev, "tool_name"), threadID: str(ev, "session_id"),
		callID: str(ev, "tool_use_id"), isSubagent: str(ev, "agent_id") != ""}
	if call.toolName == "" {
		return call, errors.New("the PreToolUse event names no tool_name")
	}
	in, err := toolInput(ev["tool_input"], "tool_input")
	call.toolInput = in
	return call, err
}

type claudeCodeAnswer struct {
	HookSpecificOutput claudeCodeOutput `json:"hookSpecificOutput"`
}

type claudeCodeOutput struct {
	HookEventName            string         `json:"hookEventName"`
	PermissionDecision       string         `json:"permissionDecision"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             map[string]any `json:"updatedInput,omitempty"`
}

func answerClaudeCode(_ hookCall, out hookOutcome) any {
	o := claudeCodeOutput{HookEventName: "PreToolUse", PermissionDecision: string(out.verdict), PermissionDecisionReason: out.reason}
	if out.verdict == verdictModify {
		o.PermissionDecision, o.UpdatedInput = string(verdictAllow), out.input
	}
	return claudeCodeAnswer{HookSpecificOutput: o}
}

// Gemini CLI: BeforeTool (https://geminicli.com/docs/hooks/reference). The event carries
// session_id, tool_name, tool_input and, for MCP tools, mcp_context; the answer is decision
// allow|deny|ask with reason (sent to the model on deny) and hookSpecificOutput.tool_input, which
// Gemini CLI merges into the model's arguments.

func parseGeminiCLI(ev map[string]any) (hookCall, error) {
	event := str(ev, "hook_event_name")
	if event != "" && event != "BeforeTool" {
		return hookCall{event: event}, fmt.Errorf("%w %q: tollgate hook gemini-cli answers BeforeTool", errUnsupportedEvent, event)
	}
	call := hookCall{event: "BeforeTool", toolName: str(ev, "tool_name"), threadID: str(ev, "session_id")}
	if mc, ok := ev["mcp_context"].(map[string]any); ok {
		if server, tool := str(mc, "server_name"), str(mc, "tool_name"); server != "" && tool != "" {
			call.toolName = "mcp__" + server + "__" + tool
		}
	}
	if call.toolName == "" {
		return call, errors.New("the BeforeTool event names no tool_name")
	}
	in, err := toolInput(ev["tool_input"], "tool_input")
	call.toolInput = in
	return call, err
}

type geminiCLIAnswer struct {
	Decision           string            `json:"decision"`
	Reason             string            `json:"reason,omitempty"`
	SystemMessage      string            `json:"systemMessage,omitempty"`
	HookSpecificOutput *geminiCLIToolOut `json:"hookSpecificOutput,omitempty"`
}

type geminiCLIToolOut struct {
	HookEventName string         `json:"hookEventName"`
	ToolInput     map[string]any `json:"tool_input"`
}

func answerGeminiCLI(call hookCall, out hookOutcome) any {
	switch out.verdict {
	case verdictModify:
		// Gemini CLI merges tool_input into the model's arguments: an argument the rewrite removes
		// would survive, so such a rewrite cannot be carried out and the call is denied.
		if removed := removedKeys(call.toolInput, out.input); len(removed) > 0 {
			return geminiCLIAnswer{Decision: string(verdictDeny), Reason: out.reason +
				"; the rewrite removes " + strings.Join(removed, ", ") + ", which a Gemini CLI hook cannot remove, so the call is denied"}
		}
		return geminiCLIAnswer{Decision: string(verdictAllow), Reason: out.reason,
			HookSpecificOutput: &geminiCLIToolOut{HookEventName: "BeforeTool", ToolInput: out.input}}
	case verdictAsk:
		return geminiCLIAnswer{Decision: string(verdictAsk), Reason: out.reason, SystemMessage: out.reason}
	}
	return geminiCLIAnswer{Decision: string(out.verdict), Reason: out.reason}
}

// removedKeys lists the top-level keys of before that after lacks, sorted.
func removedKeys(before, after map[string]any) []string {
	var out []string
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Cursor: beforeShellExecution ({command, cwd}), beforeMCPExecution ({tool_name, tool_input as a
// JSON string}) and beforeReadFile ({file_path, content}), each with conversation_id
// (https://cursor.com/docs/hooks). The answer is permission allow|deny|ask (ask only for shell and
// MCP) with user_message and agent_message. Cursor cannot run a call with other arguments, so a
// rewrite is a deny that tells the agent what to run instead.

// Tool names Cursor's events are decided as (Cursor's own names for these tools).
const (
	cursorShellTool = "Shell"
	cursorReadTool  = "Read"
)

func parseCursor(ev map[string]any) (hookCall, error) {
	call := hookCall{event: str(ev, "hook_event_name"), threadID: str(ev, "conversation_id")}
	switch call.event {
	case "beforeShellExecution":
		cmd := str(ev, "command")
		if strings.TrimSpace(cmd) == "" {
			return call, errors.New("the beforeShellExecution event carries no command")
		}
		call.toolName, call.toolInput = cursorShellTool, map[string]any{"command": cmd}
		if cwd := str(ev, "cwd"); cwd != "" {
			call.toolInput["cwd"] = cwd
		}
	case "beforeMCPExecution":
		tool := str(ev, "tool_name")
		if tool == "" {
			return call, errors.New("the beforeMCPExecution event names no tool_name")
		}
		if !strings.HasPrefix(tool, "mcp__") {
			server := str(ev, "server_name")
			if server == "" {
				server = "cursor"
			}
			tool = "mcp__" + server + "__" + tool
		}
		in, err := toolInput(ev["tool_input"], "tool_input")
		if err != nil {
			return call, err
		}
		call.toolName, call.toolInput = tool, in
	case "beforeReadFile":
		p := str(ev, "file_path")
		if p == "" {
			return call, errors.New("the beforeReadFile event names no file_path")
		}
		// The file's content is not sent: the call is decided on its path.
		call.toolName, call.toolInput = cursorReadTool, map[string]any{"file_path": p}
	default:
		return call, fmt.Errorf("tollgate hook cursor answers beforeShellExecution, beforeMCPExecution and beforeReadFile, not %q", call.event)
	}
	return call, nil
}

type cursorAnswer struct {
	Permission   string `json:"permission"`
	UserMessage  string `json:"user_message,omitempty"`
	AgentMessage string `json:"agent_message,omitempty"`
}

func answerCursor(call hookCall, out hookOutcome) any {
	a := cursorAnswer{Permission: string(out.verdict), UserMessage: out.reason, AgentMessage: out.reason}
	switch out.verdict {
	case verdictAllow:
		a.UserMessage, a.AgentMessage = "", ""
	case verdictModify:
		a.Permission = string(verdictDeny)
		instead := ""
		if cmd, ok := out.input["command"].(string); ok && call.event == "beforeShellExecution" {
			instead = "run this command instead: " + cmd
		} else if data, err := json.Marshal(out.input); err == nil {
			instead = "call " + call.toolName + " with these arguments instead: " + string(data)
		}
		a.AgentMessage = out.reason + "; Tollgate rewrites this call and Cursor cannot run a rewritten call from a hook, so " + instead
	case verdictAsk:
		if call.event != "beforeShellExecution" && call.event != "beforeMCPExecution" {
			a.Permission = string(verdictDeny) // Cursor asks only for shell commands and MCP calls
		}
	}
	return a
}
