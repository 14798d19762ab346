"""A scripted stand-in for `hearth serve`: a ROUTER thread speaking wire protocol v1 over real
loopback TCP, for the client's tests.

`ping`, `stats`, `models`, `admin` and `cancel` are answered as docs/protocol.md says; a
`generate` is answered by the server's *plan*: a function from the request to a list of
(seconds after receipt, reply) pairs, where a reply is a dict (sent with the marker) or a list of
raw frames (for malformed replies). Every received message is recorded in `received`.
"""

from __future__ import annotations

import heapq
import itertools
import json
import threading
import time
from typing import Callable

import zmq

MARKER = b"hearth/1"
Plan = Callable[[dict], list]


def stream_replies(rid: str, texts: list[str], *, gap: float = 0.0, start: float = 0.0,
                   finish: str = "length", prompt_tokens: int = 5) -> list:
    """accepted, one token per text `gap` seconds apart from `start`, then done."""
    out: list = [(0.0, {"type": "accepted", "id": rid, "prompt_tokens": prompt_tokens})]
    for i, text in enumerate(texts):
        out.append((start + i * gap, {"type": "token", "id": rid, "index": i, "token": 100 + i, "text": text}))
    out.append((start + len(texts) * gap, done_reply(rid, len(texts), finish, prompt_tokens)))
    return out


def done_reply(rid: str, n: int, finish: str = "length", prompt_tokens: int = 5, **extra) -> dict:
    return {"type": "done", "id": rid, "finish_reason": finish,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n, "cached_tokens": 2},
            "timings": {"queue_ms": 1.5, "ttft_ms": 10.0, "prefill_ms": 5.0, "first_step_ms": 3.5,
                        "mean_itl_ms": 2.0, "e2e_ms": 20.0},
            "preemptions": 0, **extra}


def heartbeats(until: float, every: float = 0.05) -> list:
    return [(t * every, {"type": "heartbeat"}) for t in range(1, int(until / every) + 1)]


def echo_plan(msg: dict) -> list:
    """The prompt's (or last message's) words back as tokens."""
    text = msg.get("prompt") if "prompt" in msg else msg["messages"][-1]["content"]
    words = text.split(" ")
    texts = [w if i == 0 else " " + w for i, w in enumerate(words)][: msg.get("max_tokens", 256)]
    rid = msg["id"]
    if msg.get("stream", True):
        return stream_replies(rid, texts)
    return [(0.0, {"type": "accepted", "id": rid, "prompt_tokens": 5}),
            (0.0, done_reply(rid, len(texts), text="".join(texts)))]


