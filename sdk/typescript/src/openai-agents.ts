/**
 * Tollgate for the OpenAI Agents SDK (`@openai/agents`), on its tool guardrail API.
 *
 * ```ts
 * import { Agent } from "@openai/agents";
 * import { guardTools } from "@tollgate/sdk/openai-agents";
 * const agent = new Agent({ name: "coder", tools: guardTools([bash, readFile]) });
 * ```
 *
 * `guardTools` puts a Tollgate tool input guardrail in front of each function tool. A denied call
 * does not run: the guardrail rejects it (`rejectContent`) and the model reads the OAP code and
 * reason as the tool's output; the run goes on. A call Tollgate rewrites runs with the rewritten
 * arguments (the guarded tool's `invoke` applies the guardrail's decision, so each call is decided
 * once). `tollgateToolGuardrail` is the bare guardrail for `tool({inputGuardrails: [...]})`, and
 * `tollgatePromptGuardrail` an agent input guardrail that screens the user's input (`pre_llm_call`).
 */
import {
  ToolGuardrailFunctionOutputFactory,
  defineToolInputGuardrail,
  defineToolOutputGuardrail,
  type FunctionTool,
  type InputGuardrail,
  type RunContext,
  type Tool,
  type ToolInputGuardrailDefinition,
  type ToolOutputGuardrailDefinition,
} from "@openai/agents";

import { Guard, denialMessage, errorDecision, invalidArguments, parseArguments, retryMessage, withheldMessage, type GuardOptions } from "./guard.js";
import type { Decision, Message } from "./types.js";

export { Guard, denialMessage, explain, retryMessage, type GuardOptions } from "./guard.js";

/** The name of Tollgate's tool input guardrail, as it shows in `result.toolInputGuardrailResults`. */
export const TOOL_GUARDRAIL_NAME = "tollgate";
/** The name of Tollgate's tool output guardrail. */
export const OUTPUT_GUARDRAIL_NAME = "tollgate_output";
/** The name of Tollgate's agent input guardrail. */
export const PROMPT_GUARDRAIL_NAME = "tollgate_prompt";

// Bound on decisions kept between a guardrail and its tool's invoke (a call cancelled in between
// leaves its entry behind).
const maxPending = 1024;

function outputInfo(d: Decision): Record<string, unknown> {
  return { decision: d.decision, decisionId: d.decisionId, reasons: d.reasons, policyId: d.policyId };
}

/**
 * Returns a tool input guardrail that decides each call with Tollgate: allow → allow, deny →
 * `rejectContent` with the OAP code and reason. On its own a guardrail cannot change a call's
 * arguments, so a rewrite is rejected with the rewritten arguments for the model to call again
 * with; use {@link guardTool} to have rewrites applied.
 */
export function tollgateToolGuardrail<TContext = unknown>(options: GuardOptions | Guard = {}): ToolInputGuardrailDefinition<TContext> {
  const guard = options instanceof Guard ? options : new Guard(options);
  return defineToolInputGuardrail<TContext>({
    name: TOOL_GUARDRAIL_NAME,
    run: async ({ toolCall }) => {
      const d = await decideCall(guard, toolCall.name, toolCall.arguments, toolCall.callId);
      if (!d.allow) {
        return ToolGuardrailFunctionOutputFactory.rejectContent(denialMessage(toolCall.name, d), outputInfo(d));
      }
      if (d.decision === "modify") {
        return ToolGuardrailFunctionOutputFactory.rejectContent(retryMessage(toolCall.name, d), outputInfo(d));
      }
      return ToolGuardrailFunctionOutputFactory.allow(outputInfo(d));
    },
  });
}

/** Decides one call from its JSON arguments; arguments that are not a JSON object are denied. */
function decideCall(guard: Guard, toolName: string, args: string, callId: string | undefined, signal?: AbortSignal): Promise<Decision> {
  const input = parseArguments(args);
  if (input === undefined) {
    const raw = { arguments: args.length > 256 ? `${args.slice(0, 256)}…` : args };
    return Promise.resolve(guard.local(invalidArguments(), toolName, raw, callId));
  }
  return guard.decide(toolName, input, { callId, signal });
}

/** What a tool returned, as the text the model will read. */
function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  try {
    return JSON.stringify(output) ?? String(output);
  } catch {
    return String(output);
  }
}

/**
 * Returns a tool output guardrail that screens each tool result with Tollgate's `post_tool_call`
 * hook before the model reads it (indirect prompt injection in a fetched page, a file, an API answer):
 * a deny replaces the output with `Tollgate withheld the output of tool '…': <code>: <reason>`.
 */
export function tollgateOutputGuardrail<TContext = unknown>(options: GuardOptions | Guard = {}): ToolOutputGuardrailDefinition<TContext> {
  const guard = options instanceof Guard ? options : new Guard(options);
  return defineToolOutputGuardrail<TContext>({
    name: OUTPUT_GUARDRAIL_NAME,
    run: async ({ toolCall, output }) => {
      const d = await guard.screenToolResult(toolCall.name, typeof output === "string" ? output : outputText(output), { callId: toolCall.callId });
      if (!d.allow) {
        return ToolGuardrailFunctionOutputFactory.rejectContent(withheldMessage(toolCall.name, d), outputInfo(d));
      }
      return ToolGuardrailFunctionOutputFactory.allow(outputInfo(d));
    },
  });
}

/** Options of {@link guardTool} and {@link guardTools} (`screenOutput` adds {@link tollgateOutputGuardrail}). */
export type AgentsGuardOptions = GuardOptions;

