package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServeDecisionLogSinks runs `tollgate serve` with the file and HTTP sinks and a mask: both get
// every record, masked, and /v1/status reports each sink's counters.
func TestServeDecisionLogSinks(t *testing.T) {
	var mu sync.Mutex
	var posted []map[string]any
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		if err != nil || r.Header.Get("Authorization") != "Bearer sink-token-123" {
			http.Error(w, "want gzip and the bearer token", http.StatusBadRequest)
			return
		}
		var recs []map[string]any
		data, _ := io.ReadAll(zr)
		if err := json.Unmarshal(data, &recs); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		posted = append(posted, recs...)
		mu.Unlock()
	}))
	defer recv.Close()
	dir := t.TempDir()
	logFile := filepath.Join(dir, "decisions.log")
	tokenFile := writeFile(t, dir, "token", "sink-token-123\n")
	base, logs, stop := startServe(t, "-f", "config/samples",
		"--decision-log-file", logFile, "--decision-log-include-input",
		"--decision-log-mask", "/tool_input/command", "--decision-log-mask", `tool_input.env="[masked]"`,
		"--decision-log-url", recv.URL, "--decision-log-url-format", "array", "--decision-log-url-flush-interval", "50ms",
		"--decision-log-url-token-file", tokenFile)
	d := postDecide(t, base, `{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"git log -3","env":{"K":"SECRETV"}},"call_id":"c-77"}`)
	if d["decision"] != "modify" {
		t.Fatalf("decision %v", d)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(posted)
		mu.Unlock()
		if n == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(base + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	status, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d\n%s", code, logs.String())
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var fromFile map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(data), &fromFile); err != nil {
		t.Fatalf("file sink: %v\n%s", err, data)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posted) != 1 {
		t.Fatalf("HTTP sink delivered %d records, want 1\n%s", len(posted), logs.String())
	}
	for name, rec := range map[string]map[string]any{"file": fromFile, "http": posted[0]} {
		in, _ := rec["tool_input"].(map[string]any)
		if rec["call_id"] != "c-77" || in == nil || in["command"] != nil || in["env"] != "[masked]" {
			t.Errorf("%s sink record %v: want call_id c-77, tool_input.command removed, env masked", name, rec)
		}
	}
	if bytes.Contains(data, []byte("SECRETV")) || strings.Contains(logs.String(), "SECRETV") {
		t.Error("a masked value was written")
	}
	for _, want := range []string{`"sink":"queue"`, `"sink":"file"`, `"sink":"http"`} {
		if !strings.Contains(string(status), want) {
			t.Errorf("/v1/status lacks %s: %s", want, status)
		}
	}
}

func TestDecisionLogFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--decision-log-mask", "a..b"}, "empty path segment"},
		{[]string{"--decision-log-url", "ftp://x"}, "want http:// or https://"},
		{[]string{"--decision-log-url", "http://x", "--decision-log-url-format", "xml"}, "format"},
		{[]string{"--decision-log-mask-file", "/nonexistent/masks"}, "--decision-log-mask-file"},
	} {
		r := runBin(t, "", append([]string{"serve", "-f", "config/samples", "--bind-address", "127.0.0.1:0", "--decision-log"}, tc.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q, want an error with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
