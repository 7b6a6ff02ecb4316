"""Request and decision types of the decision API, and the normalizers that turn framework
objects (LangChain, OpenAI, Anthropic, Gemini, AutoGen messages and responses) into its JSON."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Final, Literal

__all__ = [
    "HOOK_PRE_TOOL_CALL",
    "HOOK_PRE_LLM_CALL",
    "HOOK_POST_LLM_CALL",
    "HOOK_POST_TOOL_CALL",
    "Decision",
    "DecisionRequest",
    "Hook",
    "Reason",
]

HOOK_PRE_TOOL_CALL: Final = "pre_tool_call"
"""Ask before a tool call runs (the default hook)."""
HOOK_PRE_LLM_CALL: Final = "pre_llm_call"
"""Screen the conversation (its latest user message) before an LLM call."""
HOOK_POST_LLM_CALL: Final = "post_llm_call"
"""Screen an LLM response (finish/stop reason, tool calls and text) before its tool calls run and
its text is shown."""
HOOK_POST_TOOL_CALL: Final = "post_tool_call"
"""Screen a tool's result with the input guards before it goes back to the model (indirect prompt
injection)."""

Hook = Literal["pre_tool_call", "pre_llm_call", "post_llm_call", "post_tool_call"]
DecisionValue = Literal["allow", "deny", "modify"]

CODE_ALLOWED = "oap.allowed"
CODE_EVALUATOR_ERROR = "oap.evaluator_error"
CODE_INVALID_REQUEST = "oap.invalid_request"


@dataclass(frozen=True)
class Reason:
    """An Open Agent Passport reason code with a human-readable message."""

    code: str
    """The OAP reason code, e.g. ``oap.allowed`` or ``oap.blocked_pattern``."""
    message: str = ""
    """Why, in words."""


@dataclass(frozen=True)
class Decision:
    """The endpoint's answer to one request. A deny is a decision, never an exception."""

    allow: bool
    """True for ``allow`` and ``modify``: the call may run (with ``modified_input`` for a modify)."""
    decision: DecisionValue
    """``"allow"``, ``"deny"`` or ``"modify"``."""
    reasons: tuple[Reason, ...] = ()
    """Why; never empty in an endpoint's answer (``oap.allowed`` on allow)."""
    modified_input: dict[str, Any] | None = None
    """The rewritten tool input of a ``modify`` decision: run the tool with this, not the original."""
    policy_id: str | None = None
    """The deciding policy's id, plus ``#rule`` when a rule decided."""
    decision_id: str = ""
    """Identifies the decision in the endpoint's decision log ("" for a decision the client made)."""
    metadata: dict[str, Any] | None = None
    """The endpoint's ``metadata`` as sent: ``dry_run`` and ``warnings`` (policy results),
    ``risk_assessment`` (the guards' verdict on the screened text: the latest user message for
    ``pre_llm_call``, the result for ``post_tool_call``, the response for ``post_llm_call``),
    ``suppressed_tool_calls`` (``post_llm_call``) and ``modified_by`` (see :attr:`modified_by`)."""
    passport_digest: str | None = None
    """sha256 of the canonical passport the decision was made for."""
    bundle_revision: str | None = None
    """Revision of the policy bundle the endpoint decided with."""
    created_at: str | None = None
    """When the endpoint decided (RFC 3339)."""
    expires_in: int = 0
    """For how many seconds the decision may be cached."""
    signature: dict[str, str] | None = None
    """The endpoint's Ed25519 signature over the decision's canonical JSON (``alg``, ``kid``,
    ``value``) when it signs decisions; ``tollgate verify`` checks a stored decision with it."""
    unavailable: bool = False
    """True when the endpoint could not be reached and the client decided by its ``fail_closed``
    setting (``reasons`` then carries ``oap.evaluator_error``)."""

    @property
    def denied(self) -> bool:
        """True when the call must not run."""
        return not self.allow

    @property
    def modified(self) -> bool:
        """True for a ``modify`` decision: run the call with ``modified_input``."""
        return self.decision == "modify"

    @property
    def modified_by(self) -> tuple[str, ...]:
        """Every policy (``policy_id#rule``) that rewrote the input of a ``modify`` decision, in
        the order they applied (``metadata["modified_by"]``; empty when none did)."""
        items = (self.metadata or {}).get("modified_by")
        if not isinstance(items, list):
            return ()
        return tuple(str(i) for i in items)

    @property
    def code(self) -> str:
        """The first reason's code ("" when there is none)."""
        return self.reasons[0].code if self.reasons else ""

    @property
    def message(self) -> str:
        """The first reason's message ("" when there is none)."""
        return self.reasons[0].message if self.reasons else ""

    def input_for(self, tool_input: Mapping[str, Any] | None) -> dict[str, Any]:
        """The input the tool must run with: ``modified_input`` for a modify, else ``tool_input``."""
        if self.modified and self.modified_input is not None:
            return dict(self.modified_input)
        return dict(tool_input or {})

    def explain(self) -> str:
        """One line for people and models: ``code: message (policy id)``."""
        text = self.code or self.decision
        if self.message:
            text += ": " + self.message
        if self.policy_id:
            text += f" (policy {self.policy_id})"
        return text

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        """Builds a decision from the endpoint's JSON; raises ValueError when it is not one."""
        value = data.get("decision")
        if value not in ("allow", "deny", "modify") or not isinstance(data.get("allow"), bool):
            raise ValueError(f"not a decision: decision={value!r}, allow={data.get('allow')!r}")
        reasons = []
        for r in data.get("reasons") or ():
            if isinstance(r, Mapping):
                reasons.append(Reason(code=str(r.get("code", "")), message=str(r.get("message", ""))))
        modified = data.get("modified_input")
        metadata = data.get("metadata")
        expires = data.get("expires_in")
        return cls(
            allow=bool(data["allow"]),
            decision=value,
            reasons=tuple(reasons),
            modified_input=dict(modified) if isinstance(modified, Mapping) else None,
            policy_id=_opt_str(data.get("policy_id")),
            decision_id=str(data.get("decision_id") or ""),
            metadata=dict(metadata) if isinstance(metadata, Mapping) else None,
            passport_digest=_opt_str(data.get("passport_digest")),
            bundle_revision=_opt_str(data.get("bundle_revision")),
            created_at=_opt_str(data.get("created_at")),
            expires_in=expires if isinstance(expires, int) and not isinstance(expires, bool) else 0,
            signature=_signature(data.get("signature")),
        )

    @classmethod
    def local_deny(cls, code: str, message: str, *, unavailable: bool = False) -> Decision:
        """A deny made by the client (not by an endpoint), e.g. when the endpoint is unreachable."""
        return cls(allow=False, decision="deny", reasons=(Reason(code, message),), unavailable=unavailable)

    @classmethod
    def local_allow(cls, code: str, message: str, *, unavailable: bool = False) -> Decision:
        """An allow made by the client (not by an endpoint): only with ``fail_closed=False``."""
        return cls(allow=True, decision="allow", reasons=(Reason(code, message),), unavailable=unavailable)


