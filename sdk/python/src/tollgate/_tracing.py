"""W3C trace context of the current OpenTelemetry span, sent with each request when the
``opentelemetry-api`` package is installed (the ``opentelemetry`` extra): the decision endpoint then
records its decision in the caller's trace (its span's parent, and the decision log's ``trace_id``).
Without the package, or outside any recording or remote span, nothing is sent."""

from __future__ import annotations

from typing import Any

_propagator: Any
try:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # the optional dependency is not installed
    _propagator = None
else:
    _propagator = TraceContextTextMapPropagator()


def trace_headers() -> dict[str, str]:
    """The ``traceparent`` (and ``tracestate``) headers of the current OpenTelemetry context, or
    an empty dict."""
    if _propagator is None:
        return {}
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier
