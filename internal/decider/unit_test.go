package decider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

func TestStoreLoadKeepsLastGoodAndResolves(t *testing.T) {
	store := NewStore()
	good := samplesBundle(t, "team-a")
	if err := store.Load(good); err != nil {
		t.Fatal(err)
	}
	bad := samplesBundle(t, "team-a")
	bad.Passports[0].Spec.Owner.ID = ""
	err := store.Load(bad)
	var ce *policy.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("Load(bad) = %v, want a *policy.CompileError", err)
	}
	if s, _ := store.Snapshot("team-a"); s.Revision() != good.Revision() {
		t.Errorf("bad bundle replaced the snapshot")
	}
	st := store.Status()
	if len(st) != 1 || st[0].ErrorCount != 1 || st[0].LastError == "" || store.LoadErrors() != 1 {
		t.Errorf("status = %+v", st)
	}
	if err := store.Load(policy.Bundle{}); err == nil {
		t.Errorf("a bundle without namespace loaded")
	}

	// Bare names resolve when unique, or through the default namespace.
	req := policy.Request{Passport: "coding-agent"}
	if s, err := store.resolve(&req, ""); err != nil || s.Namespace() != "team-a" {
		t.Errorf("resolve bare name = %v, %v", s, err)
	}
	if err := store.Load(samplesBundle(t, "team-b")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.resolve(&req, ""); !errors.As(err, new(errAmbiguous)) {
		t.Errorf("ambiguous bare name: err = %v", err)
	}
	if s, err := store.resolve(&req, "team-b"); err != nil || s.Namespace() != "team-b" {
		t.Errorf("resolve with default namespace = %v", err)
	}
	if got := store.Namespaces(); len(got) != 2 || got[0] != "team-a" {
		t.Errorf("Namespaces = %v", got)
	}
	store.Remove("team-b")
	if _, ok := store.Snapshot("team-b"); ok || store.Len() != 1 {
		t.Errorf("Remove left the snapshot")
	}
}

// TestRateLimiterSharedAcrossSwaps checks that rate-limit counts survive a bundle update.
func TestRateLimiterSharedAcrossSwaps(t *testing.T) {
	store := NewStore()
	b := samplesBundle(t, "team-a")
	shell := policyNamed(t, &b, "shell-safety")
	shell.Spec.RateLimits = []policy.RateLimit{{Name: "ls", Tools: []string{"ls"}, Limit: 2, Window: "1h"}}
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{})
	req := map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}
	for i := range 2 {
		if d := decide(t, ts.URL, req, nil); !d.Allow {
			t.Fatalf("call %d denied: %v", i, d.Reasons)
		}
	}
	shell.Labels = map[string]string{"changed": "yes"}
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	d := decide(t, ts.URL, req, nil)
	if d.BundleRevision != b.Revision() || firstCode(d) != policy.CodeRateLimitExceeded {
		t.Errorf("third call after swap = %s %v (rev %s), want %s", d.Decision, d.Reasons, d.BundleRevision, policy.CodeRateLimitExceeded)
	}
}

// evaluatorBundle returns the samples plus a policy consulting url when no rule matched.
func evaluatorBundle(t *testing.T, url, timeout string) policy.Bundle {
	b := samplesBundle(t, "team-a")
	b.Policies = append(b.Policies, policy.Policy{Name: "external", Spec: policy.PolicySpec{
		PolicyID: "external.v1", Priority: 1,
		Rules:             []policy.Rule{{Name: "web", Tools: []string{"web_search"}, Action: policy.ActionAllow}},
		ExternalEvaluator: &policy.ExternalEvaluatorSpec{URL: url, Timeout: timeout},
	}})
	return b
}

