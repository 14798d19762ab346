#!/usr/bin/env python3
"""The README's first hour with Python, against a real `hearth serve`.

    python3 integration_examples.py HEARTH_BINARY MODEL_FILE

Installs the package as the README says (a virtual environment over Debian's python3-zmq,
`pip install --no-build-isolation --no-index`: offline), then runs the examples with that
environment's interpreter, from outside the checkout, against a development-mode server (the
quick start's) and a CURVE one whose keys come from `hearth keygen` (server.pub included), and
the README's CURVE snippet as written. Exit status 0 when all hold. Not a unittest module: it
needs the binary and a model.
"""

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from serve_script import check, run_main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
READY_TIMEOUT_S = 60.0


def start_serve(hearth: str, args: list[str], log_path: Path) -> tuple[subprocess.Popen, str]:
    """`hearth serve ARGS` on a free loopback port, its output appended to log_path; the
    process and its endpoint."""
    start = log_path.stat().st_size if log_path.exists() else 0
    with open(log_path, "a") as log:
        server = subprocess.Popen([hearth, "serve", "--threads", "1", "--compute", "f32", "--endpoint",
                                   "tcp://127.0.0.1:*", *args], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and server.poll() is None:
        if m := re.search(r" on (tcp://[0-9.:]+)", log_path.read_text(errors="replace")[start:]):
            return server, m.group(1)
        time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"hearth serve did not start (status {server.wait()})")


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    server.wait(timeout=30)


def example(python: Path, tmp: str, name: str, *args: str) -> subprocess.CompletedProcess:
    # From the scratch folder: the package comes from the environment, not the checkout.
    return subprocess.run([str(python), str(EXAMPLES / name), *args], cwd=tmp, capture_output=True, text=True,
                          timeout=300)


def ran(name: str, r: subprocess.CompletedProcess, expect: str) -> bool:
    return check(name, r.returncode == 0 and expect in r.stdout + r.stderr,
                 f"exit {r.returncode}\n{r.stdout}\n{r.stderr}")


def run(hearth: str, model: str, tmp: str) -> bool:
    log = Path(tmp) / "serve.log"
    # Install: a copy of the package, so the checkout is left as it was (pip writes build/ there).
    src = Path(tmp) / "hearth-client"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info", "build"))
    venv = Path(tmp) / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", str(src)],
                         capture_output=True, text=True)
    ok = check("pip install, offline", pip.returncode == 0, pip.stdout + pip.stderr)
    where = subprocess.run([str(python), "-c", "import hearth_client; print(hearth_client.__file__)"], cwd=tmp,
                           capture_output=True, text=True)
    ok &= check("imported from the environment", str(venv) in where.stdout, where.stdout + where.stderr)

    server, endpoint = start_serve(hearth, ["--model", model], log)
    try:
        ok &= ran("voice_turn.py", example(python, tmp, "voice_turn.py", "--endpoint", endpoint, "--tenant", "voice",
                                           "--first-token-timeout", "10", "Are the kitchen lights on?"), "TTFT")
        r = example(python, tmp, "rag.py", "--endpoint", endpoint, "--tenant", "docs")
        ok &= ran("rag.py with its default document", r, "cached")
        ok &= check("rag.py reuses the document's prefix", re.search(r"cached [1-9]", r.stdout) is not None, r.stdout)
    finally:
        stop(server)

    # CURVE: the keys as `hearth keygen` writes them, the server's public one in server.pub.
    for name in ("server", "voice"):
        subprocess.run([hearth, "keygen", "-o", f"{tmp}/{name}.key"], check=True, capture_output=True)
    voice_pub = Path(tmp, "voice.pub").read_text().strip()
    Path(tmp, "home.toml").write_text(f'[server]\nsecret_key_file = "{tmp}/server.key"\n\n'
                                      f'[[tenant]]\nname = "voice"\nkey = "{voice_pub}"\n')
    server, endpoint = start_serve(hearth, ["--model", model, "--config", f"{tmp}/home.toml"], log)
    try:
        ok &= ran("voice_turn.py over CURVE",
                  example(python, tmp, "voice_turn.py", "--endpoint", endpoint, "--server-key", "server.pub",
                          "--keys", "voice.key", "--first-token-timeout", "10"), "TTFT")
        snippet = ("import hearth_client as hc\n"
                   'server = hc.load_keys("server.pub").public\n'
                   'mine = hc.load_keys("voice.key")\n'
                   f'client = hc.Client("{endpoint}", server_key=server, public_key=mine.public, secret_key=mine.secret)\n'
                   'print(client.complete("Lights off?", max_tokens=4, temperature=0) is not None)\n')
        r = subprocess.run([str(python), "-c", snippet], cwd=tmp, capture_output=True, text=True, timeout=120)
        ok &= ran("the README's CURVE snippet", r, "True")
    finally:
        stop(server)
    return ok


if __name__ == "__main__":
    sys.exit(run_main(__doc__, sys.argv, run))
