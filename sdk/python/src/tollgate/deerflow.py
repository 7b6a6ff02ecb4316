"""Tollgate as a DeerFlow guardrail provider: DeerFlow's ``GuardrailMiddleware`` asks it about
every tool call before the call runs.

DeerFlow's ``config.yaml``::

    guardrails:
      enabled: true
      provider:
        use: tollgate.deerflow:TollgateProvider
        # config: {passport: agents/deerflow, timeout: 2.0}   # optional; TOLLGATE_* by default

The provider implements DeerFlow's ``GuardrailProvider`` protocol (``deerflow.guardrails.provider``):
``name``, ``evaluate(request)`` and ``aevaluate(request)``, taking a ``GuardrailRequest`` and
returning a ``GuardrailDecision`` (``allow``, ``reasons`` of ``code``/``message``, ``policy_id``,
``metadata``). When DeerFlow is importable its own decision classes are returned; otherwise
structurally identical ones defined here. DeerFlow answers a denial with an error ``ToolMessage``
naming the OAP reason code and message, and the agent goes on.

DeerFlow's decisions have no ``modify``. With ``modify="rewrite"`` (default) the provider rewrites
``request.tool_input`` in place and allows the call: DeerFlow's middleware hands the provider the
tool call's own argument dict, so the tool runs with the rewritten arguments. With
``modify="deny"`` the call is denied and the model is told the rewritten arguments to call again
with. (Or put :class:`tollgate.langchain.TollgateMiddleware` in DeerFlow's agent features as the
``guardrail`` middleware: it rewrites calls natively.)

The passport is, in this order: the provider's ``passport`` setting, ``TOLLGATE_PASSPORT``, and
DeerFlow's ``guardrails.passport`` (sent as the OAP ``agent_id``).

Install with ``pip install tollgate[deerflow]`` (DeerFlow itself is installed from its repository).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._client import AsyncClient, Client
from ._guard import Guard, retry_message
from ._models import Decision

__all__ = ["GuardrailDecision", "GuardrailReason", "TollgateProvider"]


@dataclass
class GuardrailReason:
    """DeerFlow's ``GuardrailReason`` (an OAP reason), used when DeerFlow is not importable."""

    code: str
    message: str = ""


@dataclass
class GuardrailDecision:
    """DeerFlow's ``GuardrailDecision``, used when DeerFlow is not importable."""

    allow: bool
    reasons: list[Any] = field(default_factory=list)
    policy_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def _decision_types() -> tuple[type[Any], type[Any]]:
    try:
        mod = importlib.import_module("deerflow.guardrails.provider")
        return mod.GuardrailDecision, mod.GuardrailReason
    except (ImportError, AttributeError):
        return GuardrailDecision, GuardrailReason


class TollgateProvider:
    """A DeerFlow ``GuardrailProvider`` backed by a Tollgate decision endpoint.

    DeerFlow constructs it with the ``provider.config`` mapping as keyword arguments (and
    ``framework="deerflow"``): ``url``, ``passport``, ``token_file``, ``timeout``,
    ``fail_closed``, ``retries`` as for :class:`tollgate.Client`, and ``modify``
    (``"rewrite"`` or ``"deny"``). ``client`` takes a ready :class:`tollgate.Client` or
    :class:`tollgate.AsyncClient` instead.
    """

    name = "tollgate"

    def __init__(
        self,
        *,
        client: Client | AsyncClient | None = None,
        modify: Literal["rewrite", "deny"] = "rewrite",
        framework: str | None = None,
        **client_kwargs: Any,
    ) -> None:
        if modify not in ("rewrite", "deny"):
            raise ValueError(f"modify must be 'rewrite' or 'deny', got {modify!r}")
        self._guard = Guard(client, **client_kwargs)
        self.modify = modify
        """What a ``modify`` decision does: ``"rewrite"`` the arguments in place, or ``"deny"``."""
        self.framework = framework
        """The framework DeerFlow named when it constructed the provider."""
        self._decision_cls, self._reason_cls = _decision_types()

    def evaluate(self, request: Any) -> Any:
        """Decides one tool call (DeerFlow's synchronous path)."""
        args = _input(request)
        name, tool_input, kw = self._call(request, args)
        return self._convert(request, args, self._guard.decide(name, tool_input, **kw))

    async def aevaluate(self, request: Any) -> Any:
        """Decides one tool call without blocking the event loop (DeerFlow's async path)."""
        args = _input(request)
        name, tool_input, kw = self._call(request, args)
        return self._convert(request, args, await self._guard.adecide(name, tool_input, **kw))

    def _call(self, request: Any, args: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
        kw: dict[str, Any] = {
            "call_id": _str(getattr(request, "tool_call_id", None)),
            "thread_id": _str(getattr(request, "thread_id", None)),
            "is_subagent": bool(getattr(request, "is_subagent", False)),
            "timestamp": _str(getattr(request, "timestamp", None)),
        }
        agent_id = _str(getattr(request, "agent_id", None))
        if agent_id and not self._guard.client.passport:
            kw["agent_id"] = agent_id
        return str(getattr(request, "tool_name", "") or ""), args, kw

    def _convert(self, request: Any, args: dict[str, Any], d: Decision) -> Any:
        meta: dict[str, Any] = {"tollgate": {"decision": d.decision, "decision_id": d.decision_id,
                                             "bundle_revision": d.bundle_revision, "unavailable": d.unavailable}}
        if d.metadata:
            meta["tollgate"]["metadata"] = d.metadata
        reasons = [self._reason_cls(code=r.code, message=r.message) for r in d.reasons]
        if d.modified:
            target = getattr(request, "tool_input", None)
            if self.modify == "rewrite" and isinstance(target, MutableMapping):
                rewritten = d.input_for(args)
                target.clear()
                target.update(rewritten)
                meta["tollgate"]["modified_input"] = rewritten
            else:
                name = str(getattr(request, "tool_name", "") or "")
                reasons = [self._reason_cls(code="oap.policy_denied", message=retry_message(name, d))]
                return self._decision_cls(allow=False, reasons=reasons, policy_id=d.policy_id, metadata=meta)
        return self._decision_cls(allow=d.allow, reasons=reasons, policy_id=d.policy_id, metadata=meta)


def _input(request: Any) -> dict[str, Any]:
    value = getattr(request, "tool_input", None)
    return dict(value) if isinstance(value, Mapping) else {}


def _str(v: Any) -> str | None:
    return str(v) if v not in (None, "") else None