def _signature(v: Any) -> dict[str, str] | None:
    """A decision's signature when it has the three string members, else None."""
    if not isinstance(v, Mapping):
        return None
    sig = {k: v.get(k) for k in ("alg", "kid", "value")}
    if not all(isinstance(x, str) for x in sig.values()):
        return None
    return {k: str(x) for k, x in sig.items()}


def _opt_str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


@dataclass
class DecisionRequest:
    """One decision request, the body of ``POST /v1/decide``. Empty fields are left out, and the
    client fills in its passport when neither ``passport`` nor ``agent_id`` is set."""

    tool_name: str | None = None
    """The tool being called (required for ``pre_tool_call``), or the tool that produced
    ``tool_result`` (``post_tool_call``)."""
    tool_input: Mapping[str, Any] | None = None
    """The tool's arguments."""
    hook: Hook = HOOK_PRE_TOOL_CALL
    """``pre_tool_call`` (default), ``pre_llm_call``, ``post_llm_call`` or ``post_tool_call``."""
    passport: str | None = None
    """``namespace/name`` or ``name`` of the passport presented."""
    agent_id: str | None = None
    """The OAP passport id, instead of (or checked against) ``passport``."""
    thread_id: str | None = None
    """Identifies the conversation (rate limits per thread)."""
    call_id: str | None = None
    """Identifies the tool call."""
    messages: Sequence[Any] | None = None
    """The conversation (``pre_llm_call``): dicts with role and content, or framework messages."""
    finish_reason: str | None = None
    """The provider's finish reason (``post_llm_call``)."""
    stop_reason: str | None = None
    """The provider's stop reason (``post_llm_call``), used when ``finish_reason`` is empty."""
    tool_calls: Sequence[Any] | None = None
    """The tool calls of the LLM response (``post_llm_call``)."""
    is_subagent: bool = False
    """The caller is a sub-agent."""
    timestamp: datetime | str | None = None
    """When the agent made the call (visible to CEL as ``request``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Further top-level fields, sent as they are."""
    tool_result: Any = field(default=None, kw_only=True)
    """The tool's result (``post_tool_call``, where it is required): text, or any JSON value (or
    object :func:`to_jsonable` converts) whose strings are screened. ``None`` is absent."""
    content: str | Sequence[Any] | None = field(default=None, kw_only=True)
    """The LLM response's text (``post_llm_call``), screened by the output patterns: a string, or
    content parts whose ``text`` is joined. ``None`` is absent."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object sent to the endpoint."""
        body: dict[str, Any] = {}
        for key in ("passport", "agent_id", "tool_name"):
            v = getattr(self, key)
            if v:
                body[key] = v
        if self.tool_input is not None:
            body["tool_input"] = to_jsonable(self.tool_input)
        if self.hook and self.hook != HOOK_PRE_TOOL_CALL:
            body["hook"] = self.hook
        if self.messages is not None:
            body["messages"] = normalize_messages(self.messages)
        for key in ("finish_reason", "stop_reason"):
            v = getattr(self, key)
            if v:
                body[key] = v
        if self.tool_calls is not None:
            body["tool_calls"] = normalize_tool_calls(self.tool_calls)
        if self.content is not None:
            body["content"] = _content_text(self.content)
        if self.tool_result is not None:
            body["tool_result"] = to_jsonable(self.tool_result)
        for key in ("thread_id", "call_id"):
            v = getattr(self, key)
            if v:
                body[key] = v
        if self.is_subagent:
            body["is_subagent"] = True
        if self.timestamp:
            body["timestamp"] = _rfc3339(self.timestamp)
        body.update(self.extra)
        return body


