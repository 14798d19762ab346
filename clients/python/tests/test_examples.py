"""The examples run against the fake server (so they keep working as the client changes)."""

import contextlib
import io
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from fake_server import FakeServer, heartbeats

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))
import rag  # noqa: E402
import voice_turn  # noqa: E402


def run(main, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


class ExamplesTest(unittest.TestCase):
    def setUp(self):
        self.server = FakeServer()
        self.addCleanup(self.server.close)

    def test_voice_turn(self):
        code, out, err = run(voice_turn.main, ["--endpoint", self.server.endpoint, "--tenant", "voice", "lights off?"])
        self.assertEqual((code, out), (0, "lights off?\n"))
        self.assertIn("TTFT", err)
        sent = self.server.types("generate")[0]
        self.assertEqual((sent["tenant"], sent["messages"][0]["role"]), ("voice", "system"))

    def test_voice_turn_gives_up_in_time(self):
        self.server.plan = lambda m: heartbeats(1.0)
        code, out, _ = run(voice_turn.main, ["--endpoint", self.server.endpoint, "--first-token-timeout", "0.2"])
        self.assertEqual(code, 2)
        self.assertIn("One moment", out)
        self.assertTrue(self.server.wait_for("cancel", self.server.types("generate")[0]["id"]))

    def test_rag(self):
        code, out, _ = run(rag.main, ["--endpoint", self.server.endpoint, "--words", "300", "--max-tokens", "5",
                                      "Q1?", "Q2?"])
        self.assertEqual(code, 0)
        self.assertEqual(out.count("cached 2"), 2)
        prompts = [m["prompt"] for m in self.server.types("generate")]
        self.assertEqual(len(prompts), 2)
        self.assertGreater(len(prompts[0].split()), 300)
        self.assertEqual(prompts[0].split("Question:")[0], prompts[1].split("Question:")[0])  # a shared prefix


class UserErrorsTest(unittest.TestCase):
    """A user's mistake, or a server's refusal, ends an example with one line that names the fix:
    exit 1, no traceback (run as a user runs them, in a fresh interpreter)."""

    def expect_one_line(self, args, *wanted, example="voice_turn.py"):
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([sys.executable, str(EXAMPLES / example), *args], cwd=tmp, capture_output=True,
                               text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        for want in wanted:
            self.assertIn(want, r.stderr)

    def test_an_endpoint_without_a_scheme(self):
        self.expect_one_line(["--endpoint", "localhost:5617"], "did you mean tcp://localhost:5617?")
        self.expect_one_line(["--endpoint", "5617"], "did you mean tcp://127.0.0.1:5617?", example="rag.py")

    def test_missing_or_bad_key_files(self):
        key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
        self.expect_one_line(["--server-key", "server.pub", "--keys", "voice.key"], "--server-key server.pub",
                             "hearth keygen -o server.key")
        self.expect_one_line(["--server-key", key, "--keys", "voice.key"], "--keys voice.key: No such file")
        self.expect_one_line(["--server-key", key], "CURVE needs both --server-key and --keys")
        self.expect_one_line(["--keys", __file__, "--server-key", key], "no CURVE public key found")

    def test_a_missing_document(self):
        self.expect_one_line(["--file", "manual.txt"], "--file manual.txt: No such file", example="rag.py")

    def test_a_refusal_from_the_server(self):
        with FakeServer() as server:
            server.plan = lambda m: [(0, {"type": "error", "id": m["id"], "code": "unauthorized",
                                          "message": "unknown tenant 'tv'"})]
            self.expect_one_line(["--endpoint", server.endpoint, "--tenant", "tv"],
                                 "hearth: unauthorized: unknown tenant 'tv'")


if __name__ == "__main__":
    unittest.main()
