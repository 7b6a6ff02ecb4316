"""Client and AsyncClient: the decision API over HTTP, with keep-alive connections, a bounded retry
on connection errors, the rotating token file and the fail-closed fallback."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx

from ._errors import RequestError, TollgateError, Unavailable
from ._models import (
    CODE_EVALUATOR_ERROR,
    HOOK_POST_LLM_CALL,
    HOOK_POST_TOOL_CALL,
    HOOK_PRE_LLM_CALL,
    HOOK_PRE_TOOL_CALL,
    Decision,
    DecisionRequest,
    Hook,
    response_fields,
    to_jsonable,
)
from ._token import TokenSource
from ._tracing import trace_headers
from ._version import __version__

__all__ = ["AsyncClient", "Client", "ENV_PASSPORT", "ENV_TOKEN_FILE", "ENV_URL"]

ENV_URL = "TOLLGATE_URL"
"""The endpoint's base URL, injected into opted-in pods."""
ENV_PASSPORT = "TOLLGATE_PASSPORT"
"""The passport (``namespace/name``) presented when a request names none."""
ENV_TOKEN_FILE = "TOLLGATE_TOKEN_FILE"
"""The projected ServiceAccount token file (audience ``tollgate``), rotated by the kubelet."""

DEFAULT_TIMEOUT = 5.0
DEFAULT_RETRIES = 2

log = logging.getLogger("tollgate")

# Errors after which the request certainly or very probably never reached the endpoint's decision
# logic (no answer was read), so sending it again is safe. A read timeout is not among them: the
# endpoint may be slow, and waiting again would double the caller's latency.
_RETRYABLE = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)
_BACKOFF = 0.05
_MAX_RETRY_AFTER = 1.0


