package decider

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Tracing. When a TracerProvider is configured (Options.TracerProvider, ServiceOptions.TracerProvider)
// every decision is recorded as one span, "tollgate.decide", a child of the caller's span when the
// request carried a W3C traceparent header (and tracestate). A batch is one "tollgate.decide_batch"
// span with one child span per item. Spans carry identifiers and the outcome only (the attributes
// below), never a tool argument, a tool result or a reason message (which may quote an argument).
//
// Without a TracerProvider nothing is started; a request's traceparent is still read when it has
// one, so that its trace id reaches the decision log (trace_id, span_id) and log records can be joined
// with the caller's trace.

// TracerName is the instrumentation scope of Tollgate's spans.
const TracerName = "github.com/tollgate-dev/tollgate/internal/decider"

// Span names.
const (
	SpanDecide      = "tollgate.decide"
	SpanDecideBatch = "tollgate.decide_batch"
)

// Span attribute keys of a decision span.
const (
	AttrPassport       = attribute.Key("tollgate.passport")
	AttrAgentID        = attribute.Key("tollgate.agent_id")
	AttrTool           = attribute.Key("tollgate.tool")
	AttrHook           = attribute.Key("tollgate.hook")
	AttrOutcome        = attribute.Key("tollgate.outcome")
	AttrCode           = attribute.Key("tollgate.code")
	AttrPolicy         = attribute.Key("tollgate.policy_id")
	AttrBundleRevision = attribute.Key("tollgate.bundle_revision")
	AttrDecisionID     = attribute.Key("tollgate.decision_id")
	AttrCaller         = attribute.Key("tollgate.caller")
	AttrThreadID       = attribute.Key("tollgate.thread_id")
	AttrCallID         = attribute.Key("tollgate.call_id")
	AttrBatchSize      = attribute.Key("tollgate.batch.size")
	AttrErrorCode      = attribute.Key("tollgate.error.code")
)

// traceContext is the W3C Trace Context propagator: traceparent and tracestate, nothing else
// (baggage is not read, so that nothing the caller sends beyond the trace position lands in spans).
var traceContext propagation.TraceContext

// newTracer returns tp's tracer for Tollgate, or nil when tp is nil (tracing off).
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(TracerName)
}

// remoteParent returns r's context carrying the span context of its traceparent (and tracestate)
// headers, or r's context itself when it has none or nothing would use it (no tracing, no log).
func (s *Server) remoteParent(r *http.Request) context.Context {
	ctx := r.Context()
	if len(r.Header["Traceparent"]) == 0 || (s.svc.tracer == nil && s.svc.log == nil) {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.HeaderCarrier(r.Header))
}

// startDecisionSpan starts the span of one decision when tracing is on (nil span otherwise). A
// decision answering a remote caller directly is a server span; one inside a batch or a proxy is
// internal.
func (s *Service) startDecisionSpan(ctx context.Context) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	kind := trace.SpanKindInternal
	if parent := trace.SpanContextFromContext(ctx); !parent.IsValid() || parent.IsRemote() {
		kind = trace.SpanKindServer
	}
	return s.tracer.Start(ctx, SpanDecide, trace.WithSpanKind(kind))
}

// endDecisionSpan records the decision's identifiers and outcome on span and ends it. d is nil
// when the request was refused (rerr).
func endDecisionSpan(span trace.Span, req *policy.Request, caller *Caller, d *policy.Decision, rerr *RequestError) {
	if span == nil {
		return
	}
	defer span.End()
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 12)
	str := func(k attribute.Key, v string) {
		if v != "" {
			attrs = append(attrs, k.String(v))
		}
	}
	str(AttrPassport, req.Passport)
	str(AttrAgentID, req.AgentID)
	str(AttrTool, req.ToolName)
	hook := req.Hook
	if hook == "" {
		hook = policy.HookPreToolCall
	}
	str(AttrHook, hook)
	str(AttrThreadID, req.ThreadID)
	str(AttrCallID, req.CallID)
	if caller != nil {
		str(AttrCaller, caller.String())
	}
	if rerr != nil {
		str(AttrErrorCode, rerr.Code)
		span.SetAttributes(attrs...)
		span.SetStatus(codes.Error, "request refused: "+rerr.Code)
		return
	}
	str(AttrOutcome, d.Decision)
	if len(d.Reasons) > 0 {
		str(AttrCode, d.Reasons[0].Code)
	}
	str(AttrPolicy, d.PolicyID)
	str(AttrBundleRevision, d.BundleRevision)
	str(AttrDecisionID, d.DecisionID)
	span.SetAttributes(attrs...)
}
