#!/usr/bin/env bash
# `hearth bench engine` on a tiny model with a small workload: it runs both passes, prints the
# overhead line, and its JSON holds positive figures. Usage: test_bench_engine.sh PATH/TO/hearth
source "$(dirname "$0")/lib.sh"
hearth=$1

"$hearth" model make --preset tiny --dtype f32 --seed 5 -o "$dir/tiny.gguf" >/dev/null
table=$("$hearth" bench engine --model "$dir/tiny.gguf" --compute f32 --threads 1 --seqs 8 --prompt 16 --gen 24 \
        --json "$dir/engine.json")
grep -q "runtime overhead per step" <<<"$table" || fail "table lacks the overhead line: $table"

python3 - "$dir/engine.json" <<'PY'
import json, math, sys
j = json.load(open(sys.argv[1]))
assert (j["seqs"], j["prompt"], j["gen"]) == (8, 16, 24), j
for run in ("null", "model_run"):
    r = j[run]
    # Every request decodes 24 tokens: at least 24 steps, however the prompts were chunked.
    assert r["steps"] >= 24, (run, r)
    for k in ("wall_s", "compute_ms_per_step", "overhead_ms_per_step"):
        if not (math.isfinite(r[k]) and r[k] > 0):
            sys.exit(f"FAILED: {run} {k} = {r[k]!r}")
assert 0 < j["overhead_share"] < 1, j["overhead_share"]
PY

expect_one_line_error "missing model" "none.gguf" "$hearth" bench engine --model "$dir/none.gguf"
echo "bench engine: all checks passed"
