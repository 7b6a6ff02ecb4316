// Package policytest runs Tollgate policy test files: YAML documents naming the policies and
// passports under test and cases of decision requests with their expected outcome, in the spirit of
// `kyverno test` and `opa test`. It also provides Endpoint, the decider's HTTP API answering from
// manifests in memory, shared with `tollgate eval`.
package policytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Endpoint answers decision requests from a set of manifests exactly as the decision endpoint's
// POST /v1/decide does: same request decoding and validation, same namespace resolution, same JSON.
type Endpoint struct {
	handler http.Handler
}

// NewEndpoint compiles set (every problem is reported with its file and field path, see
// manifest.InvalidError) and returns an endpoint answering from it. defaultNamespace resolves bare
// passport names ("" means: the one namespace holding the passport).
func NewEndpoint(set *manifest.Set, defaultNamespace string, opts ...policy.Option) (*Endpoint, error) {
	if _, err := set.Compile(opts...); err != nil {
		return nil, err
	}
	bundles, err := set.Bundles()
	if err != nil {
		return nil, err
	}
	store := decider.NewStore(decider.WithCompileOptions(opts...))
	for _, b := range bundles {
		if err := store.Load(b); err != nil {
			return nil, err
		}
	}
	srv := decider.NewServer(store, decider.Options{
		DefaultNamespace: defaultNamespace,
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return &Endpoint{handler: srv}, nil
}

// RequestError is a request the endpoint refused (HTTP 4xx): Body is its JSON error answer.
type RequestError struct {
	// Status is the HTTP status.
	Status int
	// Code and Field and Message come from the answer's error object.
	Code, Field, Message string
	// Body is the raw answer.
	Body []byte
}

// Error returns "request: field: message".
func (e *RequestError) Error() string {
	if e.Field != "" && !strings.HasPrefix(e.Message, e.Field+":") {
		return fmt.Sprintf("invalid request: %s: %s", e.Field, e.Message)
	}
	return "invalid request: " + e.Message
}

// Decide posts body (a decision request as JSON) and returns the decision and its JSON as the
// endpoint wrote it. A refused request is a *RequestError.
func (e *Endpoint) Decide(ctx context.Context, body []byte) (policy.Decision, []byte, error) {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/decide", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	out := rec.Body.Bytes()
	if rec.Code != http.StatusOK {
		var answer struct {
			Error struct {
				Code    string `json:"code"`
				Field   string `json:"field"`
				Message string `json:"message"`
			} `json:"error"`
		}
		re := &RequestError{Status: rec.Code, Body: out}
		if err := json.Unmarshal(out, &answer); err == nil && answer.Error.Message != "" {
			re.Code, re.Field, re.Message = answer.Error.Code, answer.Error.Field, answer.Error.Message
		} else {
			re.Message = fmt.Sprintf("HTTP %d: %s", rec.Code, strings.TrimSpace(string(out)))
		}
		return policy.Decision{}, out, re
	}
	var d policy.Decision
	if err := json.Unmarshal(out, &d); err != nil {
		return policy.Decision{}, out, fmt.Errorf("decoding the decision: %w", err)
	}
	return d, out, nil
}

// RequestJSON turns a request written as JSON or YAML into JSON, rejecting fields the decision
// request does not have (a typo like tool_imput would otherwise be ignored silently).
func RequestJSON(data []byte) ([]byte, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("invalid request: %w", err)
	}
	j = bytes.TrimSpace(j)
	if len(j) == 0 || j[0] != '{' {
		return nil, fmt.Errorf("invalid request: want an object, got %s", clip(string(j)))
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var req policy.Request
	if err := dec.Decode(&req); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return nil, fmt.Errorf("invalid request: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		// Type errors are reported by the endpoint itself, with field paths.
	}
	return j, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
