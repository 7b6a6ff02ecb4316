/**
 * Tollgate for LangChain.js tools (`@langchain/core`), wherever they run: LangGraph's `ToolNode`
 * and `createReactAgent`, LangChain's `createAgent`, or your own graph.
 *
 * ```ts
 * import { guardTools } from "@tollgate/sdk/langgraph";
 * const agent = createReactAgent({ llm, tools: guardTools([bash, readFile]) });
 * ```
 *
 * A guarded tool asks Tollgate before every call. A denied call does not run: the model gets a
 * `ToolMessage` with `status: "error"` carrying the OAP code and reason. A rewritten call runs with
 * Tollgate's `modified_input`. Only `@langchain/core` is needed.
 */
import { ToolMessage } from "@langchain/core/messages";
import type { StructuredToolInterface } from "@langchain/core/tools";

import { Guard, ToolCallDenied, denialMessage, fromToolInput, toToolInput, withheldMessage, type GuardOptions } from "./guard.js";

export { ToolCallDenied, denialMessage, explain, type GuardOptions } from "./guard.js";

/** A LangChain tool call as `ToolNode` passes it to `tool.invoke`. */
interface ToolCallInput {
  type: "tool_call";
  id?: string;
  name: string;
  args: unknown;
}

function isToolCall(v: unknown): v is ToolCallInput {
  return typeof v === "object" && v !== null && (v as { type?: unknown }).type === "tool_call";
}

interface InvokeConfig {
  toolCall?: { id?: string };
  configurable?: { thread_id?: unknown };
  signal?: AbortSignal;
}

const guarded = new WeakSet<object>();

/**
 * Returns `tool` guarded by Tollgate: an object that behaves as the tool (same name, description,
 * schema and class, through its prototype) whose `invoke` first asks Tollgate. Invoked with a tool
 * call (as agents do), a denial resolves to an error `ToolMessage` the model reads; invoked with
 * plain arguments by code, a denial rejects with {@link ToolCallDenied}. Guarding a guarded tool
 * returns it unchanged.
 */
export function guardTool<T extends StructuredToolInterface>(tool: T, options: GuardOptions | Guard = {}): T {
  if (guarded.has(tool)) return tool;
  const guard = options instanceof Guard ? options : new Guard(options);
  const wrapped = Object.create(tool) as T;
  const invoke = async (input: unknown, config?: InvokeConfig): Promise<unknown> => {
    const call = isToolCall(input) ? input : undefined;
    const args = call ? call.args : input;
    const callId = call?.id ?? config?.toolCall?.id;
    const thread = config?.configurable?.thread_id;
    const threadId = typeof thread === "string" ? thread : undefined;
    const d = await guard.decide(tool.name, toToolInput(args), { callId, threadId, signal: config?.signal });
    if (!d.allow) {
      if (call || callId) {
        return new ToolMessage({ content: denialMessage(tool.name, d), tool_call_id: callId ?? "", name: tool.name, status: "error" });
      }
      throw new ToolCallDenied(tool.name, d);
    }
    const run = async (x: unknown) => {
      const out = await (tool.invoke as (i: unknown, c?: unknown) => Promise<unknown>)(x, config);
      return guard.screenOutput ? screenToolMessage(guard, tool.name, out, { threadId, signal: config?.signal }) : out;
    };
    if (d.decision === "modify" && d.modifiedInput) {
      const next = fromToolInput(args, d.modifiedInput);
      return run(call ? { ...call, args: next } : next);
    }
    return run(input);
  };
  Object.defineProperty(wrapped, "invoke", { value: invoke, writable: true, configurable: true, enumerable: false });
  guarded.add(wrapped);
  return wrapped;
}

/**
 * Screens a tool's result (a `ToolMessage`, or a plain value returned to code) with Tollgate's
 * `post_tool_call` hook before the model reads it; a deny replaces it with a `Tollgate withheld …`
 * error message (or, for a plain value, the message as a string). Other results (e.g. a LangGraph
 * `Command`) pass unchanged.
 */
export async function screenToolMessage<R>(guard: Guard, toolName: string, result: R, ctx: { threadId?: string | undefined; signal?: AbortSignal | undefined } = {}): Promise<R | ToolMessage | string> {
  const isMessage = ToolMessage.isInstance(result);
  let payload: unknown;
  let callId: string | undefined;
  if (isMessage) {
    payload = result.content;
    callId = result.tool_call_id || undefined;
  } else if (typeof result === "string" || (result !== null && typeof result === "object" && !("lg_name" in result))) {
    payload = result;
  } else {
    return result;
  }
  const d = await guard.screenToolResult(toolName, payload, { callId, threadId: ctx.threadId, signal: ctx.signal });
  if (d.allow) return result;
  const content = withheldMessage(toolName, d);
  if (isMessage) {
    return new ToolMessage({ content, tool_call_id: result.tool_call_id, name: result.name ?? toolName, status: "error" });
  }
  return content;
}

/** Guards every tool of `tools` with one shared {@link Guard} (see {@link guardTool}). */
export function guardTools<T extends StructuredToolInterface>(tools: readonly T[], options: GuardOptions | Guard = {}): T[] {
  const guard = options instanceof Guard ? options : new Guard(options);
  return tools.map((t) => guardTool(t, guard));
}

export { Guard } from "./guard.js";
