"""Python client of Hearth's wire protocol v1 (docs/protocol.md): blocking (`Client`) and
asyncio (`AsyncClient`), depending only on pyzmq."""

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
