package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/decider"
)

// TestKeygenAndVerify writes a key set with keygen, signs a decision with it, and verifies it with
// tollgate verify from a file and from stdin; a changed decision and an unknown key exit 1.
func TestKeygenAndVerify(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"keygen", "--kid", "k1"}, nil, &out, &errb); code != 0 {
		t.Fatalf("keygen exit %d: %s", code, errb.String())
	}
	set, err := decider.ParseJWKS(out.Bytes())
	if err != nil || len(set.Keys) != 1 || set.Keys[0].Kid != "k1" || set.Keys[0].D == "" {
		t.Fatalf("keygen wrote %s: %v", out.String(), err)
	}
	signer, err := decider.NewSigner(set)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := signer.Sign([]byte(`{"decision_id":"d-1","allow":false,"decision":"deny","reasons":[{"code":"oap.blocked_pattern"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(dir, "jwks.json")
	decision := filepath.Join(dir, "decision.json")
	if err := os.WriteFile(jwks, signer.JWKSJSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(decision, signed, 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"verify", "--jwks", jwks, decision}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "valid: decision d-1 (deny) signed by key k1") {
		t.Fatalf("verify exit %d: %s %s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"verify", "--jwks", jwks}, bytes.NewReader(signed), &out, &errb); code != 0 {
		t.Fatalf("verify from stdin exit %d: %s", code, errb.String())
	}
	errb.Reset()
	tampered := bytes.Replace(signed, []byte(`"deny"`), []byte(`"allow"`), 1)
	if code := run([]string{"verify", "--jwks", jwks}, bytes.NewReader(tampered), &out, &errb); code != 1 || !strings.Contains(errb.String(), "does not match") {
		t.Fatalf("tampered: exit %d: %s", code, errb.String())
	}
	other, _ := decider.GenerateKey("k2")
	other.D = ""
	otherSet, _ := json.Marshal(decider.JWKS{Keys: []decider.JWK{other}})
	if err := os.WriteFile(jwks, otherSet, 0o600); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"verify", "--jwks", jwks, decision}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "not in the key set") {
		t.Fatalf("unknown key: exit %d: %s", code, errb.String())
	}
	if code := run([]string{"verify", decision}, nil, &out, &errb); code != exitUsage {
		t.Fatalf("verify without --jwks: exit %d", code)
	}
}
