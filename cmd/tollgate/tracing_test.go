package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it decodes every export request.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []string // service.name of each resource
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces application/x-protobuf", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				o.res = append(o.res, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (o *otlpReceiver) snapshot() ([]*tracepb.Span, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*tracepb.Span(nil), o.spans...), append([]string(nil), o.res...)
}

// TestServeExportsSpans runs `tollgate serve --otlp-endpoint` against an OTLP receiver and checks
// that a decision's span arrives in the caller's trace, with its attributes and without the
// arguments.
func TestServeExportsSpans(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_SERVICE_NAME", "")
	base, logs, stop := startServe(t, "-f", "config/samples", "--otlp-endpoint", collector.URL)
	const secret = "SECRETARG9931"
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	req, err := http.NewRequest(http.MethodPost, base+"/v1/decide",
		strings.NewReader(`{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"`+secret+` && rm -rf /"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("decide: HTTP %d", resp.StatusCode)
	}
	var spans []*tracepb.Span
	var services []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if spans, services = recv.snapshot(); len(spans) > 0 {
			break
		}
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited %d\n%s", code, logs.String())
	}
	if len(spans) != 1 {
		t.Fatalf("received %d spans, want 1\n%s", len(spans), logs.String())
	}
	s := spans[0]
	if got := s.GetName(); got != "tollgate.decide" {
		t.Errorf("span name %q", got)
	}
	if got := bytesHex(s.GetTraceId()); got != traceID {
		t.Errorf("trace id %s, want the caller's %s", got, traceID)
	}
	if got := bytesHex(s.GetParentSpanId()); got != "b7ad6b7169203331" {
		t.Errorf("parent span %s, want the caller's", got)
	}
	attrs := map[string]string{}
	for _, kv := range s.GetAttributes() {
		attrs[kv.Key] = kv.GetValue().GetStringValue()
	}
	if attrs["tollgate.outcome"] != "deny" || attrs["tollgate.code"] != "oap.blocked_pattern" || attrs["tollgate.tool"] != "bash" ||
		attrs["tollgate.passport"] != "coding-agent" || attrs["tollgate.bundle_revision"] == "" {
		t.Errorf("span attributes %v", attrs)
	}
	if strings.Contains(s.String(), secret) {
		t.Errorf("an argument value reached the exported span: %s", s.String())
	}
	if len(services) == 0 || services[0] != "tollgate-serve" {
		t.Errorf("resource service.name %v, want tollgate-serve", services)
	}
	if !strings.Contains(logs.String(), "tracing on") {
		t.Errorf("serve did not say tracing is on:\n%s", logs.String())
	}
}

func bytesHex(b []byte) string {
	const digits = "0123456789abcdef"
	var out bytes.Buffer
	for _, c := range b {
		out.WriteByte(digits[c>>4])
		out.WriteByte(digits[c&15])
	}
	return out.String()
}

func TestTracingOptions(t *testing.T) {
	for _, env := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
		"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(env, "")
	}
	var o tracingOptions
	if o.enabled() {
		t.Fatal("tracing on without an endpoint")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
	if !o.enabled() {
		t.Error("OTEL_EXPORTER_OTLP_ENDPOINT does not turn tracing on")
	}
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if o.enabled() {
		t.Error("OTEL_SDK_DISABLED=true leaves tracing on")
	}
	t.Setenv("OTEL_SDK_DISABLED", "")
	if p, err := o.resolvedProtocol(); err != nil || p != otlpHTTP {
		t.Errorf("default protocol %q %v, want http/protobuf", p, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if p, err := o.resolvedProtocol(); err != nil || p != otlpGRPC {
		t.Errorf("protocol from the environment %q %v, want grpc", p, err)
	}
	o.protocol = "thrift"
	if _, err := o.resolvedProtocol(); err == nil {
		t.Error("--otlp-protocol thrift accepted")
	}
	o = tracingOptions{endpoint: "collector:4318"}
	if _, err := o.exporter(t.Context(), otlpHTTP); err == nil || !strings.Contains(err.Error(), "http:// or https://") {
		t.Errorf("http/protobuf endpoint without a scheme: %v", err)
	}
}
