package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// DecisionMetaKey is the _meta key of a tool error the proxy made: the decision behind it.
const DecisionMetaKey = "tollgate.dev/decision"

// Codes of tool errors the proxy makes without a decision of the engine.
const (
	// codeUnauthenticated: the decision endpoint refused the agent's token.
	codeUnauthenticated = "unauthenticated"
)

// callTool decides the call, forwards it (with the arguments the decision allows), and screens the
// result. Every refusal reaches the agent as a tool error, which the model reads.
func (p *Proxy) callTool(ctx context.Context, px *proxied, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params == nil {
		return nil, errors.New("tools/call without params")
	}
	tool := req.Params.Name
	if !validToolName(tool) {
		return refusal("denied the call to", px.toolBase+clip(tool), policy.CodeInvalidRequest,
			"tool names are 1 to 128 characters from A-Z, a-z, 0-9, _, - and .", nil), nil
	}
	full := px.toolBase + tool
	caller := callerOf(req)
	args, dreq, rerr := p.toolRequest(full, req.Params.Arguments)
	if rerr != nil {
		return refusal("denied the call to", full, policy.CodeInvalidRequest, rerr.Error(), nil), nil
	}
	if req.Session != nil {
		dreq.ThreadID = req.Session.ID()
	}
	ctx = withTraceContext(ctx, req.Params.Meta, req.Extra)
	d, err := p.cfg.Decider.Decide(ctx, &dreq, caller)
	if err != nil {
		return p.undecided("the call to", full, err), nil
	}
	if d.Decision == policy.DecisionAllow || d.Decision == policy.DecisionModify {
		// A tool hidden from the caller cannot be called, whatever the arguments (visibility.go).
		reason, err := p.vis.hidden(ctx, caller, full)
		if err != nil {
			return p.undecided("the call to", full, err), nil
		}
		if reason != nil {
			return refusal("denied the call to", full, reason.Code, reason.Message+" (the tool is hidden from this agent)", nil), nil
		}
	}
	switch d.Decision {
	case policy.DecisionAllow:
	case policy.DecisionModify:
		in := d.ModifiedInput
		if in == nil {
			in = map[string]any{}
		}
		if args, err = json.Marshal(in); err != nil {
			return p.undecided("the call to", full, fmt.Errorf("encoding the rewritten arguments: %w", err)), nil
		}
	default:
		return denied("denied the call to", full, &d), nil
	}
	cs, err := px.conns.session(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: forwardedMeta(req.Params.Meta), Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("calling tool %s of upstream %s: %w", tool, px.name, err)
	}
	return p.screenResult(ctx, full, dreq.ThreadID, res, caller), nil
}

// forwardedMeta is the part of a call's _meta the upstream receives: the agent's own keys. The
// protocol's keys (io.modelcontextprotocol/…: the agent's protocol version and client information,
// which belong to the agent's session with the proxy, not to the proxy's with the upstream) and the
// progress token (the proxy relays no notifications) stay behind.
func forwardedMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if k == "progressToken" || strings.HasPrefix(k, "io.modelcontextprotocol/") || strings.HasPrefix(k, "modelcontextprotocol.io/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// toolRequest reads a call's arguments as the decider reads a request body (strict JSON: no
// repeated keys, no keys differing only in case, bounded nesting and size) and returns the
// pre_tool_call request, and the arguments to send upstream if the call is allowed as it is: the
// agent's own bytes, which mean the same to every parser once the strict reading accepted them.
func (p *Proxy) toolRequest(tool string, raw json.RawMessage) (json.RawMessage, policy.Request, error) {
	args := bytes.TrimSpace(raw)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	if len(args) > MaxArgumentBytes {
		return nil, policy.Request{}, fmt.Errorf("arguments exceed %d bytes", MaxArgumentBytes)
	}
	if args[0] != '{' {
		return nil, policy.Request{}, errors.New("arguments: want a JSON object")
	}
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, policy.Request{}, fmt.Errorf("encoding the tool name: %w", err)
	}
	body := make([]byte, 0, len(args)+len(name)+48)
	body = append(body, `{"hook":"pre_tool_call","tool_name":`...)
	body = append(body, name...)
	body = append(body, `,"tool_input":`...)
	body = append(body, args...)
	body = append(body, '}')
	dreq, err := decider.DecodeRequest(body)
	if err != nil {
		var re *decider.RequestError
		if errors.As(err, &re) {
			field := strings.TrimPrefix(strings.TrimPrefix(re.Field, "tool_input"), ".")
			if field != "" {
				return nil, policy.Request{}, fmt.Errorf("arguments.%s: %s", field, re.Message)
			}
			return nil, policy.Request{}, fmt.Errorf("arguments: %s", re.Message)
		}
		return nil, policy.Request{}, fmt.Errorf("arguments: %w", err)
	}
	if dreq.ToolInput == nil {
		dreq.ToolInput = map[string]any{}
	}
	dreq.Passport = p.cfg.Passport
	return args, dreq, nil
}

