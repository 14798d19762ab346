"""The blocking client against the fake server: streaming, concurrency, errors, timeouts, cancel."""

import json
import tempfile
import threading
import time
import unittest

from fake_server import MARKER, FakeServer, heartbeats, stream_replies

import hearth_client as hc


class ServerCase(unittest.TestCase):
    plan = None  # a class may set a plan for its server; None: echo

    def setUp(self):
        self.server = FakeServer(*(() if self.plan is None else (type(self).plan,)))
        self.addCleanup(self.server.close)
        self.client = hc.Client(self.server.endpoint, tenant="voice", connect_timeout=2.0)
        self.addCleanup(self.client.close)

    def use_plan(self, plan):
        self.server.plan = plan


class StreamingTest(ServerCase):
    def test_streams_tokens_then_result(self):
        stream = self.client.generate("the quick brown fox", max_tokens=8, temperature=0, stop="\n\n", seed=3)
        tokens = list(stream)
        self.assertEqual([t.text for t in tokens], ["the", " quick", " brown", " fox"])
        self.assertEqual([t.index for t in tokens], [0, 1, 2, 3])
        self.assertEqual(stream.text, "the quick brown fox")
        self.assertEqual(stream.prompt_tokens, 5)
        result = stream.result
        self.assertEqual((result.finish_reason, result.text), ("length", "the quick brown fox"))
        self.assertEqual(result.usage, hc.Usage(5, 4, 2))
        self.assertEqual(result.timings.ttft_ms, 10.0)
        self.assertEqual((result.timings.prefill_ms, result.timings.first_step_ms), (5.0, 3.5))
        self.assertIs(stream.wait(), result)
        sent = self.server.types("generate")[0]
        self.assertEqual(sent, {"type": "generate", "id": stream.id, "prompt": "the quick brown fox", "max_tokens": 8,
                                "temperature": 0, "stop": ["\n\n"], "seed": 3, "tenant": "voice", "stream": True})

    def test_messages_and_complete(self):
        text = self.client.complete(messages=[{"role": "system", "content": "terse"},
                                              {"role": "user", "content": "lights off"}])
        self.assertEqual(text, "lights off")
        self.assertEqual(self.server.types("generate")[0]["messages"][1], {"role": "user", "content": "lights off"})

    def test_unstreamed_result_carries_the_text(self):
        stream = self.client.generate("a b c", stream=False)
        self.assertEqual(list(stream), [])
        self.assertEqual(stream.result.text, "a b c")
        self.assertFalse(self.server.types("generate")[0]["stream"])

    def test_concurrent_streams_are_told_apart(self):
        self.use_plan(lambda m: stream_replies(m["id"], [m["prompt"] + str(i) for i in range(5)], gap=0.01))
        a, b, c = (self.client.generate(p) for p in ("a", "b", "c"))
        self.assertEqual(next(b).text, "b0")
        self.assertEqual([t.text for t in c], ["c0", "c1", "c2", "c3", "c4"])  # buffers a's and b's meanwhile
        self.assertEqual(next(a).text, "a0")
        self.assertEqual(b.wait().text, "b0b1b2b3b4")
        self.assertEqual(a.wait().text, "a0a1a2a3a4")

    def test_heartbeats_between_tokens_are_ignored(self):
        def plan(m):
            rid = m["id"]
            return [*stream_replies(rid, ["x", "y"], gap=0.15), *[(t, {"type": "heartbeat"}) for t in (0.05, 0.1, 0.2)]]
        self.use_plan(plan)
        self.assertEqual(self.client.complete("hi", idle_timeout=2.0), "xy")

    def test_one_shot_requests(self):
        self.assertEqual(self.client.ping()["protocol"], 1)
        self.assertEqual(self.client.server_info["server"], "fake 0")
        self.assertEqual(self.client.stats()["engine"]["running"], 1)
        self.assertEqual(self.client.models()[0]["name"], "tiny")
        self.assertEqual(self.client.admin_set_policy("slo"), {"ok": True, "policy": "slo"})
        self.assertEqual(self.server.types("admin")[0], {"type": "admin", "id": self.server.types("admin")[0]["id"],
                                                         "action": "set_policy", "policy": "slo"})
        with self.assertRaises(hc.Unauthorized):
            self.client.admin_set_policy("forbidden")

    def test_a_request_over_the_message_limit_is_refused_here(self):
        self.client.max_message_bytes = 1000
        with self.assertRaises(hc.TooLong):
            self.client.generate("x" * 1000)
        self.assertEqual(self.server.types("generate"), [])
        self.assertEqual(self.client.complete("still fine"), "still fine")

    def test_arguments_are_checked(self):
        with self.assertRaises(ValueError):
            self.client.generate("x", messages=[{"role": "user", "content": "y"}])
        with self.assertRaises(ValueError):
            self.client.generate()
        with self.assertRaises(TypeError):
            self.client.generate("x", temprature=0)
        with self.assertRaises(ValueError):
            self.client.generate("x", request_id="x" * 65)
        self.use_plan(lambda m: [])  # never ends
        self.client.generate("x", request_id="turn-1")
        with self.assertRaises(ValueError):
            self.client.generate("x", request_id="turn-1")


