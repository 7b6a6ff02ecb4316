"""What every framework adapter shares: a sync and an async client made from one configuration,
decisions that never raise, and the text a denial shows the model."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ._client import AsyncClient, Client
from ._errors import RequestError, TollgateError
from ._models import CODE_EVALUATOR_ERROR, CODE_INVALID_REQUEST, Decision, to_jsonable

log = logging.getLogger("tollgate")


class Guard:
    """Decides tool calls for an adapter. ``client`` may be a :class:`Client` or an
    :class:`AsyncClient`; without one, a client is made from ``client_kwargs`` (and the
    ``TOLLGATE_*`` environment variables) at once, so that a missing URL fails at setup."""

    def __init__(self, client: Client | AsyncClient | None = None, **client_kwargs: Any) -> None:
        if client is not None and client_kwargs:
            raise TypeError("pass either client= or client settings, not both")
        self._kwargs = client_kwargs
        self._sync: Client | None = None
        self._async: AsyncClient | None = None
        if isinstance(client, AsyncClient):
            self._async = client
        elif isinstance(client, Client):
            self._sync = client
        elif client is None:
            self._sync = Client(**client_kwargs)
        else:
            raise TypeError(f"client must be a tollgate.Client or tollgate.AsyncClient, got {type(client).__name__}")

    @property
    def client(self) -> Client:
        """The synchronous client (made from the async one's settings when only that was given)."""
        if self._sync is None:
            assert self._async is not None
            self._sync = Client(**_settings(self._async))
        return self._sync

    @property
    def async_client(self) -> AsyncClient:
        """The asynchronous client (made from the sync one's settings when only that was given)."""
        if self._async is None:
            self._async = AsyncClient(**(_settings(self.client) if not self._kwargs else self._kwargs))
        return self._async

    def decide(self, tool_name: str, tool_input: Mapping[str, Any], **kw: Any) -> Decision:
        """The decision on one tool call; an error of the client becomes a deny."""
        try:
            return self.client.decide(tool_name, tool_input, **kw)
        except TollgateError as e:
            return _error_decision(tool_name, e)

    async def adecide(self, tool_name: str, tool_input: Mapping[str, Any], **kw: Any) -> Decision:
        """The decision on one tool call, without blocking the event loop."""
        try:
            return await self.async_client.decide(tool_name, tool_input, **kw)
        except TollgateError as e:
            return _error_decision(tool_name, e)

    def screen_messages(self, messages: Sequence[Any], **kw: Any) -> Decision:
        """Screens a conversation (its latest user message) with the input guards."""
        try:
            return self.client.pre_llm_call(messages, **kw)
        except TollgateError as e:
            return _error_decision("", e)

    async def ascreen_messages(self, messages: Sequence[Any], **kw: Any) -> Decision:
        """The asynchronous form of :meth:`screen_messages`."""
        try:
            return await self.async_client.pre_llm_call(messages, **kw)
        except TollgateError as e:
            return _error_decision("", e)

    def screen_tool_result(self, tool_name: str, result: Any, **kw: Any) -> Decision:
        """Screens a tool's result before the model reads it (``post_tool_call``: the input
        guards look for indirect prompt injection); an error of the client becomes a deny."""
        try:
            return self.client.post_tool_call(tool_name, _result_value(result), **kw)
        except TollgateError as e:
            return _error_decision(tool_name, e, "result of tool")

    async def ascreen_tool_result(self, tool_name: str, result: Any, **kw: Any) -> Decision:
        """The asynchronous form of :meth:`screen_tool_result`."""
        try:
            return await self.async_client.post_tool_call(tool_name, _result_value(result), **kw)
        except TollgateError as e:
            return _error_decision(tool_name, e, "result of tool")

    def screen_response(self, response: Any, **kw: Any) -> Decision:
        """Screens an LLM response (or ``content=`` text) before its tool calls run and its text is
        shown."""
        try:
            return self.client.post_llm_call(response, **kw)
        except TollgateError as e:
            return _error_decision("", e)

    async def ascreen_response(self, response: Any, **kw: Any) -> Decision:
        """The asynchronous form of :meth:`screen_response`."""
        try:
            return await self.async_client.post_llm_call(response, **kw)
        except TollgateError as e:
            return _error_decision("", e)

    def close(self) -> None:
        """Closes the synchronous client's connections."""
        if self._sync is not None:
            self._sync.close()

    async def aclose(self) -> None:
        """Closes both clients' connections."""
        self.close()
        if self._async is not None:
            await self._async.aclose()


def _settings(c: Client | AsyncClient) -> dict[str, Any]:
    return {
        "url": c.url,
        "passport": c.passport,
        "token_file": c.token_file,
        "token": c._tokens._static,
        "agent_id": c.agent_id,
        "timeout": c.timeout,
        "fail_closed": c.fail_closed,
        "retries": c.retries,
    }


def _result_value(result: Any) -> Any:
    """A tool's result as the endpoint reads it: JSON where it has a JSON form, else its text (a
    result must never escape screening because it cannot be encoded). ``None`` is ``""``."""
    if result is None:
        return ""
    try:
        return to_jsonable(result)
    except ValueError:
        return str(result)


def _error_decision(tool_name: str, err: TollgateError, kind: str = "tool call") -> Decision:
    what = f"{kind} {tool_name!r}" if tool_name else "content"
    if isinstance(err, RequestError):
        log.error("tollgate: the endpoint refused the request for %s: %s", what, err)
        return Decision.local_deny(CODE_INVALID_REQUEST, f"Tollgate could not decide: {err}")
    log.error("tollgate: no decision for %s: %s", what, err)
    return Decision.local_deny(CODE_EVALUATOR_ERROR, f"Tollgate could not decide: {err}")


def denial_message(tool_name: str, decision: Decision) -> str:
    """What the model reads instead of the tool's result when Tollgate denied the call."""
    return f"Tollgate denied the call to tool {tool_name!r}: {decision.explain()}. Do not retry it unchanged."


def withheld_message(tool_name: str, decision: Decision) -> str:
    """What the model reads instead of a tool's result that Tollgate blocked (``post_tool_call``)."""
    return f"Tollgate withheld the output of tool {tool_name!r}: {decision.explain()}"


def retry_message(tool_name: str, decision: Decision) -> str:
    """What the model reads when the framework cannot run a rewritten call in place."""
    args = json.dumps(decision.modified_input, ensure_ascii=False, sort_keys=True)
    return (f"Tollgate requires changed arguments for tool {tool_name!r} ({decision.explain()}). "
            f"It did not run; call it again with exactly these arguments: {args}")


def parse_tool_arguments(raw: str) -> dict[str, Any] | None:
    """A tool call's JSON arguments as an object (``{}`` for an empty string), or None when they
    are not a JSON object."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None

