"""Tollgate for LangChain v1 agents and LangGraph: a middleware that asks Tollgate before every
tool call and denies, rewrites or lets it through.

    from langchain.agents import create_agent
    from tollgate.langchain import TollgateMiddleware

    agent = create_agent(model, tools, middleware=[TollgateMiddleware()])

A denied call does not run: the model gets an error ``ToolMessage`` carrying the OAP reason code
and message, and the agent loop goes on. A ``modify`` decision runs the tool with the rewritten
arguments. With ``screen_output=True`` each tool result is screened too before the model reads it
(``post_tool_call``: indirect prompt injection); a result Tollgate blocks is replaced by an error
``ToolMessage`` saying why. For a LangGraph graph of your own (or ``create_react_agent``), hand the
middleware's hooks to the ``ToolNode``: ``TollgateMiddleware().tool_node(tools)``.

``TollgateModelMiddleware`` adds the LLM hooks: each new user message is screened before it reaches
the model (``pre_llm_call``: prompt injection), and each model response is screened before its tool
calls run and its text is kept (``post_llm_call``: safety terminations, output patterns such as
``oap.secret_leak``). A denial ends the run with an ``AIMessage`` that says why.

Install with ``pip install tollgate[langchain]``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, hook_config
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.config import get_config
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ._client import AsyncClient, Client
from ._guard import Guard, denial_message, withheld_message
from ._models import Decision

__all__ = ["TollgateMiddleware", "TollgateModelMiddleware"]

_Result = ToolMessage | Command[Any]


class TollgateMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """A LangChain agent middleware that puts Tollgate in front of every tool call.

    ``client`` is a :class:`tollgate.Client` or :class:`tollgate.AsyncClient`; without one the
    middleware makes its own from ``client_kwargs`` and the ``TOLLGATE_URL``,
    ``TOLLGATE_PASSPORT`` and ``TOLLGATE_TOKEN_FILE`` environment variables. The thread id sent
    with each call is the run's ``configurable.thread_id`` (or the runtime context's
    ``thread_id``), so that per-thread rate limits work. With ``screen_output`` every tool result
    (a ``ToolMessage``) is screened before the model reads it (``post_tool_call``).
    """

    def __init__(self, client: Client | AsyncClient | None = None, *, screen_output: bool = False,
                 **client_kwargs: Any) -> None:
        super().__init__()
        self._guard = Guard(client, **client_kwargs)
        self.screen_output = screen_output
        """Screen each tool result before the model reads it."""

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], _Result],
    ) -> _Result:
        """Asks Tollgate, then runs the call as it is, runs it rewritten, or answers a denial."""
        name, args, call_id = _call(request)
        thread_id = _thread_id(request)
        decision = self._guard.decide(name, args, call_id=call_id, thread_id=thread_id)
        if decision.denied:
            return _denied(request, name, decision)
        result = handler(_apply(request, args, decision))
        if not self.screen_output or not isinstance(result, ToolMessage):
            return result
        screened = self._guard.screen_tool_result(name, result.content, call_id=call_id, thread_id=thread_id)
        return _withheld(result, name, screened)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_Result]],
    ) -> _Result:
        """The asynchronous form of :meth:`wrap_tool_call`."""
        name, args, call_id = _call(request)
        thread_id = _thread_id(request)
        decision = await self._guard.adecide(name, args, call_id=call_id, thread_id=thread_id)
        if decision.denied:
            return _denied(request, name, decision)
        result = await handler(_apply(request, args, decision))
        if not self.screen_output or not isinstance(result, ToolMessage):
            return result
        screened = await self._guard.ascreen_tool_result(name, result.content, call_id=call_id, thread_id=thread_id)
        return _withheld(result, name, screened)

    def tool_node(self, tools: Sequence[Any], **kwargs: Any) -> ToolNode:
        """A LangGraph ``ToolNode`` running ``tools`` behind this middleware, for graphs built by
        hand or with ``langgraph.prebuilt.create_react_agent``."""
        return ToolNode(tools, wrap_tool_call=self.wrap_tool_call, awrap_tool_call=self.awrap_tool_call, **kwargs)


class TollgateModelMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """A LangChain agent middleware that screens what goes into and comes out of the model.

    With ``screen_prompts`` (default), a conversation whose latest message is a new user message
    is screened before the model call (``pre_llm_call``); with ``screen_responses`` (default), a
    model response carrying tool calls or text is screened before the calls run
    (``post_llm_call``, with the response's finish reason, tool calls and text). A denial ends
    the run with an ``AIMessage`` naming the OAP reason (for a response, it replaces the
    response, so none of its tool calls runs and its text is not kept). Use it beside
    :class:`TollgateMiddleware`.
    """

    def __init__(
        self,
        client: Client | AsyncClient | None = None,
        *,
        screen_prompts: bool = True,
        screen_responses: bool = True,
        **client_kwargs: Any,
    ) -> None:
        super().__init__()
        self._guard = Guard(client, **client_kwargs)
        self.screen_prompts = screen_prompts
        """Screen new user messages before the model call."""
        self.screen_responses = screen_responses
        """Screen model responses (tool calls and text) before the calls run."""

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Screens a new user message; a denial ends the run."""
        messages = _new_user_turn(state) if self.screen_prompts else None
        if messages is None:
            return None
        return _blocked_prompt(self._guard.screen_messages(messages, thread_id=_config_thread_id()))

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """The asynchronous form of :meth:`before_model`."""
        messages = _new_user_turn(state) if self.screen_prompts else None
        if messages is None:
            return None
        return _blocked_prompt(await self._guard.ascreen_messages(messages, thread_id=_config_thread_id()))

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Screens a response (its tool calls and text); a denial replaces it and ends the run."""
        last = _response(state) if self.screen_responses else None
        if last is None:
            return None
        return _blocked_response(last, self._guard.screen_response(last, thread_id=_config_thread_id()))

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """The asynchronous form of :meth:`after_model`."""
        last = _response(state) if self.screen_responses else None
        if last is None:
            return None
        return _blocked_response(last, await self._guard.ascreen_response(last, thread_id=_config_thread_id()))


def _messages(state: Any) -> list[Any]:
    msgs = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    return list(msgs or [])


def _new_user_turn(state: Any) -> list[Any] | None:
    msgs = _messages(state)
    return msgs if msgs and isinstance(msgs[-1], HumanMessage) else None


def _response(state: Any) -> AIMessage | None:
    """The model's response when it carries tool calls or text (nothing else to screen)."""
    msgs = _messages(state)
    last = msgs[-1] if msgs else None
    if not isinstance(last, AIMessage):
        return None
    return last if last.tool_calls or last.text.strip() else None


def _config_thread_id() -> str | None:
    try:
        tid = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:  # not inside a run
        return None
    return str(tid) if tid else None


def _tollgate_info(d: Decision) -> dict[str, Any]:
    return {"tollgate": {"decision": d.decision, "code": d.code, "policy_id": d.policy_id,
                         "decision_id": d.decision_id}}


def _blocked_prompt(d: Decision) -> dict[str, Any] | None:
    if d.allow:
        return None
    text = f"Tollgate blocked this message before it reached the model: {d.explain()}"
    return {"messages": [AIMessage(text, additional_kwargs=_tollgate_info(d))], "jump_to": "end"}


def _blocked_response(last: AIMessage, d: Decision) -> dict[str, Any] | None:
    if d.allow:
        return None
    if last.tool_calls:
        text = f"Tollgate suppressed this response and its tool calls: {d.explain()}"
    else:
        text = f"Tollgate withheld this response: {d.explain()}"
    # The same id replaces the response in the state, so its tool calls are gone.
    return {"messages": [AIMessage(text, id=last.id, additional_kwargs=_tollgate_info(d))], "jump_to": "end"}


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


def _withheld(result: ToolMessage, name: str, decision: Decision) -> ToolMessage:
    """The tool's result, or an error ToolMessage in its place when Tollgate blocked it."""
    if decision.allow:
        return result
    return ToolMessage(
        content=withheld_message(name, decision),
        tool_call_id=result.tool_call_id,
        name=result.name or name,
        id=result.id,
        status="error",
        additional_kwargs={"tollgate": {"decision": decision.decision, "code": decision.code,
                                        "policy_id": decision.policy_id, "decision_id": decision.decision_id}},
    )


def _denied(request: ToolCallRequest, name: str, decision: Decision) -> ToolMessage:
    return ToolMessage(
        content=denial_message(name, decision),
        tool_call_id=str(request.tool_call.get("id") or ""),
        name=name,
        status="error",
        additional_kwargs={"tollgate": {"decision": decision.decision, "code": decision.code,
                                        "policy_id": decision.policy_id, "decision_id": decision.decision_id}},
    )
