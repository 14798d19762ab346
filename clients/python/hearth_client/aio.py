"""The asyncio client: the blocking client's surface, awaited (`zmq.asyncio`).

Thread-safety: an `AsyncClient` belongs to the event loop it first runs in. Any number of
coroutines of that loop may stream on it at once: one reader task takes every reply off the
socket and hands it to the queue of the request it is about.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Iterable, Mapping

import zmq
import zmq.asyncio

from . import protocol
from ._base import DEFAULT, ClientBase, StreamBase, log
from .errors import ClientClosed, ReplyTimeout
from .protocol import Result, Token

_CLOSED = object()  # put in every queue when the client closes, to wake its waiters


def _seconds_until(deadline: float | None) -> float | None:
    """asyncio's timeout for `deadline` (monotonic seconds): None for none, 0 once it has passed."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class AsyncStream(StreamBase):
    """One generation: `async for` over it for `Token`s; see `Stream` for how it ends.
    `async with` cancels a stream left before its end; `cancel()` needs no await."""

    def __aiter__(self) -> AsyncIterator[Token]:
        return self

    async def __anext__(self) -> Token:
        while not self._state.finished:
            token = self._step(await self._client._wait(self.id, self._state.deadline()))
            if token is not None:
                return token
        raise StopAsyncIteration

    async def wait(self) -> Result:
        """Read the stream to its end and return its result (or raise how it ended)."""
        async for _ in self:
            pass
        return self._outcome()

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.cancel()


class AsyncClient(ClientBase):
    """A connection to `hearth serve` for asyncio; the options are `ClientBase`'s. The connect
    check runs on `await client.connect()` or `async with AsyncClient(...)`, not in the constructor."""

    _context_type = zmq.asyncio.Context

    def __init__(self, endpoint: str, **options: Any):
        super().__init__(endpoint, **options)
        self._reader: asyncio.Task | None = None

    async def connect(self) -> dict:
        """Check the server with a `ping` within connect_timeout (None: skip); returns its `pong`."""
        if self.connect_timeout is None:
            return {}
        try:
            self.server_info = await self._call("ping", {}, self.connect_timeout)
        except ReplyTimeout:
            raise self._connect_timeout() from None
        return self.server_info

    async def generate(self, prompt: str | None = None, *, messages: Iterable[Mapping[str, str]] | None = None,
                       stream: bool = True, request_id: str | None = None, tenant: str | None = None,
                       first_token_timeout: Any = DEFAULT, idle_timeout: Any = DEFAULT,
                       **sampling: Any) -> AsyncStream:
        """Send a generation and return its `AsyncStream`; the arguments are `Client.generate`'s."""
        msg, state = self._start_generation(prompt, messages, stream, request_id, tenant, first_token_timeout,
                                            idle_timeout, sampling, time.monotonic())
        try:
            if not await self._send(msg, state.deadline()):
                raise state.timed_out()
        except BaseException:
            self._finish(state.id)
            raise
        return AsyncStream(self, state)

    async def complete(self, prompt: str | None = None, **kwargs: Any) -> str:
        """The whole completion of one generation, streamed (so the timeouts keep their meaning)."""
        return (await (await self.generate(prompt, **kwargs)).wait()).text

    async def ping(self, timeout: float | None = None) -> dict:
        return await self._call("ping", {}, timeout)

    async def stats(self, timeout: float | None = None) -> dict:
        return await self._call("stats", self._stats_fields(), timeout)

    async def models(self, timeout: float | None = None) -> list[dict]:
        return (await self._call("models", {}, timeout)).get("models", [])

    async def admin_set_policy(self, policy: str, timeout: float | None = None) -> dict:
        return await self._call("admin", {"action": "set_policy", "policy": policy}, timeout)

    async def admin_reload(self, timeout: float | None = None) -> dict:
        return await self._call("admin", {"action": "reload"}, timeout)

    def close(self) -> None:
        """Cancel every generation in flight and close the connection; waiters raise ClientClosed."""
        if self._closed:
            return
        queues = list(self._queues.values())
        self._close()
        if self._reader is not None:
            self._reader.cancel()
        for queue in queues:
            queue.put_nowait(_CLOSED)

    async def __aenter__(self) -> "AsyncClient":
        try:
            await self.connect()
        except BaseException:
            self.close()
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    # --- I/O

    async def _call(self, kind: str, fields: dict, timeout: float | None) -> dict:
        self._check_open()
        rid = self._ids.next(kind[0])
        self._queues[rid] = asyncio.Queue()
        timeout = self.request_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        try:
            sent = await self._send({"type": kind, "id": rid, **fields}, deadline)
            msg = await self._wait(rid, deadline) if sent else None
        finally:
            self._finish(rid)
        if msg is None:
            raise ReplyTimeout(message=f"no reply to {kind} within {timeout} s", request_id=rid)
        return protocol.reply_value(msg)

    def _new_queue(self) -> asyncio.Queue:
        return asyncio.Queue()

    def _deliver(self, queue: asyncio.Queue, msg: dict) -> None:
        queue.put_nowait(msg)

    async def _send(self, msg: dict, deadline: float | None) -> bool:
        """Send `msg`; False if there was no connection to send it on before `deadline`."""
        self._check_open()
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read_loop())
        frames = self._encode(msg)
        try:  # a cancelled send is not sent at all (pyzmq sends a multipart message whole)
            await asyncio.wait_for(self._sock.send_multipart(frames), _seconds_until(deadline))
        except asyncio.TimeoutError:
            return False
        return True

    async def _read_loop(self) -> None:
        while True:
            try:
                frames = await self._sock.recv_multipart()
            except zmq.ZMQError as exc:  # the socket closed under us
                log.debug("reader stops: %s", exc)
                return
            self._route(frames)

    async def _wait(self, rid: str, deadline: float | None) -> dict | None:
        """The next reply about `rid`; None once `deadline` (monotonic seconds) has passed."""
        self._check_open()
        queue = self._queues[rid]
        if queue.empty():
            timeout = _seconds_until(deadline)
            if timeout == 0:
                return None
            try:
                msg = await asyncio.wait_for(queue.get(), timeout)
            except asyncio.TimeoutError:
                return None
        else:
            msg = queue.get_nowait()
        if msg is _CLOSED:
            raise ClientClosed(message="the client was closed")
        return msg
