/**
 * `@tollgate/sdk`: a client of Tollgate's decision API on the platform's fetch. Framework adapters
 * live in subpaths: `@tollgate/sdk/langchain`, `@tollgate/sdk/langgraph`,
 * `@tollgate/sdk/openai-agents`.
 */
export {
  Client,
  DEFAULT_RETRIES,
  DEFAULT_TIMEOUT_MS,
  ENV_PASSPORT,
  ENV_TOKEN_FILE,
  ENV_URL,
  type ClientOptions,
} from "./client.js";
export { RequestError, TollgateError, Unavailable, type TollgateErrorOptions } from "./errors.js";
export { Guard, ToolCallDenied, denialMessage, errorDecision, explain, retryMessage, type GuardOptions, type GuardedCall } from "./guard.js";
export type {
  DecideOptions,
  DecideRequest,
  Decision,
  DecisionMetadata,
  DecisionSignature,
  DecisionValue,
  Hook,
  JsonObject,
  LLMResponse,
  Message,
  PolicyResult,
  Reason,
  ToolCall,
} from "./types.js";
