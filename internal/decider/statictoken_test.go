package decider

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

const (
	tokCoding = "tok-coding-agent-0123456789"
	tokPlain  = "tok-plain-name-0123456789ab"
	tokOther  = "tok-other-agent-0123456789"
)

func writeTokens(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestStaticTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, "# callers\n\n"+tokCoding+" system:serviceaccount:team-a:coding-agent\n  "+tokPlain+"\tcoding-agent  \n")
	a, err := NewStaticTokenAuthenticator(path)
	if err != nil {
		t.Fatal(err)
	}
	if a.Len() != 2 {
		t.Fatalf("Len = %d", a.Len())
	}
	ctx := context.Background()
	for tok, want := range map[string]Caller{
		tokCoding: {Namespace: "team-a", ServiceAccount: "coding-agent"},
		tokPlain:  {ServiceAccount: "coding-agent", AnyNamespace: true},
	} {
		got, err := a.Authenticate(ctx, tok)
		if err != nil || got != want {
			t.Errorf("Authenticate(%s) = %+v, %v; want %+v", tok, got, err, want)
		}
	}
	for _, tok := range []string{"", tokCoding + "x", tokCoding[:len(tokCoding)-1], strings.ToUpper(tokCoding), "system:serviceaccount:team-a:coding-agent"} {
		if _, err := a.Authenticate(ctx, tok); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Authenticate(%q) err = %v, want ErrUnauthenticated", tok, err)
		}
	}

	// Unchanged content is not re-parsed; a change is.
	if changed, err := a.Reload(); changed || err != nil {
		t.Errorf("Reload of unchanged file = %v, %v", changed, err)
	}
	writeTokens(t, path, tokOther+" system:serviceaccount:team-a:other-agent\n")
	if changed, err := a.Reload(); !changed || err != nil {
		t.Errorf("Reload = %v, %v", changed, err)
	}
	if _, err := a.Authenticate(ctx, tokCoding); err == nil {
		t.Errorf("a removed token still authenticates")
	}
	if c, err := a.Authenticate(ctx, tokOther); err != nil || c.ServiceAccount != "other-agent" {
		t.Errorf("new token: %+v %v", c, err)
	}

	// An invalid file fails closed (no token authenticates) and its errors never quote a token.
	writeTokens(t, path, tokOther+" system:serviceaccount:team-a:other-agent\nshort coding-agent\n")
	_, err = a.Reload()
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "short") || strings.Contains(err.Error(), tokOther) {
		t.Errorf("Reload of invalid file err = %v", err)
	}
	if _, err := a.Authenticate(ctx, tokOther); err == nil {
		t.Errorf("an invalid token file still authenticates")
	}
	writeTokens(t, path, tokOther+" system:serviceaccount:team-a:other-agent\n")
	if _, err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, tokOther); err != nil {
		t.Errorf("after the fix: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reload(); err == nil {
		t.Errorf("Reload of a missing file succeeded")
	}
	if _, err := a.Authenticate(ctx, tokOther); err == nil {
		t.Errorf("a deleted token file still authenticates")
	}
}

func TestStaticTokenFileErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":            "# nothing\n",
		"one field":        tokCoding + "\n",
		"three fields":     tokCoding + " coding-agent extra\n",
		"short token":      "0123456789 coding-agent\n",
		"bad subject":      tokCoding + " Coding_Agent\n",
		"bad sa user":      tokCoding + " system:serviceaccount:team-a\n",
		"non-sa user":      tokCoding + " system:admin\n",
		"repeated token":   tokCoding + " a\n" + tokCoding + " b\n",
		"control in token": tokCoding + "\x01 coding-agent\n",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		writeTokens(t, path, content)
		_, err := NewStaticTokenAuthenticator(path)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), tokCoding) {
			t.Errorf("%s: error quotes the token: %v", name, err)
		}
	}
	if _, err := NewStaticTokenAuthenticator(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("a missing file was accepted")
	}
	big := filepath.Join(dir, "big")
	writeTokens(t, big, strings.Repeat("#", MaxStaticTokenFileBytes+1))
	if _, err := NewStaticTokenAuthenticator(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
}

// TestStaticTokenSubjects checks static-token callers against passports' subjects over HTTP.
func TestStaticTokenSubjects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, strings.Join([]string{
		tokCoding + " system:serviceaccount:team-a:coding-agent",
		tokPlain + " coding-agent",
		tokOther + " system:serviceaccount:team-b:coding-agent",
	}, "\n"))
	a, err := NewStaticTokenAuthenticator(path)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{Authenticator: a})
	req := map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	for name, tok := range map[string]string{"full subject": tokCoding, "plain name": tokPlain} {
		if d := decide(t, ts.URL, req, bearer(tok)); d.Decision != policy.DecisionAllow {
			t.Errorf("%s: %s %v", name, d.Decision, d.Reasons)
		}
	}
	if d := decide(t, ts.URL, req, bearer(tokOther)); firstCode(d) != policy.CodeSubjectNotAllowed {
		t.Errorf("other namespace: %s %v", d.Decision, d.Reasons)
	}
	code, body := call(t, http.MethodPost, ts.URL+"/v1/decide", req, bearer("tok-unknown-0123456789"))
	if code != http.StatusUnauthorized || strings.Contains(string(body), "tok-unknown") {
		t.Errorf("unknown token: %d %s", code, body)
	}
	if code, _ := call(t, http.MethodPost, ts.URL+"/v1/decide", req, nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
}

func TestSeparateMetrics(t *testing.T) {
	store := NewStore()
	srv, ts := startServer(t, store, Options{SeparateMetrics: true})
	if code, _ := call(t, http.MethodGet, ts.URL+"/metrics", nil, nil); code != http.StatusNotFound {
		t.Errorf("/metrics on the API listener = %d, want 404", code)
	}
	mh := srv.MetricsHandler()
	for path, want := range map[string]int{"/metrics": 200, "/v1/decide": 404, "/": 404} {
		rec := httptest.NewRecorder()
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		mh.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("metrics listener %s = %d, want %d", path, rec.Code, want)
		}
	}
}
