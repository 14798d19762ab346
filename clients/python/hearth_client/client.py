"""The blocking client.

Thread-safety: a `Client` and its streams belong to one thread at a time, as a ZeroMQ socket
does (use one client per thread; they are cheap). Using one from two threads at once raises
`RuntimeError` instead of corrupting the socket. Several streams may be in flight on one client
and be read in any interleaving: reading one buffers the replies that arrive for the others.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

import zmq

from . import protocol
from ._base import DEFAULT, ClientBase, StreamBase, ms_until
from .errors import ReplyTimeout
from .protocol import Result, Token


class Stream(StreamBase):
    """One generation: iterate it for `Token`s; `result` is set once it is done.

    An `error` reply is raised from the iteration as its `HearthError` subclass; a passed
    first-token or idle deadline raises `FirstTokenTimeout` / `IdleTimeout` after sending
    `cancel`. Used as a context manager, a stream left before its end is cancelled.
    """

    def __iter__(self) -> Iterator[Token]:
        return self

    def __next__(self) -> Token:
        while not self._state.finished:
            token = self._step(self._client._wait(self.id, self._state.deadline()))
            if token is not None:
                return token
        raise StopIteration

    def wait(self) -> Result:
        """Read the stream to its end and return its result (or raise how it ended)."""
        for _ in self:
            pass
        return self._outcome()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cancel()


class Client(ClientBase):
    """A connection to `hearth serve` (docs/protocol.md). The options are `ClientBase`'s; the
    constructor checks the server with a `ping` within connect_timeout (unless it is None)."""

    def __init__(self, endpoint: str, **options: Any):
        super().__init__(endpoint, **options)
        self._in_use = threading.RLock()  # re-entrant: close() cancels through _send_nowait
        if self.connect_timeout is not None:
            try:
                self.connect()
            except BaseException:
                self._closed = True
                self._sock.close(linger=0)
                raise

    def connect(self) -> dict:
        """Check the server with a `ping` within connect_timeout; returns (and keeps in
        `server_info`) its `pong`: protocol, server, tenant."""
        try:
            self.server_info = self._call("ping", {}, self.connect_timeout)
        except ReplyTimeout:
            raise self._connect_timeout() from None
        return self.server_info

    # --- generation

    def generate(self, prompt: str | None = None, *, messages: Iterable[Mapping[str, str]] | None = None,
                 stream: bool = True, request_id: str | None = None, tenant: str | None = None,
                 first_token_timeout: Any = DEFAULT, idle_timeout: Any = DEFAULT, **sampling: Any) -> Stream:
        """Send a generation and return its `Stream`. Give `prompt` (raw text) or `messages`
        (`[{"role": ..., "content": ...}]`). Sampling options (server defaults when left out):
        max_tokens, temperature (0 = greedy), top_k, top_p, min_p, repetition_penalty,
        repeat_last_n, seed, stop (a string or a list of them), ignore_eos (run to max_tokens). stream=False: no tokens are sent,
        the text comes with the result, and first_token_timeout bounds the wait for it."""
        msg, state = self._start_generation(prompt, messages, stream, request_id, tenant, first_token_timeout,
                                            idle_timeout, sampling, time.monotonic())
        try:
            if not self._send(msg, state.deadline()):
                raise state.timed_out()
        except BaseException:
            self._finish(state.id)
            raise
        return Stream(self, state)

    def complete(self, prompt: str | None = None, **kwargs: Any) -> str:
        """The whole completion of one generation, streamed (so the timeouts keep their meaning)."""
        return self.generate(prompt, **kwargs).wait().text

    # --- one-shot requests

    def ping(self, timeout: float | None = None) -> dict:
        """The server's `pong`: protocol, server, tenant."""
        return self._call("ping", {}, timeout)

    def stats(self, timeout: float | None = None) -> dict:
        """The engine's gauges and this tenant's counters (`uptime_s`, `engine`, `tenant`)."""
        return self._call("stats", self._stats_fields(), timeout)

    def models(self, timeout: float | None = None) -> list[dict]:
        """The models served: name, architecture, n_ctx, n_vocab, chat_format."""
        return self._call("models", {}, timeout).get("models", [])

    def admin_set_policy(self, policy: str, timeout: float | None = None) -> dict:
        """Switch the scheduling policy (admin tenants only); returns `{"ok": True, "policy": ...}`."""
        return self._call("admin", {"action": "set_policy", "policy": policy}, timeout)

    def admin_reload(self, timeout: float | None = None) -> dict:
        """Re-read the configuration file's tenants and policy (admin tenants only)."""
        return self._call("admin", {"action": "reload"}, timeout)

    def close(self) -> None:
        """Cancel every generation in flight and close the connection."""
        with self._exclusive():
            self._close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- I/O

    def _call(self, kind: str, fields: dict, timeout: float | None) -> dict:
        self._check_open()
        rid = self._ids.next(kind[0])
        self._queues[rid] = deque()
        timeout = self.request_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        try:
            msg = self._wait(rid, deadline) if self._send({"type": kind, "id": rid, **fields}, deadline) else None
        finally:
            self._finish(rid)
        if msg is None:
            raise ReplyTimeout(message=f"no reply to {kind} within {timeout} s", request_id=rid)
        return protocol.reply_value(msg)

    def _new_queue(self) -> deque:
        return deque()

    def _deliver(self, queue: deque, msg: dict) -> None:
        queue.append(msg)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        if not self._in_use.acquire(blocking=False):
            raise RuntimeError("hearth_client.Client used from two threads at once; use one client per thread")
        try:
            yield
        finally:
            self._in_use.release()

    def _send_nowait(self, frames: list[bytes]) -> None:
        with self._exclusive():
            super()._send_nowait(frames)

    def _send(self, msg: dict, deadline: float | None) -> bool:
        """Send `msg`; False if there was no connection to send it on before `deadline`."""
        with self._exclusive():
            self._check_open()
            frames = self._encode(msg)
            while True:
                try:
                    self._sock.send_multipart(frames, zmq.NOBLOCK)  # atomic: all frames or none
                    return True
                except zmq.Again:
                    timeout_ms = ms_until(deadline)
                    if timeout_ms == 0:
                        return False
                    self._sock.poll(timeout_ms, zmq.POLLOUT)

    def _wait(self, rid: str, deadline: float | None) -> dict | None:
        """The next reply about `rid`, reading (and routing) the socket until it comes; None once
        `deadline` (monotonic seconds) has passed."""
        with self._exclusive():
            self._check_open()
            queue = self._queues[rid]
            while not queue:
                timeout_ms = ms_until(deadline)
                if timeout_ms == 0:
                    return None
                if self._sock.poll(timeout_ms):
                    self._read_available()
            return queue.popleft()

    def _read_available(self) -> None:
        while True:
            try:
                frames = self._sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            self._route(frames)
