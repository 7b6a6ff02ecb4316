package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/pkg/client"
)

// server serves a one-passport bundle over loopback; callers must present token "good-token",
// which authenticates as ServiceAccount agents/agent.
func server(t *testing.T) *httptest.Server {
	t.Helper()
	store := decider.NewStore()
	b := policy.Bundle{Namespace: "agents", Passports: []policy.Passport{{Name: "agent", Spec: policy.PassportSpec{
		AgentID: "ap_agent", Owner: policy.PassportOwner{ID: "team"}, Status: policy.StatusActive,
		Capabilities: []policy.Capability{{ID: "system.command.execute"}},
		Limits:       map[string]any{"system.command.execute": map[string]any{"allowed_commands": []any{"ls", "git"}}},
		Subjects:     policy.PassportSubjects{ServiceAccounts: []string{"agent"}},
	}}}}
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	authn := decider.AuthenticatorFunc(func(_ context.Context, tok string) (decider.Caller, error) {
		if tok != "good-token" {
			return decider.Caller{}, decider.ErrUnauthenticated
		}
		return decider.Caller{Namespace: "agents", ServiceAccount: "agent"}, nil
	})
	srv := decider.NewServer(store, decider.Options{Authenticator: authn})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts
}

func TestDecideFromEnv(t *testing.T) {
	ts := server(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("good-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(client.EnvURL, ts.URL+"/")
	t.Setenv(client.EnvPassport, "agents/agent")
	t.Setenv(client.EnvTokenFile, tokenFile)
	ctx := context.Background()

	d, err := client.Decide(ctx, client.Request{ToolName: "bash", ToolInput: map[string]any{"command": "ls -l"}})
	if err != nil || !d.Allow || d.Decision != "allow" || d.DecisionID == "" || d.Reasons[0].Code != "oap.allowed" {
		t.Fatalf("allow: %+v %v", d, err)
	}
	d, err = client.Decide(ctx, client.Request{ToolName: "bash", ToolInput: map[string]any{"command": "rm x"}})
	if err != nil || d.Allow || d.Reasons[0].Code != "oap.command_not_allowed" {
		t.Fatalf("deny is a decision, not an error: %+v %v", d, err)
	}
	c, err := client.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := c.DecideBatch(ctx, []client.Request{{ToolName: "bash", ToolInput: map[string]any{"command": "git log"}}, {AgentID: "ap_agent", ToolName: "bash", ToolInput: map[string]any{"command": "sudo"}}})
	if err != nil || len(ds) != 2 || !ds[0].Allow || ds[1].Allow {
		t.Fatalf("batch: %+v %v", ds, err)
	}

	// Errors: a malformed request names the field; a bad token is unauthenticated.
	_, err = client.Decide(ctx, client.Request{})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || ae.Field != "tool_name" {
		t.Errorf("missing tool_name: %v", err)
	}
	if err := os.WriteFile(tokenFile, []byte("rotated-but-wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = client.Decide(ctx, client.Request{ToolName: "bash"})
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized || ae.Code != "unauthenticated" {
		t.Errorf("wrong token: %v", err)
	}
	t.Setenv(client.EnvURL, "")
	if _, err := client.Decide(ctx, client.Request{ToolName: "bash"}); err == nil {
		t.Errorf("Decide without %s succeeded", client.EnvURL)
	}
}
