package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

const (
	serveTokCoding = "serve-test-token-coding-0123"
	serveTokOther  = "serve-test-token-other-01234"
	serveTokNew    = "serve-test-token-new-0123456"
)

// decideAs POSTs lsRequest with an optional bearer token and returns the status and the decoded body.
func decideAs(t *testing.T, base, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/decide", strings.NewReader(lsRequest))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return resp.StatusCode, m
}

const lsRequest = `{"passport":"coding-agent","tool_name":"ls"}`

// TestServeDefaults checks that serve listens on loopback by default.
func TestServeDefaults(t *testing.T) {
	res := runBin(t, "", "serve", "-h")
	for _, want := range []string{`--bind-address string`, `(default "127.0.0.1:8080")`, "--token-file", "--kubeconfig", "--metrics-bind-address", "--decision-log-include-input"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("serve -h lacks %q:\n%s", want, res.stderr)
		}
	}
	res = runBin(t, "", "serve", "-f", "config/samples", "--token-file", "x", "--kubeconfig", "y")
	if res.code != 2 || !strings.Contains(res.stderr, "choose one") {
		t.Errorf("--token-file with --kubeconfig: exit %d %s", res.code, res.stderr)
	}
	dir := t.TempDir()
	bad := writeFile(t, dir, "tokens", "short coding-agent\n")
	res = runBin(t, "", "serve", "-f", "config/samples", "--addr", "127.0.0.1:0", "--token-file", bad)
	if res.code != 1 || !strings.Contains(res.stderr, "line 1") || strings.Contains(res.stderr, "short") {
		t.Errorf("invalid token file: exit %d %s", res.code, res.stderr)
	}
}

// TestServeTokenFile checks --token-file: 401 without a listed token, passports' subjects checked,
// and the file re-read when it changes and on SIGHUP.
func TestServeTokenFile(t *testing.T) {
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens", "# test callers\n"+
		serveTokCoding+" coding-agent\n"+
		serveTokOther+" system:serviceaccount:default:other-agent\n")
	base, logs, stop := startServe(t, "-f", "config/samples", "--token-file", tokens)
	if !strings.Contains(logs.String(), "bearer tokens from") {
		t.Errorf("startup line does not say authentication is on:\n%s", logs.String())
	}
	if code, _ := decideAs(t, base, ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _ := decideAs(t, base, "not-a-listed-token-at-all"); code != http.StatusUnauthorized {
		t.Errorf("unknown token: %d, want 401", code)
	}
	if code, d := decideAs(t, base, serveTokCoding); code != 200 || d["decision"] != "allow" {
		t.Errorf("listed subject: %d %v", code, d)
	}
	if code, d := decideAs(t, base, serveTokOther); code != 200 || firstCode(d) != "oap.subject_not_allowed" {
		t.Errorf("subject not in the passport: %d %v", code, d)
	}
	// GET routes stay open (probes, scrapes).
	if resp, err := http.Get(base + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("readyz with authentication on: %v %v", resp, err)
	}

	// A change to the file is picked up: the old token stops working, the new one works.
	writeFile(t, dir, "tokens", serveTokNew+" system:serviceaccount:default:coding-agent\n")
	waitStatus(t, base, serveTokCoding, http.StatusUnauthorized)
	waitStatus(t, base, serveTokNew, http.StatusOK)

	// SIGHUP re-reads it too, and does not stop the server.
	writeFile(t, dir, "tokens", serveTokCoding+" coding-agent\n")
	signalServe(t, logs, syscall.SIGHUP)
	waitStatus(t, base, serveTokCoding, http.StatusOK)
	waitStatus(t, base, serveTokNew, http.StatusUnauthorized)
	if strings.Contains(logs.String(), serveTokCoding) || strings.Contains(logs.String(), serveTokNew) {
		t.Errorf("a token reached the logs:\n%s", logs.String())
	}
	if code := stop(); code != 0 {
		t.Errorf("exit %d\n%s", code, logs.String())
	}
}

// serveProcs maps a running serve's logs to its process, for signalServe.
var serveProcs = map[*safeBuffer]*os.Process{}

