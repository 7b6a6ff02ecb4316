// Trace propagation: with @opentelemetry/api installed and a span active, the client sends its W3C
// trace context, and the real `tollgate serve` records the decision in that trace (the decision
// log's trace_id and span_id).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";

import { context, trace, TraceFlags } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";

import { Client } from "@tollgate/sdk";

import { PASSPORT, startTollgate } from "./helpers.mjs";

let server;
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] });
provider.register(); // the AsyncLocalStorage context manager: the active span survives awaits
const tracer = trace.getTracer("tollgate-sdk-ts-tests");

before(async () => {
  server = await startTollgate({ extra: ["--decision-log"] });
});
after(async () => {
  await server?.stop();
  await provider.shutdown();
});

/** The decision log record of one decision, from the server's stderr (written within 100 ms). */
async function record(decisionId) {
  const deadline = Date.now() + 5000;
  for (;;) {
    for (const line of server.stderr().split("\n")) {
      if (line.startsWith("{") && line.includes(`"decision_id":"${decisionId}"`)) return JSON.parse(line);
    }
    if (Date.now() > deadline) throw new Error(`no decision log record for ${decisionId}:\n${server.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("trace context", () => {
  test("a decision joins the caller's active span", async () => {
    const client = new Client({ url: server.url, passport: PASSPORT });
    const { d, traceId, spanId } = await tracer.startActiveSpan("agent-step", async (span) => {
      try {
        await new Promise((r) => setTimeout(r, 1)); // the context survives an await
        const d = await client.decide("bash", { command: "ls" });
        return { d, traceId: span.spanContext().traceId, spanId: span.spanContext().spanId };
      } finally {
        span.end();
      }
    });
    const rec = await record(d.decisionId);
    assert.equal(rec.trace_id, traceId);
    assert.equal(rec.span_id, spanId);
  });

  test("a remote parent and its tracestate are passed on", async () => {
    const client = new Client({ url: server.url, passport: PASSPORT });
    const parent = trace.wrapSpanContext({
      traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED, isRemote: true,
    });
    const d = await context.with(trace.setSpan(context.active(), parent), () => client.decide("bash", { command: "ls" }));
    const rec = await record(d.decisionId);
    assert.equal(rec.trace_id, "0af7651916cd43dd8448eb211c80319c");
    assert.equal(rec.span_id, "b7ad6b7169203331");
  });

  test("no span, no trace context", async () => {
    const client = new Client({ url: server.url, passport: PASSPORT });
    const d = await client.decide("bash", { command: "ls" });
    const rec = await record(d.decisionId);
    assert.equal(rec.trace_id, undefined);
    assert.equal(rec.span_id, undefined);
  });
});
