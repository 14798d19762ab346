#!/usr/bin/env python3
"""The shell commands of a README's marked blocks, as written, without their comments.

    readme_commands.py README MARKER      # prints them, one a line

A marked block is the ```sh fence that follows a line `<!-- MARKER ... -->`; every block with
the marker counts, in order. Tests run a README's own commands this way (tests/cli/
test_first_hour.sh, clients/python/tests/integration_examples.py), so that it cannot drift from
what is tested.
"""

import re
import sys
from pathlib import Path


def commands(readme: str | Path, marker: str) -> list[str]:
    lines = Path(readme).read_text(encoding="utf-8").splitlines()
    out, armed, inside = [], False, False
    for line in lines:
        if inside:
            if line.startswith("```"):
                inside = False
            elif command := re.sub(r"(^|\s+)#\s.*$", "", line).strip():
                if command.endswith("\\"):
                    raise ValueError(f"{readme}: {command}: continued lines are not supported")
                out.append(command)
        elif line.startswith(f"<!-- {marker}"):
            armed = True
        elif armed and line.startswith("```sh"):
            armed, inside = False, True
    if not out:
        raise ValueError(f"{readme}: no ```sh block after <!-- {marker} -->")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print("\n".join(commands(sys.argv[1], sys.argv[2])))
