"""Python client of Hearth's wire protocol v1 (docs/protocol.md): blocking (`Client`) and
asyncio (`AsyncClient`), depending only on pyzmq."""

import sys as _sys

try:
    import zmq as _zmq  # noqa: F401
except ModuleNotFoundError as _err:
    # Said once, here, instead of a traceback from the first module that needs it.
    raise ModuleNotFoundError(
        f"hearth_client needs pyzmq (the module zmq), which this Python ({_sys.executable}) lacks: "
        "`apt install python3-zmq` and run Debian's /usr/bin/python3, or `pip install pyzmq` in a virtual "
        "environment "
        "(clients/python/README.md, Install)", name="zmq") from None

from .aio import AsyncClient, AsyncStream
from .client import Client, Stream
from .errors import (BadRequest, Cancelled, ClientClosed, ConnectTimeout, FirstTokenTimeout, HearthError,
                     HearthTimeout, IdleTimeout, Internal, OverQuota, QueueFull, ReplyTimeout, ShuttingDown,
                     TooLong, Unauthorized)
from .keys import KeyPair, generate_keypair, load_keys
from .protocol import Result, Timings, Token, Usage

__version__ = "0.1.0"

__all__ = [
    "AsyncClient", "AsyncStream", "Client", "Stream", "Result", "Timings", "Token", "Usage",
    "KeyPair", "generate_keypair", "load_keys",
    "HearthError", "BadRequest", "TooLong", "Unauthorized", "OverQuota", "QueueFull", "ShuttingDown",
    "Cancelled", "Internal", "ClientClosed", "HearthTimeout", "ConnectTimeout", "FirstTokenTimeout",
    "IdleTimeout", "ReplyTimeout",
]
