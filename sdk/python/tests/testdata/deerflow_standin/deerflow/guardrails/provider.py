"""DeerFlow's provider contract as DeerFlow documents it: any object with a ``name`` and
``evaluate``/``aevaluate`` taking a GuardrailRequest and returning a GuardrailDecision."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class GuardrailRequest:
    """One tool call, as DeerFlow's middleware describes it to the provider."""

    tool_name: str
    tool_input: dict[str, Any]
    agent_id: str | None = None
    thread_id: str | None = None
    is_subagent: bool = False
    timestamp: str = ""
    user_id: str | None = None
    run_id: str | None = None
    tool_call_id: str | None = None


@dataclass
class GuardrailReason:
    """An OAP reason: code and message."""

    code: str
    message: str = ""


@dataclass
class GuardrailDecision:
    """The provider's verdict (an OAP decision without modify)."""

    allow: bool
    reasons: list[GuardrailReason] = field(default_factory=list)
    policy_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class GuardrailProvider(Protocol):
    """Structural protocol: no base class is needed."""

    name: str

    def evaluate(self, request: GuardrailRequest) -> GuardrailDecision: ...

    async def aevaluate(self, request: GuardrailRequest) -> GuardrailDecision: ...
