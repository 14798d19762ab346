"""CTest's way into the suite: unittest discovery under a watchdog. A run still going after
WATCHDOG_S prints every thread's stack and fails, so a hang shows where it is instead of ending
in CTest's bare timeout (120 s)."""

import faulthandler
import sys
import unittest
from pathlib import Path

WATCHDOG_S = 100

if __name__ == "__main__":
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here.parent))  # hearth_client, as `python3 -m unittest` run there finds it
    tests = unittest.defaultTestLoader.discover(str(here))
    sys.exit(not unittest.TextTestRunner(verbosity=1).run(tests).wasSuccessful())
