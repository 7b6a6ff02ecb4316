import { stat, readFile } from "node:fs/promises";

import { RequestError, TollgateError, Unavailable } from "./errors.js";
import type {
  DecideOptions,
  DecideRequest,
  Decision,
  DecisionMetadata,
  DecisionValue,
  JsonObject,
  LLMResponse,
  Message,
  PolicyResult,
  Reason,
} from "./types.js";
import { traceHeaders } from "./tracing.js";

/** Environment variables the Tollgate pod webhook injects into opted-in agent pods. */
export const ENV_URL = "TOLLGATE_URL";
/** The passport presented when a request names none ("namespace/name"). */
export const ENV_PASSPORT = "TOLLGATE_PASSPORT";
/** A projected ServiceAccount token file (audience `tollgate`), rotated by the kubelet. */
export const ENV_TOKEN_FILE = "TOLLGATE_TOKEN_FILE";

/** Default deadline of one decision, retries included. */
export const DEFAULT_TIMEOUT_MS = 5000;
/** Default number of retries after a connection error, 429 or 5xx. */
export const DEFAULT_RETRIES = 2;

/** Options of {@link Client}. Every field is optional; the three URLs and files default from the environment. */
export interface ClientOptions {
  /** The endpoint's base URL, e.g. `http://tollgate-decider.tollgate-system.svc:8080` (default `$TOLLGATE_URL`). */
  url?: string;
  /** The passport presented when a call names none (default `$TOLLGATE_PASSPORT`). */
  passport?: string;
  /** The OAP passport id presented when neither the call nor the client names a passport. */
  agentId?: string;
  /** A bearer token file, re-read whenever it changes (default `$TOLLGATE_TOKEN_FILE`). */
  tokenFile?: string;
  /** A static bearer token, used when there is no token file. */
  token?: string;
  /** Deadline of one call in milliseconds, retries included (default 5000). */
  timeoutMs?: number;
  /**
   * What an unavailable endpoint means (connection refused or reset, timeout, HTTP 429 or 5xx, an
   * answer that is not a decision; after the retries): `true` (default) a deny decision, `false`
   * an allow decision, both with the reason `oap.evaluator_error` and `unavailable: true`; `null`
   * rejects with {@link Unavailable}. Malformed requests and authentication failures are never
   * covered by this: they reject with {@link RequestError}.
   */
  failClosed?: boolean | null;
  /** Retries after a connection error or HTTP 429/502/503/504, with exponential backoff (default 2, at most 10). */
  retries?: number;
  /** First backoff delay in milliseconds (default 50; doubled each retry, bounded by the deadline). */
  retryBackoffMs?: number;
  /** The fetch implementation (default the platform's `fetch`). */
  fetch?: typeof globalThis.fetch;
  /** Extra HTTP headers sent with every request. */
  headers?: Record<string, string>;
}

interface TokenCache {
  key: string;
  token: string;
}

/**
 * A client of Tollgate's decision endpoint. It is safe to share between concurrent calls; the
 * platform's fetch keeps connections alive.
 *
 * ```ts
 * const tollgate = new Client(); // TOLLGATE_URL, TOLLGATE_PASSPORT, TOLLGATE_TOKEN_FILE
 * const d = await tollgate.decide("bash", { command: "rm -rf /" });
 * if (!d.allow) console.log(d.reasons[0].code); // oap.blocked_pattern
 * ```
 */
export class Client {
  /** The endpoint's base URL, without a trailing slash. */
  readonly url: string;
  /** The default passport. */
  readonly passport: string | undefined;
  /** The default OAP passport id. */
  readonly agentId: string | undefined;
  /** The bearer token file, if any. */
  readonly tokenFile: string | undefined;
  /** The deadline of one call in milliseconds. */
  readonly timeoutMs: number;
  /** What an unavailable endpoint means: true deny, false allow, null reject with Unavailable. */
  readonly failClosed: boolean | null;
  /** Retries after a connection error, 429 or 5xx. */
  readonly retries: number;

  readonly #token: string | undefined;
  readonly #backoffMs: number;
  readonly #fetch: typeof globalThis.fetch;
  readonly #headers: Record<string, string>;
  #tokenCache: TokenCache | undefined;

