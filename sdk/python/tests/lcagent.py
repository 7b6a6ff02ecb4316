"""A LangChain agent's scripted model and the sandbox's shell tool, shared by the LangChain and
DeerFlow tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agenttools import BENIGN, DANGEROUS, REWRITTEN, Sandbox
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field


class ScriptedChatModel(GenericFakeChatModel):
    """langchain_core's fake chat model, accepting tools (it answers from its script anyway)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


class RecordingChatModel(ScriptedChatModel):
    """A scripted model that keeps every conversation it was asked to answer, to show what the
    model read."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def read(self) -> str:
        """Everything the model was shown, as one text."""
        return "\n".join(str(m.content) for conversation in self.seen for m in conversation)


def script() -> ScriptedChatModel:
    """One tool call per turn: dangerous, benign, rewritten; then a final answer."""
    turns = [
        AIMessage("", tool_calls=[{"name": "bash", "args": args, "id": f"call_{i}"}])
        for i, args in enumerate([DANGEROUS, BENIGN, REWRITTEN])
    ]
    return ScriptedChatModel(messages=iter([*turns, AIMessage("done")]))


def bash_tool(sandbox: Sandbox) -> BaseTool:
    """The sandbox's shell as a LangChain tool named bash."""
    return StructuredTool.from_function(sandbox.bash, name="bash", description="Run a shell command.")


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    """The tool results in an agent's final state, in order."""
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]
