package decider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Error codes of 4xx answers ({"error": {"code", "message", "field"}}).
const (
	// ErrCodeInvalidJSON: the body is not one JSON object, or nests deeper than 64 levels.
	ErrCodeInvalidJSON = "invalid_json"
	// ErrCodeInvalidField: a field has the wrong type or value, or its key matches a field of the
	// request only case-insensitively ("Tool_Name" for tool_name).
	ErrCodeInvalidField = "invalid_field"
	// ErrCodeDuplicateKey: a key appears twice in one object, or two keys of one object differ
	// only in case ("command" and "Command"), anywhere in the body. Parsers disagree on what such
	// a body means, so it is refused; field is the path of the first of the two keys.
	ErrCodeDuplicateKey     = "duplicate_key"
	ErrCodeMissingField     = "missing_field"
	ErrCodeBodyTooLarge     = "body_too_large"
	ErrCodeUnsupportedMedia = "unsupported_media_type"
	ErrCodeMethodNotAllowed = "method_not_allowed"
	ErrCodeNotFound         = "not_found"
	ErrCodeUnauthenticated  = "unauthenticated"
	ErrCodeBatchTooLarge    = "batch_too_large"
	ErrCodeUnavailable      = "unavailable"
)

// RequestError is a malformed request: Field names the offending JSON field (dotted path, "" for
// the whole body).
type RequestError struct {
	// Code is one of the ErrCode constants.
	Code string
	// Field is the JSON path of the offending field.
	Field string
	// Message says what is wrong.
	Message string
}