class EndpointTest(unittest.TestCase):
    def test_an_endpoint_without_a_scheme_gets_the_one_meant(self):
        for endpoint, message in [
                ("localhost:5555", "endpoint localhost:5555 has no scheme: did you mean tcp://localhost:5555?"),
                ("5555", "endpoint 5555 has no scheme: did you mean tcp://127.0.0.1:5555?"),
                ("http://127.0.0.1:11434", "endpoint http://127.0.0.1:11434: ZeroMQ endpoints are tcp://HOST:PORT "
                                           "or ipc://PATH (the HTTP APIs are `hearth serve --http HOST:PORT`)")]:
            for kind in (hc.Client, hc.AsyncClient):
                with self.subTest(endpoint=endpoint, kind=kind.__name__):
                    with self.assertRaises(ValueError) as caught:
                        kind(endpoint, connect_timeout=None)
                    self.assertEqual(str(caught.exception), message)


class ThreadTest(ServerCase):
    def test_use_from_two_threads_at_once_is_refused(self):
        inside, leave = threading.Event(), threading.Event()

        def hold():  # stands for another thread in the middle of reading a stream
            with self.client._exclusive():
                inside.set()
                leave.wait(5)

        other = threading.Thread(target=hold)
        other.start()
        inside.wait(5)
        try:
            with self.assertRaises(RuntimeError):
                self.client.ping()
        finally:
            leave.set()
            other.join()
        self.assertEqual(self.client.ping()["protocol"], 1)  # and each thread in turn is fine


class ErrorTest(ServerCase):
    CODES = {"bad_request": hc.BadRequest, "too_long": hc.TooLong, "unauthorized": hc.Unauthorized,
             "over_quota": hc.OverQuota, "queue_full": hc.QueueFull, "shutting_down": hc.ShuttingDown,
             "cancelled": hc.Cancelled, "internal": hc.Internal}

    def test_every_code_raises_its_exception(self):
        self.use_plan(lambda m: [(0, {"type": "error", "id": m["id"], "code": m["prompt"], "message": "why",
                                      "retry_after_ms": 1800})])
        for code, cls in self.CODES.items():
            stream = self.client.generate(code)
            with self.assertRaises(cls) as caught:
                next(stream)
            err = caught.exception
            self.assertEqual((err.code, err.message, err.retry_after_ms, err.request_id), (code, "why", 1800, stream.id))
            self.assertIsInstance(err, hc.HearthError)
            self.assertIs(stream.error, err)
            self.assertEqual(list(stream), [])  # ended
            with self.assertRaises(cls):
                stream.wait()

    def test_unknown_code_is_a_plain_hearth_error(self):
        self.use_plan(lambda m: [(0, {"type": "error", "id": m["id"], "code": "melted", "message": "hot"})])
        with self.assertRaises(hc.HearthError) as caught:
            self.client.complete("x")
        self.assertIs(type(caught.exception), hc.HearthError)
        self.assertEqual(caught.exception.code, "melted")

    def test_error_after_tokens(self):
        self.use_plan(lambda m: [*stream_replies(m["id"], ["a", "b"])[:3],
                                 (0.01, {"type": "error", "id": m["id"], "code": "internal", "message": "backend"})])
        stream = self.client.generate("x")
        self.assertEqual(next(stream).text, "a")
        self.assertEqual(next(stream).text, "b")
        with self.assertRaises(hc.Internal):
            next(stream)
        self.assertEqual(stream.text, "ab")
        self.assertIsNone(stream.result)

    def test_malformed_and_unknown_replies_are_skipped(self):
        def plan(m):
            rid = m["id"]
            junk = [[MARKER], [MARKER, b"{}", b"extra"], [b"hearth/2", json.dumps({"type": "token", "id": rid}).encode()],
                    [MARKER, b"\xff\xfe"], [MARKER, b"{not json"], [MARKER, b"[1, 2]"], [MARKER, b'{"id": "x"}'],
                    {"type": "token", "id": rid, "index": 9, "token": 1, "text": 7},
                    {"type": "future_thing", "id": rid, "whatever": 1},
                    {"type": "token", "id": "someone-else", "index": 0, "token": 1, "text": "!"},
                    {"type": "error", "id": None, "code": "bad_request", "message": "frames"}]
            good = stream_replies(rid, ["ok"])
            good[1][1]["new_field"] = {"nested": True}
            good[2][1]["new_field"] = 1
            return [(0, j) for j in junk] + [(0.01, r) for _, r in good]
        self.use_plan(plan)
        stream = self.client.generate("x")
        with self.assertLogs("hearth_client", "WARNING") as logs:
            self.assertEqual([t.text for t in stream], ["ok"])
        self.assertEqual(stream.result.finish_reason, "length")
        self.assertEqual(sum("malformed" in line for line in logs.output), 7)


