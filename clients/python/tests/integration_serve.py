#!/usr/bin/env python3
"""The Python client against a real `hearth serve`: greedy streams give `hearth generate`'s text.

    python3 integration_serve.py HEARTH_BINARY MODEL_FILE

Starts `hearth serve` on an ipc:// endpoint in a temporary folder (development mode), then checks:
a greedy stream's text equals `hearth generate --temperature 0`'s for the same prompt and length;
the same without streaming; two concurrent streams on one connection both give it; leaving a
long stream after its first token cancels it (the server's stats count it), and the connection
goes on working.
Exit status 0 when all hold. Not a unittest module (the name keeps `discover` from running it):
it needs the binary and a model.
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hearth_client as hc  # noqa: E402
from serve_script import run_main  # noqa: E402

# --- What this script assumes about the command line (the one place to adjust) ---------------
PROMPT = "The house was quiet when"
N_TOKENS = 24
CANCEL_MAX_TOKENS = 512  # long enough that the cancel arrives first (unless the model ends early)
READY_TIMEOUT_S = 60.0  # loading the model may take a while on a busy machine


def serve_command(hearth: str, model: str, endpoint: str) -> list[str]:
    return [hearth, "serve", "--model", model, "--endpoint", endpoint]


def generate_command(hearth: str, model: str, prompt: str, n: int) -> list[str]:
    return [hearth, "generate", "--model", model, "--prompt", prompt, "-n", str(n), "--temperature", "0"]


def generate_text(stdout: str) -> str:
    """The completion in `hearth generate`'s stdout: the text, then one newline."""
    return stdout[:-1] if stdout.endswith("\n") else stdout
# ----------------------------------------------------------------------------------------------


def wait_until_serving(server: subprocess.Popen, endpoint: str) -> hc.Client:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"hearth serve exited with status {server.returncode} before serving")
        try:
            return hc.Client(endpoint, connect_timeout=1.0)
        except hc.ConnectTimeout:
            if time.monotonic() > deadline:
                raise


def check(name: str, got: str, want: str) -> bool:
    ok = got == want
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f"\n  got:  {got!r}\n  want: {want!r}"))
    return ok


def wait_for_cancel_count(client: hc.Client) -> bool:
    """Whether the server's stats count a cancelled request within a few seconds."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        if client.stats()["tenant"].get("cancelled", 0) >= 1:
            return True
        time.sleep(0.05)
    return False


def run_checks(client: hc.Client, want: str) -> bool:
    options = dict(max_tokens=N_TOKENS, temperature=0, first_token_timeout=60.0, idle_timeout=30.0)
    stream = client.generate(PROMPT, **options)
    tokens = list(stream)
    ok = check("greedy stream", "".join(t.text for t in tokens), want)
    ok &= check("token indices", str([t.index for t in tokens]), str(list(range(len(tokens)))))
    ok &= check("finish reason", stream.result.finish_reason,
                "length" if stream.result.usage.completion_tokens == N_TOKENS else "eos")
    ok &= check("without streaming", client.generate(PROMPT, stream=False, **options).wait().text, want)
    a, b = client.generate(PROMPT, **options), client.generate(PROMPT, **options)
    ok &= check("two at once (b)", b.wait().text, want)
    ok &= check("two at once (a)", a.wait().text, want)
    with client.generate(PROMPT, max_tokens=CANCEL_MAX_TOKENS, temperature=0) as long_one:
        next(long_one, None)
    ok &= check("cancel counted by the server", str(wait_for_cancel_count(client)), "True")
    ok &= check("ping after all that", str(client.ping()["protocol"]), "1")
    return ok


def run(hearth: str, model: str, tmp: str) -> bool:
    ref = subprocess.run(generate_command(hearth, model, PROMPT, N_TOKENS), capture_output=True, text=True, check=True)
    want = generate_text(ref.stdout)
    endpoint = f"ipc://{tmp}/hearth.sock"
    ok = False
    with open(Path(tmp) / "serve.log", "w") as log:
        server = subprocess.Popen(serve_command(hearth, model, endpoint), stdout=log, stderr=subprocess.STDOUT)
    try:
        with wait_until_serving(server, endpoint) as client:
            ok = run_checks(client, want)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            ok = False
            print("FAIL hearth serve did not stop within 20 s of SIGTERM")
    return ok


if __name__ == "__main__":
    sys.exit(run_main(__doc__, sys.argv, run))
