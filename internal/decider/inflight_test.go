package decider

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestInFlightBound holds the whole in-flight budget with a request whose body arrives slowly, and
// checks that another request waits, then gets a 429 with Retry-After, and that the budget comes
// back when the slow request ends.
func TestInFlightBound(t *testing.T) {
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{MaxInFlightBytes: 64 << 10, InFlightWait: 100 * time.Millisecond})
	body := `{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"ls"}}`

	// A chunked body declares no length, so it counts as the body limit: the whole budget.
	pr, pw := io.Pipe()
	slow, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/decide", pr)
	if err != nil {
		t.Fatal(err)
	}
	slow.Header.Set("Content-Type", "application/json")
	slowDone := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(slow)
		if err != nil {
			slowDone <- -1
			return
		}
		_ = resp.Body.Close()
		slowDone <- resp.StatusCode
	}()
	if _, err := pw.Write([]byte(body[:10])); err != nil { // the server is now reading the body
		t.Fatal(err)
	}

	start := time.Now()
	resp, err := http.Post(ts.URL+"/v1/decide", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second request = %d %s, want 429 while the first holds the budget", resp.StatusCode, data)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("the 429 came after %s, before the wait of 100ms", waited)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	var e struct {
		Error errorBody `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil || e.Error.Code != ErrCodeOverloaded {
		t.Fatalf("429 body %s: want error code %s (%v)", data, ErrCodeOverloaded, err)
	}

	if _, err := pw.Write([]byte(body[10:])); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	if code := <-slowDone; code != http.StatusOK {
		t.Fatalf("slow request = %d, want 200", code)
	}
	d := decide(t, ts.URL, json.RawMessage(body), nil)
	if d.Decision == "" {
		t.Fatal("no decision once the budget is free")
	}
}

func TestRequestWeight(t *testing.T) {
	for _, tc := range []struct {
		cl, want int64
	}{{-1, 1 << 20}, {0, minRequestWeight}, {10, minRequestWeight}, {300 << 10, 300 << 10}, {8 << 20, 1 << 20}} {
		r := &http.Request{ContentLength: tc.cl}
		if got := requestWeight(r, 1<<20); got != tc.want {
			t.Errorf("weight of Content-Length %d = %d, want %d", tc.cl, got, tc.want)
		}
	}
}

// TestJSONValueBound checks that a body with more than maxJSONValues values (which decodes to far
// more memory than its length) is a 400 naming the field, before it is decoded, and that a body at
// the bound is decided.
func TestJSONValueBound(t *testing.T) {
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{})
	body := func(n int) string { // n values in all: 6 outside the array (the array included), n-6 in it
		return `{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"ls","x":[` +
			strings.TrimSuffix(strings.Repeat("1,", n-6), ",") + `]}}`
	}
	code, data := call(t, http.MethodPost, ts.URL+"/v1/decide", body(maxJSONValues+1), nil)
	var e struct {
		Error errorBody `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusBadRequest || e.Error.Code != ErrCodeInvalidJSON || e.Error.Field != "tool_input.x[199994]" {
		t.Fatalf("%d values: %d %s, want 400 %s at tool_input.x[199994]", maxJSONValues+1, code, data, ErrCodeInvalidJSON)
	}
	if code, data := call(t, http.MethodPost, ts.URL+"/v1/decide", body(maxJSONValues), nil); code != http.StatusOK {
		t.Fatalf("%d values: %d %s, want 200", maxJSONValues, code, data)
	}
}
