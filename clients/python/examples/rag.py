#!/usr/bin/env python3
"""A document service: a long document as context, then questions about it, each answer streamed.

    python3 rag.py [--endpoint EP] [--tenant docs] [--file DOC] [--words 700] [QUESTION ...]

Without --file it makes up a household manual of about --words words. The document comes first
in every prompt, so the second question can reuse the first one's prompt in the server's prefix
cache: the `cached` count printed after each answer shows it.
"""

import argparse
import random
import sys
from pathlib import Path

from _connect import add_connection_args, connect, run

import hearth_client as hc

APPLIANCES = ["dishwasher", "heat pump", "washing machine", "oven", "boiler", "fridge", "dryer", "router"]
FACTS = ["its filter is cleaned every {n} weeks", "it was serviced in {month}", "its warranty ends in {year}",
         "it uses about {n}00 watts", "the manual is in drawer {n}", "its error code E{n} means a blocked drain"]
MONTHS = ["January", "March", "May", "July", "September", "November"]


def made_up_manual(words: int, seed: int = 7) -> str:
    """A deterministic household manual of about `words` words."""
    rng = random.Random(seed)
    lines, count = [], 0
    while count < words:
        thing = rng.choice(APPLIANCES)
        fact = rng.choice(FACTS).format(n=rng.randint(2, 9), month=rng.choice(MONTHS), year=rng.randint(2025, 2031))
        line = f"The {thing}: {fact}."
        lines.append(line)
        count += len(line.split())
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_connection_args(parser)
    parser.add_argument("--file", help="the document (default: a made-up manual)")
    # 700 words are about 1,450 tokens: with the question and the answer, within the 2,048-token
    # context of the quick start's model.
    parser.add_argument("--words", type=int, default=700, help="size of the made-up manual (default 700)")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("questions", nargs="*",
                        default=["When does the boiler's warranty end?", "How often is the dishwasher filter cleaned?"])
    args = parser.parse_args(argv)
    try:
        document = Path(args.file).read_text(encoding="utf-8") if args.file else made_up_manual(args.words)
    except OSError as err:
        sys.exit(f"hearth: --file {args.file}: {err.strerror}")

    with connect(args, connect_timeout=5.0) as client:
        for question in args.questions:
            prompt = (f"Answer from this document only.\n\n{document}\n\n"
                      f"Question: {question}\nAnswer:")
            print(f"Q: {question}\nA:", end="", flush=True)
            try:
                # A long prompt takes a while to prefill: a generous first-token timeout, then a
                # tight idle one, so a stalled stream is noticed.
                stream = client.generate(prompt, max_tokens=args.max_tokens, temperature=0, stop=["\nQuestion:"],
                                         first_token_timeout=60.0, idle_timeout=5.0)
                for token in stream:
                    print(token.text, end="", flush=True)
            except hc.TooLong as err:
                print(f"\n[the document is too long for this server: {err.message}; "
                      "try a smaller --words or a shorter --file]")
                return 2
            usage = stream.result.usage
            print(f"\n[prompt {usage.prompt_tokens} tokens, cached {usage.cached_tokens}, "
                  f"answer {usage.completion_tokens}, finish: {stream.result.finish_reason}]\n")
    return 0


if __name__ == "__main__":
    run(main)
