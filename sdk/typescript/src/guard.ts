/**
 * What every framework adapter shares: one decision per tool call that never throws (an error
 * becomes a deny the model can read), and the message a denial shows the model.
 */
import { Client, describe, type ClientOptions } from "./client.js";
import { RequestError, TollgateError } from "./errors.js";
import type { Decision, JsonObject } from "./types.js";

/** Options of the framework adapters: a client (or the options to make one) plus call context. */
export interface GuardOptions extends ClientOptions {
  /** The client to ask; by default one is made from the other options and the environment. */
  client?: Client;
  /** The conversation id sent as `thread_id` (default: what the framework knows, if anything). */
  threadId?: string;
  /** Called with every decision the adapter made, e.g. for logging. Errors it throws are ignored. */
  onDecision?: (decision: Decision, call: GuardedCall) => void;
  /**
   * Also screen every tool result (hook `post_tool_call`) before the model reads it: a result the
   * policies' input guards block (indirect prompt injection) is replaced by a `Tollgate withheld …`
   * message.
   */
  screenOutput?: boolean;
}

/** The tool call an adapter decided on. */
export interface GuardedCall {
  /** The tool's name. */
  toolName: string;
  /** The arguments the model asked for. */
  toolInput: JsonObject;
  /** The framework's tool call id, when there is one. */
  callId?: string;
}

/** Raised when code (not a model) invokes a guarded tool directly and Tollgate denies the call. */
export class ToolCallDenied extends TollgateError {
  /** The deny decision. */
  readonly decision: Decision;
  /** The tool's name. */
  readonly toolName: string;

  /** Creates the error from the deny decision. */
  constructor(toolName: string, decision: Decision) {
    super(denialMessage(toolName, decision));
    this.name = "ToolCallDenied";
    this.toolName = toolName;
    this.decision = decision;
  }
}

/**
 * One line for people and models: `code: message (policy id)`, e.g.
 * `oap.blocked_pattern: command matches blocked pattern "rm -rf" (policy system.command.execute.v1#…)`.
 */
export function explain(decision: Decision): string {
  const first = decision.reasons[0];
  let text = first?.code || decision.decision;
  if (first?.message) text += `: ${first.message}`;
  if (decision.policyId) text += ` (policy ${decision.policyId})`;
  return text;
}

/** The message a denial shows the model in place of the tool's output. */
export function denialMessage(toolName: string, decision: Decision): string {
  return `Tollgate denied the call to tool '${toolName}': ${explain(decision)}. Do not retry it unchanged.`;
}

/** What the model reads when the framework cannot run a rewritten call in place. */
export function retryMessage(toolName: string, decision: Decision): string {
  return (
    `Tollgate requires changed arguments for tool '${toolName}' (${explain(decision)}). ` +
    `It did not run; call it again with exactly these arguments: ${JSON.stringify(decision.modifiedInput ?? {})}`
  );
}

/**
 * toToolInput turns a framework's tool arguments into the JSON object Tollgate decides on: objects
 * as they are, JSON object strings parsed, anything else as `{input: value}`.
 */
export function toToolInput(args: unknown): JsonObject {
  if (typeof args === "string") {
    try {
      const v = JSON.parse(args) as unknown;
      if (isPlainObject(v)) return v;
    } catch {
      // not JSON: a plain string argument
    }
    return { input: args };
  }
  if (isPlainObject(args)) return args;
  if (args === undefined || args === null) return {};
  return { input: args };
}

/**
 * parseArguments reads a tool call's JSON arguments string as an object: `{}` for an empty
 * string, undefined when it is not a JSON object (such a call is denied `oap.invalid_request`).
 */
