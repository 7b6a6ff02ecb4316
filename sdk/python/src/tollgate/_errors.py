"""Typed errors of the Tollgate client."""

from __future__ import annotations

__all__ = ["TollgateError", "RequestError", "Unavailable"]


class TollgateError(Exception):
    """Base class of every error the Tollgate client raises.

    A deny is never an error: it is a :class:`tollgate.Decision` with ``allow`` false.
    """


class RequestError(TollgateError):
    """The endpoint refused the request itself (HTTP 4xx): the request is malformed, too large,
    or not authenticated. ``field`` names the offending JSON field as the endpoint reported it
    (``tool_name``, ``requests[1].tool_input``, ``Authorization``; empty for the whole body).
    """

    def __init__(self, message: str, *, status_code: int, code: str = "", field: str = "") -> None:
        super().__init__(message)
        self.message = message
        """What is wrong, as the endpoint said it."""
        self.status_code = status_code
        """The HTTP status of the answer."""
        self.code = code
        """The endpoint's error code, e.g. ``missing_field``, ``invalid_field``, ``unauthenticated``."""
        self.field = field
        """The JSON path of the offending field ("" when the whole body is at fault)."""

    def __str__(self) -> str:
        where = f" (field {self.field})" if self.field else ""
        code = f" {self.code}" if self.code else ""
        return f"tollgate: HTTP {self.status_code}{code}{where}: {self.message}"


class Unavailable(TollgateError):
    """The endpoint could not be reached or could not answer (connection refused or reset,
    timeout, HTTP 5xx) after the client's bounded retries.

    Whether this is raised depends on the client's ``fail_closed`` setting: with ``True`` (the
    default) the client answers a deny decision instead, with ``False`` an allow, and with
    ``None`` it raises this error.
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        """What went wrong."""
        self.status_code = status_code
        """The HTTP status when the endpoint answered 5xx; ``None`` when it could not be reached."""

    def __str__(self) -> str:
        return f"tollgate: endpoint unavailable: {self.message}"