class FakeServer:
    def __init__(self, plan: Plan = echo_plan, *, secret_key: bytes | None = None,
                 allowed_keys: dict[bytes, str] | None = None, answer_stats: bool = True,
                 endpoint: str = "tcp://127.0.0.1:*"):
        """secret_key: be a CURVE server with this (Z85) secret key. allowed_keys: Z85 client
        public key -> tenant, checked by a ZAP handler (without one, libzmq admits every key)."""
        self.plan = plan
        self.answer_stats = answer_stats
        self.received: list[dict] = []
        self.user_ids: list[str | None] = []  # the ZAP user id of each received message
        self._ctx = zmq.Context()
        self._zap = None
        if allowed_keys is not None:
            self._allowed = {zmq.utils.z85.decode(k): v for k, v in allowed_keys.items()}
            self._zap = self._ctx.socket(zmq.REP)
            self._zap.bind("inproc://zeromq.zap.01")  # before the server socket, as libzmq requires
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.linger = 0
        if secret_key is not None:
            self._sock.curve_server = True
            self._sock.curve_secretkey = secret_key
        self._sock.bind(endpoint)
        self.endpoint = self._sock.last_endpoint.decode()
        self._pending: list = []  # heap of (due, seq, peer, rid, frames, terminal)
        self._seq = itertools.count()
        self._open: set = set()  # (peer, rid) of generations without a terminal reply yet
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def types(self, kind: str) -> list[dict]:
        """The received messages of one type, in order."""
        with self._lock:
            return [m for m in self.received if m.get("type") == kind]

    def wait_for(self, kind: str, rid: str, timeout: float = 2.0) -> bool:
        """Whether a message of this type and id arrives within timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(m.get("id") == rid for m in self.types(kind)):
                return True
            time.sleep(0.01)
        return False

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock in (self._sock, self._zap):
            if sock is not None:
                sock.close(linger=0)
        self._ctx.term()

    def __enter__(self) -> "FakeServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the server thread

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        if self._zap is not None:
            poller.register(self._zap, zmq.POLLIN)
        while not self._stop.is_set():
            wait_ms = 20
            if self._pending:
                wait_ms = max(0, min(wait_ms, int((self._pending[0][0] - time.monotonic()) * 1000)))
            events = dict(poller.poll(wait_ms))
            if self._zap is not None and self._zap in events:
                self._answer_zap(self._zap.recv_multipart())
            if self._sock in events:
                frames = self._sock.recv_multipart(copy=False)
                user = frames[-1].get("User-Id") if self._zap is not None else None
                self._handle(frames[0].bytes, [f.bytes for f in frames[1:]], user)
            self._send_due()

    def _answer_zap(self, req: list[bytes]) -> None:
        version, request_id, mechanism, key = req[0], req[1], req[5], req[6] if len(req) > 6 else b""
        tenant = self._allowed.get(key) if mechanism == b"CURVE" else None
        ok = tenant is not None
        self._zap.send_multipart([version, request_id, b"200" if ok else b"400", b"OK" if ok else b"unknown key",
                                  (tenant or "").encode(), b""])

    def _handle(self, peer: bytes, frames: list[bytes], user: str | None) -> None:
        msg = json.loads(frames[1]) if len(frames) == 2 and frames[0] == MARKER else {"type": "<malformed>"}
        with self._lock:
            self.received.append(msg)
            self.user_ids.append(user)
        kind, rid = msg.get("type"), msg.get("id")
        if kind == "ping":
            self._schedule(peer, rid, 0, {"type": "pong", "id": rid, "protocol": 1, "server": "fake 0",
                                          "tenant": user or None})
        elif kind == "stats" and self.answer_stats:
            self._schedule(peer, rid, 0, {"type": "stats", "id": rid, "uptime_s": 1.0,
                                          "engine": {"waiting": 0, "running": 1}, "tenant": {"name": "t"}})
        elif kind == "models":
            self._schedule(peer, rid, 0, {"type": "models", "id": rid, "models": [{"name": "tiny", "n_ctx": 2048}]})
        elif kind == "admin":
            if msg.get("policy") == "forbidden":
                self._schedule(peer, rid, 0, {"type": "error", "id": rid, "code": "unauthorized",
                                              "message": "not an admin"})
            elif msg.get("policy") == "clashing":  # as if its id were a generate's in flight
                self._schedule(peer, rid, 0, {"type": "refused", "id": rid, "code": "bad_request",
                                              "message": "field 'id': a request with this id is in flight"})
            else:
                self._schedule(peer, rid, 0, {"type": "admin", "id": rid, "ok": True, "policy": msg.get("policy")})
        elif kind == "generate":
            self._open.add((peer, rid))
            for delay, reply in self.plan(msg):
                self._schedule(peer, rid, delay, reply)
        elif kind == "cancel" and (peer, rid) in self._open:
            self._pending = [p for p in self._pending if (p[2], p[3]) != (peer, rid)]
            heapq.heapify(self._pending)
            self._schedule(peer, rid, 0, {"type": "error", "id": rid, "code": "cancelled", "message": "cancelled"})

    def _schedule(self, peer: bytes, rid, delay: float, reply) -> None:
        frames = reply if isinstance(reply, list) else [MARKER, json.dumps(reply).encode()]
        terminal = isinstance(reply, dict) and reply.get("type") in ("done", "error")
        heapq.heappush(self._pending, (time.monotonic() + delay, next(self._seq), peer, rid, frames, terminal))

    def _send_due(self) -> None:
        now = time.monotonic()
        while self._pending and self._pending[0][0] <= now:
            _, _, peer, rid, frames, terminal = heapq.heappop(self._pending)
            self._sock.send_multipart([peer, *frames])
            if terminal:
                self._open.discard((peer, rid))
