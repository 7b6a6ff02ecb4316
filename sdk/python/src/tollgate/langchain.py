"""Tollgate for LangChain v1 agents and LangGraph: a middleware that asks Tollgate before every
tool call and denies, rewrites or lets it through.

    from langchain.agents import create_agent
    from tollgate.langchain import TollgateMiddleware

    agent = create_agent(model, tools, middleware=[TollgateMiddleware()])

A denied call does not run: the model gets an error ``ToolMessage`` carrying the OAP reason code
and message, and the agent loop goes on. A ``modify`` decision runs the tool with the rewritten
arguments. For a LangGraph graph of your own (or ``create_react_agent``), hand the middleware's
hooks to the ``ToolNode``: ``TollgateMiddleware().tool_node(tools)``.

Install with ``pip install tollgate[langchain]``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ._client import AsyncClient, Client
from ._guard import Guard, denial_message
from ._models import Decision

__all__ = ["TollgateMiddleware"]

_Result = ToolMessage | Command[Any]


class TollgateMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """A LangChain agent middleware that puts Tollgate in front of every tool call.

    ``client`` is a :class:`tollgate.Client` or :class:`tollgate.AsyncClient`; without one the
    middleware makes its own from ``client_kwargs`` and the ``TOLLGATE_URL``,
    ``TOLLGATE_PASSPORT`` and ``TOLLGATE_TOKEN_FILE`` environment variables. The thread id sent
    with each call is the run's ``configurable.thread_id`` (or the runtime context's
    ``thread_id``), so that per-thread rate limits work.
    """

    def __init__(self, client: Client | AsyncClient | None = None, **client_kwargs: Any) -> None:
        super().__init__()
        self._guard = Guard(client, **client_kwargs)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], _Result],
    ) -> _Result:
        """Asks Tollgate, then runs the call as it is, runs it rewritten, or answers a denial."""
        name, args, call_id = _call(request)
        decision = self._guard.decide(name, args, call_id=call_id, thread_id=_thread_id(request))
        if decision.denied:
            return _denied(request, name, decision)
        return handler(_apply(request, args, decision))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_Result]],
    ) -> _Result:
        """The asynchronous form of :meth:`wrap_tool_call`."""
        name, args, call_id = _call(request)
        decision = await self._guard.adecide(name, args, call_id=call_id, thread_id=_thread_id(request))
        if decision.denied:
            return _denied(request, name, decision)
        return await handler(_apply(request, args, decision))

    def tool_node(self, tools: Sequence[Any], **kwargs: Any) -> ToolNode:
        """A LangGraph ``ToolNode`` running ``tools`` behind this middleware, for graphs built by
        hand or with ``langgraph.prebuilt.create_react_agent``."""
        return ToolNode(tools, wrap_tool_call=self.wrap_tool_call, awrap_tool_call=self.awrap_tool_call, **kwargs)


def _call(request: ToolCallRequest) -> tuple[str, dict[str, Any], str | None]:
    call = request.tool_call
    args = call.get("args")
    return str(call.get("name") or ""), dict(args) if isinstance(args, Mapping) else {}, call.get("id")


def _thread_id(request: ToolCallRequest) -> str | None:
    runtime = getattr(request, "runtime", None)
    config = getattr(runtime, "config", None)
    if isinstance(config, Mapping):
        tid = (config.get("configurable") or {}).get("thread_id")
        if tid:
            return str(tid)
    context = getattr(runtime, "context", None)
    if isinstance(context, Mapping) and context.get("thread_id"):
        return str(context["thread_id"])
    return None


def _apply(request: ToolCallRequest, args: dict[str, Any], decision: Decision) -> ToolCallRequest:
    if not decision.modified:
        return request
    return request.override(tool_call={**request.tool_call, "args": decision.input_for(args)})


def _denied(request: ToolCallRequest, name: str, decision: Decision) -> ToolMessage:
    return ToolMessage(
        content=denial_message(name, decision),
        tool_call_id=str(request.tool_call.get("id") or ""),
        name=name,
        status="error",
        additional_kwargs={"tollgate": {"decision": decision.decision, "code": decision.code,
                                        "policy_id": decision.policy_id, "decision_id": decision.decision_id}},
    )
