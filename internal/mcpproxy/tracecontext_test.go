package mcpproxy

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/pkg/client"
)

const (
	agentTraceID = "5b8efff798038103d269b633813fc60c"
	agentSpanID  = "eee19b7ec3c1b174"
)

// callWithTrace calls tool with the agent's trace context in params._meta.
func callWithTrace(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args,
		Meta: mcp.Meta{MetaTraceparent: "00-" + agentTraceID + "-" + agentSpanID + "-01", MetaTracestate: "agent=1"}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	return res
}

// TestTraceContextInProcess: the decision-log record of a proxied call names the agent's trace.
func TestTraceContextInProcess(t *testing.T) {
	env := setup(t, modeInProcess)
	cs := env.mustConnect(t, codingToken)
	callWithTrace(t, cs, "run_command", map[string]any{"command": "git status"})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(env.logBuf.String(), `"trace_id":"`+agentTraceID+`"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no decision record in the agent's trace %s: %s", agentTraceID, env.logBuf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTraceContextRemote: a remote decider with tracing on records the proxied call's decision as a
// child of the agent's span: the proxy forwards the trace context as the traceparent header.
func TestTraceContextRemote(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	env := setup(t, modeRemote, func(cfg *Config) {
		ds := decider.NewServer(loadStore(t), decider.Options{Authenticator: cfg.Authenticator, TracerProvider: tp})
		dts := httptest.NewServer(ds)
		t.Cleanup(dts.Close)
		cfg.Decider = &Remote{Client: &client.Client{URL: dts.URL}}
	})
	cs := env.mustConnect(t, codingToken)
	if res := callWithTrace(t, cs, "run_command", map[string]any{"command": "git status"}); res.IsError {
		t.Fatalf("call refused: %s", text(res))
	}
	var found bool
	for _, s := range exp.GetSpans() {
		if s.Name != decider.SpanDecide {
			continue
		}
		for _, kv := range s.Attributes {
			if kv.Key == decider.AttrTool && kv.Value.AsString() == "mcp__github__run_command" {
				found = true
				if s.SpanContext.TraceID().String() != agentTraceID || s.Parent.SpanID().String() != agentSpanID {
					t.Errorf("decision span in trace %s under %s, want the agent's %s under %s",
						s.SpanContext.TraceID(), s.Parent.SpanID(), agentTraceID, agentSpanID)
				}
				if s.SpanContext.TraceState().Get("agent") != "1" {
					t.Errorf("tracestate not forwarded: %q", s.SpanContext.TraceState().String())
				}
			}
		}
	}
	if !found {
		t.Fatalf("no decision span for the proxied call among %d spans", len(exp.GetSpans()))
	}
}
