#!/usr/bin/env python3
"""The layer table of docs/architecture.md, enforced: every `#include "FOLDER/..."` in a folder's
sources must point at the folder itself or one it depends on (the table's "depends on" column,
followed transitively). Third-party headers stay in their rooms (the paragraph under the table).

    python3 scripts/check_layers.py [REPO_ROOT]

Prints each include that points up or sideways, with file and line; exit status 1 if any.
"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
doc = (root / "docs" / "architecture.md").read_text()

# | `folder/` | `library` | what | depends on |
rows = re.findall(r"^\| `([a-z/]+)/` \| [^|]* \| [^|]* \| ([^|]*) \|$", doc, re.M)
deps = {}
for folder, column in rows:
    if column.strip() in ("—", "everything"):
        deps[folder] = set() if column.strip() == "—" else {"*"}
        continue
    named = re.sub(r"\(.*?\)", "", column)  # "(+ nlohmann-json, private)": third parties, not folders
    deps[folder] = {d.strip() for d in named.split(",") if d.strip()}

def closure(folder: str) -> set:
    seen, todo = {folder}, [folder]
    while todo:
        for d in deps.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def folder_of(path: str) -> str | None:
    """The table's folder holding `path` (the longest that matches: server/http before server)."""
    best = None
    for f in deps:
        if (path == f or path.startswith(f + "/")) and (best is None or len(f) > len(best)):
            best = f
    return best


# Third-party headers and the folders that may include them (docs/architecture.md, below the table).
rooms = {
    "caf/": {"actors"},
    "oneapi/dnnl/": {"kernels"}, "dnnl": {"kernels"},
    "zmq": {"server", "clients/cpp"},
    "httplib.h": {"server/http", "bench/household"},  # and the bench's HTTP target
    "hwloc": {"actors"},
    "toml++/": {"tenants", "server", "bench/household"},
    "tbb/": {"bench/household"},  # a simulated sweep's configurations at once
    "cuda": {"kernels/cuda", "bench/cuda"}, "cublas": {"kernels/cuda", "bench/cuda"},
}

problems = []
for src in sorted(root.rglob("*")):
    rel = src.relative_to(root).as_posix()
    if src.suffix not in (".hpp", ".cpp", ".inc", ".h") or rel.startswith(("build", "tests/", ".")):
        continue
    home = folder_of(rel)
    if home is None or "*" in deps.get(home, ()):
        continue
    allowed = closure(home)
    for n, line in enumerate(src.read_text(errors="replace").splitlines(), 1):
        m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
        if not m:
            continue
        target = m.group(2)
        if m.group(1) == '"':
            there = folder_of(target)
            if there is not None and there not in allowed:
                problems.append(f"{rel}:{n}: {home}/ includes {target}, but {home} does not depend on {there} "
                                f"(docs/architecture.md, Layers and folders)")
        else:
            for prefix, folders in rooms.items():
                if target.startswith(prefix) and home not in folders:
                    problems.append(f"{rel}:{n}: {home}/ includes <{target}>, which belongs in "
                                    f"{' and '.join(sorted(folders))}/ only")

# CAF stays in actors/ also through headers: no file elsewhere may reach a CAF header by any chain
# of the project's includes (the engine's face, actors/engine.hpp, is CAF-free).
includes = {}
for src in root.rglob("*"):
    rel = src.relative_to(root).as_posix()
    if src.suffix in (".hpp", ".cpp", ".inc", ".h") and not rel.startswith(("build", ".")):
        includes[rel] = re.findall(r'^\s*#\s*include\s*([<"][^>"]+[>"])', src.read_text(errors="replace"), re.M)


def reaches_caf(rel: str, seen: set) -> str | None:
    for inc in includes.get(rel, ()):
        if inc.startswith("<caf/"):
            return rel
        name = inc[1:-1]
        if inc.startswith('"') and name in includes and name not in seen:
            seen.add(name)
            if (via := reaches_caf(name, seen)) is not None:
                return via
    return None


for rel in sorted(includes):
    if folder_of(rel) == "actors":
        continue
    via = reaches_caf(rel, set())
    if via is not None and via != rel:
        problems.append(f"{rel}: reaches CAF through {via}: CAF stays inside actors/")

for p in problems:
    print(p)
print(f"check_layers: {len(problems)} include(s) against the layer table" if problems else
      "check_layers: every include follows the layer table")
sys.exit(1 if problems else 0)
