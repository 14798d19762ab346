#!/usr/bin/env python3
"""`hearth serve` under a service manager's notification socket (sd_notify(3), systemd's
Type=notify with WatchdogSec), played by this script:

    python3 integration_notify.py HEARTH_BINARY MODEL_FILE

Binds a unix datagram socket, starts `hearth serve` with NOTIFY_SOCKET pointing at it and
WATCHDOG_USEC set, and checks: STATUS= while loading, then READY=1 with a one-line summary, at
which point the endpoint already answers `ping`; WATCHDOG=1 at least every half interval (with
slack for a loaded machine) while it idles and while it generates; STOPPING=1 on SIGTERM, with
the stop timeout extended to cover the drain, then exit status 0.

A manager that stops reading (the socket's queue full) holds up no answer: the pings come from
the engine's loop and are dropped rather than waited on.

The log: started with `[server] log_level = "warning"`, a request's end is not logged; after
the file says `info` and SIGHUP (`systemctl reload`), the next one is, with journald's priority.
Not a unittest module: it needs the binary and a model.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hearth_client as hc  # noqa: E402
from serve_script import check, run_main  # noqa: E402

WATCHDOG_S = 0.4  # asked for; hearth pings every 0.2 s
LOAD_TIMEOUT_S = 60.0
DRAIN_S = 100  # told to systemd at STOPPING=1, with the 15 s hearth may take after it to exit


class Notifications:
    """The notification socket, read all along as systemd reads it (sd_notify blocks once a
    socket's queue is full: 10 datagrams, 2 s of pings here), except while `reading` is cleared."""

    def __init__(self, path: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.05)
        self.got: list[tuple[float, str]] = []  # (arrival, line), in order
        self.lock = threading.Lock()
        self.open = True
        self.reading = threading.Event()  # cleared: a manager that stopped reading
        self.reading.set()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while self.open:
            if not self.reading.wait(0.05):
                continue
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            with self.lock:  # one datagram may hold several lines: READY=1 and its STATUS=
                self.got.extend((time.monotonic(), line) for line in data.decode().split("\n"))

    def lines(self, since: float = 0.0) -> list[tuple[float, str]]:
        with self.lock:
            return [(t, m) for t, m in self.got if t >= since]

    def wait_for(self, wanted: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not any(m == wanted for _, m in self.lines()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def pings(self, since: float) -> list[float]:
        return [t for t, m in self.lines(since) if m == "WATCHDOG=1"]

    def close(self) -> None:
        self.open = False
        self.reader.join()
        self.sock.close()


def largest_gap(times: list[float]) -> float:
    return max((b - a for a, b in zip(times, times[1:])), default=float("inf"))


def wait_for_log(path: str, line: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while line not in Path(path).read_text(errors="replace"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def answers_unread(client: hc.Client, notes: Notifications) -> bool:
    """With the socket's queue full of unread pings (10 datagrams, 2 s of them), a request still
    gets every token: the pings come from the engine's loop, and one that would wait is dropped."""
    notes.reading.clear()
    time.sleep(2 * 10 * WATCHDOG_S / 2)  # twice the pings the queue holds, one each half interval
    try:
        done = client.generate("The house was quiet when", max_tokens=16, temperature=0, ignore_eos=True,
                               first_token_timeout=30, idle_timeout=30).wait()
    except hc.HearthError as e:
        print(f"the request with the queue full: {e}")
        return False
    finally:
        t_again = time.monotonic()
        notes.reading.set()
    time.sleep(1.0)
    return done.usage.completion_tokens == 16 and len(notes.pings(t_again)) >= 2


def write_config(path: Path, endpoint: str, model: str, log_level: str) -> None:
    path.write_text(f'[server]\nendpoint = "{endpoint}"\ndrain_timeout_s = {DRAIN_S}\nlog_level = "{log_level}"\n'
                    f'[model]\npath = "{model}"\n')


def run(hearth: str, model: str, tmp: str) -> bool:
    sock_path = os.path.join(tmp, "notify.sock")
    notes = Notifications(sock_path)
    endpoint = f"ipc://{tmp}/hearth.sock"
    config = Path(tmp, "hearth.toml")
    write_config(config, endpoint, model, "warning")
    log_path = os.path.join(tmp, "serve.log")
    log = open(log_path, "w")
    st = os.fstat(log.fileno())  # stderr "is the journal": log lines carry their priority
    env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC=str(int(WATCHDOG_S * 1e6)),
               JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    server = subprocess.Popen([hearth, "serve", "--config", str(config)], env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    ok = True
    try:
        ready = notes.wait_for("READY=1", LOAD_TIMEOUT_S)
        ok &= check("READY=1", ready, f"{notes.lines()}")
        if not ready:
            return False
        lines = [m for _, m in notes.lines()]
        ok &= check("STATUS= while loading, before READY", lines[0].startswith("STATUS=loading "), lines[0])
        with hc.Client(endpoint, connect_timeout=0.5) as client:  # answers at once: READY came after the bind
            ok &= check("ping at READY", client.ping()["protocol"] == 1)
            summary = [m for m in lines if m.startswith("STATUS=") and not m.startswith("STATUS=loading")]
            ok &= check("a one-line summary with READY", any("policy" in m and " on ipc://" in m for m in summary),
                        f"{summary}")
            t_idle = time.monotonic()
            time.sleep(1.5)
            idle = notes.pings(t_idle)
            ok &= check("WATCHDOG=1 while idle", len(idle) >= 3 and largest_gap(idle) < 3 * WATCHDOG_S,
                        f"{len(idle)} pings, largest gap {largest_gap(idle):.2f} s")
            t_busy = time.monotonic()
            stream = client.generate("The house was quiet when", max_tokens=48, temperature=0, ignore_eos=True)
            time.sleep(1.0)
            busy = notes.pings(t_busy)
            stream.wait()
            ok &= check("WATCHDOG=1 while generating", len(busy) >= 2, f"{len(busy)} pings")
            ok &= check("a manager that stops reading stops no answer", answers_unread(client, notes))
            write_config(config, endpoint, model, "info")
            server.send_signal(signal.SIGHUP)
            ok &= check("SIGHUP: log level info", wait_for_log(log_path, "; log level info", 30.0))
            client.generate("The house was quiet when", max_tokens=4, temperature=0, ignore_eos=True).wait()
        server.send_signal(signal.SIGTERM)
        ok &= check("STOPPING=1 on SIGTERM", notes.wait_for("STOPPING=1", 10.0))
        extend = f"EXTEND_TIMEOUT_USEC={(DRAIN_S + 15) * 1000000}"  # in the same datagram
        ok &= check("the stop timeout extended to cover the drain", any(m == extend for _, m in notes.lines()),
                    f"{[m for _, m in notes.lines() if m != 'WATCHDOG=1']}")
        ok &= check("exit status 0", server.wait(timeout=20) == 0, str(server.returncode))
        lines = Path(log_path).read_text().splitlines()
        ends = [x for x in lines if x.startswith("<6>request ")]
        ok &= check("a <6> line per request end for journald, once the level is info (none at warning)",
                    len(ends) == 1 and "done, length; " in ends[0] and " + 4 tokens;" in ends[0]
                    and "TTFT" in ends[0], f"{ends}")
        ok &= check("no `hearth: ` prefix on the journal", not any(x.startswith("hearth: ") for x in lines), f"{lines}")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        notes.close()
    return ok


if __name__ == "__main__":
    sys.exit(run_main(__doc__, sys.argv, run))