func TestExternalEvaluator(t *testing.T) {
	var mode atomic.Value
	mode.Store("allow")
	var calls atomic.Int64
	ev := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req policy.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ToolName == "" {
			http.Error(w, "bad request", 400)
			return
		}
		switch mode.Load() {
		case "allow":
			_, _ = io.WriteString(w, `{"decision":"allow","message":"ok by evaluator"}`)
		case "deny":
			_, _ = io.WriteString(w, `{"decision":"deny","code":"oap.policy_denied","message":"no by evaluator"}`)
		case "fail":
			http.Error(w, "boom", 500)
		case "slow":
			time.Sleep(300 * time.Millisecond)
			_, _ = io.WriteString(w, `{"decision":"allow"}`)
		}
	}))
	defer ev.Close()
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	pool := NewEvaluatorPool(EvaluatorConfig{FailureThreshold: 3, OpenFor: time.Minute, Now: clock})
	store := NewStore(WithEvaluatorPool(pool))
	if err := store.Load(evaluatorBundle(t, ev.URL, "100ms")); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{})
	req := map[string]any{"passport": "team-a/coding-agent", "tool_name": "bash", "tool_input": map[string]any{"command": "echo hi"}}

	if d := decide(t, ts.URL, req, nil); d.Decision != policy.DecisionAllow || !strings.HasPrefix(d.PolicyID, "") {
		t.Errorf("evaluator allow: %s %v", d.Decision, d.Reasons)
	}
	mode.Store("deny")
	if d := decide(t, ts.URL, req, nil); d.Allow || d.Reasons[0].Message != "no by evaluator" {
		t.Errorf("evaluator deny: %s %v", d.Decision, d.Reasons)
	}
	mode.Store("slow")
	if d := decide(t, ts.URL, req, nil); d.Allow || firstCode(d) != policy.CodeEvaluatorError {
		t.Errorf("evaluator timeout: %s %v, want fail-closed %s", d.Decision, d.Reasons, policy.CodeEvaluatorError)
	}
	mode.Store("fail")
	for range 2 {
		if d := decide(t, ts.URL, req, nil); firstCode(d) != policy.CodeEvaluatorError {
			t.Errorf("evaluator 500: %v", d.Reasons)
		}
	}
	// Three consecutive failures (timeout, 500, 500): the circuit is open and calls stop.
	e := pool.get(policy.ExternalEvaluatorSpec{URL: ev.URL, Timeout: "100ms"})
	if e.State() != "open" {
		t.Fatalf("circuit state = %s, want open", e.State())
	}
	before := calls.Load()
	mode.Store("allow")
	d := decide(t, ts.URL, req, nil)
	if firstCode(d) != policy.CodeEvaluatorError || !strings.Contains(d.Reasons[0].Message, "circuit open") || calls.Load() != before {
		t.Errorf("open circuit: %v (calls %d→%d)", d.Reasons, before, calls.Load())
	}
	// The breaker survives a bundle swap (the pool keeps the client per URL).
	b := evaluatorBundle(t, ev.URL, "100ms")
	b.Policies[0].Labels = map[string]string{"v": "2"}
	if err := store.Load(b); err != nil {
		t.Fatal(err)
	}
	if e.State() != "open" {
		t.Errorf("swap reset the breaker")
	}
	// After OpenFor one trial call goes out; success closes the circuit.
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if d := decide(t, ts.URL, req, nil); !d.Allow || e.State() != "closed" {
		t.Errorf("after open period: %s %v, state %s", d.Decision, d.Reasons, e.State())
	}
	// Without a reachable endpoint the call fails closed.
	if err := store.Load(evaluatorBundle(t, "http://127.0.0.1:1/unreachable", "")); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, ts.URL, req, nil); d.Allow || firstCode(d) != policy.CodeEvaluatorError {
		t.Errorf("unreachable evaluator: %s %v", d.Decision, d.Reasons)
	}
}