// Error returns "field: message".
func (e *RequestError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

func fieldErr(code, field, format string, args ...any) *RequestError {
	return &RequestError{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// DecodeRequest parses and validates one decision request (the body of POST /v1/decide). Errors are
// *RequestError naming the field.
func DecodeRequest(data []byte) (policy.Request, error) {
	var req policy.Request
	if err := decodeRequest(data, &req); err != nil {
		return policy.Request{}, err
	}
	return req, nil
}

// decodeRequest is DecodeRequest into req (which must be zero), which it leaves zero on error.
func decodeRequest(data []byte, req *policy.Request) error {
	if err := decodeJSON(data, req, ""); err != nil {
		*req = policy.Request{}
		return err
	}
	if err := ValidateRequest(req, ""); err != nil {
		*req = policy.Request{}
		return err
	}
	return nil
}

// decodeJSON decodes exactly one JSON object into v, translating errors into *RequestError with
// field paths prefixed by prefix. The body is checked strictly first (checkStrictJSON): duplicate
// keys, keys differing only in case, keys matching a field of v's struct only case-insensitively
// and nesting deeper than maxJSONDepth are refused wherever they are, because parsers disagree on
// what they mean.
func decodeJSON(data []byte, v any, prefix string) error {
	// Only JSON's own whitespace may surround the object (bytes.TrimSpace would also drop Unicode
	// spaces, which other parsers refuse).
	trimmed := bytes.Trim(data, " \t\r\n")
	if len(trimmed) == 0 {
		return fieldErr(ErrCodeInvalidJSON, prefix, "request body is empty: want a JSON object")
	}
	if trimmed[0] != '{' {
		return fieldErr(ErrCodeInvalidJSON, prefix, "want a JSON object")
	}
	if is := checkStrictJSON(trimmed, shapeOf(v)); is.kind != 0 && is.kind != issueSyntax {
		return is.requestError(prefix)
	} else if is.kind == issueSyntax {
		// encoding/json says what is wrong, in the words it always has.
		if err := json.Unmarshal(trimmed, v); err != nil {
			return jsonError(err, prefix)
		}
		return is.requestError(prefix) // (never: both check the JSON grammar)
	}
	// A plain pre_tool_call request is decoded by hand (fastdecode.go), the rest by encoding/json.
	if req, ok := v.(*policy.Request); ok {
		if decodeRequestFast(trimmed, req) {
			return nil
		}
		*req = policy.Request{}
	}
	// json.Unmarshal checks the whole input is one valid JSON value before decoding anything.
	if err := json.Unmarshal(trimmed, v); err != nil {
		return jsonError(err, prefix)
	}
	return nil
}

func join(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	}
	return prefix + "." + field
}

// jsonError turns an encoding/json error into a *RequestError naming the field when it can.
func jsonError(err error, prefix string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		if strings.Contains(syn.Error(), "after top-level value") {
			return fieldErr(ErrCodeInvalidJSON, prefix, "unexpected data after the JSON object at byte %d", syn.Offset)
		}
		if strings.Contains(syn.Error(), "unexpected end of JSON input") {
			return fieldErr(ErrCodeInvalidJSON, prefix, "truncated JSON")
		}
		return fieldErr(ErrCodeInvalidJSON, prefix, "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ) && typ.Field != "":
		return fieldErr(ErrCodeInvalidField, join(prefix, typ.Field), "want %s, got JSON %s", jsonKind(typ.Type.Kind().String(), typ.Field), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fieldErr(ErrCodeInvalidJSON, prefix, "truncated JSON")
	}
	// Errors of custom unmarshalers (messages, timestamp) name their field in the message.
	msg := err.Error()
	field := prefix
	switch {
	case strings.Contains(msg, "message"):
		field = join(prefix, "messages")
	case strings.Contains(msg, "parsing time"), strings.Contains(msg, "Time.UnmarshalJSON"):
		field = join(prefix, "timestamp")
	}
	return fieldErr(ErrCodeInvalidField, field, "%s", msg)
}

func jsonKind(kind, field string) string {
	switch {
	case field == "timestamp":
		return "an RFC 3339 time string"
	case kind == "map" || kind == "struct":
		return "an object"
	case kind == "slice":
		return "an array"
	case kind == "interface":
		return "a JSON value"
	}
	return "a " + kind
}

// maxNameLen bounds identifiers (passport refs, tool names, ids) in requests.
const maxNameLen = 512

// ValidateRequest checks the fields Decide needs; prefix is prepended to field paths (batch items).
// A request may name no passport (passport null or absent, and no agent_id): the Server then uses
// the one passport that lists the authenticated caller's ServiceAccount, or answers 400 saying why.
func ValidateRequest(req *policy.Request, prefix string) error {
	switch req.Hook {
	case "", policy.HookPreToolCall, policy.HookPreLLMCall, policy.HookPostLLMCall, policy.HookPostToolCall:
	default:
		return fieldErr(ErrCodeInvalidField, join(prefix, "hook"), "unknown hook %q: want %s, %s, %s or %s",
			req.Hook, policy.HookPreToolCall, policy.HookPreLLMCall, policy.HookPostLLMCall, policy.HookPostToolCall)
	}
	if req.Passport != "" {
		ns, name, hasNS := strings.Cut(req.Passport, "/")
		if len(req.Passport) > maxNameLen || (hasNS && (ns == "" || name == "" || strings.Contains(name, "/"))) {
			return fieldErr(ErrCodeInvalidField, join(prefix, "passport"), "want \"namespace/name\" or \"name\", got %q", clip(req.Passport))
		}
	}
	if len(req.AgentID) > maxNameLen {
		return fieldErr(ErrCodeInvalidField, join(prefix, "agent_id"), "longer than %d characters", maxNameLen)
	}
	switch req.Hook {
	case "", policy.HookPreToolCall:
		if req.ToolName == "" {
			return fieldErr(ErrCodeMissingField, join(prefix, "tool_name"), "required for hook %s", policy.HookPreToolCall)
		}
	case policy.HookPreLLMCall:
		if len(req.Messages) == 0 {
			return fieldErr(ErrCodeMissingField, join(prefix, "messages"), "required for hook %s", policy.HookPreLLMCall)
		}
	case policy.HookPostToolCall:
		if req.ToolResult == nil {
			return fieldErr(ErrCodeMissingField, join(prefix, "tool_result"), "required for hook %s: the tool's result, text or JSON", policy.HookPostToolCall)
		}
	}
	if len(req.ToolName) > maxNameLen {
		return fieldErr(ErrCodeInvalidField, join(prefix, "tool_name"), "longer than %d characters", maxNameLen)
	}
	for i, tc := range req.ToolCalls {
		switch {
		case tc.Name == "":
			return fieldErr(ErrCodeMissingField, join(prefix, fmt.Sprintf("tool_calls[%d].name", i)), "required")
		case len(tc.Name) > maxNameLen:
			return fieldErr(ErrCodeInvalidField, join(prefix, fmt.Sprintf("tool_calls[%d].name", i)), "longer than %d characters", maxNameLen)
		}
	}
	return nil
}

// clip shortens s to at most 64 bytes, whole characters, for quoting in an answer (policy.Clip).
func clip(s string) string { return policy.Clip(s, 64) }

// batchRequest is the body of POST /v1/decide:batch.
type batchRequest struct {
	Requests []json.RawMessage `json:"requests"`
}

// batchResponse is the answer of POST /v1/decide:batch: one decision per request, in order.
type batchResponse struct {
	Decisions []*policy.Decision `json:"decisions"`
}

// verifyRequest is the body of the OAP verify route.
type verifyRequest struct {
	Context  map[string]any `json:"context"`
	Passport string         `json:"passport,omitempty"`
	AgentID  string         `json:"agent_id,omitempty"`
}

// verifyResponse is the OAP verify answer.
type verifyResponse struct {
	Decision verifyDecision `json:"decision"`
}

type verifyDecision struct {
	*policy.Decision
	// PassportID is the OAP passport id (agent id) the decision was made for.
	PassportID string `json:"passport_id,omitempty"`
}

// verifyContextKeys are the keys decodeVerify takes out of the verify route's context, in the
// order they are read.
var verifyContextKeys = []string{"agent_id", "passport", "passport_id", "tool_name", "tool", "thread_id", "call_id"}

// decodeVerify turns an OAP verify body into an engine request: agent_id (top level or in context),
// passport and the tool name (context.tool_name or context.tool) identify the call, and the rest of
// the context is the tool's arguments (tool_input). Two of these naming the same thing with
// different values (agent_id and context.agent_id or context.passport_id, context.tool_name and
// context.tool, passport and context.passport) are refused: readers would pick different ones.
//
// The policy id selects an OAP policy pack (verifyPacks): the pack fixes the capability the call is
// decided under and what the context must carry (system.command.execute.v1 needs context.command,
// and so on); a context without it is a *RequestError naming the field. Any other policy id only
// restricts evaluation to the policies of that id, and the context must name the tool.
func decodeVerify(data []byte, policyID string) (policy.Request, error) {
	var vr verifyRequest
	if err := decodeJSON(data, &vr, ""); err != nil {
		return policy.Request{}, err
	}
	if vr.Context == nil {
		return policy.Request{}, fieldErr(ErrCodeMissingField, "context", "required: an object of the tool arguments")
	}
	pack := verifyPacks[policyID]
	req := policy.Request{Passport: vr.Passport, AgentID: vr.AgentID, PolicyID: policyID}
	input := make(map[string]any, len(vr.Context))
	for k, v := range vr.Context {
		input[k] = v
	}
	take := func(key string) (string, error) {
		v, ok := input[key]
		if !ok {
			return "", nil
		}
		s, isStr := v.(string)
		if !isStr {
			return "", fieldErr(ErrCodeInvalidField, "context."+key, "want a string")
		}
		delete(input, key)
		return s, nil
	}
	// from names where each identifying field was set, for conflicts.
	from := map[*string]string{}
	if req.AgentID != "" {
		from[&req.AgentID] = "agent_id"
	}
	if req.Passport != "" {
		from[&req.Passport] = "passport"
	}
	dsts := [...]*string{&req.AgentID, &req.Passport, &req.AgentID, &req.ToolName, &req.ToolName, &req.ThreadID, &req.CallID}
	for i, key := range verifyContextKeys {
		if key == "tool" && pack != nil && pack.capability == policy.CapMCPToolExecute {
			continue // the MCP tool, not the tool name
		}
		s, err := take(key)
		if err != nil {
			return policy.Request{}, err
		}
		dst := dsts[i]
		switch {
		case s == "":
		case *dst == "":
			*dst = s
			from[dst] = "context." + key
		case *dst != s:
			return policy.Request{}, fieldErr(ErrCodeInvalidField, "context."+key, "%q conflicts with %s %q: give one value",
				clip(s), from[dst], clip(*dst))
		}
	}
	if req.Passport == "" && req.AgentID == "" {
		return policy.Request{}, fieldErr(ErrCodeMissingField, "context.agent_id", "agent_id (or passport) is required")
	}
	if pack == nil {
		if req.ToolName == "" {
			return policy.Request{}, fieldErr(ErrCodeMissingField, "context.tool_name",
				"required: %q is not a policy pack this endpoint knows (%s), so the context must name the tool",
				clip(policyID), strings.Join(VerifyPacks(), ", "))
		}
	} else {
		tool, in, rerr := pack.prepare(pack, policyID, input, req.ToolName, from[&req.ToolName])
		if rerr != nil {
			return policy.Request{}, rerr
		}
		req.ToolName, input = tool, in
	}
	req.ToolInput = input
	if err := ValidateRequest(&req, ""); err != nil {
		return policy.Request{}, err
	}
	return req, nil
}
