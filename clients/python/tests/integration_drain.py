#!/usr/bin/env python3
"""`hearth serve`'s drain on SIGTERM, with 32 streams in flight, and the two ways to cut it:

    python3 integration_drain.py HEARTH_BINARY MODEL_FILE

Serves with `[server] drain_timeout_s = 5`, starts 32 greedy streams (16 short ones that end
well within the drain, 16 long ones that cannot), and sends SIGTERM once every stream has its
first token. Checks: each short stream ends `done` with all its tokens; each long one ends with
`shutting_down` after the drain; every stream has a terminal; a request sent during the drain
is refused with `shutting_down`; the server exits 0 soon after the drain timeout.

Then two servers whose drain is cut, each with 4 long streams in flight: one with a long drain
that a second signal (SIGINT) cuts once the drain has begun, one with `drain_timeout_s = 0`.
Each stream ends `shutting_down` at once, and the server exits 0. Not a unittest module: it
needs the binary and a model.
"""

import asyncio
import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hearth_client as hc  # noqa: E402
from serve_script import check, run_main  # noqa: E402

# Short streams need well under the drain even where a step takes 100 ms (32 streams under
# AddressSanitizer on a loaded 2-core machine: 16 tokens, 1.7 s); long ones cannot end in it.
DRAIN_S = 5
SHORT_TOKENS, LONG_TOKENS = 16, 1900
PROMPT = "The house was quiet when"
# A drain that only a cut ends before the long streams do (1900 tokens: tens of seconds even
# alone), and the bound on "at once": a cut takes well under a second, a drain left to run
# would end the streams `done` or after UNCUT_DRAIN_S.
UNCUT_DRAIN_S = 600
CUT_S = 15
DRAIN_BEGUN = "stopping: the requests in flight may run for up to"


async def first_token_then_rest(stream: hc.AsyncStream, started: asyncio.Event) -> tuple[str, int]:
    """(how it ended: 'done' or an error code, tokens received); sets `started` at its first token."""
    n = 0
    try:
        async for _ in stream:
            n += 1
            started.set()
        return "done", n
    except hc.HearthError as e:
        started.set()
        return e.code, n


async def start_streams(client: hc.AsyncClient, max_tokens: list[int]) -> list[asyncio.Task]:
    """One greedy stream per entry of `max_tokens`, returned once each has its first token."""
    tasks, started = [], []
    for i, n in enumerate(max_tokens):
        s = await client.generate(f"{PROMPT} {i}", max_tokens=n, temperature=0, ignore_eos=True,
                                  first_token_timeout=60.0, idle_timeout=30.0)
        started.append(asyncio.Event())
        tasks.append(asyncio.create_task(first_token_then_rest(s, started[-1])))
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 120)
    return tasks


