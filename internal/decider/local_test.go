package decider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

func TestRequestJSON(t *testing.T) {
	tests := []struct {
		in, wantErr string
	}{
		{in: `{"passport":"p","tool_name":"bash"}`},
		{in: "passport: p\ntool_name: bash\n"},
		{in: `{"passport":"p","tool":"bash"}`, wantErr: `unknown field "tool"`},
		{in: `[1]`, wantErr: "want an object"},
		{in: "a: [", wantErr: "invalid request"},
	}
	for _, tt := range tests {
		_, err := RequestJSON([]byte(tt.in))
		if (err != nil) != (tt.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("RequestJSON(%q) error = %v, want %q", tt.in, err, tt.wantErr)
		}
	}
}

// samplesSet loads config/samples as manifests.
func samplesSet(t *testing.T) *manifest.Set {
	t.Helper()
	set, err := manifest.Load(filepath.Join(testenv.RepoRoot(), "config", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// withoutInstance drops the fields that differ between two answers to the same request
// (decision_id, created_at) from a decision's JSON.
func withoutInstance(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	delete(m, "decision_id")
	delete(m, "created_at")
	return m
}

// TestDecideJSONAnswersAsTheHTTPRoute checks that the service's in-process JSON answer (what
// `tollgate eval` prints and `tollgate test` checks) is the answer of POST /v1/decide over
// loopback HTTP: the same decision JSON, and the same refusals with the same field and message.
func TestDecideJSONAnswersAsTheHTTPRoute(t *testing.T) {
	svc, err := NewManifestService(samplesSet(t), "")
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore()
	if _, err := store.LoadSet(samplesSet(t)); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{})
	for _, body := range []string{
		`{"passport":"coding-agent","tool_name":"ls","tool_input":{"path":"."}}`,
		`{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"git log"}}`,
		`{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"ls && rm -rf /"}}`,
		`{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"ls && rm -rf /"},"hook":"pre_llm_call","messages":[{"role":"user","content":"hi"}]}`,
		`{"passport":"nobody","tool_name":"ls"}`,
		`{"passport":"elsewhere/coding-agent","tool_name":"ls"}`,
	} {
		d, out, err := svc.DecideJSON(context.Background(), []byte(body), nil)
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if !bytes.HasSuffix(out, []byte("}\n")) {
			t.Errorf("%s: answer %q does not end in a newline", body, out)
		}
		code, want := call(t, http.MethodPost, ts.URL+"/v1/decide", body, nil)
		if code != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", body, code, want)
		}
		if got, w := withoutInstance(t, out), withoutInstance(t, want); !reflect.DeepEqual(got, w) {
			t.Errorf("%s:\n in process %v\n over HTTP  %v", body, got, w)
		}
		var back policy.Decision
		if err := json.Unmarshal(out, &back); err != nil || back.Decision != d.Decision || back.DecisionID != d.DecisionID {
			t.Errorf("%s: the returned decision %s/%s is not the JSON's %s/%s (%v)", body, d.Decision, d.DecisionID, back.Decision, back.DecisionID, err)
		}
	}

	// Refusals: the HTTP route's 4xx answers, as "invalid request: field: message" wrapping the
	// *RequestError.
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"passport":"coding-agent"}`, http.StatusBadRequest},
		{`{"tool_name":"ls"}`, http.StatusBadRequest},
		{`{"passport":"coding-agent","tool_name":"ls","tool_name":"bash"}`, http.StatusBadRequest},
		{`{"passport":"coding-agent","tool_name":"ls","x":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		_, out, err := svc.DecideJSON(context.Background(), []byte(tc.body), nil)
		var re *RequestError
		if !errors.As(err, &re) || out != nil {
			t.Errorf("%.60s: err %v, out %q: want a *RequestError and no answer", tc.body, err, out)
			continue
		}
		code, data := call(t, http.MethodPost, ts.URL+"/v1/decide", tc.body, nil)
		var answer struct{ Error errorBody }
		if err := json.Unmarshal(data, &answer); err != nil || code != tc.status {
			t.Fatalf("%.60s: HTTP %d %s", tc.body, code, data)
		}
		if re.Code != answer.Error.Code || re.Field != answer.Error.Field || err.Error() != "invalid request: "+answer.Error.Message {
			t.Errorf("%.60s: in process %q (%s, %s), over HTTP %q (%s, %s)", tc.body, err, re.Code, re.Field,
				answer.Error.Message, answer.Error.Code, answer.Error.Field)
		}
	}
}

// TestLoadSetCompilesOnce checks that Store.LoadSet compiles each namespace once, with the store's
// options, that a set with a mistake changes nothing and names the file, and that a good set is
// served in one swap beside the namespaces it does not hold.
func TestLoadSetCompilesOnce(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `apiVersion: guardrails.tollgate.dev/v1alpha1
kind: GuardrailPolicy
metadata: {name: external, namespace: team-c}
spec:
  policyID: external.v1
  externalEvaluator: {url: "http://127.0.0.1:1/evaluate"}
---
apiVersion: guardrails.tollgate.dev/v1alpha1
kind: AgentPassport
metadata: {name: agent, namespace: team-c}
spec:
  owner: {id: owner@example.com, type: user}
  assuranceLevel: L2
`)
	factoryCalls := 0
	store := NewStore(WithCompileOptions(policy.WithEvaluators(func(spec policy.ExternalEvaluatorSpec) policy.Evaluator {
		factoryCalls++
		return NewEvaluatorPool(EvaluatorConfig{}).Evaluator(spec)
	})))
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	set, err := manifest.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	namespaces, err := store.LoadSet(set)
	if err != nil {
		t.Fatal(err)
	}
	if factoryCalls != 1 {
		t.Errorf("the policy's evaluator was built %d times: want one compile", factoryCalls)
	}
	if !reflect.DeepEqual(namespaces, []string{"team-c"}) || !reflect.DeepEqual(store.Namespaces(), []string{"team-a", "team-c"}) {
		t.Errorf("loaded %v, serving %v: want [team-c] beside team-a", namespaces, store.Namespaces())
	}
	if store.policyLabel("external.v1") != "external.v1" {
		t.Errorf("the set's policy id is not a metric label")
	}

	bad := write("bad.yaml", `apiVersion: guardrails.tollgate.dev/v1alpha1
kind: AgentPassport
metadata: {name: broken, namespace: team-d}
spec:
  assuranceLevel: L2
`)
	set, err = manifest.Load(good, bad)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := store.Snapshot("team-c")
	_, err = store.LoadSet(set)
	var invalid *manifest.InvalidError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "bad.yaml") {
		t.Fatalf("LoadSet(bad) = %v, want a *manifest.InvalidError naming bad.yaml", err)
	}
	if after, _ := store.Snapshot("team-c"); after != before || store.Len() != 2 || store.LoadErrors() != 0 {
		t.Errorf("a set with a mistake changed the store (snapshot swapped %t, %d namespaces, %d errors recorded)",
			after != before, store.Len(), store.LoadErrors())
	}
}
