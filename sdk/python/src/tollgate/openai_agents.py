"""Tollgate for the OpenAI Agents SDK: tool input guardrails that ask Tollgate before each
function-tool call, and a tool output guardrail that screens what a tool returns.

    from agents import Agent
    from tollgate.openai_agents import guard_tools

    agent = Agent(name="coder", tools=guard_tools([bash, read_file]))

A denied call does not run: the SDK's ``reject_content`` behaviour sends the model a message with
the OAP reason code and reason instead of the tool's result, and the run goes on. The SDK's tool
guardrails can allow or reject a call but cannot change its arguments, so ``guard_tools`` also
wraps each tool's invoker to run a ``modify`` decision's rewritten arguments. A tool that carries
only the bare input guardrail (:func:`tool_input_guardrail`) is never run with arguments Tollgate
wanted changed: the model is told the rewritten arguments and asked to call again with them.

:func:`agent_input_guardrail` is an agent input guardrail (``Agent(input_guardrails=[...])``) that
screens the user's input before the agent's first model call (``pre_llm_call``); a denial
(``oap.prompt_injection``) trips the wire, and the SDK raises ``InputGuardrailTripwireTriggered``.
:func:`agent_output_guardrail` (``Agent(output_guardrails=[...])``) screens the agent's final output
(``post_llm_call`` with the text as ``content``); a denial (an output pattern such as
``oap.secret_leak``) trips the wire, and the SDK raises ``OutputGuardrailTripwireTriggered``.

The tool output guardrail (:func:`tool_output_guardrail`, or ``guard_tools(..., screen_output=True)``)
screens each tool's result before the model reads it (``post_tool_call``, with the tool's name and
call id): a result carrying indirect prompt injection (``oap.prompt_injection``) is withheld, and
the model reads why instead.

Install with ``pip install tollgate[openai-agents]``.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    InputGuardrail,
    OutputGuardrail,
    RunContextWrapper,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from ._client import AsyncClient, Client
from ._guard import Guard, denial_message, parse_tool_arguments, retry_message, withheld_message
from ._models import CODE_INVALID_REQUEST, Decision, to_jsonable

__all__ = [
    "TollgateGuardrails",
    "agent_input_guardrail",
    "agent_output_guardrail",
    "guard_tools",
    "tool_input_guardrail",
    "tool_output_guardrail",
]

# Rewritten arguments waiting for their tool call to be invoked, per guarded tool. Bounded: an
# entry whose invocation never comes (another guardrail rejected the call) is dropped eventually.
_MAX_PENDING = 4096


class TollgateGuardrails:
    """Tollgate's tool guardrails for the OpenAI Agents SDK, sharing one client.

    ``client`` is a :class:`tollgate.Client` or :class:`tollgate.AsyncClient`; without one a
    client is made from ``client_kwargs`` and the ``TOLLGATE_*`` environment variables.
    """

    def __init__(self, client: Client | AsyncClient | None = None, **client_kwargs: Any) -> None:
        self._guard = Guard(client, **client_kwargs)
        self.input: ToolInputGuardrail[Any] = self._input_guardrail(None)
        """A tool input guardrail for any function tool. A ``modify`` decision rejects the call
        and tells the model the rewritten arguments (use :meth:`guard` to run them in place)."""
        self.output: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            guardrail_function=self._check_output, name="tollgate_output")
        """A tool output guardrail that screens each result (``post_tool_call``) before the model
        reads it."""
        self.agent_input: InputGuardrail[Any] = InputGuardrail(
            guardrail_function=self._check_agent_input, name="tollgate_input", run_in_parallel=False)
        """An agent input guardrail that screens the user's input before the first model call."""
        self.agent_output: OutputGuardrail[Any] = OutputGuardrail(
            guardrail_function=self._check_agent_output, name="tollgate_response")
        """An agent output guardrail that screens the agent's final output (``post_llm_call``)."""

    def guard(self, tool: Any, *, screen_output: bool = False) -> Any:
        """A copy of ``tool`` behind Tollgate: the input guardrail is added, and a ``modify``
        decision runs the tool with the rewritten arguments. With ``screen_output`` the output
        guardrail is added too. Tools other than function tools are returned unchanged (the
        SDK's tool guardrails apply to function tools only)."""
        if not isinstance(tool, FunctionTool):
            return tool
        pending: OrderedDict[str, dict[str, Any]] = OrderedDict()
        original = tool.on_invoke_tool

        async def on_invoke_tool(ctx: Any, input: str) -> Any:
            modified = pending.pop(str(getattr(ctx, "tool_call_id", "")), None)
            if modified is not None:
                input = json.dumps(modified, ensure_ascii=False)
                # Arguments the SDK prepared (for an approval check) belong to the original input.
                if getattr(ctx, "_function_tool_arguments", None) is not None:
                    ctx._function_tool_arguments = None
            return await original(ctx, input)

        outputs = list(tool.tool_output_guardrails or [])
        if screen_output:
            outputs.append(self.output)
        return dataclasses.replace(
            tool,
            on_invoke_tool=on_invoke_tool,
            tool_input_guardrails=[*(tool.tool_input_guardrails or []), self._input_guardrail(pending)],
            tool_output_guardrails=outputs or None,
        )

    def guard_all(self, tools: Iterable[Any], *, screen_output: bool = False) -> list[Any]:
        """:meth:`guard` for each tool."""
        return [self.guard(t, screen_output=screen_output) for t in tools]

    def _input_guardrail(self, pending: OrderedDict[str, dict[str, Any]] | None) -> ToolInputGuardrail[Any]:
        async def tollgate(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
            ctx = data.context
            name = ctx.tool_name
            args = parse_tool_arguments(ctx.tool_arguments or "")
            if args is None:
                decision = Decision.local_deny(CODE_INVALID_REQUEST, "the tool arguments are not a JSON object")
            else:
                decision = await self._guard.adecide(name, args, call_id=ctx.tool_call_id, thread_id=_thread_id(ctx))
            info = _info(decision)
            if decision.denied:
                return ToolGuardrailFunctionOutput.reject_content(denial_message(name, decision), output_info=info)
            if decision.modified:
                if pending is None:
                    return ToolGuardrailFunctionOutput.reject_content(retry_message(name, decision), output_info=info)
                pending[str(ctx.tool_call_id)] = decision.input_for(args)
                while len(pending) > _MAX_PENDING:
                    pending.popitem(last=False)
            return ToolGuardrailFunctionOutput.allow(output_info=info)

        return ToolInputGuardrail(guardrail_function=tollgate, name="tollgate")

    async def _check_agent_input(self, ctx: RunContextWrapper[Any], agent: Agent[Any],
                                 items: str | list[Any]) -> GuardrailFunctionOutput:
        if isinstance(items, str):
            messages: list[Any] = [{"role": "user", "content": items}]
        else:
            messages = [i for i in items if isinstance(i, dict) and i.get("role")]
        if not messages:
            return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)
        decision = await self._guard.ascreen_messages(messages, thread_id=_thread_id(ctx))
        return GuardrailFunctionOutput(output_info=_info(decision), tripwire_triggered=decision.denied)

    async def _check_agent_output(self, ctx: RunContextWrapper[Any], agent: Agent[Any],
                                  output: Any) -> GuardrailFunctionOutput:
        decision = await self._guard.ascreen_response(None, content=_output_text(output), thread_id=_thread_id(ctx))
        return GuardrailFunctionOutput(output_info=_info(decision), tripwire_triggered=decision.denied)

    async def _check_output(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        decision = await self._guard.ascreen_tool_result(ctx.tool_name, data.output, call_id=ctx.tool_call_id,
                                                         thread_id=_thread_id(ctx))
        if decision.denied:
            return ToolGuardrailFunctionOutput.reject_content(
                withheld_message(ctx.tool_name, decision), output_info=_info(decision))
        return ToolGuardrailFunctionOutput.allow(output_info=_info(decision))


def tool_input_guardrail(client: Client | AsyncClient | None = None, **client_kwargs: Any) -> ToolInputGuardrail[Any]:
    """A Tollgate tool input guardrail, to list in a function tool's ``tool_input_guardrails``."""
    return TollgateGuardrails(client, **client_kwargs).input


def agent_input_guardrail(client: Client | AsyncClient | None = None, **client_kwargs: Any) -> InputGuardrail[Any]:
    """A Tollgate agent input guardrail, to list in an agent's ``input_guardrails``."""
    return TollgateGuardrails(client, **client_kwargs).agent_input


def agent_output_guardrail(client: Client | AsyncClient | None = None, **client_kwargs: Any) -> OutputGuardrail[Any]:
    """A Tollgate agent output guardrail, to list in an agent's ``output_guardrails``."""
    return TollgateGuardrails(client, **client_kwargs).agent_output


def tool_output_guardrail(client: Client | AsyncClient | None = None, **client_kwargs: Any) -> ToolOutputGuardrail[Any]:
    """A Tollgate tool output guardrail, to list in a function tool's ``tool_output_guardrails``."""
    return TollgateGuardrails(client, **client_kwargs).output


def guard_tools(tools: Iterable[Any], client: Client | AsyncClient | None = None, *,
                screen_output: bool = False, **client_kwargs: Any) -> list[Any]:
    """Puts every function tool in ``tools`` behind Tollgate (see :meth:`TollgateGuardrails.guard`)."""
    return TollgateGuardrails(client, **client_kwargs).guard_all(tools, screen_output=screen_output)


def _thread_id(ctx: Any) -> str | None:
    run_config = getattr(ctx, "run_config", None)
    group = getattr(run_config, "group_id", None)
    return str(group) if group else None


def _output_text(output: Any) -> str:
    """An agent's final output as text: a string as it is, structured output as JSON."""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(to_jsonable(output), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(output)


def _info(d: Decision) -> dict[str, Any]:
    return {"tollgate": {"decision": d.decision, "code": d.code, "message": d.message,
                         "policy_id": d.policy_id, "decision_id": d.decision_id}}
