"""Wire protocol v1 without I/O: framing, request building, reply values and one generation's state.

The blocking and the asyncio client share this module; they differ only in how they wait.
The contract is docs/protocol.md.
"""

from __future__ import annotations

import itertools
import json
import secrets
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .errors import FirstTokenTimeout, HearthTimeout, IdleTimeout, error_from_reply

MARKER = b"hearth/1"
MAX_ID_BYTES = 64

# Replies that end a generation; anything else about it is progress.
TERMINAL_TYPES = ("done", "error")


def encode(msg: Mapping[str, Any]) -> list[bytes]:
    """The two frames of one message."""
    return [MARKER, json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8")]


def decode(frames: list[bytes]) -> dict | None:
    """The JSON object of a well-formed reply, or None for anything else (which the client drops)."""
    if len(frames) != 2 or frames[0] != MARKER:
        return None
    try:
        msg = json.loads(frames[1].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        return None
    return msg


class IdSource:
    """Request ids unique to one client: a random prefix (so logs of two clients differ) and a counter."""

    def __init__(self) -> None:
        self._prefix = "py-" + secrets.token_hex(4)
        self._counter = itertools.count(1)

    def next(self, kind: str = "") -> str:
        return f"{self._prefix}-{kind}{next(self._counter)}"


def check_id(request_id: str) -> str:
    if not isinstance(request_id, str) or not 1 <= len(request_id.encode("utf-8")) <= MAX_ID_BYTES:
        raise ValueError(f"request id must be a string of 1-{MAX_ID_BYTES} bytes, got {request_id!r}")
    return request_id


def build_generate(request_id: str, prompt: str | None, messages: Iterable[Mapping[str, str]] | None,
                   tenant: str | None, stream: bool, options: Mapping[str, Any]) -> dict:
    """A `generate` request. Options left at None are not sent, so the server's defaults apply;
    ranges are checked by the server (a `BadRequest` names the field)."""
    if (prompt is None) == (messages is None):
        raise ValueError("give exactly one of prompt= or messages=")
    msg: dict[str, Any] = {"type": "generate", "id": request_id}
    if prompt is not None:
        msg["prompt"] = prompt
    else:
        msg["messages"] = [{"role": m["role"], "content": m["content"]} for m in messages]
    for name, value in options.items():
        if value is not None:
            msg[name] = list(value) if name == "stop" else value
    if tenant is not None:
        msg["tenant"] = tenant
    msg["stream"] = bool(stream)
    return msg


@dataclass(frozen=True)
class Token:
    """One streamed token. `text` may be empty: its text then comes with a later token."""
    index: int
    token: int
    text: str


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


@dataclass(frozen=True)
class Timings:
    """Server-side, in ms, counted from the moment the server read the request. ttft_ms splits into
    queue_ms, prefill_ms and first_step_ms (docs/protocol.md, `done`)."""
    queue_ms: float | None = None
    ttft_ms: float | None = None
    prefill_ms: float | None = None
    first_step_ms: float | None = None
    mean_itl_ms: float | None = None
    e2e_ms: float | None = None


@dataclass(frozen=True)
class Result:
    """How a generation ended. `text` is the whole completion; `raw` the `done` message as sent
    (fields a later server adds are there)."""
    id: str
    finish_reason: str
    text: str
    usage: Usage
    timings: Timings
    preemptions: int = 0
    raw: dict = field(default_factory=dict, repr=False, compare=False)


def _number(value: Any, kind: type) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return kind(value)


def _fields(cls: type, obj: Any, kind: type) -> Any:
    """A dataclass of numbers from a JSON object, tolerating missing or mistyped fields."""
    obj = obj if isinstance(obj, dict) else {}
    values = {name: _number(obj.get(name), kind) for name in cls.__dataclass_fields__}
    return cls(**{k: v for k, v in values.items() if v is not None})


class GenerationState:
    """One generation as the replies about it arrive; the clock is passed in (monotonic seconds).

    Deadlines: until the first token (with stream=False: until `done`) the first-token deadline,
    counted from sending; after it, the idle deadline, counted from the latest token. `accepted`
    and `heartbeat` messages move neither: a heartbeat is about the connection, not this request,
    and a queued request is exactly what a first-token timeout is meant to catch.
    """

    def __init__(self, request_id: str, sent_at: float, first_token_timeout: float | None,
                 idle_timeout: float | None):
        self.id = request_id
        self.prompt_tokens: int | None = None  # from `accepted`
        self.result: Result | None = None
        self.error: Exception | None = None
        self._first_token_timeout = first_token_timeout
        self._idle_timeout = idle_timeout
        self._sent_at = sent_at
        self._last_token_at: float | None = None
        self._texts: list[str] = []

    @property
    def finished(self) -> bool:
        return self.result is not None or self.error is not None

    @property
    def text(self) -> str:
        """The completion so far."""
        return "".join(self._texts)

    def deadline(self) -> float | None:
        """When this generation times out (monotonic seconds), or None for never."""
        if self._last_token_at is None:
            return None if self._first_token_timeout is None else self._sent_at + self._first_token_timeout
        return None if self._idle_timeout is None else self._last_token_at + self._idle_timeout

    def timed_out(self) -> HearthTimeout:
        """Record and return the timeout error for a passed deadline."""
        if self._last_token_at is None:
            err: HearthTimeout = FirstTokenTimeout(
                message=f"no first token within {self._first_token_timeout} s", request_id=self.id)
        else:
            err = IdleTimeout(message=f"no token within {self._idle_timeout} s of the last", request_id=self.id)
        self.error = err
        return err

    def feed(self, msg: dict, now: float) -> Token | Result | None:
        """Apply one reply about this generation: a Token to hand out, the Result when it is done,
        None for a message that changes nothing visible. An `error` reply is raised."""
        kind = msg["type"]
        if kind == "token":
            text, index, token = msg.get("text"), msg.get("index"), msg.get("token")
            if not isinstance(text, str):
                return None  # malformed: nothing to hand out
            self._last_token_at = now
            self._texts.append(text)
            return Token(index if isinstance(index, int) else len(self._texts) - 1,
                         token if isinstance(token, int) else -1, text)
        if kind == "accepted":
            self.prompt_tokens = _number(msg.get("prompt_tokens"), int)
            return None
        if kind == "done":
            text = msg.get("text")
            reason = msg.get("finish_reason")
            self.result = Result(self.id, reason if isinstance(reason, str) else "",
                                 text if isinstance(text, str) else self.text,
                                 _fields(Usage, msg.get("usage"), int), _fields(Timings, msg.get("timings"), float),
                                 _number(msg.get("preemptions"), int) or 0, msg)
            return self.result
        if kind == "error":
            self.error = error_from_reply(msg)
            raise self.error
        return None  # a type a later server added


def reply_value(msg: dict) -> dict:
    """The payload of a one-shot reply (pong, stats, models, admin): the message without type and id;
    an `error` reply is raised, and so is `refused` (the answer when the id was in flight)."""
    if msg["type"] in ("error", "refused"):
        raise error_from_reply(msg)
    return {k: v for k, v in msg.items() if k not in ("type", "id")}
