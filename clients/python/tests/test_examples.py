"""The examples run against the fake server (so they keep working as the client changes)."""

import contextlib
import io
import sys
import unittest
from pathlib import Path

from fake_server import FakeServer, heartbeats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
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


if __name__ == "__main__":
    unittest.main()