class _Base:
    """Configuration and the parts of a call that do no I/O, shared by Client and AsyncClient."""

    def __init__(
        self,
        url: str | None = None,
        passport: str | None = None,
        token_file: str | None = None,
        *,
        token: str | None = None,
        agent_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        fail_closed: bool | None = True,
        retries: int = DEFAULT_RETRIES,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        url = url or os.environ.get(ENV_URL, "")
        if not url:
            raise TollgateError(f"tollgate: no endpoint URL: pass url= or set {ENV_URL}")
        if not url.startswith(("http://", "https://")):
            raise TollgateError(f"tollgate: endpoint URL {url!r} must start with http:// or https://")
        if timeout <= 0:
            raise TollgateError(f"tollgate: timeout must be positive, got {timeout}")
        if retries < 0 or retries > 10:
            raise TollgateError(f"tollgate: retries must be between 0 and 10, got {retries}")
        self.url = url.rstrip("/")
        """The endpoint's base URL."""
        self.passport = passport if passport is not None else (os.environ.get(ENV_PASSPORT) or None)
        """The passport presented when a request names neither passport nor agent_id."""
        self.agent_id = agent_id
        """The OAP agent id presented when neither the request nor the client names a passport."""
        if token_file is None:
            token_file = os.environ.get(ENV_TOKEN_FILE) or None
        self.token_file = token_file
        """The bearer token file, re-read when it changes (None: ``token`` or no token)."""
        self.timeout = float(timeout)
        """Seconds per attempt (connect, send and read)."""
        self.fail_closed = fail_closed
        """What an unreachable endpoint means: True deny, False allow, None raise Unavailable."""
        self.retries = retries
        """Extra attempts after a connection error or a 503."""
        self._tokens = TokenSource(token_file, token)
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"tollgate-python/{__version__}",
        }
        if headers:
            self._headers.update(headers)

    # ---- building requests ---------------------------------------------------------------

    def _tool_request(
        self,
        tool_name: str | None,
        tool_input: Mapping[str, Any] | None,
        *,
        hook: Hook,
        thread_id: str | None,
        call_id: str | None,
        messages: Sequence[Any] | None,
        response: Any,
        finish_reason: str | None,
        stop_reason: str | None,
        tool_calls: Sequence[Any] | None,
        content: str | Sequence[Any] | None,
        tool_result: Any,
        is_subagent: bool,
        timestamp: datetime | str | None,
        passport: str | None,
        agent_id: str | None,
    ) -> DecisionRequest:
        req = DecisionRequest(
            tool_name=tool_name, tool_input=tool_input, hook=hook, passport=passport, agent_id=agent_id,
            thread_id=thread_id, call_id=call_id, messages=messages, finish_reason=finish_reason,
            stop_reason=stop_reason, tool_calls=tool_calls, is_subagent=is_subagent, timestamp=timestamp,
            content=content, tool_result=tool_result,
        )
        if response is not None:
            fields = response_fields(response)
            req.finish_reason = req.finish_reason or fields.get("finish_reason")
            req.stop_reason = req.stop_reason or fields.get("stop_reason")
            if req.tool_calls is None and "tool_calls" in fields:
                req.tool_calls = fields["tool_calls"]
            if req.content is None and "content" in fields:
                req.content = fields["content"]
        return req

    def _body(self, req: DecisionRequest | Mapping[str, Any], where: str = "") -> dict[str, Any]:
        try:
            if isinstance(req, DecisionRequest):
                body = req.to_json()
            elif isinstance(req, Mapping):
                body = to_jsonable(req)
            else:
                raise TypeError(f"want a DecisionRequest or a mapping, got {type(req).__name__}")
        except (TypeError, ValueError) as e:
            raise RequestError(f"cannot encode the request: {e}", status_code=0, code="invalid_json",
                               field=where) from e
        if not body.get("passport") and not body.get("agent_id"):
            if self.passport:
                body["passport"] = self.passport
            elif self.agent_id:
                body["agent_id"] = self.agent_id
        return body

    @staticmethod
    def _encode(body: Any) -> bytes:
        try:
            return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
        except (TypeError, ValueError) as e:
            raise RequestError(f"cannot encode the request: {e}", status_code=0, code="invalid_json") from e

    def _auth_headers(self, force: bool = False) -> dict[str, str]:
        token = self._tokens.get(force=force)
        if not token:
            return self._headers
        return {**self._headers, "Authorization": "Bearer " + token}

    # ---- reading answers -----------------------------------------------------------------

    @staticmethod
    def _answer(resp: httpx.Response) -> Any:
        """The JSON of a 200 answer; raises RequestError (4xx) or Unavailable (anything else)."""
        try:
            data = resp.json()
        except ValueError:
            data = None
        if resp.status_code == 200:
            if data is None:
                raise Unavailable("the endpoint answered HTTP 200 with a body that is not JSON", status_code=200)
            return data
        err = data.get("error") if isinstance(data, Mapping) else None
        if isinstance(err, Mapping):
            message = str(err.get("message") or "")
            code, field = str(err.get("code") or ""), str(err.get("field") or "")
        else:
            message, code, field = resp.text.strip()[:512], "", ""
        if 400 <= resp.status_code < 500:
            raise RequestError(message or resp.reason_phrase, status_code=resp.status_code, code=code, field=field)
        raise Unavailable(f"HTTP {resp.status_code} {code}: {message}".strip(), status_code=resp.status_code)

    @staticmethod
    def _decision(data: Any) -> Decision:
        if not isinstance(data, Mapping):
            raise Unavailable("the endpoint's answer is not a JSON object", status_code=200)
        try:
            return Decision.from_json(data)
        except (KeyError, ValueError) as e:
            raise Unavailable(f"the endpoint's answer is not a decision: {e}", status_code=200) from e

    @staticmethod
    def _decisions(data: Any, n: int) -> list[Decision]:
        items = data.get("decisions") if isinstance(data, Mapping) else None
        if not isinstance(items, list) or len(items) != n:
            got = len(items) if isinstance(items, list) else "no"
            raise Unavailable(f"the endpoint answered {got} decisions for {n} requests", status_code=200)
        return [_Base._decision(d) for d in items]

    def _fallback(self, err: Unavailable, n: int) -> list[Decision]:
        """The decisions that stand in for the endpoint's when it is unavailable."""
        if self.fail_closed is None:
            raise err
        if self.fail_closed:
            log.warning("tollgate: endpoint %s unavailable, denying (fail closed): %s", self.url, err.message)
            d = Decision.local_deny(CODE_EVALUATOR_ERROR,
                                    f"Tollgate endpoint unavailable, failing closed: {err.message}", unavailable=True)
        else:
            log.warning("tollgate: endpoint %s unavailable, allowing (fail_closed=False): %s", self.url, err.message)
            d = Decision.local_allow(CODE_EVALUATOR_ERROR,
                                     f"Tollgate endpoint unavailable, failing open: {err.message}", unavailable=True)
        return [d] * n

    @staticmethod
    def _retry_delay(attempt: int, resp: httpx.Response | None) -> float:
        delay: float = _BACKOFF * (2**attempt)
        if resp is not None:
            try:
                delay = max(delay, min(float(resp.headers.get("Retry-After", "0")), _MAX_RETRY_AFTER))
            except ValueError:
                pass
        return delay

    def _batch_body(self, requests: Iterable[DecisionRequest | Mapping[str, Any]]) -> dict[str, Any]:
        return {"requests": [self._body(r, f"requests[{i}]") for i, r in enumerate(requests)]}