func signalServe(t *testing.T, logs *safeBuffer, sig os.Signal) {
	t.Helper()
	p := serveProcs[logs]
	if p == nil {
		t.Fatal("no serve process for these logs")
	}
	if err := p.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// waitStatus polls until a decision with token answers status.
func waitStatus(t *testing.T, base, token string, status int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := decideAs(t, base, token)
		if code == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("token %s: still %d, want %d", token[:18], code, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeMetricsAddr checks --metrics-addr moves /metrics to its own listener.
func TestServeMetricsAddr(t *testing.T) {
	base, logs, _ := startServe(t, "-f", "config/samples", "--metrics-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`metrics on (http://\S+/metrics)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics address in:\n%s", logs.String())
	}
	postDecide(t, base, lsRequest)
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `tollgate_decisions_total{code="oap.allowed",outcome="allow"`) {
		t.Errorf("metrics listener: %d %.300s", resp.StatusCode, body)
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the API listener = %d, want 404", resp.StatusCode)
	}
}

// dryRunModify is a DryRun copy of the sample Modify policy: its would-be rewritten input carries
// the command.
const dryRunModify = `apiVersion: guardrails.tollgate.dev/v1alpha1
kind: GuardrailPolicy
metadata:
  name: git-no-pager-trial
spec:
  policyID: git.hygiene.trial
  enforcementAction: DryRun
  rules:
  - name: git-no-pager
    tools: ["bash"]
    when: "has(input.command) && input.command.startsWith('git ')"
    action: Modify
    modify:
      set:
      - path: command
        value: "'git --no-pager ' + input.command.substring(4)"
      remove: ["env"]
`

// TestServeDecisionLogInput checks that the decision log carries no argument value unless
// --decision-log-include-input is given.
func TestServeDecisionLogInput(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join(repoRoot, "config", "samples"), dir)
	writeFile(t, dir, "zz-dryrun-modify.yaml", dryRunModify)
	const secret = "s3cr3tVALUE"
	body := `{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"git log --grep=` + secret + `","env":{"K":"` + secret + `"}}}`
	for _, include := range []bool{false, true} {
		args := []string{"-f", dir, "--decision-log", "--log-format", "json"}
		if include {
			args = append(args, "--decision-log-include-input")
		}
		base, logs, stop := startServe(t, args...)
		d := postDecide(t, base, body)
		if d["decision"] != "modify" {
			t.Fatalf("decision = %v", d)
		}
		stop()
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"decision_id":"`+d["decision_id"].(string)+`"`) {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("no decision-log line:\n%s", logs.String())
		}
		if !strings.Contains(line, `"dry_run":[{"policy_id":"git.hygiene.trial#git-no-pager","decision":"modify"`) ||
			!strings.Contains(line, `"changed_fields":["command"]`) || !strings.Contains(line, `"removed_fields":["env"]`) {
			t.Errorf("include=%v: the log line lacks the dry-run result or its field names: %s", include, line)
		}
		if got := strings.Contains(line, secret); got != include {
			t.Errorf("include=%v: argument value in the log = %v: %s", include, got, line)
		}
		if include && !strings.Contains(line, `"modified_input":{"command":"git --no-pager log --grep=`+secret+`"}`) {
			t.Errorf("include: modified_input missing: %s", line)
		}
	}
}

// TestServeTokenReview checks --kubeconfig: callers are authenticated with TokenReview against a
// real API server (envtest) and checked against passports' subjects.
func TestServeTokenReview(t *testing.T) {
	env, err := testenv.New()
	if err != nil {
		t.Fatalf("the envtest control plane must start (this suite never skips): %v", err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "tollgate-serve", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := writeFile(t, t.TempDir(), "kubeconfig", string(kc))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	token := func(name, audience string) string {
		ctx := context.Background()
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
		exp := int64(3600)
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authnv1.TokenRequest{
			Spec: authnv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	base, logs, stop := startServe(t, "-f", "config/samples", "--kubeconfig", kubeconfig)
	if !strings.Contains(logs.String(), "TokenReview") {
		t.Errorf("startup line does not say authentication is on:\n%s", logs.String())
	}
	if code, d := decideAs(t, base, token("coding-agent", "tollgate")); code != 200 || d["decision"] != "allow" {
		t.Errorf("coding-agent token: %d %v", code, d)
	}
	if code, d := decideAs(t, base, token("other-agent", "tollgate")); code != 200 || firstCode(d) != "oap.subject_not_allowed" {
		t.Errorf("other-agent token: %d %v", code, d)
	}
	if code, _ := decideAs(t, base, token("coding-agent", "https://kubernetes.default.svc")); code != http.StatusUnauthorized {
		t.Errorf("wrong audience: %d, want 401", code)
	}
	if code, _ := decideAs(t, base, ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit %d\n%s", code, logs.String())
	}
}
