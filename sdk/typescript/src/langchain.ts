/**
 * Tollgate for LangChain.js v1 agents (`createAgent` from `langchain`): a middleware whose
 * `wrapToolCall` asks Tollgate before every tool call the agent makes.
 *
 * ```ts
 * import { createAgent } from "langchain";
 * import { tollgateMiddleware } from "@tollgate/sdk/langchain";
 * const agent = createAgent({ model, tools, middleware: [tollgateMiddleware()] });
 * ```
 *
 * A denied call does not run: the model gets a `ToolMessage` with `status: "error"` carrying the
 * OAP code and reason, and the agent loop goes on. A rewritten call runs with Tollgate's
 * `modified_input`. For LangGraph's `createReactAgent` or a bare `ToolNode`, guard the tools
 * themselves with `guardTools` (re-exported here from `@tollgate/sdk/langgraph`).
 */
import { ToolMessage } from "@langchain/core/messages";
import { createMiddleware, type AgentMiddleware } from "langchain";

import { Guard, denialMessage, fromToolInput, toToolInput, type GuardOptions } from "./guard.js";
import { screenToolMessage } from "./langgraph.js";

export { guardTool, guardTools, screenToolMessage, ToolCallDenied } from "./langgraph.js";
export { Guard, denialMessage, explain, type GuardOptions } from "./guard.js";

/** The middleware's name, as LangChain reports it. */
export const MIDDLEWARE_NAME = "TollgateMiddleware";

/**
 * Returns a LangChain agent middleware that decides each tool call with Tollgate (hook
 * `pre_tool_call`, the tool call's id as `call_id`, the run's `thread_id` when configured).
 */
export function tollgateMiddleware(options: GuardOptions | Guard = {}): AgentMiddleware {
  const guard = options instanceof Guard ? options : new Guard(options);
  return createMiddleware({
    name: MIDDLEWARE_NAME,
    wrapToolCall: async (request, handler) => {
      const call = request.toolCall;
      const thread = request.runtime?.configurable?.thread_id;
      const threadId = typeof thread === "string" ? thread : undefined;
      const signal = request.runtime?.signal;
      const d = await guard.decide(call.name, toToolInput(call.args), { callId: call.id, threadId, signal });
      if (!d.allow) {
        return new ToolMessage({ content: denialMessage(call.name, d), tool_call_id: call.id ?? "", name: call.name, status: "error" });
      }
      const next = d.decision === "modify" && d.modifiedInput ? { ...request, toolCall: { ...call, args: fromToolInput(call.args, d.modifiedInput) as typeof call.args } } : request;
      const result = await handler(next);
      // A ToolMessage stays a ToolMessage (a Command passes unchanged), so the cast holds.
      return guard.screenOutput ? ((await screenToolMessage(guard, call.name, result, { threadId, signal })) as typeof result) : result;
    },
  }) as AgentMiddleware;
}
