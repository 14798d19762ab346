#!/usr/bin/env python3
"""`hearth serve`'s drain on SIGTERM, with 32 streams in flight:

    python3 integration_drain.py HEARTH_BINARY MODEL_FILE

Serves with `[server] drain_timeout_s = 5`, starts 32 greedy streams (16 short ones that end
well within the drain, 16 long ones that cannot), and sends SIGTERM once every stream has its
first token. Checks: each short stream ends `done` with all its tokens; each long one ends with
`shutting_down` after the drain; every stream has a terminal; a request sent during the drain
is refused with `shutting_down`; the server exits 0 soon after the drain timeout. Not a
unittest module: it needs the binary and a model.
"""

import asyncio
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


async def drive(endpoint: str, server: subprocess.Popen) -> bool:
    async with hc.AsyncClient(endpoint, connect_timeout=60.0) as client:
        streams, started = [], []
        for i in range(32):
            short = i % 2 == 0
            s = await client.generate(f"{PROMPT} {i}", max_tokens=SHORT_TOKENS if short else LONG_TOKENS,
                                      temperature=0, ignore_eos=True, first_token_timeout=60.0, idle_timeout=30.0)
            started.append(asyncio.Event())
            streams.append((short, asyncio.create_task(first_token_then_rest(s, started[-1]))))
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 120)
        server.send_signal(signal.SIGTERM)
        t_term = time.monotonic()
        await asyncio.sleep(0.3)
        try:
            late = await client.generate(PROMPT, max_tokens=4, first_token_timeout=10.0)
            late_end = (await first_token_then_rest(late, asyncio.Event()))[0]
        except hc.HearthError as e:
            late_end = e.code
        ends = [(short, await task) for short, task in streams]
        elapsed = time.monotonic() - t_term
    ok = check("a request during the drain gets shutting_down", late_end == "shutting_down", late_end)
    shorts = [end for short, end in ends if short]
    longs = [end for short, end in ends if not short]
    ok &= check("short streams: done with every token", all(e == ("done", SHORT_TOKENS) for e in shorts), f"{shorts}")
    ok &= check("long streams: shutting_down after the drain", all(e[0] == "shutting_down" for e in longs), f"{longs}")
    print(f"     long streams had {min(n for _, n in longs)}-{max(n for _, n in longs)} of {LONG_TOKENS} tokens at the cut")
    ok &= check("the long streams ran through the drain", elapsed >= DRAIN_S - 0.5, f"{elapsed:.1f} s")
    return ok


def run(hearth: str, model: str, tmp: str) -> bool:
    endpoint = f"ipc://{tmp}/hearth.sock"
    config = Path(tmp, "hearth.toml")
    config.write_text(f'[server]\nendpoint = "{endpoint}"\ndrain_timeout_s = {DRAIN_S}\n'
                      f'[model]\npath = "{model}"\n[engine]\nmax_seqs = 64\n')
    with open(Path(tmp, "serve.log"), "w") as log:
        server = subprocess.Popen([hearth, "serve", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        ok = asyncio.run(drive(endpoint, server))
        return check("exit status 0 after the drain", server.wait(timeout=DRAIN_S + 15) == 0, str(server.returncode)) and ok
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


if __name__ == "__main__":
    sys.exit(run_main(__doc__, sys.argv, run))