export function parseArguments(raw: string): JsonObject | undefined {
  if (raw.trim() === "") return {};
  try {
    const v = JSON.parse(raw) as unknown;
    return isPlainObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The deny of a call whose arguments are not a JSON object. */
export function invalidArguments(): Decision {
  return {
    allow: false,
    decision: "deny",
    reasons: [{ code: "oap.invalid_request", message: "the tool arguments are not a JSON object" }],
    decisionId: "",
  };
}

/**
 * fromToolInput turns a rewritten input back into the shape the tool was called with: when the
 * tool took a plain string (wrapped as `{input}`), the rewritten `input` string.
 */
export function fromToolInput(original: unknown, modified: JsonObject): unknown {
  if (!isPlainObject(original) && typeof modified["input"] === "string" && Object.keys(modified).length === 1) {
    return modified["input"];
  }
  return modified;
}

/** isPlainObject reports whether v is a JSON object (not an array, not null). */
export function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** withheldMessage is what the model reads instead of a tool result Tollgate screened out. */
export function withheldMessage(toolName: string, decision: Decision): string {
  return `Tollgate withheld the output of tool '${toolName}': ${explain(decision)}`;
}

/** A Guard asks Tollgate about tool calls for one adapter instance. */
export class Guard {
  readonly #options: GuardOptions;
  #client: Client | undefined;

  /** Creates a guard; the client is made on first use so that importing never throws. */
  constructor(options: GuardOptions = {}) {
    this.#options = options;
    this.#client = options.client;
  }

  /** The client, made from the options and the environment on first use. */
  get client(): Client {
    if (!this.#client) {
      const { client: _c, threadId: _t, onDecision: _o, screenOutput: _s, ...clientOptions } = this.#options;
      this.#client = new Client(clientOptions);
    }
    return this.#client;
  }

  /** Whether tool results are screened too. */
  get screenOutput(): boolean {
    return this.#options.screenOutput === true;
  }

  /** The configured thread id, if any. */
  get threadId(): string | undefined {
    return this.#options.threadId;
  }

  /**
   * Decides one tool call. It never throws: when no decision can be had (no URL configured, the
   * token file unreadable, a request the endpoint refuses) it returns a deny carrying the error,
   * so that the tool does not run and the model reads why.
   */
  async decide(toolName: string, toolInput: JsonObject, ctx: { callId?: string | undefined; threadId?: string | undefined; signal?: AbortSignal | undefined } = {}): Promise<Decision> {
    let d: Decision;
    try {
      const opts: Parameters<Client["decide"]>[2] = {};
      if (ctx.callId) opts.callId = ctx.callId;
      const threadId = this.#options.threadId ?? ctx.threadId;
      if (threadId) opts.threadId = threadId;
      if (ctx.signal) opts.signal = ctx.signal;
      d = await this.client.decide(toolName, toolInput, opts);
    } catch (err) {
      if (ctx.signal?.aborted) throw err;
      d = errorDecision(err);
    }
    this.#report(d, toolName, toolInput, ctx.callId);
    return d;
  }

  /**
   * Screens a tool's result before the model reads it (hook `post_tool_call`: the policies' input
   * guards look for indirect prompt injection). It never throws: no decision is a deny.
   */
  async screenToolResult(toolName: string, result: unknown, ctx: { callId?: string | undefined; threadId?: string | undefined; signal?: AbortSignal | undefined } = {}): Promise<Decision> {
    try {
      const opts: Parameters<Client["postToolCall"]>[2] = {};
      if (ctx.callId) opts.callId = ctx.callId;
      const threadId = this.#options.threadId ?? ctx.threadId;
      if (threadId) opts.threadId = threadId;
      if (ctx.signal) opts.signal = ctx.signal;
      return await this.client.postToolCall(toolName, result ?? "", opts);
    } catch (err) {
      if (ctx.signal?.aborted) throw err;
      return errorDecision(err);
    }
  }

  /** Passes a decision to onDecision, ignoring its errors. */
  #report(d: Decision, toolName: string, toolInput: JsonObject, callId: string | undefined): void {
    const cb = this.#options.onDecision;
    if (!cb) return;
    try {
      const call: GuardedCall = { toolName, toolInput };
      if (callId) call.callId = callId;
      cb(d, call);
    } catch {
      // a logging callback must not change the outcome
    }
  }

  /** Decides a call whose decision was made locally (e.g. unreadable arguments), reporting it. */
  local(d: Decision, toolName: string, toolInput: JsonObject, callId?: string): Decision {
    this.#report(d, toolName, toolInput, callId);
    return d;
  }
}

/**
 * The deny that stands in for a decision that could not be had: `oap.invalid_request` when the
 * endpoint refused the request, `oap.evaluator_error` otherwise.
 */
export function errorDecision(err: unknown): Decision {
  return {
    allow: false,
    decision: "deny",
    reasons: [{ code: err instanceof RequestError ? "oap.invalid_request" : "oap.evaluator_error", message: `Tollgate could not decide: ${describe(err)}` }],
    decisionId: "",
  };
}
