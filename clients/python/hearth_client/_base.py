"""What the blocking and the asyncio client share: the socket, request ids, routing replies by id."""

from __future__ import annotations

import logging
import time
from typing import Any, Iterable, Mapping

import zmq

from . import protocol
from .errors import Cancelled, ClientClosed, ConnectTimeout, HearthError, TooLong
from .keys import z85_key
from .protocol import GenerationState, Result, Token

log = logging.getLogger("hearth_client")

# Sampling options of `generate`, sent as given (None: not sent, the server's default applies).
SAMPLING_OPTIONS = ("max_tokens", "temperature", "top_k", "top_p", "min_p", "repetition_penalty",
                    "repeat_last_n", "seed", "stop", "ignore_eos")

DEFAULT = object()  # "the client's default" for a per-request timeout; None means no timeout
HEARTBEAT_IVL_MS = 1000  # ZMTP heartbeats, as the server sets them (docs/protocol.md)
HEARTBEAT_TIMEOUT_MS = 5000
CLOSE_LINGER_MS = 500  # how long close() may take to deliver the cancels it sends


def ms_until(deadline: float | None) -> int | None:
    """Milliseconds to poll for until `deadline` (monotonic seconds): None for no deadline, 0 once
    it has passed, else at least 1 (rounded up, so a poll never wakes just before it)."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    return 0 if left <= 0 else max(1, int(left * 1000 + 0.999))


def endpoint_mistake(endpoint: str) -> str | None:
    """None for an endpoint with a scheme Hearth speaks; else the reason, with the endpoint meant
    (the C++ client's words, clients/cpp/endpoint.hpp): libzmq alone says "Invalid argument"."""
    if endpoint.startswith(("tcp://", "ipc://", "inproc://")):
        return None
    if not endpoint:
        return "(empty): write tcp://HOST:PORT or ipc://PATH"
    if "://" in endpoint:
        hint = " (the HTTP APIs are `hearth serve --http HOST:PORT`)" if endpoint.startswith("http") else ""
        return f"{endpoint}: ZeroMQ endpoints are tcp://HOST:PORT or ipc://PATH{hint}"
    host = "127.0.0.1:" if endpoint.isdigit() else ""
    return f"{endpoint} has no scheme: did you mean tcp://{host}{endpoint}?"


class ClientBase:
    """Bookkeeping of requests in flight on one DEALER socket.

    Replies are routed by `id` to the queue of the request waiting for them. A generation the
    client gave up on (cancelled, timed out, abandoned) is *draining* until its terminal reply
    arrives: replies about it are dropped, and its id may not be reused before then (a late reply
    could otherwise be taken for the new request's).
    """

    _context_type: type = zmq.Context

    def __init__(self, endpoint: str, *, server_key: str | bytes | None = None,
                 public_key: str | bytes | None = None, secret_key: str | bytes | None = None,
                 tenant: str | None = None, connect_timeout: float | None = 5.0, request_timeout: float = 10.0,
                 first_token_timeout: float | None = None, idle_timeout: float | None = None,
                 max_message_bytes: int | None = 1 << 20, context: zmq.Context | None = None):
        """endpoint: `tcp://host:port` or `ipc://path`. server_key, public_key, secret_key: CURVE
        keys (Z85 text or 32 raw bytes), all three or none. tenant: sent with each request
        (development mode). connect_timeout: the `ping` round trip that checks the server (None:
        no check). request_timeout: for ping/stats/models/admin. first_token_timeout,
        idle_timeout: defaults for `generate` (None: wait for ever). max_message_bytes: the
        server's limit (its default); a larger request is refused here with `TooLong` instead of
        being dropped by the server with the connection (None: no check). context: a ZeroMQ
        context of the client's kind (default: the shared instance)."""
        keys = (server_key, public_key, secret_key)
        if any(k is not None for k in keys) and not all(k is not None for k in keys):
            raise ValueError("CURVE needs server_key, public_key and secret_key together")
        if mistake := endpoint_mistake(endpoint):
            raise ValueError(f"endpoint {mistake}")
        self.endpoint = endpoint
        self.tenant = tenant
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.first_token_timeout = first_token_timeout
        self.idle_timeout = idle_timeout
        self.max_message_bytes = max_message_bytes
        self.server_info: dict | None = None  # the `pong` of the connect check
        self._ids = protocol.IdSource()
        self._queues: dict[str, Any] = {}  # id -> replies not yet taken (a deque or an asyncio.Queue)
        self._generations: dict[str, GenerationState] = {}
        self._draining: set[str] = set()
        self._closed = False
        sock = (context or self._context_type.instance()).socket(zmq.DEALER)
        try:
            sock.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_IVL_MS)
            sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, HEARTBEAT_TIMEOUT_MS)
            if server_key is not None:
                sock.curve_serverkey = z85_key(server_key, "server_key")
                sock.curve_publickey = z85_key(public_key, "public_key")
                sock.curve_secretkey = z85_key(secret_key, "secret_key")
            sock.connect(endpoint)
        except BaseException:
            sock.close(linger=0)
            raise
        self._sock = sock
        # A plain view of the same socket, for cancels sent without waiting: an asyncio socket's
        # send would schedule work on the loop that may run after close().
        self._sock_nowait = zmq.Socket.shadow(sock.underlying)

    # --- building requests


    def _stats_fields(self) -> dict:
        """A `stats` names the tenant in development mode, as `generate` does."""
        return {"tenant": self.tenant} if self.tenant is not None else {}
    def _start_generation(self, prompt: str | None, messages: Iterable[Mapping[str, str]] | None,
                          stream: bool, request_id: str | None, tenant: str | None,
                          first_token_timeout: Any, idle_timeout: Any, sampling: dict,
                          now: float) -> tuple[dict, GenerationState]:
        """The `generate` message and its state, registered as in flight (the caller sends it)."""
        self._check_open()
        unknown = set(sampling) - set(SAMPLING_OPTIONS)
        if unknown:
            raise TypeError(f"unknown generate option(s): {', '.join(sorted(unknown))}")
        if isinstance(sampling.get("stop"), str):
            sampling["stop"] = [sampling["stop"]]
        if request_id is None:
            request_id = self._ids.next()
        elif protocol.check_id(request_id) in self._queues or request_id in self._draining:
            raise ValueError(f"request id {request_id!r} is still in flight")
        msg = protocol.build_generate(request_id, prompt, messages, self.tenant if tenant is None else tenant,
                                      stream, sampling)
        state = GenerationState(
            request_id, now,
            self.first_token_timeout if first_token_timeout is DEFAULT else first_token_timeout,
            self.idle_timeout if idle_timeout is DEFAULT else idle_timeout)
        self._queues[request_id] = self._new_queue()
        self._generations[request_id] = state
        return msg, state

    def _new_queue(self) -> Any:
        raise NotImplementedError

    def _encode(self, msg: dict) -> list[bytes]:
        frames = protocol.encode(msg)
        size = sum(map(len, frames))
        if self.max_message_bytes is not None and size > self.max_message_bytes:
            raise TooLong(message=f"a request of {size} bytes is over max_message_bytes ({self.max_message_bytes}): "
                                  "the server would drop it and the connection", request_id=msg.get("id"))
        return frames

    def _connect_timeout(self) -> ConnectTimeout:
        return ConnectTimeout(message=f"no reply from {self.endpoint} within {self.connect_timeout} s "
                                      "(no server there, or the CURVE handshake was refused)")

    # --- the life of a request

    def _route(self, frames: list[bytes]) -> None:
        """Deliver one received message to the request it is about, or drop it."""
        msg = protocol.decode(frames)
        if msg is None:
            log.warning("dropped a malformed reply (%d frames)", len(frames))
            return
        if msg["type"] == "heartbeat":
            return
        rid = msg.get("id")
        if not isinstance(rid, str):
            if msg["type"] == "error":
                log.warning("server error about no request: %s: %s", msg.get("code"), msg.get("message"))
            return
        queue = self._queues.get(rid)
        if queue is not None:
            self._deliver(queue, msg)
        elif rid in self._draining and msg["type"] in protocol.TERMINAL_TYPES:
            self._draining.discard(rid)

    def _deliver(self, queue: Any, msg: dict) -> None:
        raise NotImplementedError

    def _finish(self, rid: str) -> None:
        """The request ended with its terminal reply, or a one-shot call got its answer."""
        self._queues.pop(rid, None)
        self._generations.pop(rid, None)

    def _abandon(self, rid: str, error: Exception) -> None:
        """Stop waiting for a generation: tell the server, drop whatever still comes about it."""
        state = self._generations.get(rid)
        if state is None:
            return
        if not state.finished:
            state.error = error
        self._finish(rid)
        self._draining.add(rid)
        self._send_nowait(protocol.encode({"type": "cancel", "id": rid}))

    def _send_nowait(self, frames: list[bytes]) -> None:
        try:
            self._sock_nowait.send_multipart(frames, zmq.NOBLOCK)
        except zmq.ZMQError as exc:  # full queue or closed socket: the server cancels on disconnect
            log.warning("could not send %s: %s", frames[1][:60], exc)

    def cancel(self, request_id: str) -> None:
        """Cancel a generation sent on this client. Its stream ends (waiting on it raises `Cancelled`);
        a request this client does not know is cancelled on the server all the same (a no-op there
        if it has ended). Sends and returns at once, in the blocking and the asyncio client alike."""
        self._check_open()
        if request_id in self._generations:
            self._abandon(request_id, Cancelled(message="cancelled by the client", request_id=request_id))
        else:
            self._send_nowait(protocol.encode({"type": "cancel", "id": protocol.check_id(request_id)}))

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed(message="the client is closed")

    def _close(self) -> None:
        """Cancel what is in flight, then close the socket, giving the cancels a moment to leave."""
        if self._closed:
            return
        for rid in list(self._generations):
            self._abandon(rid, ClientClosed(message="the client was closed", request_id=rid))
        self._closed = True
        self._sock.close(linger=CLOSE_LINGER_MS)