// screenResult passes a tool's result through the post_tool_call guards. A blocked result, or one
// that cannot be screened, becomes a tool error; the agent never sees its content.
func (p *Proxy) screenResult(ctx context.Context, tool, thread string, res *mcp.CallToolResult, caller Caller) *mcp.CallToolResult {
	text := resultText(res)
	if len(text) == 0 {
		return res
	}
	req := policy.Request{Passport: p.cfg.Passport, Hook: policy.HookPostToolCall, ToolName: tool,
		ToolResult: text, ThreadID: thread}
	d, err := p.cfg.Decider.Decide(ctx, &req, caller)
	if err != nil {
		return p.undecided("the result of", tool, err)
	}
	if d.Decision == policy.DecisionDeny || !d.Allow {
		return denied("blocked the result of", tool, &d)
	}
	return res
}

// resultText collects what the model reads of a result: text contents, text resources, resource
// links' names and descriptions, and the structured content. Images, audio and binary resources are
// not text a guard can read.
func resultText(res *mcp.CallToolResult) []any {
	var out []any
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	for _, c := range res.Content {
		switch t := c.(type) {
		case *mcp.TextContent:
			add(t.Text)
		case *mcp.EmbeddedResource:
			if r := t.Resource; r != nil {
				add(r.Text)
				if len(r.Blob) > 0 && textual(r.MIMEType) && utf8.Valid(r.Blob) {
					add(string(r.Blob))
				}
			}
		case *mcp.ResourceLink:
			add(t.Name)
			add(t.Title)
			add(t.Description)
		}
	}
	if res.StructuredContent != nil {
		out = append(out, res.StructuredContent)
	}
	return out
}

// textual reports whether a MIME type is text a model may be shown.
func textual(mt string) bool {
	base, _, err := mime.ParseMediaType(mt)
	if err != nil {
		return false
	}
	return strings.HasPrefix(base, "text/") || strings.HasSuffix(base, "json") || strings.HasSuffix(base, "xml") ||
		strings.HasSuffix(base, "yaml") || base == "application/javascript"
}

// denied is the tool error of a deny decision: the OAP code and reason in the text the model reads,
// and the decision in _meta.
func denied(what, tool string, d *policy.Decision) *mcp.CallToolResult {
	code, msg := policy.CodePolicyDenied, "denied"
	if len(d.Reasons) > 0 {
		code, msg = d.Reasons[0].Code, d.Reasons[0].Message
	}
	return refusal(what, tool, code, msg, d)
}

// undecided is the tool error when no decision could be made: the proxy fails closed.
func (p *Proxy) undecided(what, tool string, err error) *mcp.CallToolResult {
	if unauthenticated(err) {
		return refusal("refused "+what, tool, codeUnauthenticated,
			"the decision endpoint did not accept the agent's token", nil)
	}
	p.log.Warn("no decision: failing closed", "tool", tool, "err", err)
	return refusal("denied "+what, tool, policy.CodeEvaluatorError,
		"no decision could be made, so the gateway fails closed: "+err.Error(), nil)
}

// refusal builds a tool error "Tollgate <what> tool '<tool>': <code>: <message>".
func refusal(what, tool, code, msg string, d *policy.Decision) *mcp.CallToolResult {
	meta := map[string]any{"code": code, "message": msg}
	if d != nil {
		meta["decision"] = d.Decision
		if d.DecisionID != "" {
			meta["decision_id"] = d.DecisionID
		}
		if d.PolicyID != "" {
			meta["policy_id"] = d.PolicyID
		}
	} else {
		meta["decision"] = policy.DecisionDeny
	}
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Tollgate %s tool '%s': %s: %s", what, tool, code, msg)}},
		Meta:    mcp.Meta{DecisionMetaKey: meta},
	}
}