class ServeLog:
    """One server's part of `serve.log` (the scratch folder's log, which holds every server's)."""

    def __init__(self, path: Path):
        self.path = path
        self.start = path.stat().st_size

    def text(self) -> str:
        return self.path.read_text(errors="replace")[self.start:]

    async def wait_for(self, line: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while line not in self.text():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True


async def drive(endpoint: str, server: subprocess.Popen) -> bool:
    async with hc.AsyncClient(endpoint, connect_timeout=60.0) as client:
        is_short = [i % 2 == 0 for i in range(32)]
        tasks = await start_streams(client, [SHORT_TOKENS if short else LONG_TOKENS for short in is_short])
        server.send_signal(signal.SIGTERM)
        t_term = time.monotonic()
        await asyncio.sleep(0.3)
        try:
            late = await client.generate(PROMPT, max_tokens=4, first_token_timeout=10.0)
            late_end = (await first_token_then_rest(late, asyncio.Event()))[0]
        except hc.HearthError as e:
            late_end = e.code
        ends = [(short, await task) for short, task in zip(is_short, tasks)]
        elapsed = time.monotonic() - t_term
    ok = check("a request during the drain gets shutting_down", late_end == "shutting_down", late_end)
    shorts = [end for short, end in ends if short]
    longs = [end for short, end in ends if not short]
    ok &= check("short streams: done with every token", all(e == ("done", SHORT_TOKENS) for e in shorts), f"{shorts}")
    ok &= check("long streams: shutting_down after the drain", all(e[0] == "shutting_down" for e in longs), f"{longs}")
    print(f"     long streams had {min(n for _, n in longs)}-{max(n for _, n in longs)} of {LONG_TOKENS} tokens at the cut")
    ok &= check("the long streams ran through the drain", elapsed >= DRAIN_S - 0.5, f"{elapsed:.1f} s")
    return ok


async def drive_cut(endpoint: str, server: subprocess.Popen, log: ServeLog, second_signal: bool) -> bool:
    """4 long streams, SIGTERM and, with `second_signal`, SIGINT once the drain has begun: each
    stream ends `shutting_down` at once."""
    async with hc.AsyncClient(endpoint, connect_timeout=60.0) as client:
        tasks = await start_streams(client, [LONG_TOKENS] * 4)
        server.send_signal(signal.SIGTERM)
        if second_signal:
            # Not before the drain waits for signals: sent earlier, the two would merge into one.
            if not check("the drain began", await log.wait_for(DRAIN_BEGUN, 30), log.text()):
                return False
            server.send_signal(signal.SIGINT)
        t_cut = time.monotonic()
        try:
            ends = await asyncio.wait_for(asyncio.gather(*tasks), CUT_S)
        except asyncio.TimeoutError:
            return check(f"every stream ended within {CUT_S} s of the cut", False)
        elapsed = time.monotonic() - t_cut
    ok = check("every stream ends shutting_down", all(e[0] == "shutting_down" for e in ends), f"{ends}")
    print(f"     the streams had {min(n for _, n in ends)}-{max(n for _, n in ends)} of {LONG_TOKENS} tokens, "
          f"all ended {elapsed:.2f} s after the cut")
    if second_signal:
        ok &= check("the log says the second signal cut the drain",
                    await log.wait_for("stopping: a second signal cuts the drain", 10), log.text())
    else:
        ok &= check("drain_timeout_s = 0: no drain",
                    await log.wait_for("stopping: ending the requests still in flight", 10)
                    and DRAIN_BEGUN not in log.text(), log.text())
    return ok


@contextlib.contextmanager
def serving(hearth: str, model: str, tmp: str, drain_s: int):
    """(endpoint, server, its log) of a `hearth serve` with this drain; killed if still running."""
    endpoint = f"ipc://{tmp}/hearth.sock"
    config = Path(tmp, "hearth.toml")
    config.write_text(f'[server]\nendpoint = "{endpoint}"\ndrain_timeout_s = {drain_s}\n'
                      f'[model]\npath = "{model}"\n[engine]\nmax_seqs = 64\n')
    log_path = Path(tmp, "serve.log")
    with open(log_path, "a") as log:
        print(f"--- drain_timeout_s = {drain_s} ---", file=log, flush=True)
        serve_log = ServeLog(log_path)
        server = subprocess.Popen([hearth, "serve", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        yield endpoint, server, serve_log
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def run(hearth: str, model: str, tmp: str) -> bool:
    print(f"drain_timeout_s = {DRAIN_S}, SIGTERM:")
    with serving(hearth, model, tmp, DRAIN_S) as (endpoint, server, _):
        ok = asyncio.run(drive(endpoint, server))
        ok &= check("exit status 0 after the drain", server.wait(timeout=DRAIN_S + 15) == 0, str(server.returncode))
    for drain_s, second_signal in ((UNCUT_DRAIN_S, True), (0, False)):
        print(f"drain_timeout_s = {drain_s}, SIGTERM" + (", SIGINT during the drain:" if second_signal else ":"))
        with serving(hearth, model, tmp, drain_s) as (endpoint, server, log):
            ok &= asyncio.run(drive_cut(endpoint, server, log, second_signal))
            ok &= check("exit status 0 after the cut", server.wait(timeout=CUT_S) == 0, str(server.returncode))
    return ok


if __name__ == "__main__":
    sys.exit(run_main(__doc__, sys.argv, run))
