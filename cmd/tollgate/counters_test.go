package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/testredis"
)

// countersManifests: a payments agent; policy "payments" (failurePolicy Closed) limits lookups to
// 10 per hour and refunds to an amount of 100 per day; policy "search" (failurePolicy Open)
// limits searches to 3 per hour.
const countersManifests = `apiVersion: guardrails.tollgate.dev/v1alpha1
kind: AgentPassport
metadata:
  name: payer
  namespace: shop
spec:
  owner: {id: payments@example.com, type: team}
  capabilities:
  - id: finance.payment.refund
  - id: finance.payment.read
  - id: web.search
---
apiVersion: guardrails.tollgate.dev/v1alpha1
kind: GuardrailPolicy
metadata:
  name: payments
  namespace: shop
spec:
  failurePolicy: Closed
  toolCapabilities:
  - {tool: refund, capability: finance.payment.refund}
  - {tool: lookup, capability: finance.payment.read}
  rateLimits:
  - {name: lookups, tools: [lookup], limit: 10, window: 1h}
  budgets:
  - {name: daily-refunds, tools: [refund], field: amount, max: 100}
---
apiVersion: guardrails.tollgate.dev/v1alpha1
kind: GuardrailPolicy
metadata:
  name: search
  namespace: shop
spec:
  failurePolicy: Open
  toolCapabilities:
  - {tool: search, capability: web.search}
  rateLimits:
  - {name: searches, tools: [search], limit: 3, window: 1h}
`

