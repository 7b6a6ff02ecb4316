package decider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The load benchmarks over loopback HTTP live with the load generator, in bench/internal/loadgen.

// benchBodies are realistic requests against the sample policies (allow, modify, deny, suspended).
var benchBodies = []string{
	`{"passport":"team-a/coding-agent","tool_name":"ls","tool_input":{"path":"."},"thread_id":"t1","call_id":"c1"}`,
	`{"passport":"team-a/coding-agent","tool_name":"bash","tool_input":{"command":"git status"},"thread_id":"t1","call_id":"c2"}`,
	`{"passport":"team-a/coding-agent","tool_name":"bash","tool_input":{"command":"ls && rm -rf /"},"thread_id":"t1","call_id":"c3"}`,
	`{"passport":"team-a/coding-agent","tool_name":"read_file","tool_input":{"path":"README.md"},"thread_id":"t1","call_id":"c4"}`,
	`{"agent_id":"ap_coding_agent_01","tool_name":"web_search","tool_input":{"query":"kubernetes"},"thread_id":"t2","call_id":"c5"}`,
	`{"passport":"team-a/coding-agent","tool_name":"bash","tool_input":{"command":"echo hello"},"thread_id":"t2","call_id":"c6"}`,
	`{"passport":"team-a/research-agent","tool_name":"web_search","tool_input":{"query":"x"},"thread_id":"t3","call_id":"c7"}`,
	`{"passport":"team-a/coding-agent","tool_name":"write_file","tool_input":{"path":"a.txt","content":"hi"},"thread_id":"t2","call_id":"c8"}`,
}

// BenchmarkServeHTTP measures the handler in-process, without the network (allocations included).
func BenchmarkServeHTTP(b *testing.B) {
	store := NewStore()
	if err := store.Load(samplesBundle(b, "team-a")); err != nil {
		b.Fatal(err)
	}
	logf, err := os.CreateTemp(b.TempDir(), "log")
	if err != nil {
		b.Fatal(err)
	}
	srv := NewServer(store, Options{Logger: quietLogger(), DecisionLog: NewDecisionLog(logf, 0, false)})
	defer srv.Close()
	body := benchBodies[1]
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/decide", strings.NewReader(body))
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code, rec.Body)
		}
	}
}

// BenchmarkTracing measures a decision's cost with tracing off (the default: no span, nothing
// allocated beyond BenchmarkServeHTTP), off with a caller's traceparent (read for the decision
// log), and on (a sampled span per decision, exported to a no-op exporter through the SDK).
func BenchmarkTracing(b *testing.B) {
	store := NewStore()
	if err := store.Load(samplesBundle(b, "team-a")); err != nil {
		b.Fatal(err)
	}
	on := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
	defer func() { _ = on.Shutdown(context.Background()) }()
	for _, bc := range []struct {
		name        string
		tp          trace.TracerProvider
		traceparent bool
	}{
		{"off", nil, false},
		{"off-traceparent", nil, true},
		{"on", on, false},
		{"on-traceparent", on, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := NewServer(store, Options{Logger: quietLogger(), TracerProvider: bc.tp})
			defer srv.Close()
			body := benchBodies[1]
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/v1/decide", strings.NewReader(body))
				if bc.traceparent {
					req.Header["Traceparent"] = []string{callerTraceparnt}
				}
				srv.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code, rec.Body)
				}
			}
		})
	}
}

// discardExporter drops spans.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }
