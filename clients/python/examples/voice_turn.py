#!/usr/bin/env python3
"""A voice assistant's turn: a short chat exchange that has to start speaking quickly.

    python3 voice_turn.py [--endpoint EP] [--tenant voice] [--first-token-timeout 0.5] "Kitchen lights off?"

Streams the answer as it comes (a speech synthesizer would start on the first words) and prints
the time to the first token as this client saw it and as the server measured it. If the first
token is late, the request is cancelled and the assistant says something else instead.
"""

import argparse
import sys
import time

from _connect import add_connection_args, connect, run

import hearth_client as hc

SYSTEM = "You are a home voice assistant. Answer in one short sentence."


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_connection_args(parser)
    parser.add_argument("--first-token-timeout", type=float, default=0.5, help="seconds (default 0.5)")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("question", nargs="?", default="Are the kitchen lights still on?")
    args = parser.parse_args(argv)

    with connect(args, connect_timeout=2.0) as client:
        sent = time.perf_counter()
        ttft_ms = None
        try:
            with client.generate(messages=[{"role": "system", "content": SYSTEM},
                                           {"role": "user", "content": args.question}],
                                 max_tokens=args.max_tokens, temperature=0, stop=["\n"],
                                 first_token_timeout=args.first_token_timeout, idle_timeout=2.0) as stream:
                for token in stream:
                    if ttft_ms is None:
                        ttft_ms = (time.perf_counter() - sent) * 1e3
                    print(token.text, end="", flush=True)
        except hc.FirstTokenTimeout:
            print("One moment, please.  [no first token within "
                  f"{args.first_token_timeout * 1e3:.0f} ms; request cancelled]")
            return 2
        except (hc.OverQuota, hc.QueueFull) as err:
            print(f"I'm busy right now.  [{err.code}, retry after {err.retry_after_ms} ms]")
            return 3
        result = stream.result
        print()
        print(f"TTFT {ttft_ms or 0:.0f} ms here, {result.timings.ttft_ms or 0:.0f} ms at the server "
              f"(queued {result.timings.queue_ms or 0:.0f} ms); {result.usage.completion_tokens} tokens, "
              f"finish: {result.finish_reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run(main)