// decideCode posts a decision request and returns its first reason code (or an error).
func decideCode(client *http.Client, base, tool, callID, input string) (string, error) {
	body := fmt.Sprintf(`{"passport":"shop/payer","tool_name":%q,"call_id":%q,"tool_input":%s}`, tool, callID, input)
	resp, err := client.Post(base+"/v1/decide", "application/json", strings.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("POST /v1/decide: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("POST /v1/decide: HTTP %d: %s", resp.StatusCode, data)
	}
	var d struct {
		Reasons []struct{ Code string } `json:"reasons"`
	}
	if err := json.Unmarshal(data, &d); err != nil || len(d.Reasons) == 0 {
		return "", fmt.Errorf("decoding %s: %w", data, err)
	}
	return d.Reasons[0].Code, nil
}

// counterStatus reads /v1/status's counters.
func counterStatus(t *testing.T, base string) map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var st struct {
		Counters map[string]any `json:"counters"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Counters
}

// TestServeSharedCounters runs two `tollgate serve` processes on one Redis: a limit of 10 allows
// exactly 10 of 40 concurrent calls spread over both; a budget and its idempotency keys hold
// across them; with Redis stopped each policy's failurePolicy decides (Closed denies, Open
// allows), /v1/status and the metrics say so, and once Redis is back counting resumes.
func TestServeSharedCounters(t *testing.T) {
	srv := testredis.Start(t)
	dir := t.TempDir()
	writeFile(t, dir, "shop.yaml", countersManifests)
	var bases [2]string
	for i := range bases {
		base, _, _ := startServe(t, "-f", dir, "--watch=false", "--counter-store", srv.URL(), "--counter-store-timeout", "50ms")
		bases[i] = base
	}
	client := &http.Client{Timeout: 10 * time.Second}
	checkExactlyN(t, client, bases)
	checkBudgetAcross(t, client, bases)
	if st := counterStatus(t, bases[0]); st["backend"] != "redis" || st["shared"] != true || st["up"] != true {
		t.Fatalf("/v1/status counters = %v", st)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	checkRedisDown(t, client, bases)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	checkRedisBack(t, client, bases)
}

// checkExactlyN: 40 concurrent lookups, alternating between the deciders: exactly 10 allowed.
func checkExactlyN(t *testing.T, client *http.Client, bases [2]string) {
	t.Helper()
	var mu sync.Mutex
	codes := map[string]int{}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			code, err := decideCode(client, bases[i%2], "lookup", fmt.Sprintf("l-%d", i), `{}`)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes["oap.allowed"] != 10 || codes["oap.rate_limit_exceeded"] != 30 {
		t.Fatalf("codes across two deciders = %v, want exactly 10 allowed and 30 oap.rate_limit_exceeded", codes)
	}
}

// checkBudgetAcross: the budget across both deciders: a retried call_id counts once, different
// ones add up.
func checkBudgetAcross(t *testing.T, client *http.Client, bases [2]string) {
	t.Helper()
	steps := []struct {
		decider      int
		callID, body string
		want         string
	}{
		{0, "r-1", `{"amount":60}`, "oap.allowed"},
		{1, "r-1", `{"amount":60}`, "oap.allowed"}, // the retry, on the other replica: not counted
		{1, "r-2", `{"amount":40}`, "oap.allowed"}, // 100
		{0, "r-3", `{"amount":1}`, "oap.limit_exceeded"},
		{0, "r-1", `{"amount":99}`, "oap.idempotency_conflict"},
		{1, "r-4", `{"amount":"ten"}`, "oap.invalid_context"},
	}
	for i, st := range steps {
		code, err := decideCode(client, bases[st.decider], "refund", st.callID, st.body)
		if err != nil {
			t.Fatal(err)
		}
		if code != st.want {
			t.Fatalf("refund step %d: %s, want %s", i, code, st.want)
		}
	}
}

// checkRedisDown: with Redis stopped, Closed denies with oap.evaluator_error and Open allows;
// status and metrics say so.
func checkRedisDown(t *testing.T, client *http.Client, bases [2]string) {
	t.Helper()
	for _, base := range bases {
		start := time.Now()
		code, err := decideCode(client, base, "refund", "r-5", `{"amount":1}`)
		if err != nil {
			t.Fatal(err)
		}
		if code != "oap.evaluator_error" {
			t.Fatalf("refund with Redis down (failurePolicy Closed): %s, want oap.evaluator_error", code)
		}
		if d := time.Since(start); d > 3*time.Second { // the timeout is 50ms; go-redis's defaults would wait 5s per dial, 5 times
			t.Errorf("a decision with Redis down took %s", d)
		}
		for i := range 5 { // more than the limit of 3: not counted while the store is down
			code, err := decideCode(client, base, "search", fmt.Sprintf("s-%d", i), `{"query":"x"}`)
			if err != nil {
				t.Fatal(err)
			}
			if code != "oap.allowed" {
				t.Fatalf("search %d with Redis down (failurePolicy Open): %s, want oap.allowed", i, code)
			}
		}
		if st := counterStatus(t, base); st["up"] != false || st["errors"].(float64) < 1 || st["last_error"] == "" {
			t.Fatalf("/v1/status counters with Redis down = %v", st)
		}
		metrics := get(t, base+"/metrics")
		for _, want := range []string{`tollgate_counter_store_up{backend="redis"} 0`, `tollgate_counter_store_errors_total{backend="redis"}`} {
			if !strings.Contains(metrics, want) {
				t.Fatalf("/metrics lacks %q", want)
			}
		}
	}
}

// checkRedisBack: Redis is back (empty: no persistence) and counting resumes on both deciders.
func checkRedisBack(t *testing.T, client *http.Client, bases [2]string) {
	t.Helper()
	// Each decider finds it back at its next trial (a budget call of amount 0 spends nothing).
	for i, base := range bases {
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, err := decideCode(client, base, "refund", fmt.Sprintf("probe-%d", i), `{"amount":0}`)
			if err != nil {
				t.Fatal(err)
			}
			if code == "oap.allowed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Redis restarted, but decider %d still fails: %s %v", i, code, counterStatus(t, base))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if st := counterStatus(t, base); st["up"] != true {
			t.Fatalf("decider %d after the restart: %v", i, st)
		}
	}
	var got []string
	for i := range 5 {
		code, err := decideCode(client, bases[i%2], "search", fmt.Sprintf("s-after-%d", i), `{"query":"x"}`)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, code)
	}
	if want := "oap.allowed,oap.allowed,oap.allowed,oap.rate_limit_exceeded,oap.rate_limit_exceeded"; strings.Join(got, ",") != want {
		t.Fatalf("searches after the restart = %v, want %s", got, want)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
