package loadgen

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// countingServer answers 200 and counts the bodies it received.
func countingServer(t *testing.T) (*httptest.Server, func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Header.Get("Content-Type") != "application/json" || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen[string(body)]++
		mu.Unlock()
		_, _ = w.Write([]byte(`{"allow":true}`))
	}))
	t.Cleanup(srv.Close)
	return srv, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]int, len(seen))
		for k, v := range seen {
			out[k] = v
		}
		return out
	}
}

func TestRunFixedRateSendsEveryBodyAtTheRate(t *testing.T) {
	srv, seen := countingServer(t)
	res, err := Run(context.Background(), Config{
		URL: srv.URL + "/v1/decide", Bodies: [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)},
		Rate: 200, Duration: time.Second, Concurrency: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Fatalf("%d errors: %s", res.Errors, res.FirstError)
	}
	// 200/s for 1s: the open loop neither bursts nor falls far behind.
	if res.Requests < 150 || res.Requests > 210 {
		t.Errorf("requests = %d, want about 200", res.Requests)
	}
	got := seen()
	if got[`{"a":1}`] == 0 || got[`{"b":2}`] == 0 {
		t.Errorf("bodies are not used round-robin: %v", got)
	}
	if res.P50 <= 0 || res.P50 > res.P99 || res.P99 > res.Max || res.ServiceP99 <= 0 {
		t.Errorf("implausible percentiles: %s", res)
	}
}

func TestRunClosedLoop(t *testing.T) {
	srv, _ := countingServer(t)
	res, err := Run(context.Background(), Config{URL: srv.URL, Bodies: [][]byte{[]byte(`{}`)},
		Duration: 200 * time.Millisecond, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Throughput <= 0 || res.Errors != 0 {
		t.Errorf("closed loop measured nothing: %s", res)
	}
}

func TestRunReportsErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	if _, err := Run(context.Background(), Config{URL: srv.URL, Bodies: [][]byte{[]byte(`{}`)},
		Duration: 100 * time.Millisecond}); err == nil {
		t.Error("a server answering 404 must fail the run")
	}
	if _, err := Run(context.Background(), Config{URL: "https://example.invalid/", Bodies: [][]byte{[]byte(`{}`)}}); err == nil {
		t.Error("only http:// URLs are supported")
	}
	if _, err := Run(context.Background(), Config{URL: srv.URL}); err == nil {
		t.Error("a run without bodies must fail")
	}
}