  /** Creates a client; throws {@link TollgateError} when no URL is given and `TOLLGATE_URL` is unset. */
  constructor(options: ClientOptions = {}) {
    const env = process.env;
    const url = options.url ?? env[ENV_URL];
    if (!url) {
      throw new TollgateError(`tollgate: no endpoint URL: pass {url} or set ${ENV_URL}`);
    }
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch (err) {
      throw new TollgateError(`tollgate: invalid endpoint URL ${JSON.stringify(url)}`, { cause: err });
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new TollgateError(`tollgate: endpoint URL ${JSON.stringify(url)} is not http(s)`);
    }
    this.url = url.replace(/\/+$/, "");
    this.passport = options.passport ?? (env[ENV_PASSPORT] || undefined);
    this.agentId = options.agentId;
    this.tokenFile = options.tokenFile ?? (env[ENV_TOKEN_FILE] || undefined);
    this.#token = options.token;
    this.timeoutMs = positive(options.timeoutMs, DEFAULT_TIMEOUT_MS, "timeoutMs");
    this.failClosed = options.failClosed === undefined ? true : options.failClosed;
    const retries = options.retries ?? DEFAULT_RETRIES;
    if (!Number.isInteger(retries) || retries < 0 || retries > 10) {
      throw new TollgateError(`tollgate: retries must be an integer from 0 to 10, got ${String(options.retries)}`);
    }
    this.retries = retries;
    this.#backoffMs = positive(options.retryBackoffMs, 50, "retryBackoffMs");
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") {
      throw new TollgateError("tollgate: no fetch implementation: Node.js 20 or later provides one");
    }
    this.#fetch = f;
    this.#headers = { ...(options.headers ?? {}) };
  }

  /**
   * Asks whether a tool call may proceed (hook `pre_tool_call` unless `options.hook` says
   * otherwise). Resolves to the decision, deny included. Rejects with {@link RequestError} when the
   * endpoint refuses the request (the error names the field) and with {@link TollgateError} when
   * the token file cannot be read. An unavailable endpoint yields a deny (`failClosed`, the
   * default) or an allow decision with `unavailable: true`, or rejects with {@link Unavailable}
   * when `failClosed` is null.
   */
  async decide(toolName: string | undefined, toolInput?: JsonObject, options: DecideOptions = {}): Promise<Decision> {
    const body = this.#wireRequest({ ...options, toolName, toolInput });
    try {
      return decodeDecision(await this.#post("/v1/decide", body, options.signal), "");
    } catch (err) {
      if (err instanceof Unavailable) {
        return this.#unavailableDecision(err);
      }
      throw err;
    }
  }

  /** Decides many requests in one round trip; the decisions are in request order. */
  async decideBatch(requests: DecideRequest[], options: { signal?: AbortSignal } = {}): Promise<Decision[]> {
    if (!Array.isArray(requests)) {
      throw new TypeError("tollgate: decideBatch wants an array of requests");
    }
    const body = { requests: requests.map((r) => this.#wireRequest(r)) };
    let out: unknown;
    try {
      out = await this.#post("/v1/decide:batch", body, options.signal);
    } catch (err) {
      if (err instanceof Unavailable) {
        return requests.map(() => this.#unavailableDecision(err));
      }
      throw err;
    }
    try {
      const ds = isObject(out) ? out["decisions"] : undefined;
      if (!Array.isArray(ds) || ds.length !== requests.length) {
        const got = Array.isArray(ds) ? ds.length : "no";
        throw new Unavailable(`tollgate: the endpoint answered ${got} decisions for ${requests.length} requests`, 1, 200);
      }
      return ds.map((d, i) => decodeDecision(d, `decisions[${i}]`));
    } catch (err) {
      if (err instanceof Unavailable) {
        return requests.map(() => this.#unavailableDecision(err));
      }
      throw err;
    }
  }

  /**
   * Screens the conversation before an LLM call (hook `pre_llm_call`): the latest user message is
   * checked for prompt injection by the policies' input guards.
   */
  preLLMCall(messages: Message[], options: Omit<DecideOptions, "hook" | "messages"> = {}): Promise<Decision> {
    return this.decide(undefined, undefined, { ...options, hook: "pre_llm_call", messages });
  }

  /**
   * Checks an LLM response before its tool calls run and its text is shown (hook `post_llm_call`):
   * a safety finish reason with tool calls is denied (`oap.response_blocked`), and so is content
   * that the policies' response guards block (e.g. `oap.secret_leak`).
   */
  postLLMCall(response: LLMResponse, options: Omit<DecideOptions, "hook" | "response"> = {}): Promise<Decision> {
    return this.decide(undefined, undefined, { ...options, hook: "post_llm_call", response });
  }

  /**
   * Screens a tool's result before the model reads it (hook `post_tool_call`): the policies' input
   * guards look for indirect prompt injection in it (a deny is e.g. `oap.prompt_injection`: do not
   * show the result to the model).
   */
  postToolCall(toolName: string | undefined, toolResult: unknown, options: Omit<DecideOptions, "hook" | "toolResult"> = {}): Promise<Decision> {
    return this.decide(toolName, undefined, { ...options, hook: "post_tool_call", toolResult });
  }

  /** Reads GET /v1/status: the loaded bundle revision per namespace. Raises Unavailable when unreachable. */
  async status(options: { signal?: AbortSignal } = {}): Promise<Record<string, unknown>> {
    const out = await this.#send("GET", "/v1/status", undefined, options.signal);
    if (!isObject(out)) {
      throw new TollgateError("tollgate: decoding status: not a JSON object");
    }
    return out;
  }

  #wireRequest(r: DecideRequest): JsonObject {
    const body: JsonObject = {};
    const passport = r.passport ?? (r.agentId ? undefined : this.passport);
    const agentId = r.agentId ?? (passport ? undefined : this.agentId);
    if (passport) body["passport"] = passport;
    if (agentId) body["agent_id"] = agentId;
    if (r.toolName !== undefined) body["tool_name"] = r.toolName;
    if (r.toolInput !== undefined) body["tool_input"] = r.toolInput;
    if (r.hook) body["hook"] = r.hook;
    if (r.messages !== undefined) body["messages"] = r.messages;
    if (r.response) {
      if (r.response.finishReason) body["finish_reason"] = r.response.finishReason;
      if (r.response.stopReason) body["stop_reason"] = r.response.stopReason;
      if (r.response.toolCalls) body["tool_calls"] = r.response.toolCalls;
      if (r.response.content !== undefined) body["content"] = r.response.content;
    }
    if (r.toolResult !== undefined) body["tool_result"] = r.toolResult;
    if (r.threadId) body["thread_id"] = r.threadId;
    if (r.callId) body["call_id"] = r.callId;
    if (r.isSubagent) body["is_subagent"] = true;
    if (r.timestamp !== undefined) {
      body["timestamp"] = r.timestamp instanceof Date ? r.timestamp.toISOString() : r.timestamp;
    }
    if (r.extra) {
      for (const [k, v] of Object.entries(r.extra)) {
        if (!(k in body)) body[k] = v;
      }
    }
    return body;
  }

  #unavailableDecision(err: Unavailable): Decision {
    if (this.failClosed === null) {
      throw err;
    }
    const mode = this.failClosed ? "failing closed" : "failing open";
    return {
      allow: !this.failClosed,
      decision: this.failClosed ? "deny" : "allow",
      reasons: [{ code: "oap.evaluator_error", message: `Tollgate endpoint unavailable, ${mode}: ${err.message}` }],
      decisionId: "",
      unavailable: true,
    };
  }

  /** The bearer token: the token file's content, re-read when the file changed (or when forced). */
  async #bearer(force = false): Promise<string | undefined> {
    if (!this.tokenFile) {
      return this.#token;
    }
    if (force) this.#tokenCache = undefined;
    let key: string;
    try {
      const st = await stat(this.tokenFile);
      key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    } catch (err) {
      throw new TollgateError(`tollgate: reading token file ${this.tokenFile}: ${describe(err)}`, { cause: err });
    }
    if (this.#tokenCache?.key === key) {
      return this.#tokenCache.token;
    }
    let token: string;
    try {
      token = (await readFile(this.tokenFile, "utf8")).trim();
    } catch (err) {
      throw new TollgateError(`tollgate: reading token file ${this.tokenFile}: ${describe(err)}`, { cause: err });
    }
    this.#tokenCache = { key, token };
    return token;
  }

  #post(path: string, body: JsonObject, signal?: AbortSignal): Promise<unknown> {
    let payload: string;
    try {
      payload = JSON.stringify(body);
    } catch (err) {
      throw new TollgateError(`tollgate: encoding request: ${describe(err)}`, { cause: err });
    }
    return this.#send("POST", path, payload, signal);
  }

  async #send(method: string, path: string, payload: string | undefined, signal?: AbortSignal): Promise<unknown> {
    const target = this.url + path;
    const deadline = Date.now() + this.timeoutMs;
    let reauthed = false;
    // Read before any await of this call: the caller's active span, if OpenTelemetry is in use.
    const trace = await traceHeaders();
    for (let attempt = 1; ; attempt++) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Unavailable(`tollgate: no answer from ${target} within ${this.timeoutMs}ms`, attempt - 1);
      }
      const headers: Record<string, string> = { Accept: "application/json", ...this.#headers, ...trace };
      if (payload !== undefined) headers["Content-Type"] = "application/json";
      const token = await this.#bearer();
      if (token) headers["Authorization"] = `Bearer ${token}`;
      const timeout = AbortSignal.timeout(remaining);
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      let status: number;
      let text: string;
      let retryAfterMs = 0;
      try {
        const init: RequestInit = { method, headers, signal: combined };
        if (payload !== undefined) init.body = payload;
        const res = await this.#fetch(target, init);
        status = res.status;
        retryAfterMs = parseRetryAfter(res.headers.get("retry-after"));
        text = await res.text();
      } catch (err) {
        if (signal?.aborted) {
          throw signal.reason ?? err;
        }
        if (timeout.aborted) {
          throw new Unavailable(`tollgate: no answer from ${target} within ${this.timeoutMs}ms`, attempt, undefined, { cause: err });
        }
        if (attempt > this.retries) {
          throw new Unavailable(`tollgate: cannot reach ${target}: ${describe(err)} (${attempt} attempts)`, attempt, undefined, { cause: err });
        }
        await sleep(Math.min(this.#backoffMs * 2 ** (attempt - 1), deadline - Date.now()), signal);
        continue;
      }
      if (status >= 200 && status < 300) {
        try {
          return JSON.parse(text) as unknown;
        } catch (err) {
          throw new Unavailable(`tollgate: the answer of ${path} is not JSON: ${describe(err)}`, attempt, status, { cause: err });
        }
      }
      if (status === 401 && this.tokenFile && !reauthed) {
        // The kubelet may have rotated the token since it was read: read it again, once.
        reauthed = true;
        if ((await this.#bearer(true)) !== token) {
          attempt--;
          continue;
        }
      }
      if (status === 429 || status >= 500) {
        const why = errorBody(text);
        if (!retryableStatus.has(status) || attempt > this.retries) {
          throw new Unavailable(`tollgate: ${target} answered HTTP ${status}${why.message ? `: ${why.message}` : ""} (${attempt} attempts)`, attempt, status);
        }
        const backoff = Math.max(this.#backoffMs * 2 ** (attempt - 1), retryAfterMs);
        await sleep(Math.min(backoff, deadline - Date.now()), signal);
        continue;
      }
      const e = errorBody(text);
      throw new RequestError(status, e.code || `http_${status}`, e.message || text.trim().slice(0, 512) || `HTTP ${status}`, e.field);
    }
  }
}

// Answers worth another attempt: overload and gateways between the agent and the endpoint.
const retryableStatus = new Set([429, 502, 503, 504]);

function positive(v: number | undefined, def: number, name: string): number {
  if (v === undefined) return def;
  if (!Number.isFinite(v) || v <= 0) {
    throw new TollgateError(`tollgate: ${name} must be a positive number, got ${String(v)}`);
  }
  return v;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** describe renders an error for a message, with the cause's code (fetch hides the reason there). */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${err.message}: ${typeof code === "string" ? `${code} ` : ""}${cause.message}`;
  }
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}

function errorBody(text: string): { code: string; message: string; field: string } {
  try {
    const v = JSON.parse(text) as unknown;
    if (isObject(v) && isObject(v["error"])) {
      const e = v["error"];
      return {
        code: typeof e["code"] === "string" ? e["code"] : "",
        message: typeof e["message"] === "string" ? e["message"] : "",
        field: typeof e["field"] === "string" ? e["field"] : "",
      };
    }
  } catch {
    // not JSON: the caller falls back to the text
  }
  return { code: "", message: "", field: "" };
}

function parseRetryAfter(v: string | null): number {
  if (!v) return 0;
  const s = Number(v);
  return Number.isFinite(s) && s >= 0 ? Math.min(s * 1000, 10_000) : 0;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

const decisionValues = new Set<string>(["allow", "deny", "modify"]);

function decodeReason(v: unknown): Reason {
  const r = isObject(v) ? v : {};
  return {
    code: typeof r["code"] === "string" ? r["code"] : "",
    message: typeof r["message"] === "string" ? r["message"] : "",
  };
}

function decodePolicyResult(v: unknown): PolicyResult {
  const r = isObject(v) ? v : {};
  const out: PolicyResult = {
    policyId: typeof r["policy_id"] === "string" ? r["policy_id"] : "",
    decision: (typeof r["decision"] === "string" ? r["decision"] : "allow") as DecisionValue,
    reason: decodeReason(r["reason"]),
  };
  if (isObject(r["modified_input"])) out.modifiedInput = r["modified_input"];
  return out;
}

function decodeMetadata(v: Record<string, unknown>): DecisionMetadata {
  const md: DecisionMetadata = {};
  for (const [k, val] of Object.entries(v)) {
    switch (k) {
      case "dry_run":
        md.dryRun = Array.isArray(val) ? val.map(decodePolicyResult) : [];
        break;
      case "warnings":
        md.warnings = Array.isArray(val) ? val.map(decodePolicyResult) : [];
        break;
      case "risk_assessment":
        if (isObject(val)) {
          md.riskAssessment = {
            hasRisk: val["has_risk"] === true,
            riskLevel: String(val["risk_level"] ?? ""),
            confidence: typeof val["confidence"] === "number" ? val["confidence"] : 0,
          };
          if (typeof val["risk_type"] === "string") md.riskAssessment.riskType = val["risk_type"];
          if (Array.isArray(val["details"])) md.riskAssessment.details = val["details"].map(String);
        }
        break;
      case "modified_by":
        md.modifiedBy = Array.isArray(val) ? val.map(String) : [];
        break;
      case "suppressed_tool_calls":
        if (isObject(val)) {
          md.suppressedToolCalls = {
            detector: String(val["detector"] ?? ""),
            reasonField: String(val["reason_field"] ?? ""),
            reasonValue: String(val["reason_value"] ?? ""),
            toolNames: Array.isArray(val["tool_names"]) ? val["tool_names"].map(String) : [],
            count: typeof val["count"] === "number" ? val["count"] : 0,
          };
        }
        break;
      default:
        md[k] = val;
    }
  }
  return md;
}

/** decodeDecision turns the endpoint's JSON decision into a {@link Decision}, checking its shape. */
function decodeDecision(v: unknown, where: string): Decision {
  const at = where ? ` (${where})` : "";
  if (!isObject(v)) {
    throw new Unavailable(`tollgate: the endpoint's answer${at} is not a decision: not a JSON object`, 1, 200);
  }
  const value = v["decision"];
  if (typeof value !== "string" || !decisionValues.has(value) || typeof v["allow"] !== "boolean") {
    throw new Unavailable(`tollgate: the endpoint's answer${at} is not a decision: want "decision" allow|deny|modify and a boolean "allow"`, 1, 200);
  }
  // allow must agree with decision: a deny that says allow:true is not trusted.
  const allow = v["allow"] && value !== "deny";
  const d: Decision = {
    allow,
    decision: value as DecisionValue,
    reasons: Array.isArray(v["reasons"]) ? v["reasons"].map(decodeReason) : [],
    decisionId: typeof v["decision_id"] === "string" ? v["decision_id"] : "",
  };
  if (value === "modify") {
    if (!isObject(v["modified_input"])) {
      throw new Unavailable(`tollgate: the endpoint's answer${at} is not a decision: a modify without modified_input`, 1, 200);
    }
    d.modifiedInput = v["modified_input"];
  }
  if (typeof v["policy_id"] === "string") d.policyId = v["policy_id"];
  if (typeof v["passport_digest"] === "string") d.passportDigest = v["passport_digest"];
  if (typeof v["bundle_revision"] === "string") d.bundleRevision = v["bundle_revision"];
  if (typeof v["created_at"] === "string") d.createdAt = v["created_at"];
  if (typeof v["expires_in"] === "number") d.expiresIn = v["expires_in"];
  const sig = v["signature"];
  if (isObject(sig) && typeof sig["alg"] === "string" && typeof sig["kid"] === "string" && typeof sig["value"] === "string") {
    d.signature = { alg: sig["alg"], kid: sig["kid"], value: sig["value"] };
  }
  if (isObject(v["metadata"])) d.metadata = decodeMetadata(v["metadata"]);
  return d;
}
