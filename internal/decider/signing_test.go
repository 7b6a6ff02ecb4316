package decider

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// testSigner returns a signer of a fresh key "k2" that also publishes a retired key "k1".
func testSigner(t testing.TB) (*Signer, JWK) {
	t.Helper()
	old, err := GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := GenerateKey("k2")
	if err != nil {
		t.Fatal(err)
	}
	old.D = "" // retired: public part only
	s, err := NewSigner(JWKS{Keys: []JWK{cur, old}})
	if err != nil {
		t.Fatal(err)
	}
	return s, old
}

// TestSignedDecisionsOverHTTP signs every answer of /v1/decide, the batch and the verify route,
// serves both keys at the JWKS endpoint, and verifies the answers against it; a changed decision
// fails verification.
func TestSignedDecisionsOverHTTP(t *testing.T) {
	signer, _ := testSigner(t)
	_, ts := startServer(t, samplesStore(t), Options{Signer: signer})
	code, jwksBody := call(t, http.MethodGet, ts.URL+"/.well-known/jwks.json", nil, nil)
	if code != http.StatusOK {
		t.Fatalf("GET jwks = %d %s", code, jwksBody)
	}
	set, err := ParseJWKS(jwksBody)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 || set.Keys[0].Kid != "k2" || set.Keys[1].Kid != "k1" || bytes.Contains(jwksBody, []byte(`"d"`)) {
		t.Fatalf("published set %s", jwksBody)
	}
	req := map[string]any{"passport": "team-a/coding-agent", "tool_name": "bash", "tool_input": map[string]any{"command": "rm -rf /"}}
	code, body := call(t, http.MethodPost, ts.URL+"/v1/decide", req, nil)
	if code != http.StatusOK {
		t.Fatalf("decide = %d %s", code, body)
	}
	kid, err := VerifyDecision(body, set)
	if err != nil || kid != "k2" {
		t.Fatalf("verify = %q, %v (%s)", kid, err, body)
	}
	tampered := bytes.Replace(body, []byte(`"allow":false`), []byte(`"allow":true`), 1)
	if _, err := VerifyDecision(tampered, set); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("tampered decision verified: %v", err)
	}
	// Re-encoded (indented, keys reordered by a map round trip), it still verifies: the signature is
	// over the canonical form.
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	pretty, _ := json.MarshalIndent(m, "", "  ")
	if _, err := VerifyDecision(pretty, set); err != nil {
		t.Fatalf("re-encoded decision: %v", err)
	}

	code, body = call(t, http.MethodPost, ts.URL+"/v1/decide:batch", map[string]any{"requests": []any{req, req}}, nil)
	if code != http.StatusOK {
		t.Fatalf("batch = %d %s", code, body)
	}
	var br struct{ Decisions []json.RawMessage }
	if err := json.Unmarshal(body, &br); err != nil || len(br.Decisions) != 2 {
		t.Fatalf("batch body %s: %v", body, err)
	}
	for i, d := range br.Decisions {
		if _, err := VerifyDecision(d, set); err != nil {
			t.Errorf("batch decision %d: %v", i, err)
		}
	}

	code, body = call(t, http.MethodPost, ts.URL+verifyPrefix+"system.command.execute.v1", map[string]any{
		"context": map[string]any{"agent_id": "ap_coding_agent_01", "tool_name": "bash", "command": "ls"}}, nil)
	if code != http.StatusOK {
		t.Fatalf("verify route = %d %s", code, body)
	}
	if _, err := VerifyDecision(body, set); err != nil || !bytes.Contains(body, []byte(`"passport_id":"ap_coding_agent_01","signature":`)) {
		t.Fatalf("verify route answer %s: %v", body, err)
	}
}

// TestSigningKeys checks the key set's rules: a key must be Ed25519 with x matching d, kids are
// unique, a set needs a private key to sign, an unknown kid and an unsigned decision do not verify.
func TestSigningKeys(t *testing.T) {
	k, _ := GenerateKey("")
	if k.Kid == "" || len(k.Kid) != 43 {
		t.Fatalf("thumbprint kid %q", k.Kid)
	}
	other, _ := GenerateKey("x")
	for name, set := range map[string]string{
		"not OKP":    `{"keys":[{"kty":"EC","crv":"P-256","x":"` + k.X + `"}]}`,
		"x of d":     `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + other.X + `","d":"` + k.D + `"}]}`,
		"kid twice":  `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"` + k.X + `"},{"kty":"OKP","crv":"Ed25519","kid":"a","x":"` + other.X + `"}]}`,
		"no keys":    `{"keys":[]}`,
		"short x":    `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA"}]}`,
		"not a JWKS": `[1]`,
	} {
		if _, err := ParseJWKS([]byte(set)); err == nil {
			t.Errorf("%s: ParseJWKS accepted %s", name, set)
		}
	}
	pubOnly := k
	pubOnly.D = ""
	if _, err := NewSigner(JWKS{Keys: []JWK{pubOnly}}); err == nil {
		t.Error("a set without a private key made a signer")
	}
	s, err := NewSigner(JWKS{Keys: []JWK{k}})
	if err != nil {
		t.Fatal(err)
	}
	signed, err := s.Sign([]byte(`{"decision_id":"a","allow":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyDecision(signed, JWKS{Keys: []JWK{other}}); err == nil || !strings.Contains(err.Error(), "not in the key set") {
		t.Errorf("verified with the wrong set: %v", err)
	}
	if _, err := VerifyDecision([]byte(`{"decision_id":"a"}`), JWKS{Keys: []JWK{k}}); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Errorf("unsigned: %v", err)
	}
}

// TestJWKSWithoutSigner answers 404 when decisions are not signed.
func TestJWKSWithoutSigner(t *testing.T) {
	_, ts := startServer(t, samplesStore(t), Options{})
	if code, body := call(t, http.MethodGet, ts.URL+"/.well-known/jwks.json", nil, nil); code != http.StatusNotFound {
		t.Fatalf("GET jwks without signer = %d %s", code, body)
	}
}
