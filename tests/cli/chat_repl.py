"""`hearth chat` as a person at a terminal uses it: a pseudo-terminal, keys typed into it.

Usage: chat_repl.py HEARTH ENDPOINT SERVE_LOG SMALL_ENDPOINT
  ENDPOINT: a development-mode `hearth serve` of a model that answers at length (greedy);
  SERVE_LOG: its stderr, where each request's end is logged;
  SMALL_ENDPOINT: one whose tenant `chat` takes prompts of at most 120 tokens.
Checks: /help and unknown commands; Ctrl-C during an answer cancels its request (the server
logs it cancelled) and returns to the prompt; Ctrl-D and Ctrl-C at the prompt end the chat with
0; a conversation that outgrows what the server takes loses its oldest exchanges and says so.
"""

import os
import pty
import re
import select
import sys
import time

HEARTH, ENDPOINT, SERVE_LOG, SMALL_ENDPOINT = sys.argv[1:5]
WAIT_S = 60  # generous: the suite runs in parallel, and under sanitizers


def fail(what):
    print(f"FAILED: {what}", file=sys.stderr)
    sys.exit(1)


class Session:
    """One `hearth chat` on a pseudo-terminal, its output read as it comes."""

    def __init__(self, *args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(HEARTH, [HEARTH, "chat", *args])
        self.out = ""
        self.mark = 0
        self.status = None  # os.waitpid's, once it has exited  # expect() searches the output after this point

    def read(self, timeout):
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 4096)
        except OSError:  # EIO: the child has closed the terminal
            return False
        self.out += data.decode("utf-8", "replace")
        return bool(data)

    def expect(self, pattern, what):
        """Waits for `pattern` after the last match; moves the mark past it."""
        deadline = time.monotonic() + WAIT_S
        regex = re.compile(pattern)
        while True:
            m = regex.search(self.out, self.mark)
            if m:
                self.mark = m.end()
                return m
            if time.monotonic() > deadline or (not self.read(0.5) and self.exited()):
                fail(f"{what}: no {pattern!r} in the output:\n{self.out[self.mark:]}")

    def send(self, keys):
        os.write(self.fd, keys.encode())

    def exited(self):
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is not None

    def wait_exit(self, what):
        deadline = time.monotonic() + WAIT_S
        while not self.exited():
            self.read(0.1)
            if time.monotonic() > deadline:
                os.kill(self.pid, 9)
                fail(f"{what}: chat did not exit:\n{self.out[self.mark:]}")
        if not os.WIFEXITED(self.status) or os.WEXITSTATUS(self.status) != 0:
            fail(f"{what}: chat ended with status {self.status}, expected exit 0:\n{self.out}")
        os.close(self.fd)


def log_lines():
    with open(SERVE_LOG, encoding="utf-8") as f:
        return f.read().splitlines()


PROMPT = r"\n> "

# Commands, and Ctrl-C stopping an answer: the request ends `cancelled` at the server, and
# the chat goes on.
s = Session("-e", ENDPOINT, "--temperature", "0", "-n", "1500")
s.expect(r"/help lists the commands", "the greeting")
s.expect(r"> ", "the first prompt")
s.send("/help\r")
s.expect(r"/reset .*\n.*/quit .*Ctrl-C at the prompt", "/help")
s.send("/bogus\r")
s.expect(r"unknown command /bogus: /help lists them", "an unknown command")
s.expect(PROMPT, "the prompt after an unknown command")
ends_before = sum("cancelled" in line for line in log_lines())
s.send("Tell me a long story about a hearth.\r")
s.expect(r"hearth\.\r?\n", "the question's echo")
answer_start = len(s.out)
while len(s.out) < answer_start + 40:  # the answer is streaming
    if not s.read(WAIT_S):
        fail(f"no answer streamed:\n{s.out[answer_start:]}")
s.send("\x03")
s.expect(r"\(answer stopped\)", "Ctrl-C during an answer")
s.expect(PROMPT, "the prompt after a stopped answer")
for _ in range(WAIT_S * 10):
    if sum("cancelled" in line for line in log_lines()) > ends_before:
        break
    time.sleep(0.1)
else:
    fail("the server logged no cancelled request:\n" + "\n".join(log_lines()))
# Still talking: the next question gets its answer (a short one).
s.send("/reset\r")
s.expect(r"\(conversation cleared\)", "/reset")
s.send("\x04")  # Ctrl-D at an empty prompt
s.wait_exit("Ctrl-D at the prompt")

# Ctrl-C at the prompt ends the chat too.
s = Session("-e", ENDPOINT)
s.expect(r"> ", "the prompt")
s.send("\x03")
s.wait_exit("Ctrl-C at the prompt")

# A conversation longer than the server takes: the oldest exchanges go, the answers go on.
s = Session("-e", SMALL_ENDPOINT, "--temperature", "0", "-n", "24")
s.expect(r"> ", "the prompt")
question = "Is the kitchen light on, and the one in the hall, and the garden's?"
for turn in range(5):
    s.send(question + "\r")
    s.expect(PROMPT, f"turn {turn}")
if "outgrew what the server accepts: dropped its oldest" not in s.out:
    fail(f"no word of dropped exchanges:\n{s.out}")
if "too_long" in s.out:
    fail(f"a turn failed with too_long instead of dropping old ones:\n{s.out}")
# One message longer than the server takes on its own: said, and the chat goes on.
s.send(" ".join(["lights"] * 200) + "\r")
m = s.expect(r"(?s)lights\r?\n(.*)hearth: too_long: ", "a message too long by itself")
if "dropped" in m.group(1):
    fail(f"exchanges were dropped for a message too long by itself:\n{m.group(1)}")
s.expect(PROMPT, "the prompt after a message too long")
s.send("/quit\r")
s.wait_exit("/quit")
print("chat at a terminal: all checks passed")
