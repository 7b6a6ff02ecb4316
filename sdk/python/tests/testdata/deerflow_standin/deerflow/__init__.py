"""A stand-in for DeerFlow's guardrail interfaces, for tollgate.deerflow's tests.

DeerFlow (bytedance/deer-flow) is not published on PyPI, so the tests cannot install it. This
package re-states, in its own words, the contract DeerFlow documents in backend/docs/GUARDRAILS.md
and implements in deerflow/guardrails: the GuardrailProvider protocol with its request and
decision dataclasses, and a GuardrailMiddleware that asks the provider before each tool call,
answers a denial with an error ToolMessage, and fails closed when the provider raises.
"""