class Client(_Base):
    """A synchronous client of a Tollgate decision endpoint. It keeps connections alive and is safe
    to share between threads. Defaults come from ``TOLLGATE_URL``, ``TOLLGATE_PASSPORT`` and
    ``TOLLGATE_TOKEN_FILE``, the variables Tollgate injects into opted-in pods.

    ``fail_closed`` says what an unreachable endpoint (after ``retries`` extra attempts) means:
    ``True`` (default) a deny with ``oap.evaluator_error``, ``False`` an allow with that code, and
    ``None`` raising :class:`tollgate.Unavailable`. A malformed request always raises
    :class:`tollgate.RequestError`, naming the field the endpoint named.
    """

    def __init__(
        self,
        url: str | None = None,
        passport: str | None = None,
        token_file: str | None = None,
        *,
        token: str | None = None,
        agent_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        fail_closed: bool | None = True,
        retries: int = DEFAULT_RETRIES,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(url, passport, token_file, token=token, agent_id=agent_id, timeout=timeout,
                         fail_closed=fail_closed, retries=retries, headers=headers)
        self._owned = http_client is None
        self._http = http_client or httpx.Client(timeout=self.timeout, limits=httpx.Limits(keepalive_expiry=30.0))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connections (only those of an HTTP client the Client made itself)."""
        if self._owned:
            self._http.close()

    def decide(
        self,
        tool_name: str | None = None,
        tool_input: Mapping[str, Any] | None = None,
        *,
        hook: Hook = HOOK_PRE_TOOL_CALL,
        thread_id: str | None = None,
        call_id: str | None = None,
        messages: Sequence[Any] | None = None,
        response: Any = None,
        finish_reason: str | None = None,
        stop_reason: str | None = None,
        tool_calls: Sequence[Any] | None = None,
        content: str | Sequence[Any] | None = None,
        tool_result: Any = None,
        is_subagent: bool = False,
        timestamp: datetime | str | None = None,
        passport: str | None = None,
        agent_id: str | None = None,
    ) -> Decision:
        """Asks whether a tool call may run (or, with ``hook``, screens a conversation, an LLM
        ``response`` or ``content``, or a tool's ``tool_result``). Returns the decision; a deny is
        a decision, not an error."""
        req = self._tool_request(tool_name, tool_input, hook=hook, thread_id=thread_id, call_id=call_id,
                                 messages=messages, response=response, finish_reason=finish_reason,
                                 stop_reason=stop_reason, tool_calls=tool_calls, content=content,
                                 tool_result=tool_result, is_subagent=is_subagent, timestamp=timestamp,
                                 passport=passport, agent_id=agent_id)
        body = self._body(req)
        try:
            return self._decision(self._post("/v1/decide", body))
        except Unavailable as e:
            return self._fallback(e, 1)[0]

    def decide_batch(self, requests: Iterable[DecisionRequest | Mapping[str, Any]]) -> list[Decision]:
        """Asks about many requests in one round trip; the decisions come in request order."""
        body = self._batch_body(requests)
        n = len(body["requests"])
        if n == 0:
            return []
        try:
            return self._decisions(self._post("/v1/decide:batch", body), n)
        except Unavailable as e:
            return self._fallback(e, n)

    def pre_llm_call(
        self,
        messages: Sequence[Any],
        *,
        thread_id: str | None = None,
        is_subagent: bool = False,
        passport: str | None = None,
        agent_id: str | None = None,
    ) -> Decision:
        """Screens the conversation (its latest user message) before it is sent to an LLM; a deny
        (e.g. ``oap.prompt_injection``) means: do not send it."""
        return self.decide(hook=HOOK_PRE_LLM_CALL, messages=messages, thread_id=thread_id,
                           is_subagent=is_subagent, passport=passport, agent_id=agent_id)

    def post_llm_call(
        self,
        response: Any = None,
        *,
        content: str | Sequence[Any] | None = None,
        finish_reason: str | None = None,
        stop_reason: str | None = None,
        tool_calls: Sequence[Any] | None = None,
        thread_id: str | None = None,
        is_subagent: bool = False,
        passport: str | None = None,
        agent_id: str | None = None,
    ) -> Decision:
        """Screens an LLM response before its tool calls run and its text is shown; a deny means:
        run none of its tool calls (``oap.response_blocked``) and do not show its text (an output
        pattern's code, e.g. ``oap.secret_leak``). ``response`` may be a provider's response
        object or dict, whose finish reason, tool calls and text are read unless given here;
        ``content`` is the response's text (a string or content parts)."""
        return self.decide(hook=HOOK_POST_LLM_CALL, response=response, content=content, finish_reason=finish_reason,
                           stop_reason=stop_reason, tool_calls=tool_calls, thread_id=thread_id,
                           is_subagent=is_subagent, passport=passport, agent_id=agent_id)

    def post_tool_call(
        self,
        tool_name: str | None,
        tool_result: Any,
        *,
        thread_id: str | None = None,
        call_id: str | None = None,
        is_subagent: bool = False,
        passport: str | None = None,
        agent_id: str | None = None,
    ) -> Decision:
        """Screens a tool's result with the input guards before it goes back to the model; a deny
        (e.g. ``oap.prompt_injection``: a fetched page telling the model to ignore its
        instructions) means: do not show the result to the model. ``tool_result`` is text or any
        JSON value (pydantic models and dataclasses are converted); every string in it is
        screened. ``None`` is no result, which the endpoint refuses (``RequestError``, field
        ``tool_result``)."""
        return self.decide(tool_name, hook=HOOK_POST_TOOL_CALL, tool_result=tool_result, thread_id=thread_id,
                           call_id=call_id, is_subagent=is_subagent, passport=passport, agent_id=agent_id)

    def _post(self, path: str, body: Any) -> Any:
        content = self._encode(body)
        url = self.url + path
        reauthed = False
        attempt = 0
        while True:
            auth = self._auth_headers()
            trace = trace_headers()
            headers = {**auth, **trace} if trace else auth
            resp: httpx.Response | None = None
            try:
                resp = self._http.post(url, content=content, headers=headers, timeout=self.timeout)
            except _RETRYABLE as e:
                if attempt >= self.retries:
                    raise Unavailable(f"POST {url}: {type(e).__name__}: {e}") from e
            except httpx.HTTPError as e:
                raise Unavailable(f"POST {url}: {type(e).__name__}: {e}") from e
            if resp is not None:
                if resp.status_code == 401 and not reauthed and self._tokens.token_file:
                    # The kubelet may have rotated the token since it was read: read it again once.
                    reauthed = True
                    if self._auth_headers(force=True) != auth:
                        continue
                if resp.status_code != 503 or attempt >= self.retries:
                    return self._answer(resp)
            time.sleep(self._retry_delay(attempt, resp))
            attempt += 1


class AsyncClient(_Base):
    """The asyncio form of :class:`Client`, with the same arguments and methods (coroutines). Its
    connection pool belongs to the event loop that first used it; used from another loop, it
    opens a new pool there."""

    def __init__(
        self,
        url: str | None = None,
        passport: str | None = None,
        token_file: str | None = None,
        *,
        token: str | None = None,
        agent_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        fail_closed: bool | None = True,
        retries: int = DEFAULT_RETRIES,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(url, passport, token_file, token=token, agent_id=agent_id, timeout=timeout,
                         fail_closed=fail_closed, retries=retries, headers=headers)
        self._owned = http_client is None
        self._http: httpx.AsyncClient | None = http_client
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes the connections (only those of an HTTP client the AsyncClient made itself)."""
        if self._owned and self._http is not None:
            http, self._http = self._http, None
            # A pool opened on another (possibly closed) loop cannot be closed from this one.
            if self._loop is asyncio.get_running_loop():
                await http.aclose()

    def _client(self) -> httpx.AsyncClient:
        if not self._owned:
            assert self._http is not None
            return self._http
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            # A pool's connections are bound to the loop that opened them.
            self._http = httpx.AsyncClient(timeout=self.timeout, limits=httpx.Limits(keepalive_expiry=30.0))
            self._loop = loop
        return self._http

    async def decide(
        self,
        tool_name: str | None = None,
        tool_input: Mapping[str, Any] | None = None,
        *,
        hook: Hook = HOOK_PRE_TOOL_CALL,
        thread_id: str | None = None,
        call_id: str | None = None,
        messages: Sequence[Any] | None = None,
        response: Any = None,
        finish_reason: str | None = None,
        stop_reason: str | None = None,
        tool_calls: Sequence[Any] | None = None,
        content: str | Sequence[Any] | None = None,
        tool_result: Any = None,
        is_subagent: bool = False,
        timestamp: datetime | str | None = None,
        passport: str | None = None,
        agent_id: str | None = None,
    ) -> Decision:
        """Asks whether a tool call may run; see :meth:`Client.decide`."""
        req = self._tool_request(tool_name, tool_input, hook=hook, thread_id=thread_id, call_id=call_id,
                                 messages=messages, response=response, finish_reason=finish_reason,
                                 stop_reason=stop_reason, tool_calls=tool_calls, content=content,
                                 tool_result=tool_result, is_subagent=is_subagent, timestamp=timestamp,
                                 passport=passport, agent_id=agent_id)
        body = self._body(req)
        try:
            return self._decision(await self._post("/v1/decide", body))
        except Unavailable as e:
            return self._fallback(e, 1)[0]

    async def decide_batch(self, requests: Iterable[DecisionRequest | Mapping[str, Any]]) -> list[Decision]:
        """Asks about many requests in one round trip; see :meth:`Client.decide_batch`."""
        body = self._batch_body(requests)
        n = len(body["requests"])
        if n == 0:
            return []
        try:
            return self._decisions(await self._post("/v1/decide:batch", body), n)
        except Unavailable as e:
            return self._fallback(e, n)

    async def pre_llm_call(
        self,
        messages: Sequence[Any],
        *,
        thread_id: str | None = None,
        is_subagent: bool = False,
        passport: str | None = None,
        agent_id: str | None = None,
    ) -> Decision:
        """Screens the conversation before an LLM call; see :meth:`Client.pre_llm_call`."""
        return await self.decide(hook=HOOK_PRE_LLM_CALL, messages=messages, thread_id=thread_id,
                                 is_subagent=is_subagent, passport=passport, agent_id=agent_id)

    async def post_llm_call(
        self,
        response: Any = None,
        *,
        content: str | Sequence[Any] | None = None,
        finish_reason: str | None = None,
        stop_reason: str | None = None,
        tool_calls: Sequence[Any] | None = None,
        thread_id: str | None = None,
        is_subagent: bool = False,
        passport: str | None = None,
        agent_id: str | None = None,
    ) -> Decision:
        """Screens an LLM response before its tool calls run; see :meth:`Client.post_llm_call`."""
        return await self.decide(hook=HOOK_POST_LLM_CALL, response=response, content=content,
                                 finish_reason=finish_reason, stop_reason=stop_reason, tool_calls=tool_calls,
                                 thread_id=thread_id, is_subagent=is_subagent, passport=passport, agent_id=agent_id)

    async def post_tool_call(
        self,
        tool_name: str | None,
        tool_result: Any,
        *,
        thread_id: str | None = None,
        call_id: str | None = None,
        is_subagent: bool = False,
        passport: str | None = None,
        agent_id: str | None = None,
    ) -> Decision:
        """Screens a tool's result before it goes back to the model; see :meth:`Client.post_tool_call`."""
        return await self.decide(tool_name, hook=HOOK_POST_TOOL_CALL, tool_result=tool_result, thread_id=thread_id,
                                 call_id=call_id, is_subagent=is_subagent, passport=passport, agent_id=agent_id)

    async def _post(self, path: str, body: Any) -> Any:
        content = self._encode(body)
        url = self.url + path
        reauthed = False
        attempt = 0
        while True:
            auth = self._auth_headers()
            trace = trace_headers()
            headers = {**auth, **trace} if trace else auth
            resp: httpx.Response | None = None
            try:
                resp = await self._client().post(url, content=content, headers=headers, timeout=self.timeout)
            except _RETRYABLE as e:
                if attempt >= self.retries:
                    raise Unavailable(f"POST {url}: {type(e).__name__}: {e}") from e
            except httpx.HTTPError as e:
                raise Unavailable(f"POST {url}: {type(e).__name__}: {e}") from e
            if resp is not None:
                if resp.status_code == 401 and not reauthed and self._tokens.token_file:
                    reauthed = True
                    if self._auth_headers(force=True) != auth:
                        continue
                if resp.status_code != 503 or attempt >= self.retries:
                    return self._answer(resp)
            await asyncio.sleep(self._retry_delay(attempt, resp))
            attempt += 1
