"""Without pyzmq, the package and its examples say what is missing and how to get it."""

import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def without_zmq(code: str) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter where `import zmq` fails as if pyzmq were absent."""
    prelude = f"import sys; sys.modules['zmq'] = None; sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'examples')!r}]; "
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=60)


class MissingPyzmqTest(unittest.TestCase):
    def test_import_names_the_module_and_the_fix(self):
        r = without_zmq("import hearth_client")
        self.assertNotEqual(r.returncode, 0)
        last = r.stderr.strip().splitlines()[-1]
        self.assertIn("ModuleNotFoundError: hearth_client needs pyzmq (the module zmq)", last)
        self.assertIn("apt install python3-zmq", last)
        self.assertIn("pip install pyzmq", last)

    def test_an_example_says_it_in_one_line(self):
        r = without_zmq("import runpy; sys.argv = ['voice_turn.py']; "
                        f"runpy.run_path({str(ROOT / 'examples' / 'voice_turn.py')!r}, run_name='__main__')")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("hearth: hearth_client needs pyzmq"), r.stderr)


if __name__ == "__main__":
    unittest.main()
