"""The stand-in's deerflow.guardrails package (see the package docstring of deerflow)."""

from deerflow.guardrails.middleware import GuardrailMiddleware
from deerflow.guardrails.provider import GuardrailDecision, GuardrailProvider, GuardrailReason, GuardrailRequest

__all__ = ["GuardrailDecision", "GuardrailMiddleware", "GuardrailProvider", "GuardrailReason", "GuardrailRequest"]