def _rfc3339(ts: datetime | str) -> str:
    if isinstance(ts, str):
        return ts
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.isoformat()


# ---- JSON conversion -------------------------------------------------------------------------


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """Converts tool arguments to plain JSON values: pydantic models and dataclasses become
    objects, tuples and sets arrays, and anything else without a JSON form its ``str()``."""
    if _depth > 64:
        raise ValueError("value nests deeper than 64 levels")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"{value!r} has no JSON form")
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [to_jsonable(v, _depth + 1) for v in items]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return to_jsonable(dump(mode="json"), _depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value), _depth + 1)
    if isinstance(value, datetime):
        return _rfc3339(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def parse_arguments(arguments: Any) -> Any:
    """Tool-call arguments as a JSON value: a JSON string is parsed, anything else converted."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return to_jsonable(arguments)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _as_mapping(obj: Any) -> Mapping[str, Any] | None:
    if isinstance(obj, Mapping):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            data = dump()
        except Exception:  # noqa: BLE001 - a model that cannot dump itself is read by attributes
            return None
        return data if isinstance(data, Mapping) else None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return None


# Message roles as frameworks spell them (LangChain types, AutoGen class names) → OpenAI roles.
_ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "UserMessage": "user",
    "SystemMessage": "system",
    "AssistantMessage": "assistant",
    "FunctionExecutionResultMessage": "tool",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "ToolMessage": "tool",
}


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            else:
                text = _get(part, "text")
                if isinstance(text, str) and text:
                    texts.append(text)
                elif isinstance(_get(part, "content"), str):
                    texts.append(_get(part, "content"))
        return "\n".join(texts)
    text = _get(content, "text")
    return text if isinstance(text, str) else str(content)


def normalize_messages(messages: Sequence[Any]) -> list[dict[str, str]]:
    """Conversation messages as ``{"role", "content"}`` objects. Accepts OpenAI-style dicts,
    LangChain messages (``type`` human/ai/system/tool), AutoGen ``LLMMessage`` objects and any
    object with ``role`` and ``content``; list content is joined from its text parts."""
    if isinstance(messages, (str, bytes)):
        raise TypeError("messages must be a sequence of messages, not a string")
    out = []
    for m in messages:
        role = _get(m, "role")
        if not isinstance(role, str) or not role:
            kind = _get(m, "type")
            role = kind if isinstance(kind, str) else type(m).__name__
        out.append({"role": _ROLES.get(role, role), "content": _content_text(_get(m, "content"))})
    return out


def normalize_tool_calls(tool_calls: Sequence[Any]) -> list[dict[str, Any]]:
    """Tool calls as ``{"name", "arguments"}`` objects. Accepts OpenAI chat tool calls
    (``function.name``/``function.arguments``), LangChain tool calls (``name``/``args``),
    Anthropic ``tool_use`` blocks (``name``/``input``), Gemini ``functionCall`` parts and AutoGen
    ``FunctionCall`` objects (``name``/``arguments``)."""
    out = []
    for tc in tool_calls:
        fn = _get(tc, "function") or _get(tc, "functionCall") or _get(tc, "function_call")
        src = fn if fn is not None and not isinstance(fn, str) else tc
        name = _get(src, "name")
        args = None
        for key in ("arguments", "args", "input"):
            args = _get(src, key)
            if args is not None:
                break
        call: dict[str, Any] = {"name": str(name or "")}
        if args is not None:
            call["arguments"] = parse_arguments(args)
        out.append(call)
    return out


def _text_parts(parts: Any, kinds: tuple[str | None, ...] = (None, "text")) -> str:
    """The text of content parts whose ``type`` is one of kinds (plain strings count as text)."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, Sequence):
        return ""
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
            continue
        text = _get(part, "text")
        if isinstance(text, str) and text and _get(part, "type") in kinds and not _get(part, "thought"):
            texts.append(text)
    return "\n".join(texts)


def response_fields(response: Any) -> dict[str, Any]:
    """The ``post_llm_call`` fields (``finish_reason``, ``stop_reason``, ``tool_calls`` and the
    response text as ``content``) of an LLM response: an OpenAI chat completion or Responses API
    response, an Anthropic message, a Gemini ``GenerateContentResponse``, a LangChain
    ``AIMessage``, an AutoGen ``CreateResult``, or a dict already in Tollgate's shape. Pydantic
    objects are read through ``model_dump()``. The text is the response's text parts (not its
    reasoning or tool calls), joined by newlines."""
    data = _as_mapping(response)
    if data is None:
        data = {k: getattr(response, k) for k in ("finish_reason", "stop_reason", "tool_calls", "content",
                                                  "response_metadata") if hasattr(response, k)}
    out: dict[str, Any] = {}
    finish = stop = None
    calls: list[Any] = []
    text = ""
    if isinstance(data.get("choices"), Sequence) and data["choices"]:  # OpenAI chat completion
        choice = data["choices"][0]
        finish = _get(choice, "finish_reason")
        message = _get(choice, "message") or {}
        calls = list(_get(message, "tool_calls") or ())
        text = _text_parts(_get(message, "content"))
    elif isinstance(data.get("candidates"), Sequence) and data["candidates"]:  # Gemini
        cand = data["candidates"][0]
        finish = _get(cand, "finish_reason") or _get(cand, "finishReason")
        finish = _get(finish, "name", finish)
        parts = _get(_get(cand, "content") or {}, "parts") or ()
        calls = [p for p in parts if (_get(p, "function_call") or _get(p, "functionCall"))]
        text = _text_parts(parts)
    elif isinstance(data.get("output"), Sequence) and not isinstance(data.get("output"), str):
        # OpenAI Responses API: function_call output items; an incomplete response's reason;
        # the output_text parts of its message items.
        calls = [i for i in data["output"] if _get(i, "type") == "function_call"]
        finish = _get(data.get("incomplete_details") or {}, "reason")
        text = "\n".join(t for t in (_text_parts(_get(i, "content"), ("output_text",)) for i in data["output"]
                                      if _get(i, "type") == "message") if t)
    else:
        finish = data.get("finish_reason")
        stop = data.get("stop_reason")
        meta = data.get("response_metadata")
        if isinstance(meta, Mapping):  # LangChain AIMessage
            finish = finish or meta.get("finish_reason")
            stop = stop or meta.get("stop_reason")
        if data.get("tool_calls"):
            calls = list(data["tool_calls"])
        content = data.get("content")
        if isinstance(content, Sequence) and not isinstance(content, str):
            # Anthropic tool_use blocks; AutoGen CreateResult content is a list of FunctionCall.
            for block in content:
                kind = _get(block, "type")
                autogen_call = kind is None and _get(block, "name") and _get(block, "arguments") is not None
                if kind == "tool_use" or autogen_call:
                    calls.append(block)
            text = _text_parts(content, ("text",))  # Anthropic and LangChain text blocks
        elif isinstance(content, str):
            text = content
    if isinstance(finish, str) and finish:
        out["finish_reason"] = finish
    if isinstance(stop, str) and stop:
        out["stop_reason"] = stop
    if calls:
        out["tool_calls"] = normalize_tool_calls(calls)
    if text:
        out["content"] = text
    return out
