package decider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// NewManifestService returns a service deciding from a set of manifests, each namespace's bundle
// compiled once (Store.LoadSet: every problem is reported with its file and field path, see
// manifest.InvalidError), without authentication or decision log: `tollgate eval` and `tollgate
// test`. defaultNamespace resolves bare passport names ("" means: the one namespace holding the
// passport).
func NewManifestService(set *manifest.Set, defaultNamespace string, opts ...policy.Option) (*Service, error) {
	store := NewStore(WithCompileOptions(opts...))
	if _, err := store.LoadSet(set); err != nil {
		return nil, err
	}
	return NewService(store, ServiceOptions{DefaultNamespace: defaultNamespace}), nil
}

// DecideJSON answers body, one decision request as JSON, exactly as POST /v1/decide does for
// caller (nil: authentication off): the same body bound (DefaultMaxBodyBytes), strict decoding and
// validation, decision and JSON. It returns the decision and its JSON (with a final newline). A
// request the service refuses is an error "invalid request: …" wrapping its *RequestError.
func (s *Service) DecideJSON(ctx context.Context, body []byte, caller *Caller) (*policy.Decision, []byte, error) {
	if len(body) > DefaultMaxBodyBytes {
		return nil, nil, invalidRequest(tooLarge(DefaultMaxBodyBytes))
	}
	req, err := DecodeRequest(body)
	if err != nil {
		return nil, nil, invalidRequest(asRequestError(err))
	}
	d, err := s.Decide(ctx, &req, caller)
	if err != nil {
		return nil, nil, invalidRequest(asRequestError(err))
	}
	out, err := appendDecision(nil, d)
	if err != nil {
		if out, err = json.Marshal(d); err != nil {
			return nil, nil, fmt.Errorf("encoding the decision: %w", err)
		}
	}
	return d, append(out, '\n'), nil
}

// invalidRequest is a refused request as DecideJSON reports it.
func invalidRequest(re *RequestError) error {
	return fmt.Errorf("invalid request: %w", re)
}

// RequestJSON turns a request written as JSON or YAML into JSON for DecideJSON, rejecting fields
// the decision request does not have (a typo like tool_imput would otherwise be ignored silently).
// Type errors are left to DecideJSON, which names the field.
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
	if err := dec.Decode(&req); err != nil && strings.Contains(err.Error(), "unknown field") {
		return nil, fmt.Errorf("invalid request: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return j, nil
}
