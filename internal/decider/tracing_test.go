package decider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// The caller's position in its trace, as an SDK with OpenTelemetry sends it.
const (
	callerTraceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID     = "00f067aa0ba902b7"
	callerTraceparnt = "00-" + callerTraceID + "-" + callerSpanID + "-01"
	// traceSecret is an argument value that must not reach any span.
	traceSecret = "TOPSECRET7d1f"
)

// tracedServer serves the samples (namespace team-a) over loopback HTTP with tracing into an
// in-memory exporter.
func tracedServer(t *testing.T) (string, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{TracerProvider: tp})
	return ts.URL, exp
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

// spanText is everything a span exports, as text, to search for argument values.
func spanText(t *testing.T, s tracetest.SpanStub) string {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(data) + fmt.Sprintf("%+v", s)
}

func TestTracingDecideSpan(t *testing.T) {
	url, exp := tracedServer(t)
	cases := []struct {
		name    string
		input   map[string]any
		outcome string
		code    string
	}{
		{"deny quoting the command", map[string]any{"command": traceSecret + " --all"}, policy.DecisionDeny, policy.CodeCommandNotAllowed},
		{"blocked pattern", map[string]any{"command": "echo " + traceSecret + " && rm -rf /"}, policy.DecisionDeny, policy.CodeBlockedPattern},
		{"modify", map[string]any{"command": "git log -3", "env": map[string]any{"TOKEN": traceSecret}}, policy.DecisionModify, policy.CodeAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exp.Reset()
			d := decide(t, url, map[string]any{"passport": "team-a/coding-agent", "tool_name": "bash", "tool_input": tc.input,
				"thread_id": "th-1", "call_id": "c-1"},
				map[string]string{"traceparent": callerTraceparnt, "tracestate": "vendor=abc"})
			if d.Decision != tc.outcome || firstCode(d) != tc.code {
				t.Fatalf("decision %s %s, want %s %s", d.Decision, firstCode(d), tc.outcome, tc.code)
			}
			spans := exp.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("exported %d spans, want 1 per decision", len(spans))
			}
			s := spans[0]
			if s.Name != SpanDecide || s.SpanKind != trace.SpanKindServer {
				t.Errorf("span %q kind %v, want %q server", s.Name, s.SpanKind, SpanDecide)
			}
			if got := s.SpanContext.TraceID().String(); got != callerTraceID {
				t.Errorf("trace id %s, want the caller's %s", got, callerTraceID)
			}
			if got := s.Parent.SpanID().String(); got != callerSpanID || !s.Parent.IsRemote() {
				t.Errorf("parent span %s (remote %t), want the caller's %s", got, s.Parent.IsRemote(), callerSpanID)
			}
			if got := s.SpanContext.TraceState().Get("vendor"); got != "abc" {
				t.Errorf("tracestate vendor=%q, want the caller's abc", got)
			}
			a := attrs(s)
			want := map[attribute.Key]string{
				AttrPassport: "team-a/coding-agent", AttrTool: "bash", AttrOutcome: tc.outcome, AttrCode: tc.code,
				AttrPolicy: d.PolicyID, AttrBundleRevision: d.BundleRevision, AttrDecisionID: d.DecisionID,
				AttrHook: policy.HookPreToolCall, AttrThreadID: "th-1", AttrCallID: "c-1",
			}
			for k, v := range want {
				if a[k] != v {
					t.Errorf("attribute %s = %q, want %q", k, a[k], v)
				}
			}
			if d.BundleRevision == "" || d.DecisionID == "" {
				t.Errorf("decision without revision or id: %+v", d)
			}
			if txt := spanText(t, s); strings.Contains(txt, traceSecret) {
				t.Errorf("an argument value reached the span: %s", txt)
			}
		})
	}
}

