"""tollgate.deerflow.TollgateProvider behind DeerFlow's guardrail middleware in a real LangChain
agent (DeerFlow's agents are LangChain agents), against a real `tollgate serve`.

DeerFlow is not on PyPI, so its guardrail interfaces come from a stand-in package written from
DeerFlow's documentation (tests/testdata/deerflow_standin); the provider is loaded from its
``use:`` string the way DeerFlow loads providers."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from agenttools import REWRITTEN, REWRITTEN_TO, Sandbox
from conftest import TESTDATA, Server
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from lcagent import bash_tool, script, tool_messages
from netutil import closed_port_url

from tollgate.deerflow import TollgateProvider


@pytest.fixture
def deerflow(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The stand-in deerflow package, importable for the duration of one test."""
    monkeypatch.syspath_prepend(str(TESTDATA / "deerflow_standin"))
    yield importlib.import_module("deerflow.guardrails")
    for name in [m for m in sys.modules if m == "deerflow" or m.startswith("deerflow.")]:
        del sys.modules[name]


def load_provider(use: str, config: dict[str, Any] | None = None) -> Any:
    """Builds a provider from DeerFlow's ``provider.use`` and ``provider.config`` settings: the
    class named ``module:Class``, with config as keyword arguments and ``framework`` when the
    constructor takes it."""
    module, _, attr = use.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    kwargs = dict(config or {})
    params = inspect.signature(cls.__init__).parameters.values()
    if "framework" not in kwargs and any(p.name == "framework" or p.kind is p.VAR_KEYWORD for p in params):
        kwargs["framework"] = "deerflow"
    return cls(**kwargs)


def test_provider_in_a_deerflow_agent(env: Server, deerflow: ModuleType, tmp_path: Path) -> None:
    provider = load_provider("tollgate.deerflow:TollgateProvider")
    assert isinstance(provider, deerflow.GuardrailProvider) and provider.framework == "deerflow"
    sandbox = Sandbox.make(tmp_path)
    agent = create_agent(script(), [bash_tool(sandbox)], middleware=[deerflow.GuardrailMiddleware(provider)])
    result = agent.invoke({"messages": [("user", "clean up")]})
    sandbox.assert_outcome()
    denied, listed, rewritten = tool_messages(result)
    assert denied.status == "error" and "(oap.blocked_pattern)" in denied.content
    assert "precious" in listed.content and "git version" in rewritten.content
    assert result["messages"][-1].content == "done"


async def test_provider_async_with_deerflows_passport(server: Server, deerflow: ModuleType, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOLLGATE_PASSPORT", raising=False)
    provider = load_provider("tollgate.deerflow:TollgateProvider", {"url": server.url, "timeout": 2.0})
    sandbox = Sandbox.make(tmp_path)
    # DeerFlow's guardrails.passport reaches the provider as the request's agent_id.
    mw = deerflow.GuardrailMiddleware(provider, passport="ap_coding_agent_01")
    result = await create_agent(script(), [bash_tool(sandbox)], middleware=[mw]).ainvoke(
        {"messages": [("user", "clean up")]})
    sandbox.assert_outcome()
    assert "oap.blocked_pattern" in tool_messages(result)[0].content


def test_decisions_are_deerflows_types(env: Server, deerflow: ModuleType) -> None:
    provider = TollgateProvider()
    req = deerflow.GuardrailRequest(tool_name="bash", tool_input={"command": "rm -rf /"}, tool_call_id="c1",
                                    thread_id="t1", timestamp="2026-01-02T03:04:05+00:00")
    d = provider.evaluate(req)
    assert isinstance(d, deerflow.GuardrailDecision) and not d.allow
    assert isinstance(d.reasons[0], deerflow.GuardrailReason) and d.reasons[0].code == "oap.blocked_pattern"
    assert d.metadata["tollgate"]["decision"] == "deny" and d.metadata["tollgate"]["decision_id"]
    ok = provider.evaluate(deerflow.GuardrailRequest(tool_name="bash", tool_input={"command": "ls"}))
    assert ok.allow and ok.reasons[0].code == "oap.allowed"


def test_rewrite_changes_the_calls_own_arguments(env: Server) -> None:
    class Request:  # any object with DeerFlow's request attributes will do
        def __init__(self) -> None:
            self.tool_name = "bash"
            self.tool_input = dict(REWRITTEN)

    req = Request()
    d = TollgateProvider().evaluate(req)
    assert d.allow and req.tool_input == REWRITTEN_TO
    assert d.metadata["tollgate"]["modified_input"] == REWRITTEN_TO
    assert type(d).__module__ == "tollgate.deerflow"  # DeerFlow not importable: the provider's own types


def test_modify_deny_asks_the_model_to_retry(env: Server, deerflow: ModuleType, tmp_path: Path) -> None:
    provider = load_provider("tollgate.deerflow:TollgateProvider", {"modify": "deny"})
    sandbox = Sandbox.make(tmp_path)
    result = create_agent(script(), [bash_tool(sandbox)],
                          middleware=[deerflow.GuardrailMiddleware(provider)]).invoke({"messages": [("user", "go")]})
    msgs: list[ToolMessage] = tool_messages(result)
    assert "call it again with exactly these arguments" in msgs[2].content
    assert [r["command"] for r in sandbox.ran] == ["ls"]  # the git call did not run unmodified
    assert (tmp_path / "precious").exists()


def test_unreachable_endpoint_denies(deerflow: ModuleType) -> None:
    provider = TollgateProvider(url=closed_port_url(), passport="coding-agent", retries=0)
    d = provider.evaluate(deerflow.GuardrailRequest(tool_name="bash", tool_input={"command": "ls"}))
    assert not d.allow and d.reasons[0].code == "oap.evaluator_error" and d.metadata["tollgate"]["unavailable"]


def test_modify_setting_is_checked(env: Server) -> None:
    with pytest.raises(ValueError):
        TollgateProvider(modify="ignore")  # type: ignore[arg-type]

