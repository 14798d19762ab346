"""CURVE keys: Z85 text (40 characters for 32 bytes), as in Hearth's tenants file and key files."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import zmq
from zmq.utils import z85

Z85_KEY_CHARS = 40
_Z85_ALPHABET = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")


@dataclass(frozen=True)
class KeyPair:
    public: str
    secret: str | None = None  # None for a file that holds only a public key (a server's)


def z85_key(key: str | bytes, what: str = "key") -> bytes:
    """A key as the 40 Z85 bytes libzmq takes; accepts Z85 text or the 32 raw bytes."""
    if isinstance(key, bytes) and len(key) == 32:
        return z85.encode(key)
    text = key.decode("ascii", "replace") if isinstance(key, bytes) else key
    if not isinstance(text, str) or len(text) != Z85_KEY_CHARS or not set(text) <= _Z85_ALPHABET:
        raise ValueError(f"{what} must be {Z85_KEY_CHARS} characters of Z85 text (or 32 raw bytes)")
    try:
        z85.decode(text)  # each group of 5 must be below 2**32
    except Exception as exc:  # struct.error / ValueError, depending on the pyzmq version
        raise ValueError(f"{what} is not valid Z85: {exc}") from None
    return text.encode("ascii")


def generate_keypair() -> KeyPair:
    """A fresh CURVE key pair, as Z85 text."""
    public, secret = zmq.curve_keypair()
    return KeyPair(public.decode("ascii"), secret.decode("ascii"))


# A key file line: `public = "..."` (`hearth keygen`'s TOML file), `public-key = "..."` (ZeroMQ
# certificate files), `public_key: ...`; the name's first word says which key it is.
_LINE = re.compile(r"""^\s*(public|secret)[-_ ]?(?:key)?\s*[=:]\s*["']?([^"'\s]{40})["']?\s*$""", re.I | re.M)


def load_keys(path: str | Path) -> KeyPair:
    """The key pair in a key file: `hearth keygen`'s (`public = "..."` and `secret = "..."`), a
    ZeroMQ certificate, or a file holding one bare Z85 public key (secret None). A secret key
    must belong to the public key beside it."""
    text = Path(path).read_text(encoding="utf-8")
    found = {name.lower(): value for name, value in _LINE.findall(text)}
    if not found:
        bare = text.strip()
        if len(bare) == Z85_KEY_CHARS:
            found["public"] = bare
    if "public" not in found:
        raise ValueError(f"{path}: no CURVE public key found")
    public = z85_key(found["public"], f"{path}: public key").decode("ascii")
    secret = found.get("secret")
    if secret is None:
        return KeyPair(public)
    secret = z85_key(secret, f"{path}: secret key").decode("ascii")
    if zmq.curve_public(secret.encode("ascii")).decode("ascii") != public:
        raise ValueError(f"{path}: the public key does not belong to the secret key")
    return KeyPair(public, secret)
