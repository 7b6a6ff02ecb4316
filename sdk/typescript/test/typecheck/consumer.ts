// Compiled (not run) by hack/test-typescript.sh: the published declarations type-check as a user
// of each entry point writes them, against the pinned frameworks' own types.
import { AIMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { tool as lcTool } from "@langchain/core/tools";
import { createReactAgent, ToolNode } from "@langchain/langgraph/prebuilt";
import { Agent, tool as oaTool } from "@openai/agents";
import { createAgent } from "langchain";
import { z } from "zod";

import { Client, RequestError, Unavailable, type Decision } from "@tollgate/sdk";
import { tollgateMiddleware } from "@tollgate/sdk/langchain";
import { guardTool, guardTools } from "@tollgate/sdk/langgraph";
import { guardTools as guardAgentTools, tollgatePromptGuardrail, tollgateToolGuardrail } from "@tollgate/sdk/openai-agents";

export async function client(): Promise<string> {
  const c = new Client({ url: "http://127.0.0.1:8080", passport: "coding-agent", timeoutMs: 1000, failClosed: null });
  try {
    const d: Decision = await c.decide("bash", { command: "ls" }, { hook: "pre_tool_call", threadId: "t", callId: "c" });
    const [b] = await c.decideBatch([{ toolName: "bash", toolInput: { command: "ls" } }]);
    const p = await c.preLLMCall([{ role: "user", content: "hi" }]);
    const q = await c.postLLMCall({ finishReason: "stop", toolCalls: [{ name: "bash", arguments: {} }], content: "ok" });
    const r = await c.postToolCall("web_fetch", { body: "page" }, { callId: "c" });
    if (r.metadata?.modifiedBy?.length) return "modified";
    return [d.decision, b?.reasons[0]?.code, p.metadata?.riskAssessment?.riskLevel, q.allow, d.modifiedInput?.["command"]].join(" ");
  } catch (err) {
    if (err instanceof RequestError) return err.field;
    if (err instanceof Unavailable) return String(err.attempts);
    throw err;
  }
}

const bash = lcTool(async ({ command }) => command, { name: "bash", description: "run", schema: z.object({ command: z.string() }) });

export const langchainAgent = createAgent({ model: fakeModel(), tools: [bash], middleware: [tollgateMiddleware()] });
export const langgraphAgent = createReactAgent({ llm: fakeModel().respond(new AIMessage("x")), tools: guardTools([bash]) });
export const node = new ToolNode([guardTool(bash, { passport: "coding-agent" })]);

const oaBash = oaTool({
  name: "bash",
  description: "run",
  parameters: z.object({ command: z.string() }),
  execute: async ({ command }) => command,
  inputGuardrails: [tollgateToolGuardrail()],
});
export const openaiAgent = new Agent({ name: "coder", tools: guardAgentTools([oaBash]), inputGuardrails: [tollgatePromptGuardrail()] });
