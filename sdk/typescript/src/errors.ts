/**
 * Errors raised by the Tollgate client. A deny is a {@link Decision}, never an error: errors mean
 * that no decision could be made.
 */

/** Options shared by the error constructors. */
export interface TollgateErrorOptions {
  /** The underlying error, if any. */
  cause?: unknown;
}

/** Base class of every error the SDK raises. */
export class TollgateError extends Error {
  /** Creates an error with a message and an optional cause. */
  constructor(message: string, options: TollgateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "TollgateError";
  }
}

/**
 * The endpoint refused the request (HTTP 4xx other than 429): the request is malformed, too large,
 * or the caller is not authenticated. `field` names the offending request field when the endpoint
 * named one (e.g. `tool_input`, `requests[1].tool_name`, `Authorization`).
 */
export class RequestError extends TollgateError {
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The endpoint's error code, e.g. `invalid_field`, `missing_field` or `unauthenticated`. */
  readonly code: string;
  /** The JSON path of the offending field, or "" for the whole request. */
  readonly field: string;

  /** Creates a RequestError from the endpoint's `{"error": {code, message, field}}` answer. */
  constructor(status: number, code: string, message: string, field = "", options: TollgateErrorOptions = {}) {
    super(`tollgate: HTTP ${status} ${code}${field ? ` (${field})` : ""}: ${message}`, options);
    this.name = "RequestError";
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/**
 * The endpoint could not be reached or could not answer (connection refused or reset, timeout,
 * HTTP 429 or 5xx) after the client's bounded retries. With `failClosed` (the default) the client
 * turns it into a deny decision instead of raising it; see {@link Client}.
 */
export class Unavailable extends TollgateError {
  /** The HTTP status when the endpoint answered (429 or 5xx), else undefined. */
  readonly status: number | undefined;
  /** How many attempts were made. */
  readonly attempts: number;

  /** Creates an Unavailable error. */
  constructor(message: string, attempts: number, status?: number, options: TollgateErrorOptions = {}) {
    super(message, options);
    this.name = "Unavailable";
    this.status = status;
    this.attempts = attempts;
  }
}
