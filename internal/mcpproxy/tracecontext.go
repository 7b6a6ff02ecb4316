package mcpproxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// Trace context. An agent that traces its run sends its W3C trace context with each tools/call, in
// the request's params._meta ("traceparent" and "tracestate", the MCP convention), or over Streamable
// HTTP in the traceparent header. The proxy carries it to the decider: in process, the decision's
// span (when tracing is on) and decision-log record join the agent's trace; with a remote decider,
// the client sends it as the traceparent header of POST /v1/decide.

// Meta keys of the trace context in an MCP request's _meta.
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

var traceContext propagation.TraceContext

// withTraceContext returns ctx carrying the caller's trace context from the request's _meta, else
// from its HTTP headers, or ctx itself when it has none.
func withTraceContext(ctx context.Context, meta mcp.Meta, extra *mcp.RequestExtra) context.Context {
	if tp, ok := meta[MetaTraceparent].(string); ok && tp != "" {
		carrier := propagation.MapCarrier{MetaTraceparent: tp}
		if ts, ok := meta[MetaTracestate].(string); ok && ts != "" {
			carrier[MetaTracestate] = ts
		}
		return traceContext.Extract(ctx, carrier)
	}
	if extra != nil && extra.Header != nil && extra.Header.Get("Traceparent") != "" {
		return traceContext.Extract(ctx, propagation.HeaderCarrier(extra.Header.Clone()))
	}
	return ctx
}
