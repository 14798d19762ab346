"""The asyncio client against the fake server."""

import asyncio
import tempfile
import unittest

from fake_server import FakeServer, heartbeats, stream_replies

import hearth_client as hc


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.server = FakeServer()
        self.addCleanup(self.server.close)
        self.client = hc.AsyncClient(self.server.endpoint, connect_timeout=2.0)
        await self.client.__aenter__()
        self.addAsyncCleanup(self.client.__aexit__, None, None, None)

    async def test_async_for_streams_tokens(self):
        stream = await self.client.generate("one two three", temperature=0)
        texts = [t.text async for t in stream]
        self.assertEqual(texts, ["one", " two", " three"])
        self.assertEqual(stream.result.usage.completion_tokens, 3)
        self.assertEqual(await self.client.complete("a b"), "a b")
        self.assertEqual(self.client.server_info["protocol"], 1)

    async def test_concurrent_streams(self):
        self.server.plan = lambda m: stream_replies(m["id"], [m["prompt"] * (i + 1) for i in range(4)], gap=0.01)

        async def run(prompt):
            return await self.client.complete(prompt)

        results = await asyncio.gather(*(run(p) for p in "abcdef"))
        self.assertEqual(results, [p + p * 2 + p * 3 + p * 4 for p in "abcdef"])

    async def test_errors_and_one_shot_requests(self):
        self.server.plan = lambda m: [(0, {"type": "error", "id": m["id"], "code": "over_quota", "message": "busy",
                                           "retry_after_ms": 250})]
        with self.assertRaises(hc.OverQuota) as caught:
            await self.client.complete("x")
        self.assertEqual(caught.exception.retry_after_ms, 250)
        self.assertEqual((await self.client.stats())["uptime_s"], 1.0)
        self.assertEqual((await self.client.models())[0]["n_ctx"], 2048)
        self.assertTrue((await self.client.admin_set_policy("fifo"))["ok"])

    async def test_first_token_timeout_cancels(self):
        self.server.plan = lambda m: heartbeats(2.0)
        stream = await self.client.generate("x", first_token_timeout=0.3)
        with self.assertRaises(hc.FirstTokenTimeout):
            await stream.wait()
        self.assertTrue(await asyncio.to_thread(self.server.wait_for, "cancel", stream.id))

    async def test_leaving_a_stream_cancels_it(self):
        self.server.plan = lambda m: stream_replies(m["id"], ["a"] * 50, gap=0.05)
        async with await self.client.generate("x") as stream:
            async for _ in stream:
                break
        self.assertTrue(await asyncio.to_thread(self.server.wait_for, "cancel", stream.id))
        self.assertIsInstance(stream.error, hc.Cancelled)

    async def test_close_wakes_a_waiting_stream(self):
        self.server.plan = lambda m: []
        stream = await self.client.generate("x")
        waiter = asyncio.create_task(stream.wait())
        await asyncio.sleep(0.05)
        self.client.close()
        with self.assertRaises(hc.ClientClosed):
            await waiter

    async def test_connect_timeout(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(hc.ConnectTimeout):
                async with hc.AsyncClient(f"ipc://{tmp}/nobody", connect_timeout=0.2):
                    pass


if __name__ == "__main__":
    unittest.main()
