"""Trace propagation: with OpenTelemetry installed, the client sends the current span's W3C trace
context, and the real ``tollgate serve`` records the decision in that trace (the decision log's
trace_id and span_id)."""

from __future__ import annotations

from conftest import Server
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tollgate import AsyncClient, Client
from tollgate._tracing import trace_headers

_exporter = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(_exporter))
_tracer = _provider.get_tracer("tollgate-sdk-tests")


def _hex(span: trace.Span) -> tuple[str, str]:
    ctx = span.get_span_context()
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


def test_decision_joins_the_callers_trace(env: Server) -> None:
    with _tracer.start_as_current_span("agent-step") as span, Client() as c:
        d = c.decide("bash", {"command": "ls"}, call_id="traced-1")
    trace_id, span_id = _hex(span)
    rec = env.decision_record(d.decision_id)
    assert rec["trace_id"] == trace_id
    assert rec["span_id"] == span_id


async def test_async_decision_joins_the_callers_trace(env: Server) -> None:
    async with AsyncClient() as c:
        with _tracer.start_as_current_span("agent-step-async") as span:
            d = await c.decide("bash", {"command": "ls"}, call_id="traced-2")
    trace_id, _ = _hex(span)
    assert env.decision_record(d.decision_id)["trace_id"] == trace_id


def test_batch_and_tracestate(env: Server) -> None:
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

    parent = SpanContext(trace_id=0x0AF7651916CD43DD8448EB211C80319C, span_id=0xB7AD6B7169203331, is_remote=True,
                         trace_flags=TraceFlags(TraceFlags.SAMPLED), trace_state=TraceState([("agent", "x1")]))
    with trace.use_span(NonRecordingSpan(parent)):
        headers = trace_headers()
        with Client() as c:
            ds = c.decide_batch([{"tool_name": "bash", "tool_input": {"command": "ls"}}])
    assert headers == {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "agent=x1"}
    assert env.decision_record(ds[0].decision_id)["trace_id"] == "0af7651916cd43dd8448eb211c80319c"


def test_no_span_no_trace_context(env: Server) -> None:
    assert trace_headers() == {}
    with Client() as c:
        d = c.decide("bash", {"command": "ls"})
    rec = env.decision_record(d.decision_id)
    assert "trace_id" not in rec and "span_id" not in rec