interface Pending {
  args: string;
  decision: Decision;
}

/**
 * Returns a copy of the function tool `tool` guarded by Tollgate: a Tollgate tool input guardrail
 * runs first (a deny is rejected with the OAP code and reason), and the tool's `invoke` runs a
 * rewritten call with Tollgate's `modified_input`. When the runner invokes the tool without the
 * guardrail having run (e.g. code calling `invoke` directly), `invoke` decides itself, and a deny
 * returns the denial message as the tool's output. Other kinds of tools are returned unchanged.
 */
export function guardTool<TContext = unknown>(tool: FunctionTool<TContext, any, any>, options: AgentsGuardOptions | Guard = {}): FunctionTool<TContext, any, any> {
  const guard = options instanceof Guard ? options : new Guard(options);
  return guardWith(tool, guard, guard.screenOutput);
}

function guardWith<TContext>(tool: FunctionTool<TContext, any, any>, guard: Guard, screenOutput: boolean): FunctionTool<TContext, any, any> {
  const pending = new Map<string, Pending>();
  const remember = (callId: string, p: Pending) => {
    if (pending.size >= maxPending) {
      const oldest = pending.keys().next().value;
      if (oldest !== undefined) pending.delete(oldest);
    }
    pending.set(callId, p);
  };
  const guardrail = defineToolInputGuardrail<TContext>({
    name: TOOL_GUARDRAIL_NAME,
    run: async ({ toolCall }) => {
      const d = await decideCall(guard, tool.name, toolCall.arguments, toolCall.callId);
      if (!d.allow) {
        return ToolGuardrailFunctionOutputFactory.rejectContent(denialMessage(tool.name, d), outputInfo(d));
      }
      if (toolCall.callId) remember(toolCall.callId, { args: toolCall.arguments, decision: d });
      return ToolGuardrailFunctionOutputFactory.allow(outputInfo(d));
    },
  });
  const original = tool.invoke;
  const invoke: FunctionTool<TContext, any, any>["invoke"] = async (runContext: RunContext<TContext>, input: string, details) => {
    const callId = details?.toolCall?.callId;
    const p = callId ? pending.get(callId) : undefined;
    if (callId) pending.delete(callId);
    const d = p && p.args === input ? p.decision : await decideCall(guard, tool.name, input, callId, details?.signal);
    if (!d.allow) {
      return denialMessage(tool.name, d);
    }
    if (d.decision === "modify" && d.modifiedInput) {
      return original.call(tool, runContext, JSON.stringify(d.modifiedInput), details);
    }
    return original.call(tool, runContext, input, details);
  };
  const outputGuardrails = screenOutput ? [...(tool.outputGuardrails ?? []), tollgateOutputGuardrail<TContext>(guard)] : tool.outputGuardrails;
  return { ...tool, invoke, inputGuardrails: [guardrail, ...(tool.inputGuardrails ?? [])], outputGuardrails };
}

/**
 * Guards every function tool of `tools` with one shared {@link Guard} (see {@link guardTool});
 * hosted, computer and shell tools are returned unchanged.
 */
export function guardTools<TContext = unknown>(tools: readonly Tool<TContext>[], options: AgentsGuardOptions | Guard = {}): Tool<TContext>[] {
  const guard = options instanceof Guard ? options : new Guard(options);
  return tools.map((t) => (t.type === "function" ? guardWith(t as FunctionTool<TContext, any, any>, guard, guard.screenOutput) : t));
}

/** Flattens the agent's input into messages for the `pre_llm_call` hook. */
function toMessages(input: unknown): Message[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input)) return [];
  const out: Message[] = [];
  for (const item of input as Array<Record<string, unknown>>) {
    if (!item || typeof item !== "object" || typeof item["role"] !== "string") continue;
    const content = item["content"];
    if (typeof content === "string") {
      out.push({ role: item["role"], content });
    } else if (Array.isArray(content)) {
      const text = content
        .map((c: unknown) => (c && typeof c === "object" && typeof (c as { text?: unknown }).text === "string" ? (c as { text: string }).text : ""))
        .filter((s) => s !== "")
        .join("\n");
      out.push({ role: item["role"], content: text });
    }
  }
  return out;
}

/**
 * Returns an agent input guardrail that screens the run's input with Tollgate's `pre_llm_call`
 * hook (the policies' prompt-injection input guards). A deny trips the wire: the run rejects with
 * the SDK's `InputGuardrailTripwireTriggered`, whose `result.output.outputInfo` holds the decision.
 * It blocks the agent until it has decided (`runInParallel: false`).
 */
export function tollgatePromptGuardrail(options: GuardOptions | Guard = {}): InputGuardrail {
  const guard = options instanceof Guard ? options : new Guard(options);
  return {
    name: PROMPT_GUARDRAIL_NAME,
    runInParallel: false,
    execute: async ({ input }) => {
      const messages = toMessages(input);
      if (messages.length === 0) {
        // Nothing to screen (e.g. a resumed run whose input holds only tool items).
        return { tripwireTriggered: false, outputInfo: { screened: false } };
      }
      let d: Decision;
      try {
        const opts: { threadId?: string } = {};
        if (guard.threadId) opts.threadId = guard.threadId;
        d = await guard.client.preLLMCall(messages, opts);
      } catch (err) {
        d = errorDecision(err);
      }
      return { tripwireTriggered: !d.allow, outputInfo: d };
    },
  };
}