func TestTracingBatchSpans(t *testing.T) {
	url, exp := tracedServer(t)
	body := map[string]any{"requests": []map[string]any{
		{"passport": "team-a/coding-agent", "tool_name": "ls", "tool_input": map[string]any{"path": traceSecret}},
		{"passport": "team-a/coding-agent", "tool_name": "bash", "tool_input": map[string]any{"command": traceSecret}},
	}}
	code, data := call(t, http.MethodPost, url+"/v1/decide:batch", body, map[string]string{"traceparent": callerTraceparnt})
	if code != http.StatusOK {
		t.Fatalf("batch = %d %s", code, data)
	}
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("exported %d spans, want a batch span and one per item", len(spans))
	}
	var batch tracetest.SpanStub
	var items []tracetest.SpanStub
	for _, s := range spans {
		if strings.Contains(spanText(t, s), traceSecret) {
			t.Errorf("an argument value reached span %s", s.Name)
		}
		switch s.Name {
		case SpanDecideBatch:
			batch = s
		case SpanDecide:
			items = append(items, s)
		}
	}
	if batch.Parent.SpanID().String() != callerSpanID || attrs(batch)[AttrBatchSize] != "2" {
		t.Fatalf("batch span parent %s size %q, want the caller's %s and 2", batch.Parent.SpanID(), attrs(batch)[AttrBatchSize], callerSpanID)
	}
	if len(items) != 2 {
		t.Fatalf("%d item spans, want 2", len(items))
	}
	for i, s := range items {
		if s.Parent.SpanID() != batch.SpanContext.SpanID() || s.SpanKind != trace.SpanKindInternal {
			t.Errorf("item %d: parent %s kind %v, want the batch span %s, internal", i, s.Parent.SpanID(), s.SpanKind, batch.SpanContext.SpanID())
		}
		if s.SpanContext.TraceID().String() != callerTraceID {
			t.Errorf("item %d: trace %s, want %s", i, s.SpanContext.TraceID(), callerTraceID)
		}
	}
	tools := []string{attrs(items[0])[AttrTool], attrs(items[1])[AttrTool]}
	if tools[0] != "ls" || tools[1] != "bash" || attrs(items[1])[AttrOutcome] != policy.DecisionDeny {
		t.Errorf("item spans: tools %v, second outcome %q", tools, attrs(items[1])[AttrOutcome])
	}
}

func TestTracingWithoutParentAndRefused(t *testing.T) {
	url, exp := tracedServer(t)
	d := decide(t, url, map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}, nil)
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Parent.IsValid() || spans[0].SpanKind != trace.SpanKindServer {
		t.Fatalf("without traceparent: %d spans, want one root server span", len(spans))
	}
	if attrs(spans[0])[AttrDecisionID] != d.DecisionID {
		t.Errorf("decision id attribute %q, want %q", attrs(spans[0])[AttrDecisionID], d.DecisionID)
	}
	// An unusable request (an ambiguous bare name is not, but a missing passport is) is an error span.
	exp.Reset()
	code, _ := call(t, http.MethodPost, url+"/v1/decide", map[string]any{"tool_name": "ls"}, map[string]string{"traceparent": callerTraceparnt})
	if code != http.StatusBadRequest {
		t.Fatalf("request without passport = %d, want 400", code)
	}
	spans = exp.GetSpans()
	if len(spans) != 1 || spans[0].Status.Code.String() != "Error" || attrs(spans[0])[AttrErrorCode] == "" {
		t.Fatalf("refused request: spans %+v, want one error span with an error code", spans)
	}
}

// TestDecisionLogTraceID: with tracing off, the decision log still places each decision in the
// caller's trace.
func TestDecisionLogTraceID(t *testing.T) {
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	srv, ts := startServer(t, store, Options{DecisionLog: NewDecisionLog(&buf, 0, false)})
	decide(t, ts.URL, map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}, map[string]string{"traceparent": callerTraceparnt})
	decide(t, ts.URL, map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}, nil)
	srv.Close()
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2", len(lines))
	}
	var first, second LogRecord
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &second); err != nil {
		t.Fatal(err)
	}
	if first.TraceID != callerTraceID || first.SpanID != callerSpanID {
		t.Errorf("log record trace %s span %s, want the caller's %s %s", first.TraceID, first.SpanID, callerTraceID, callerSpanID)
	}
	if second.TraceID != "" || second.SpanID != "" {
		t.Errorf("record without traceparent has trace %q span %q", second.TraceID, second.SpanID)
	}
}

// TestTracingLogJoinsSpan: with tracing on, the log record names the decision's own span.
func TestTracingLogJoinsSpan(t *testing.T) {
	var buf syncBuffer
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(t.Context()) }()
	srv, ts := startServer(t, store, Options{TracerProvider: tp, DecisionLog: NewDecisionLog(&buf, 0, false)})
	decide(t, ts.URL, map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}, map[string]string{"traceparent": callerTraceparnt})
	srv.Close()
	var rec LogRecord
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &rec); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	if rec.TraceID != callerTraceID || rec.SpanID != spans[0].SpanContext.SpanID().String() {
		t.Errorf("log record trace %s span %s, want %s and the decision span %s", rec.TraceID, rec.SpanID, callerTraceID, spans[0].SpanContext.SpanID())
	}
}

// syncBuffer is a bytes.Buffer safe for the log's goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes returns a copy of what was written.
func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
