package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/pkg/client"
)

// Caller is the agent behind an MCP request.
type Caller struct {
	// Identity is the agent's ServiceAccount when the proxy authenticated its token itself; nil when
	// authentication is off or left to a remote decider.
	Identity *decider.Caller
	// Token is the bearer token the agent presented ("" when authentication is off). A
	// RemoteDecider forwards it, so that the decider authenticates the agent exactly as when the
	// agent asks it directly.
	Token string
}

// Decider answers the proxy's decision requests: pre_tool_call for each tools/call, post_tool_call
// for each result, and visibility probes for tools/list (see visibility.go). A deny is a Decision;
// an error means no decision could be made, and the proxy then fails closed.
type Decider interface {
	Decide(ctx context.Context, req *policy.Request, caller Caller) (policy.Decision, error)
}

// InProcess decides in this process through the decision service (decider.Service), from the
// same compiled bundles the decision endpoint serves (manifest files, or the cluster's bundle
// ConfigMaps), with its decision log and metrics.
type InProcess struct {
	// Service is the decision service.
	Service *decider.Service
}

// Decide asks the service. A request the service cannot use (it names no passport and the caller has
// none, or several; a bare passport name that is ambiguous) is a deny: oap.passport_not_found when
// the passport is the problem, else oap.invalid_request.
func (d *InProcess) Decide(ctx context.Context, req *policy.Request, caller Caller) (policy.Decision, error) {
	dec, err := d.Service.Decide(ctx, req, caller.Identity)
	if err != nil {
		var re *decider.RequestError
		if !errors.As(err, &re) {
			return policy.Decision{}, fmt.Errorf("deciding: %w", err)
		}
		code := policy.CodeInvalidRequest
		if re.Field == "passport" {
			code = policy.CodePassportNotFound
		}
		return policy.Decision{Decision: policy.DecisionDeny, Reasons: []policy.Reason{{Code: code, Message: re.Error()}}}, nil
	}
	return *dec, nil
}

// Remote asks a decision endpoint (tollgate decider or tollgate serve) over HTTP.
type Remote struct {
	// Client is the endpoint's client. Its Token or TokenFile is presented when the agent presented
	// none (authentication off at the proxy); otherwise the agent's own token is forwarded.
	Client *client.Client
}

// Decide asks the endpoint: POST /v1/decide, or for a visibility probe (req.PolicyID set) POST
// /api/verify/policy/{policy_id}. A 4xx or 5xx answer, or no answer, is an error.
func (d *Remote) Decide(ctx context.Context, req *policy.Request, caller Caller) (policy.Decision, error) {
	c := *d.Client
	if caller.Token != "" {
		c.Token, c.TokenFile = caller.Token, ""
	}
	var cd client.Decision
	var err error
	if req.PolicyID != "" {
		if req.Passport == "" && req.AgentID == "" {
			return policy.Decision{}, errCannotProbe
		}
		callContext := make(map[string]any, len(req.ToolInput)+1)
		for k, v := range req.ToolInput {
			callContext[k] = v
		}
		callContext["tool_name"] = req.ToolName
		if req.CallID != "" {
			callContext["call_id"] = req.CallID
		}
		cd, err = c.Verify(ctx, req.PolicyID, req.Passport, callContext)
	} else {
		cd, err = c.Decide(ctx, client.Request{
			Passport: req.Passport, AgentID: req.AgentID, ToolName: req.ToolName, ToolInput: req.ToolInput,
			ToolResult: req.ToolResult, Hook: req.Hook, ThreadID: req.ThreadID, CallID: req.CallID,
		})
	}
	if err != nil {
		return policy.Decision{}, fmt.Errorf("asking the decision endpoint: %w", err)
	}
	return fromClient(cd), nil
}

// fromClient converts the endpoint's answer.
func fromClient(cd client.Decision) policy.Decision {
	d := policy.Decision{
		DecisionID: cd.DecisionID, Allow: cd.Allow, Decision: cd.Decision, PolicyID: cd.PolicyID,
		ModifiedInput: cd.ModifiedInput, PassportDigest: cd.PassportDigest, BundleRevision: cd.BundleRevision,
		CreatedAt: cd.CreatedAt, ExpiresIn: cd.ExpiresIn,
	}
	d.Reasons = make([]policy.Reason, len(cd.Reasons))
	for i, r := range cd.Reasons {
		d.Reasons[i] = policy.Reason{Code: r.Code, Message: r.Message}
	}
	return d
}

// unauthenticated reports whether err is the endpoint refusing the agent's token.
func unauthenticated(err error) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.StatusCode == http.StatusUnauthorized
}
