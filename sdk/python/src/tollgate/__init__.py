"""Tollgate: ask a Tollgate decision endpoint whether an AI agent's tool call may run.

    import tollgate

    client = tollgate.Client()  # from TOLLGATE_URL, TOLLGATE_PASSPORT, TOLLGATE_TOKEN_FILE
    d = client.decide("bash", {"command": "rm -rf /"})
    d.allow, d.code             # (False, "oap.blocked_pattern")

Framework adapters live in submodules, each an optional extra: ``tollgate.langchain``
(``pip install tollgate[langchain]``), ``tollgate.openai_agents``, ``tollgate.autogen`` and
``tollgate.deerflow``.
"""

from ._client import ENV_PASSPORT, ENV_TOKEN_FILE, ENV_URL, AsyncClient, Client
from ._errors import RequestError, TollgateError, Unavailable
from ._models import (
    HOOK_POST_LLM_CALL,
    HOOK_POST_TOOL_CALL,
    HOOK_PRE_LLM_CALL,
    HOOK_PRE_TOOL_CALL,
    Decision,
    DecisionRequest,
    Hook,
    Reason,
)
from ._version import __version__

__all__ = [
    "AsyncClient",
    "Client",
    "Decision",
    "DecisionRequest",
    "ENV_PASSPORT",
    "ENV_TOKEN_FILE",
    "ENV_URL",
    "HOOK_POST_LLM_CALL",
    "HOOK_POST_TOOL_CALL",
    "HOOK_PRE_LLM_CALL",
    "HOOK_PRE_TOOL_CALL",
    "Hook",
    "Reason",
    "RequestError",
    "TollgateError",
    "Unavailable",
    "__version__",
]
