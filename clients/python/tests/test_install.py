"""Without pyzmq, the package and its examples say what is missing and how to get it; without the
module wheel, so does the offline build."""

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


class OfflineBuildTest(unittest.TestCase):
    """The README's offline install with a setuptools that needs the module wheel and lacks it:
    the build backend says so, and what to do, instead of pip's "invalid command 'bdist_wheel'"."""

    def check(self, setuptools_version: str) -> subprocess.CompletedProcess:
        code = (f"import sys; sys.modules['wheel'] = None; sys.path.insert(0, {str(ROOT)!r}); import setuptools; "
                f"setuptools.__version__ = {setuptools_version!r}; import _build_backend; "
                "_build_backend._check_wheel_module(); print('ok')")
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    def test_names_the_module_and_the_fix(self):
        r = self.check("66.1.1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("setuptools 66.1.1", r.stderr)
        self.assertIn("the module wheel, which it lacks", r.stderr)
        self.assertIn("/usr/bin/python3", r.stderr)

    def test_a_setuptools_that_builds_wheels_itself_needs_no_wheel(self):
        self.assertEqual(self.check("70.1.0").stdout, "ok\n")


if __name__ == "__main__":
    unittest.main()
