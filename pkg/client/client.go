// Package client is a small Go client of Tollgate's decision endpoint, for agents and tests.
//
// The package-level Decide reads its configuration from the environment the Tollgate pod webhook
// injects: TOLLGATE_URL (the endpoint's base URL), TOLLGATE_PASSPORT (the passport presented when a
// request names none, "namespace/name") and TOLLGATE_TOKEN_FILE (a projected ServiceAccount token,
// re-read on every call because the kubelet rotates it).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
)

// Environment variables read by FromEnv and Decide.
const (
	EnvURL       = "TOLLGATE_URL"
	EnvPassport  = "TOLLGATE_PASSPORT"
	EnvTokenFile = "TOLLGATE_TOKEN_FILE"
)

// Hooks.
const (
	HookPreToolCall = "pre_tool_call"
	HookPreLLMCall  = "pre_llm_call"
	HookPostLLMCall = "post_llm_call"
	// HookPostToolCall screens a tool's result (Request.ToolResult) before it reaches the model.
	HookPostToolCall = "post_tool_call"
)

// Request is one decision request (the body of POST /v1/decide).
type Request struct {
	Passport     string         `json:"passport,omitempty"`
	AgentID      string         `json:"agent_id,omitempty"`
	ToolName     string         `json:"tool_name,omitempty"`
	ToolInput    map[string]any `json:"tool_input,omitempty"`
	ToolResult   any            `json:"tool_result,omitempty"`
	Hook         string         `json:"hook,omitempty"`
	Messages     []Message      `json:"messages,omitempty"`
	FinishReason string         `json:"finish_reason,omitempty"`
	StopReason   string         `json:"stop_reason,omitempty"`
	ToolCalls    []ToolCall     `json:"tool_calls,omitempty"`
	ThreadID     string         `json:"thread_id,omitempty"`
	CallID       string         `json:"call_id,omitempty"`
	IsSubagent   bool           `json:"is_subagent,omitempty"`
	Timestamp    *time.Time     `json:"timestamp,omitempty"`
}

// Message is one conversation message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ToolCall is one tool call of an LLM response.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments any    `json:"arguments,omitempty"`
}

// Decision is the endpoint's answer. A deny is a Decision, not an error.
type Decision struct {
	DecisionID     string          `json:"decision_id"`
	Allow          bool            `json:"allow"`
	Decision       string          `json:"decision"`
	Reasons        []Reason        `json:"reasons"`
	PolicyID       string          `json:"policy_id,omitempty"`
	ModifiedInput  map[string]any  `json:"modified_input,omitempty"`
	PassportDigest string          `json:"passport_digest,omitempty"`
	BundleRevision string          `json:"bundle_revision"`
	CreatedAt      time.Time       `json:"created_at"`
	ExpiresIn      int64           `json:"expires_in"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
}

// Reason is an OAP reason code with a message.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// APIError is a non-200 answer of the endpoint.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the error code, e.g. invalid_field or unauthenticated.
	Code string
	// Field names the offending request field, when known.
	Field string
	// Message says what is wrong.
	Message string
}

// Error describes the error.
func (e *APIError) Error() string {
	return fmt.Sprintf("tollgate: HTTP %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// Client calls one decision endpoint. It is safe for concurrent use.
type Client struct {
	// URL is the endpoint's base URL, e.g. http://tollgate-decider.tollgate-system.svc:8080.
	URL string
	// Passport is used when a request names neither passport nor agent_id.
	Passport string
	// TokenFile holds the bearer token, read on every call ("" sends none).
	TokenFile string
	// Token is a static bearer token, used when TokenFile is empty.
	Token string
	// HTTPClient sends the requests (default: a client with a 10s timeout).
	HTTPClient *http.Client
}

// FromEnv returns a client configured from TOLLGATE_URL, TOLLGATE_PASSPORT and TOLLGATE_TOKEN_FILE.
func FromEnv() (*Client, error) {
	u := os.Getenv(EnvURL)
	if u == "" {
		return nil, fmt.Errorf("tollgate: %s is not set", EnvURL)
	}
	return &Client{URL: u, Passport: os.Getenv(EnvPassport), TokenFile: os.Getenv(EnvTokenFile)}, nil
}

// Decide asks the endpoint configured by the environment (see FromEnv).
func Decide(ctx context.Context, req Request) (Decision, error) {
	c, err := FromEnv()
	if err != nil {
		return Decision{}, err
	}
	return c.Decide(ctx, req)
}

// Decide asks the endpoint whether req may proceed.
func (c *Client) Decide(ctx context.Context, req Request) (Decision, error) {
	if req.Passport == "" && req.AgentID == "" {
		req.Passport = c.Passport
	}
	var d Decision
	if err := c.post(ctx, "/v1/decide", req, &d); err != nil {
		return Decision{}, err
	}
	return d, nil
}

// Verify asks the OAP verify route (POST /api/verify/policy/{policyID}) about a call whose context
// holds the tool arguments plus agent_id, tool_name, thread_id or call_id; passport names the passport
// when the context has no agent_id. Only the policies with that policy id are evaluated.
func (c *Client) Verify(ctx context.Context, policyID, passport string, callContext map[string]any) (Decision, error) {
	if passport == "" && callContext["agent_id"] == nil {
		passport = c.Passport
	}
	body := struct {
		Passport string         `json:"passport,omitempty"`
		Context  map[string]any `json:"context"`
	}{passport, callContext}
	var out struct {
		Decision Decision `json:"decision"`
	}
	if err := c.post(ctx, "/api/verify/policy/"+url.PathEscape(policyID), body, &out); err != nil {
		return Decision{}, err
	}
	return out.Decision, nil
}

// DecideBatch asks about many requests in one round trip; the decisions are in request order.
func (c *Client) DecideBatch(ctx context.Context, reqs []Request) ([]Decision, error) {
	body := struct {
		Requests []Request `json:"requests"`
	}{Requests: make([]Request, len(reqs))}
	for i, r := range reqs {
		if r.Passport == "" && r.AgentID == "" {
			r.Passport = c.Passport
		}
		body.Requests[i] = r
	}
	var out struct {
		Decisions []Decision `json:"decisions"`
	}
	if err := c.post(ctx, "/v1/decide:batch", body, &out); err != nil {
		return nil, err
	}
	if len(out.Decisions) != len(reqs) {
		return nil, fmt.Errorf("tollgate: got %d decisions for %d requests", len(out.Decisions), len(reqs))
	}
	return out.Decisions, nil
}

func (c *Client) token() (string, error) {
	if c.TokenFile == "" {
		return c.Token, nil
	}
	data, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("tollgate: reading token: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

var defaultHTTPClient = &http.Client{Timeout: 10 * time.Second}

func (c *Client) post(ctx context.Context, path string, in, out any) error {
	if c.URL == "" {
		return errors.New("tollgate: client has no URL")
	}
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("tollgate: encoding request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.URL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("tollgate: building request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	// The caller's OpenTelemetry span, if ctx has one: the decision joins its trace (traceparent,
	// tracestate).
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(hr.Header))
	tok, err := c.token()
	if err != nil {
		return err
	}
	if tok != "" {
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return fmt.Errorf("tollgate: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("tollgate: reading response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Field   string `json:"field"`
			} `json:"error"`
		}
		ae := &APIError{StatusCode: resp.StatusCode, Message: strings.TrimSpace(string(data))}
		if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
			ae.Code, ae.Message, ae.Field = e.Error.Code, e.Error.Message, e.Error.Field
		}
		return ae
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("tollgate: decoding response: %w", err)
	}
	return nil
}
