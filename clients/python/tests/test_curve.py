"""CURVE: the handshake with a CURVE server, and key handling."""

import asyncio
import tempfile
import time
import unittest
from pathlib import Path

import zmq
from fake_server import FakeServer
from zmq.utils import z85

import hearth_client as hc
from hearth_client.keys import z85_key


class CurveTest(unittest.TestCase):
    def setUp(self):
        self.server_keys = hc.generate_keypair()
        self.client_keys = hc.generate_keypair()

    def serve(self, allowed=None):
        server = FakeServer(secret_key=self.server_keys.secret.encode(), allowed_keys=allowed)
        self.addCleanup(server.close)
        return server

    def connect(self, server, keys, server_key=None, timeout=2.0):
        client = hc.Client(server.endpoint, server_key=server_key or self.server_keys.public,
                           public_key=keys.public, secret_key=keys.secret, connect_timeout=timeout)
        self.addCleanup(client.close)
        return client

    def test_handshake_authenticates_the_client_key(self):
        server = self.serve({self.client_keys.public.encode(): "voice"})
        client = self.connect(server, self.client_keys)
        self.assertEqual(client.server_info["tenant"], "voice")
        self.assertEqual(client.complete("over curve"), "over curve")
        self.assertEqual(set(server.user_ids), {"voice"})

    def test_raw_key_bytes_are_accepted(self):
        server = self.serve()  # no ZAP handler: libzmq admits any client key
        client = hc.Client(server.endpoint, server_key=z85.decode(self.server_keys.public),
                           public_key=z85.decode(self.client_keys.public),
                           secret_key=z85.decode(self.client_keys.secret), connect_timeout=2.0)
        self.addCleanup(client.close)
        self.assertEqual(client.ping()["protocol"], 1)

    def test_unknown_client_key_never_gets_a_reply(self):
        server = self.serve({self.client_keys.public.encode(): "voice"})
        with self.assertRaises(hc.ConnectTimeout):
            self.connect(server, hc.generate_keypair(), timeout=0.3)

    def test_wrong_server_key_never_gets_a_reply(self):
        server = self.serve()
        with self.assertRaises(hc.ConnectTimeout):
            self.connect(server, self.client_keys, server_key=hc.generate_keypair().public, timeout=0.3)

    def refused(self, client_type):
        """A client whose CURVE handshake the server has refused. libzmq drops such a connection
        and makes no other, so the socket has nowhere to send: a plain send would block for ever."""
        server = self.serve({self.client_keys.public.encode(): "voice"})
        stranger = hc.generate_keypair()
        client = client_type(server.endpoint, server_key=self.server_keys.public, public_key=stranger.public,
                             secret_key=stranger.secret, connect_timeout=None)
        self.addCleanup(client.close)
        end = time.monotonic() + 2.0
        while client._sock_nowait.poll(0, zmq.POLLOUT) and time.monotonic() < end:
            time.sleep(0.01)
        self.assertFalse(client._sock_nowait.poll(0, zmq.POLLOUT), "the refused connection is still there")
        return client

    def test_after_a_refused_handshake_calls_end_at_their_deadline(self):
        client = self.refused(hc.Client)
        start = time.monotonic()
        with self.assertRaises(hc.ReplyTimeout):
            client.ping(timeout=0.2)
        with self.assertRaises(hc.FirstTokenTimeout):
            client.generate("x", first_token_timeout=0.2)
        self.assertLess(time.monotonic() - start, 2.0)
        with self.assertLogs("hearth_client", "WARNING"):
            client.cancel("anything")  # never waits: with no connection, nothing runs on the server
        self.assertEqual(client._queues, {})  # nothing left in flight

    def test_after_a_refused_handshake_async_calls_end_at_their_deadline(self):
        client = self.refused(hc.AsyncClient)

        async def calls():
            with self.assertRaises(hc.ReplyTimeout):
                await client.ping(timeout=0.2)
            with self.assertRaises(hc.FirstTokenTimeout):
                await client.generate("x", first_token_timeout=0.2)

        start = time.monotonic()
        asyncio.run(calls())
        self.assertLess(time.monotonic() - start, 2.0)
        self.assertEqual(client._queues, {})

    def test_keys_are_checked(self):
        with self.assertRaises(ValueError):
            hc.Client("tcp://127.0.0.1:1", server_key=self.server_keys.public, connect_timeout=None)
        with self.assertRaises(ValueError):
            hc.Client("tcp://127.0.0.1:1", server_key="short", public_key=self.client_keys.public,
                      secret_key=self.client_keys.secret, connect_timeout=None)
        for bad in ("x" * 39, "~" * 40, "%" * 40):  # length, alphabet, a group above 2**32
            with self.assertRaises(ValueError):
                z85_key(bad)


class KeyFileTest(unittest.TestCase):
    def load(self, text):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "key"
            path.write_text(text)
            return hc.load_keys(path)

    def test_formats(self):
        keys = hc.generate_keypair()
        zpl = f'#   ZeroMQ certificate\nmetadata\ncurve\n    public-key = "{keys.public}"\n    secret-key = "{keys.secret}"\n'
        keygen = ("# hearth CURVE key pair (ZeroMQ Z85 text). Keep this file secret: it holds the secret key.\n"
                  f'public = "{keys.public}"\nsecret = "{keys.secret}"\n')  # clients/cpp/keys.hpp
        for text in (keygen, zpl):
            self.assertEqual(self.load(text), keys)
        self.assertEqual(self.load(keys.public + "\n"), hc.KeyPair(keys.public))
        with self.assertRaises(ValueError):
            self.load("nothing here\n")
        with self.assertRaises(ValueError):  # a pair that does not belong together
            self.load(f'public = "{hc.generate_keypair().public}"\nsecret = "{keys.secret}"\n')


if __name__ == "__main__":
    unittest.main()