// blockingWriter blocks writes until released, to fill the decision log's buffer.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func TestDecisionLog(t *testing.T) {
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	for _, withInput := range []bool{false, true} {
		var out bytes.Buffer
		srv, ts := startServer(t, store, Options{DecisionLog: NewDecisionLog(&out, 64, withInput)})
		d := decide(t, ts.URL, map[string]any{"passport": "team-a/coding-agent", "tool_name": "bash",
			"tool_input": map[string]any{"command": "sudo rm x", "secret": "s3cr3t"}, "thread_id": "th"}, nil)
		ts.Close()
		srv.Close()
		sc := bufio.NewScanner(&out)
		if !sc.Scan() {
			t.Fatalf("no log line")
		}
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"decision_id", "time", "passport", "tool", "outcome", "reasons", "policy_id", "bundle_revision", "latency_ms"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log record lacks %s: %s", k, sc.Text())
			}
		}
		if rec["decision_id"] != d.DecisionID || rec["outcome"] != "deny" {
			t.Errorf("record = %s", sc.Text())
		}
		if got := strings.Contains(sc.Text(), "s3cr3t"); got != withInput {
			t.Errorf("withInput=%v: tool arguments in log = %v", withInput, got)
		}
		if sc.Scan() {
			t.Errorf("more than one line: %q", sc.Text())
		}
	}

	// A stalled writer never stalls decisions: records beyond the buffer are dropped and counted.
	w := &blockingWriter{release: make(chan struct{})}
	l := NewDecisionLog(w, 4, false)
	_, ts := startServer(t, store, Options{DecisionLog: l})
	// The first record is flushed within flushInterval, which stalls the log's goroutine in Write.
	decide(t, ts.URL, map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}, nil)
	time.Sleep(3 * flushInterval)
	start := time.Now()
	for range 20 {
		decide(t, ts.URL, map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}, nil)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("decisions stalled behind the log")
	}
	if l.Dropped() < 15 {
		t.Errorf("dropped = %d, want ≥ 15", l.Dropped())
	}
	_, body := call(t, http.MethodGet, ts.URL+"/metrics", nil, nil)
	if !strings.Contains(string(body), `tollgate_decision_log_dropped_total{sink="queue"} 1`) {
		t.Errorf("metrics lack the dropped count")
	}
	close(w.release)
	l.Close()
	l.Log(&LogRecord{}) // after Close: dropped, no panic
	if got := strings.Count(w.buf.String(), "\n"); uint64(got) != l.Written() || got < 5 {
		t.Errorf("wrote %d lines, counted %d", got, l.Written())
	}
}

// TestGracefulShutdown cancels the server while a request is in flight: the request completes and
// Serve returns without error; new connections are refused afterwards.
func TestGracefulShutdown(t *testing.T) {
	arrived := make(chan struct{}, 1)
	ev := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		time.Sleep(400 * time.Millisecond)
		_, _ = io.WriteString(w, `{"decision":"allow"}`)
	}))
	defer ev.Close()
	store := NewStore()
	if err := store.Load(evaluatorBundle(t, ev.URL, "2s")); err != nil {
		t.Fatal(err)
	}
	var logOut bytes.Buffer
	srv := NewServer(store, Options{Logger: quietLogger(), DecisionLog: NewDecisionLog(&logOut, 16, false), ShutdownTimeout: 5 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	// The request runs off the test goroutine, which must not call t.Fatal: a failed request is
	// reported through the channel instead of leaving the test waiting for ever.
	type result struct {
		d   policy.Decision
		err error
	}
	got := make(chan result, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"passport": "team-a/coding-agent", "tool_name": "bash", "tool_input": map[string]any{"command": "echo"}})
		resp, err := http.Post(url+"/v1/decide", "application/json", bytes.NewReader(body))
		if err != nil {
			got <- result{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		var r result
		if resp.StatusCode != http.StatusOK {
			r.err = fmt.Errorf("POST /v1/decide = %d", resp.StatusCode)
		} else {
			r.err = json.NewDecoder(resp.Body).Decode(&r.d)
		}
		got <- r
	}()
	// Cancel once the request is waiting on the evaluator (a fixed sleep is too short on a loaded machine).
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the evaluator")
	}
	cancel()
	res := <-got
	if res.err != nil {
		t.Fatalf("in-flight request failed: %v", res.err)
	}
	d := res.d
	if !d.Allow {
		t.Errorf("in-flight request: %s %v", d.Decision, d.Reasons)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	if !strings.Contains(logOut.String(), d.DecisionID) {
		t.Errorf("the drained decision was not logged before Serve returned")
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Errorf("server still accepting after shutdown")
	}
}

func TestServiceAccountOf(t *testing.T) {
	for user, want := range map[string]bool{
		"system:serviceaccount:team-a:agent": true, "system:serviceaccount:team-a": false,
		"system:serviceaccount::x": false, "alice": false,
	} {
		if _, ok := serviceAccountOf(user); ok != want {
			t.Errorf("serviceAccountOf(%q) ok = %v", user, ok)
		}
	}
}

func policyNamed(t *testing.T, b *policy.Bundle, name string) *policy.Policy {
	t.Helper()
	for i := range b.Policies {
		if b.Policies[i].Name == name {
			return &b.Policies[i]
		}
	}
	t.Fatalf("no policy %s", name)
	return nil
}
