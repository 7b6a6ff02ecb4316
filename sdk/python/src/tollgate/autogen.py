"""Tollgate for AutoGen: an autogen-core intervention handler that denies or rewrites the tool
calls agents send through the runtime, and a tool wrapper for AgentChat agents.

    # autogen-core: every FunctionCall sent through the runtime (e.g. to a ToolAgent)
    runtime = SingleThreadedAgentRuntime(intervention_handlers=[TollgateInterventionHandler()])

    # AgentChat: the agent's tools
    agent = AssistantAgent("coder", model_client, tools=guard_tools([bash, read_file]))

With the intervention handler, a denied call never reaches the tool agent: the sender gets a
``ToolException`` whose content carries the OAP reason code and message, which
``tool_agent_caller_loop`` hands to the model as an error result (``on_deny="drop"`` drops the
message instead, as AutoGen's ``DropMessage`` does). A ``modify`` decision rewrites the
``FunctionCall``'s arguments. With AgentChat, a denied tool raises an error that the agent's
workbench returns to the model as an error result; a ``modify`` runs the tool with the rewritten
arguments.

With ``screen_output=True`` (either form) each tool result is screened before the model reads it
(``post_tool_call``: indirect prompt injection); a result Tollgate blocks is replaced by an error
result saying why (``Tollgate withheld the output of tool …``).

Install with ``pip install tollgate[autogen]``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from autogen_core import (
    AgentId,
    CancellationToken,
    DefaultInterventionHandler,
    DropMessage,
    FunctionCall,
    MessageContext,
)
from autogen_core.models import FunctionExecutionResult
from autogen_core.tool_agent import ToolException
from autogen_core.tools import BaseTool, FunctionTool
from pydantic import BaseModel

from ._client import AsyncClient, Client
from ._guard import Guard, denial_message, parse_tool_arguments, withheld_message
from ._models import CODE_INVALID_REQUEST, Decision

__all__ = ["TollgateDenied", "TollgateInterventionHandler", "TollgateTool", "guard_tools"]


@dataclass
class TollgateDenied(ToolException):
    """Raised to the sender of a denied ``FunctionCall``; ``content`` is what the model reads."""

    def __str__(self) -> str:
        return self.content


class TollgateInterventionHandler(DefaultInterventionHandler):
    """An autogen-core intervention handler that asks Tollgate about every ``FunctionCall``
    message sent through the runtime.

    ``on_deny`` says how a denial reaches the sender: ``"error"`` (default) raises
    :class:`TollgateDenied`, a ``ToolException`` that ``tool_agent_caller_loop`` turns into an
    error result for the model; ``"drop"`` drops the message (the sender gets AutoGen's
    ``MessageDroppedException``). With ``screen_output``, every ``FunctionExecutionResult`` an
    agent answers is screened before the sender reads it (``post_tool_call``); one Tollgate blocks
    is replaced by an error result saying why. ``client`` and ``client_kwargs`` are as for
    :class:`tollgate.Client`.
    """

    def __init__(
        self,
        client: Client | AsyncClient | None = None,
        *,
        on_deny: Literal["error", "drop"] = "error",
        screen_output: bool = False,
        **client_kwargs: Any,
    ) -> None:
        if on_deny not in ("error", "drop"):
            raise ValueError(f"on_deny must be 'error' or 'drop', got {on_deny!r}")
        self._guard = Guard(client, **client_kwargs)
        self.on_deny = on_deny
        """How a denial reaches the sender: ``"error"`` or ``"drop"``."""
        self.screen_output = screen_output
        """Screen each tool result before the sender (and its model) reads it."""

    async def on_send(self, message: Any, *, message_context: MessageContext, recipient: AgentId) -> Any:
        """Decides a ``FunctionCall``; any other message passes unchanged."""
        if not isinstance(message, FunctionCall):
            return message
        args = parse_tool_arguments(message.arguments or "")
        if args is None:
            decision = Decision.local_deny(CODE_INVALID_REQUEST, "the tool arguments are not a JSON object")
        else:
            decision = await self._guard.adecide(message.name, args, call_id=message.id or None)
        if decision.denied:
            if self.on_deny == "drop":
                return DropMessage
            raise TollgateDenied(call_id=message.id, content=denial_message(message.name, decision), name=message.name)
        if decision.modified:
            return FunctionCall(id=message.id, name=message.name,
                                arguments=json.dumps(decision.input_for(args), ensure_ascii=False))
        return message

    async def on_response(self, message: Any, *, sender: AgentId, recipient: AgentId | None) -> Any:
        """With ``screen_output``, screens a ``FunctionExecutionResult``; anything else passes
        unchanged."""
        if not self.screen_output or not isinstance(message, FunctionExecutionResult):
            return message
        decision = await self._guard.ascreen_tool_result(message.name, message.content,
                                                         call_id=message.call_id or None)
        if decision.allow:
            return message
        return FunctionExecutionResult(content=withheld_message(message.name, decision), name=message.name,
                                       call_id=message.call_id, is_error=True)


class TollgateTool(BaseTool[BaseModel, Any]):
    """An AutoGen tool that asks Tollgate before running the tool it wraps. A denial raises
    ``PermissionError`` with the OAP reason code and message (an AgentChat workbench returns it to
    the model as an error result); a ``modify`` runs the tool with the rewritten arguments. With
    ``screen_output`` the result is screened before it is returned (``post_tool_call``), and one
    Tollgate blocks raises ``PermissionError`` saying why instead."""

    def __init__(self, tool: BaseTool[Any, Any], guard: Guard, *, screen_output: bool = False) -> None:
        super().__init__(tool.args_type(), tool.return_type(), tool.name, tool.description)
        self._tool = tool
        self._guard = guard
        self.screen_output = screen_output
        """Screen the tool's result before it is returned."""

    @property
    def schema(self) -> Any:  # the wrapped tool's schema, strictness and all
        """The wrapped tool's schema."""
        return self._tool.schema

    @property
    def wrapped(self) -> BaseTool[Any, Any]:
        """The tool that runs when Tollgate allows the call."""
        return self._tool

    def return_value_as_string(self, value: Any) -> str:
        """The wrapped tool's rendering of its result."""
        return self._tool.return_value_as_string(value)

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
        """Runs the call with validated arguments (see :meth:`run_json`)."""
        return await self.run_json(args.model_dump(), cancellation_token)

    async def run_json(self, args: Mapping[str, Any], cancellation_token: CancellationToken,
                       call_id: str | None = None) -> Any:
        """Asks Tollgate, then runs the wrapped tool (with rewritten arguments for a modify)."""
        decision = await self._guard.adecide(self.name, dict(args), call_id=call_id)
        if decision.denied:
            raise PermissionError(denial_message(self.name, decision))
        result = await self._tool.run_json(decision.input_for(args), cancellation_token, call_id=call_id)
        if self.screen_output:
            screened = await self._guard.ascreen_tool_result(self.name, result, call_id=call_id)
            if screened.denied:
                raise PermissionError(withheld_message(self.name, screened))
        return result

    async def save_state_json(self) -> Mapping[str, Any]:
        """The wrapped tool's state."""
        return await self._tool.save_state_json()

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        """Restores the wrapped tool's state."""
        await self._tool.load_state_json(state)


def guard_tools(
    tools: Iterable[BaseTool[Any, Any] | Callable[..., Any]],
    client: Client | AsyncClient | None = None,
    *,
    screen_output: bool = False,
    **client_kwargs: Any,
) -> list[BaseTool[Any, Any]]:
    """Wraps each tool (an AutoGen tool, or a plain function made into a ``FunctionTool`` from its
    docstring) in a :class:`TollgateTool` sharing one client, for an AgentChat agent's ``tools``;
    with ``screen_output`` their results are screened too."""
    guard = Guard(client, **client_kwargs)
    out: list[BaseTool[Any, Any]] = []
    for t in tools:
        if isinstance(t, TollgateTool):
            out.append(t)
            continue
        if not isinstance(t, BaseTool):
            if not callable(t):
                raise TypeError(f"not a tool or a function: {t!r}")
            doc = (getattr(t, "__doc__", None) or "").strip()
            t = FunctionTool(t, description=doc or getattr(t, "__name__", "tool"))
        out.append(TollgateTool(t, guard, screen_output=screen_output))
    return out
