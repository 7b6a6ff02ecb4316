/** Wire and SDK types of Tollgate's decision API (POST /v1/decide, POST /v1/decide:batch). */

/** The hooks a decision request can be made for. */
export type Hook = "pre_tool_call" | "pre_llm_call" | "post_llm_call" | "post_tool_call";

/** The decision values. */
export type DecisionValue = "allow" | "deny" | "modify";

/** A JSON object: tool arguments and rewritten arguments. */
export type JsonObject = { [key: string]: unknown };

/** An OAP reason code with a human-readable message, e.g. `oap.blocked_pattern`. */
export interface Reason {
  /** The OAP reason code. */
  code: string;
  /** A human-readable explanation (may be empty). */
  message: string;
}

/** One conversation message, for the `pre_llm_call` hook. Content may be text or parts. */
export interface Message {
  /** user, assistant, system or tool. */
  role: string;
  /** The text, or an array of parts of which the `text` ones are joined by the endpoint. */
  content: string | Array<{ type?: string; text?: string; [key: string]: unknown }>;
}

/** One tool call of an LLM response, for the `post_llm_call` hook. */
export interface ToolCall {
  /** The tool's name. */
  name: string;
  /** The call's arguments (never echoed back in decisions). */
  arguments?: unknown;
}

/** An LLM response as the `post_llm_call` hook sees it. */
export interface LLMResponse {
  /** The provider's finish reason, e.g. `stop`, `tool_calls`, `content_filter`. */
  finishReason?: string;
  /** The provider's stop reason (used when finishReason is empty), e.g. Anthropic's `refusal`. */
  stopReason?: string;
  /** The response's tool calls. */
  toolCalls?: ToolCall[];
  /** The response's text (a string or parts), screened by the policies' response guards. */
  content?: Message["content"];
}

/** What one policy decided or would have decided (dry-run results and warnings). */
export interface PolicyResult {
  /** The policy id plus `#rule`. */
  policyId: string;
  /** allow, deny or modify. */
  decision: DecisionValue;
  /** The policy's reason. */
  reason: Reason;
  /** The would-be rewritten input of a modify. */
  modifiedInput?: JsonObject;
}

/** The decision's metadata: dry-run results, warnings, risk assessment, suppressed calls. */
export interface DecisionMetadata {
  /** What DryRun policies would have done. */
  dryRun?: PolicyResult[];
  /** Reasons of Warn policies and other non-fatal findings. */
  warnings?: PolicyResult[];
  /** The guards' verdict on the screened text (`pre_llm_call`, `post_tool_call`, `post_llm_call` content). */
  riskAssessment?: {
    hasRisk: boolean;
    riskLevel: string;
    riskType?: string;
    confidence: number;
    details?: string[];
  };
  /** The tool calls suppressed after a safety termination (`post_llm_call`). */
  suppressedToolCalls?: {
    detector: string;
    reasonField: string;
    reasonValue: string;
    toolNames: string[];
    count: number;
  };
  /** Every policy (`policy_id#rule`) that changed the input of a modify, in the order they applied. */
  modifiedBy?: string[];
  /** Every other metadata key, as sent. */
  [key: string]: unknown;
}

/** The endpoint's answer. A deny is a Decision, not an error. */
export interface Decision {
  /** True for allow and modify. */
  allow: boolean;
  /** allow, deny or modify. */
  decision: DecisionValue;
  /** Why; never empty (`oap.allowed` on allow). */
  reasons: Reason[];
  /** For a modify, the complete rewritten tool input to run instead of the original. */
  modifiedInput?: JsonObject;
  /** The deciding policy's id plus `#rule` when a rule decided. */
  policyId?: string;
  /** The decision's id ("" when the client decided because the endpoint was unavailable). */
  decisionId: string;
  /** Dry-run results, warnings, risk assessment, suppressed tool calls. */
  metadata?: DecisionMetadata;
  /** sha256 of the canonical passport. */
  passportDigest?: string;
  /** Revision of the policy bundle that decided. */
  bundleRevision?: string;
  /** When the decision was made (RFC 3339). */
  createdAt?: string;
  /** How many seconds the decision may be cached. */
  expiresIn?: number;
  /**
   * The endpoint's Ed25519 signature over the decision's canonical JSON, when it signs decisions
   * (`tollgate verify` checks a stored decision against the endpoint's `/.well-known/jwks.json`).
   */
  signature?: DecisionSignature;
  /**
   * True when the endpoint was unavailable and the client decided by its `failClosed` setting
   * (`reasons` then carries `oap.evaluator_error`).
   */
  unavailable?: boolean;
}

/** A signed decision's signature: `alg` EdDSA, the key id and the base64url value. */
export interface DecisionSignature {
  alg: string;
  kid: string;
  value: string;
}

/** Per-call options of {@link Client.decide}. */
export interface DecideOptions {
  /** The hook: `pre_tool_call` (default), `pre_llm_call`, `post_llm_call` or `post_tool_call`. */
  hook?: Hook;
  /** The passport ("namespace/name" or "name"); defaults to the client's. */
  passport?: string;
  /** The OAP passport id, used instead of a passport reference. */
  agentId?: string;
  /** The conversation (rate limits per thread). */
  threadId?: string;
  /** The tool call's id. */
  callId?: string;
  /** The conversation, for `pre_llm_call`. */
  messages?: Message[];
  /** The LLM response, for `post_llm_call`. */
  response?: LLMResponse;
  /** The tool's result, for `post_tool_call`: text, or any JSON whose strings are screened. */
  toolResult?: unknown;
  /** Whether the caller is a sub-agent. */
  isSubagent?: boolean;
  /** When the agent made the call (informational). */
  timestamp?: Date | string;
  /** Further top-level request fields, sent as they are (for API fields this SDK does not name yet). */
  extra?: JsonObject;
  /** Aborts the request. */
  signal?: AbortSignal;
}

/** One request of {@link Client.decideBatch}. */
export interface DecideRequest extends Omit<DecideOptions, "signal"> {
  /** The tool's name (required for `pre_tool_call`). */
  toolName?: string;
  /** The tool's arguments (a JSON object). */
  toolInput?: JsonObject;
}