class StreamBase:
    """What a blocking and an asyncio stream share: the view of its state, and one step of it."""

    def __init__(self, client: ClientBase, state: GenerationState):
        self._client = client
        self._state = state

    @property
    def id(self) -> str:
        return self._state.id

    @property
    def prompt_tokens(self) -> int | None:
        """Prompt length in tokens, from the server's `accepted` (None before it arrives)."""
        return self._state.prompt_tokens

    @property
    def text(self) -> str:
        """The completion streamed so far."""
        return self._state.text

    @property
    def result(self) -> Result | None:
        """How it ended, once it has ended well (None before, or if it failed)."""
        return self._state.result

    @property
    def error(self) -> Exception | None:
        """How it failed, if it did."""
        return self._state.error

    def cancel(self) -> None:
        """Cancel it on the server and end it here (a no-op once it has ended)."""
        if not self._state.finished:
            self._client.cancel(self.id)

    def _step(self, msg: dict | None) -> Token | None:
        """Apply the next reply (None: the deadline passed): a Token to hand out, or None.
        Raises the error it ended with."""
        state = self._state
        if msg is None:
            err = state.timed_out()
            self._client._abandon(state.id, err)
            raise err
        try:
            event = state.feed(msg, time.monotonic())
        except HearthError:
            self._client._finish(state.id)
            raise
        if isinstance(event, Result):
            self._client._finish(state.id)
        return event if isinstance(event, Token) else None

    def _outcome(self) -> Result:
        if self._state.error is not None:
            raise self._state.error
        return self._state.result
