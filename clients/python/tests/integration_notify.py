#!/usr/bin/env python3
"""`hearth serve` under a service manager's notification socket (sd_notify(3), systemd's
Type=notify with WatchdogSec), played by this script:

    python3 integration_notify.py HEARTH_BINARY MODEL_FILE

Binds a unix datagram socket, starts `hearth serve` with NOTIFY_SOCKET pointing at it and
WATCHDOG_USEC set, and checks: STATUS= while loading, then READY=1 with a one-line summary, at
which point the endpoint already answers `ping`; WATCHDOG=1 at least every half interval (with
slack for a loaded machine) while it idles and while it generates; STOPPING=1 on SIGTERM, then
exit status 0. Not a unittest module: it needs the binary and a model.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hearth_client as hc  # noqa: E402
from serve_script import check, run_main  # noqa: E402

WATCHDOG_S = 0.4  # asked for; hearth pings every 0.2 s
LOAD_TIMEOUT_S = 60.0


def receive(sock: socket.socket, until: float) -> list[tuple[float, str]]:
    """The notifications that arrive before `until` (monotonic), with their arrival times."""
    got = []
    while (left := until - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            data = sock.recv(4096)
        except socket.timeout:
            break
        for line in data.decode().split("\n"):
            got.append((time.monotonic(), line))
    return got


def wait_for(sock: socket.socket, wanted: str, timeout: float, seen: list) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(deadline - time.monotonic())
        try:
            data = sock.recv(4096)
        except socket.timeout:
            return False
        lines = data.decode().split("\n")  # one datagram may hold several: READY=1 and its STATUS=
        seen.extend((time.monotonic(), line) for line in lines)
        if wanted in lines:
            return True
    return False


def largest_gap(times: list[float]) -> float:
    return max((b - a for a, b in zip(times, times[1:])), default=float("inf"))


def run(hearth: str, model: str, tmp: str) -> bool:
    sock_path = os.path.join(tmp, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    endpoint = f"ipc://{tmp}/hearth.sock"
    log_path = os.path.join(tmp, "serve.log")
    log = open(log_path, "w")
    st = os.fstat(log.fileno())  # stderr "is the journal": log lines carry their priority
    env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC=str(int(WATCHDOG_S * 1e6)),
               JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    server = subprocess.Popen([hearth, "serve", "--model", model, "--endpoint", endpoint], env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    ok = True
    try:
        seen: list[tuple[float, str]] = []
        ready = wait_for(sock, "READY=1", LOAD_TIMEOUT_S, seen)
        ok &= check("READY=1", ready, f"{[m for _, m in seen]}")
        if not ready:
            return False
        lines = [m for _, m in seen]
        ok &= check("STATUS= while loading, before READY", lines[0].startswith("STATUS=loading "), lines[0])
        with hc.Client(endpoint, connect_timeout=0.5) as client:  # answers at once: READY came after the bind
            ok &= check("ping at READY", client.ping()["protocol"] == 1)
            summary = [m for _, m in seen if m.startswith("STATUS=") and not m.startswith("STATUS=loading")]
            ok &= check("a one-line summary with READY", any("policy" in m and " on ipc://" in m for m in summary),
                        f"{summary}")
            idle = [t for t, m in receive(sock, time.monotonic() + 1.5) if m == "WATCHDOG=1"]
            ok &= check("WATCHDOG=1 while idle", len(idle) >= 3 and largest_gap(idle) < 3 * WATCHDOG_S,
                        f"{len(idle)} pings, largest gap {largest_gap(idle):.2f} s")
            stream = client.generate("The house was quiet when", max_tokens=48, temperature=0, ignore_eos=True)
            busy = [t for t, m in receive(sock, time.monotonic() + 1.0) if m == "WATCHDOG=1"]
            stream.wait()
            ok &= check("WATCHDOG=1 while generating", len(busy) >= 2, f"{len(busy)} pings")
        server.send_signal(signal.SIGTERM)
        ok &= check("STOPPING=1 on SIGTERM", wait_for(sock, "STOPPING=1", 10.0, seen))
        ok &= check("exit status 0", server.wait(timeout=20) == 0, str(server.returncode))
        lines = Path(log_path).read_text().splitlines()
        ends = [x for x in lines if x.startswith("<6>request ")]
        ok &= check("one <6> line per request end, for journald", len(ends) == 1 and "done, length; " in ends[0]
                    and "TTFT" in ends[0], f"{ends}")
        ok &= check("no `hearth: ` prefix on the journal", not any(x.startswith("hearth: ") for x in lines), f"{lines}")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        sock.close()
    return ok


if __name__ == "__main__":
    sys.exit(run_main(__doc__, sys.argv, run))