class RefusedTest(ServerCase):
    def test_a_refusal_beside_a_stream_does_not_end_it(self):
        def plan(m):
            rid = m["id"]
            good = stream_replies(rid, ["a", "b"])
            refused = {"type": "refused", "id": rid, "code": "bad_request", "message": "field 'extra'"}
            return good[:2] + [(0.01, refused)] + [(0.02, r) for _, r in good[2:]]
        self.use_plan(plan)
        stream = self.client.generate("x")
        self.assertEqual([t.text for t in stream], ["a", "b"])
        self.assertEqual(stream.result.finish_reason, "length")

    def test_a_refused_one_shot_call_raises(self):
        with self.assertRaises(hc.BadRequest):
            self.client.admin_set_policy("clashing")


class TimeoutTest(ServerCase):
    def test_first_token_timeout_cancels(self):
        # Accepted and kept alive by heartbeats, but no token: heartbeats do not count as progress.
        self.use_plan(lambda m: [(0, {"type": "accepted", "id": m["id"], "prompt_tokens": 3}), *heartbeats(2.0)])
        stream = self.client.generate("x", first_token_timeout=0.3)
        start = time.monotonic()
        with self.assertRaises(hc.FirstTokenTimeout) as caught:
            next(stream)
        self.assertGreaterEqual(time.monotonic() - start, 0.29)
        self.assertIsInstance(caught.exception, TimeoutError)
        self.assertEqual(caught.exception.request_id, stream.id)
        self.assertTrue(self.server.wait_for("cancel", stream.id))
        self.assertEqual(list(stream), [])
        # The late `cancelled` is dropped, and the client goes on.
        self.use_plan(lambda m: stream_replies(m["id"], ["fine"]))
        self.assertEqual(self.client.complete("y"), "fine")

    def test_idle_timeout_cancels(self):
        self.use_plan(lambda m: [*stream_replies(m["id"], ["a"])[:2], *heartbeats(2.0)])
        stream = self.client.generate("x", first_token_timeout=2.0, idle_timeout=0.3)
        self.assertEqual(next(stream).text, "a")
        with self.assertRaises(hc.IdleTimeout):
            next(stream)
        self.assertTrue(self.server.wait_for("cancel", stream.id))

    def test_client_defaults_apply(self):
        self.client.first_token_timeout = 0.2
        self.use_plan(lambda m: [])
        with self.assertRaises(hc.FirstTokenTimeout):
            self.client.complete("x")
        with self.assertRaises(hc.FirstTokenTimeout):  # no_timeout would hang: the override is used
            self.client.complete("x", first_token_timeout=0.2)

    def test_reply_timeout(self):
        self.server.answer_stats = False
        with self.assertRaises(hc.ReplyTimeout):
            self.client.stats(timeout=0.2)
        self.assertEqual(self.client.ping()["protocol"], 1)

    def test_connect_timeout(self):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.monotonic()
            with self.assertRaises(hc.ConnectTimeout):
                hc.Client(f"ipc://{tmp}/nobody", connect_timeout=0.2)
            self.assertLess(time.monotonic() - start, 2.0)  # closes at once, not after the close linger


class CancelTest(ServerCase):
    def slow_plan(self, m):
        return stream_replies(m["id"], [str(i) for i in range(50)], gap=0.05)

    def test_stream_cancel(self):
        self.use_plan(self.slow_plan)
        stream = self.client.generate("x")
        self.assertEqual(next(stream).text, "0")
        stream.cancel()
        self.assertTrue(self.server.wait_for("cancel", stream.id))
        self.assertEqual(list(stream), [])
        with self.assertRaises(hc.Cancelled):
            stream.wait()
        self.use_plan(lambda m: stream_replies(m["id"], ["fine"]))
        self.assertEqual(self.client.complete("y"), "fine")  # late replies of the cancelled one are dropped

    def test_leaving_a_stream_cancels_it(self):
        self.use_plan(self.slow_plan)
        with self.client.generate("x") as stream:
            next(stream)
        self.assertTrue(self.server.wait_for("cancel", stream.id))
        self.use_plan(lambda m: stream_replies(m["id"], ["fine"]))
        with self.client.generate("y") as done:
            done.wait()
        time.sleep(0.05)
        self.assertEqual([m["id"] for m in self.server.types("cancel")], [stream.id])  # not the finished one

    def test_cancel_by_id_and_close(self):
        self.use_plan(self.slow_plan)
        a, b = self.client.generate("a"), self.client.generate("b")
        self.client.cancel(a.id)
        self.assertIsInstance(a.error, hc.Cancelled)
        self.client.cancel("not-mine")  # sent all the same; the server ignores it
        self.client.close()
        self.assertIsInstance(b.error, hc.ClientClosed)
        self.assertTrue(self.server.wait_for("cancel", b.id))
        self.assertTrue(self.server.wait_for("cancel", "not-mine"))
        with self.assertRaises(hc.ClientClosed):
            self.client.generate("c")


if __name__ == "__main__":
    unittest.main()
