#!/usr/bin/env bash
# `hearth bench kernels --quick` on a tiny bf16 model: it runs, prints its table, and its JSON has
# the configuration and positive figures. Usage: test_bench.sh PATH/TO/hearth
source "$(dirname "$0")/lib.sh"
hearth=$1

"$hearth" model make --preset tiny --dtype bf16 --seed 5 -o "$dir/tiny.gguf" >/dev/null
table=$("$hearth" bench kernels --model "$dir/tiny.gguf" --quick --threads 2 --json "$dir/bench.json")
for word in "matmul paths on" "attention in f32" "GEMM ceiling" "STREAM triad" prefill decode "peak RSS"; do
  grep -q "$word" <<<"$table" || fail "table lacks '$word': $table"
done

python3 - "$dir/bench.json" <<'PY'
import json, math, sys
j = json.load(open(sys.argv[1]))
def positive(path, v):
    if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
        sys.exit(f"FAILED: {path} = {v!r}, expected a positive number")
c = j["config"]
assert c["compute"] == "bf16" and c["kv_dtype"] == "bf16" and c["threads"] == 2, c
assert c["n_embd"] == 288 and c["n_layer"] == 6 and c["block_size"] == 16, c
# tiny's heads of 48 never suit the bf16 attention tiles (a multiple of 32), whatever the CPU has.
assert c["bf16_attention"] is False, c
assert [s["name"] for s in j["gemm"]["shapes"]] == ["qkv", "wo", "gate_up", "down", "head"], j["gemm"]
for s in j["gemm"]["shapes"]:
    positive("gemm " + s["name"], s["gflops"])
    assert "onednn-f32" in s["paths"] and "hearth-w8" in s["paths"], s
    assert abs(s["gflops"] - max(s["paths"].values())) < 1e-9, s
# Which path each shape took and why: every model shape, one path per batch-size bucket, and the
# rates it was chosen by (measured now, or read from the build's plan cache).
assert c["kernels"] == "auto" and c["cpu"], c
assert [p["name"] for p in j["plans"]] == ["qkv", "wo", "gate_up", "down", "head"], j["plans"]
for p in j["plans"]:
    assert [b["m"] for b in p["paths"]] == [1, 16, 64, 256], p
    assert p["why"] in ("measured", "cached", "noisy", "only path"), p
    assert "hearth-w8" in p["rates"] and all(b["path"] in p["rates"] for b in p["paths"]), p
positive("gemm combined", j["gemm"]["combined_gflops"])
positive("stream gbps", j["stream"]["gbps"])
assert [p["tokens"] for p in j["prefill"]] == [64, 128], j["prefill"]
for p in j["prefill"]:
    for k in ("seconds", "tok_per_s", "gflop", "gflops", "pct_of_gemm"):
        positive(f"prefill {p['tokens']} {k}", p[k])
assert sorted((d["context"], d["batch"]) for d in j["decode"]) == [(64, 1), (64, 4), (128, 1), (128, 4)], j["decode"]
for d in j["decode"]:
    assert d["vs_batch1_bound"] <= d["batch"] + 1e-9, d
    for k in ("step_seconds", "tok_per_s", "vs_batch1", "vs_batch1_bound", "bytes_per_step", "gbps", "stream_gbps",
              "pct_of_stream", "gflop_per_step", "gflops", "pct_of_gemm"):
        positive(f"decode {d['context']}x{d['batch']} {k}", d[k])
for k in ("weight_bytes", "embedding_bytes", "kv_pool_bytes", "peak_rss_bytes", "rss_ratio", "file_bytes", "rss_vs_file"):
    positive("memory " + k, j["memory"][k])
positive("load seconds", j["load_seconds"])
PY

# A quantized file's weights stay as stored: every shape on the quantized paths, timed (or
# cached) like the others, and the dots at m = 1, where dequantizing every weight cannot pay.
"$hearth" model make --preset tiny --dtype q4_0 --seed 5 -o "$dir/tiny_q4.gguf" >/dev/null
"$hearth" bench kernels --model "$dir/tiny_q4.gguf" --quick --threads 2 --json "$dir/q4.json" >/dev/null
python3 - "$dir/q4.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for p in j["plans"]:
    paths = [b["path"] for b in p["paths"]]
    assert paths[0] in ("quant-dot", "quant-dot-zmm") and all(q.startswith("quant-") for q in paths), p
    assert p["why"] in ("measured", "noisy", "cached") and "quant-dot" in p["rates"], p
m = j["memory"]
assert m["weight_bytes"] < m["file_bytes"] and m["rss_vs_file"] > 0, m
PY

expect_one_line_error "missing model" "none.gguf" "$hearth" bench kernels --model "$dir/none.gguf" --quick
# Our kernels do not compute f32: refused by name, not silently replaced.
expect_one_line_error "hearth kernels in f32" 'kernels = "hearth"' \
  "$hearth" bench kernels --model "$dir/tiny.gguf" --quick --compute f32 --kernels hearth
echo "bench: all checks passed"
