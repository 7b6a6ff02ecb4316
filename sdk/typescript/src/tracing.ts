// W3C trace context of the active OpenTelemetry span, sent with each request when the optional peer
// dependency @opentelemetry/api is installed: the decision endpoint then records its decision in the
// caller's trace (its span's parent, and the decision log's trace_id). Without the package, or
// outside a span, nothing is sent.

import type * as OtelApi from "@opentelemetry/api";

let api: Promise<typeof OtelApi | undefined> | undefined;

function loadApi(): Promise<typeof OtelApi | undefined> {
  api ??= import("@opentelemetry/api").then(
    (m) => m,
    () => undefined, // not installed: no trace context
  );
  return api;
}

/** The `traceparent` (and `tracestate`) headers of the active OpenTelemetry context, or none. */
export async function traceHeaders(): Promise<Record<string, string>> {
  const otel = await loadApi();
  if (!otel) return {};
  const sc = otel.trace.getSpanContext(otel.context.active());
  if (!sc || !otel.isSpanContextValid(sc)) return {};
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, "0");
  const headers: Record<string, string> = { traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}` };
  const state = sc.traceState?.serialize();
  if (state) headers["tracestate"] = state;
  return headers;
}
