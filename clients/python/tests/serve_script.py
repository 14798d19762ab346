"""What the scripts that drive a real `hearth serve` share (integration_*.py): the command line
`SCRIPT HEARTH_BINARY MODEL_FILE`, the kernel tuner's cache in the build (never the user's), a
scratch folder whose `serve.log` is shown when a check fails, and the one-line checks."""

import os
import sys
import tempfile
from pathlib import Path
from typing import Callable


def check(name: str, ok: bool, detail: str = "") -> bool:
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok or not detail else f": {detail}"))
    return ok


def run_main(doc: str, argv: list[str], run: Callable[[str, str, str], bool]) -> int:
    """Calls run(hearth, model, scratch folder); exit status 0 when it returns True."""
    if len(argv) != 3:
        print(doc, file=sys.stderr)
        return 2
    hearth, model = argv[1], argv[2]
    os.environ.setdefault("HEARTH_KERNEL_CACHE", os.path.join(os.path.dirname(os.path.abspath(hearth)), "kernel-plans.tsv"))
    with tempfile.TemporaryDirectory() as tmp:
        ok = run(hearth, model, tmp)
        log = Path(tmp, "serve.log")
        if (not ok or os.environ.get("HEARTH_SHOW_SERVE_LOG")) and log.exists():
            print("--- hearth serve's output ---\n" + log.read_text(errors="replace"), file=sys.stderr)
    return 0 if ok else 1
