"""DeerFlow's GuardrailMiddleware as DeerFlow documents its behaviour: build a GuardrailRequest
from the tool call (its tool_input is the call's own argument dict), ask the provider, answer a
denial with an error ToolMessage naming the reason code and message, run the tool otherwise, and
deny when the provider raises (fail closed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from deerflow.guardrails.provider import GuardrailDecision, GuardrailProvider, GuardrailReason, GuardrailRequest


class GuardrailMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Asks a GuardrailProvider before every tool call."""

    def __init__(self, provider: GuardrailProvider, *, fail_closed: bool = True, passport: str | None = None) -> None:
        super().__init__()
        self.provider = provider
        self.fail_closed = fail_closed
        self.passport = passport

    def _request(self, request: Any) -> GuardrailRequest:
        call = request.tool_call
        context = getattr(getattr(request, "runtime", None), "context", None)
        context = context if isinstance(context, dict) else {}
        return GuardrailRequest(
            tool_name=str(call.get("name", "")),
            tool_input=call.get("args", {}),
            agent_id=self.passport,
            thread_id=context.get("thread_id"),
            is_subagent=bool(context.get("is_subagent")),
            timestamp=datetime.now(timezone.utc).isoformat(),
            tool_call_id=call.get("id"),
        )

    def _on_error(self) -> GuardrailDecision | None:
        if not self.fail_closed:
            return None
        return GuardrailDecision(allow=False, reasons=[GuardrailReason("oap.evaluator_error", "provider error")])

    @staticmethod
    def _denied(request: Any, decision: GuardrailDecision) -> ToolMessage:
        name = str(request.tool_call.get("name", ""))
        first = decision.reasons[0] if decision.reasons else GuardrailReason("oap.denied", "blocked")
        return ToolMessage(
            content=f"Guardrail denied: tool '{name}' was blocked ({first.code}). Reason: {first.message}.",
            tool_call_id=str(request.tool_call.get("id", "")), name=name, status="error",
        )

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        gr = self._request(request)
        try:
            decision: GuardrailDecision | None = self.provider.evaluate(gr)
        except Exception:  # noqa: BLE001 - a provider failure is a denial (fail closed)
            decision = self._on_error()
        if decision is not None and not decision.allow:
            return self._denied(request, decision)
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        gr = self._request(request)
        try:
            decision: GuardrailDecision | None = await self.provider.aevaluate(gr)
        except Exception:  # noqa: BLE001
            decision = self._on_error()
        if decision is not None and not decision.allow:
            return self._denied(request, decision)
        return await handler(request)
