"""Typed exceptions: one class per error code of wire protocol v1, plus the client's own timeouts.

Every exception the client raises for a server or timeout condition is a `HearthError`; catch a
subclass for one condition (`OverQuota`) or `HearthError` for all. An error code this client does
not know (a later v1 server may add one) arrives as a plain `HearthError` with that `code`.
"""

from __future__ import annotations


class HearthError(Exception):
    """An error reply from the server, or a condition the client detected itself.

    code: the protocol's error code (`over_quota`, ...) or the client's own (`first_token_timeout`, ...).
    message: the server's (or client's) explanation. retry_after_ms: when to retry, if the server said.
    request_id: the request it is about, or None.
    """

    code = "error"

    def __init__(self, code: str | None = None, message: str = "", retry_after_ms: int | None = None,
                 request_id: str | None = None):
        self.code = code or type(self).code
        self.message = message
        self.retry_after_ms = retry_after_ms
        self.request_id = request_id
        super().__init__(f"{self.code}: {message}" if message else self.code)


class BadRequest(HearthError):
    """Malformed request, unknown or mistyped field, value out of range (the message names the field)."""
    code = "bad_request"


class TooLong(HearthError):
    """Prompt + max_tokens exceed the model's context, the KV pool or the tenant's max_prompt_tokens."""
    code = "too_long"


class Unauthorized(HearthError):
    """Not allowed for this tenant."""
    code = "unauthorized"


class OverQuota(HearthError):
    """The tenant is over a quota; retry after `retry_after_ms` when it is set."""
    code = "over_quota"


class QueueFull(HearthError):
    """The server's queue is full; retry later."""
    code = "queue_full"


class ShuttingDown(HearthError):
    """The server is stopping."""
    code = "shutting_down"


class Cancelled(HearthError):
    """The request was cancelled (by this client, or because its connection was lost)."""
    code = "cancelled"


class Internal(HearthError):
    """A bug or a failed backend on the server."""
    code = "internal"


class ClientClosed(HearthError):
    """The client was closed while the request was in flight."""
    code = "client_closed"


class HearthTimeout(HearthError, TimeoutError):
    """A deadline of the client passed. For a generation, the client has already sent `cancel`."""
    code = "timeout"


class ConnectTimeout(HearthTimeout):
    """No `pong` within connect_timeout: no server there, or (under CURVE) the handshake failed."""
    code = "connect_timeout"


class FirstTokenTimeout(HearthTimeout):
    """No first token (or, with stream=False, no result) within first_token_timeout of sending."""
    code = "first_token_timeout"


class IdleTimeout(HearthTimeout):
    """No next token within idle_timeout of the previous one."""
    code = "idle_timeout"


class ReplyTimeout(HearthTimeout):
    """No reply to ping/stats/models/admin within its timeout."""
    code = "reply_timeout"


_BY_CODE = {cls.code: cls for cls in (BadRequest, TooLong, Unauthorized, OverQuota, QueueFull,
                                      ShuttingDown, Cancelled, Internal)}


def error_from_reply(reply: dict) -> HearthError:
    """The exception for an `error` reply; unknown codes give a plain HearthError."""
    code = reply.get("code")
    code = code if isinstance(code, str) and code else "internal"
    message = reply.get("message")
    retry = reply.get("retry_after_ms")
    rid = reply.get("id")
    return _BY_CODE.get(code, HearthError)(
        code, message if isinstance(message, str) else "",
        int(retry) if isinstance(retry, (int, float)) and not isinstance(retry, bool) else None,
        rid if isinstance(rid, str) else None)
