#!/usr/bin/env bash
# `hearth bench serve` and `hearth bench sweep` on the tiny model, briefly: the JSON report holds
# every figure per tenant and overall, a trace replays, a small sweep writes its CSV and plots,
# and bad input ends with one line naming the problem. Usage: test_bench_serve.sh PATH/TO/hearth
source "$(dirname "$0")/lib.sh"
hearth=$1
common=(--compute f32 --threads 1 --no-progress --kv-tokens 8192)

"$hearth" model make --preset tiny --dtype f32 --seed 5 -o "$dir/tiny.gguf" >/dev/null
table=$("$hearth" bench serve --model "$dir/tiny.gguf" "${common[@]}" --duration 4 --drain 60 --rate-scale 4 \
        --json "$dir/serve.json" --served-out "$dir/served.json")
for want in "SLO %" "TTFT" "queue wait" "first-token step" "ITL" "TPOT" "E2E" "per iteration" "queue depth"; do
  grep -q "$want" <<<"$table" || fail "table lacks '$want': $table"
done

python3 - "$dir/serve.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
c, r = j["config"], j["report"]
assert c["command"] == "serve" and c["engine"]["policy"] == "household", c
assert [t["name"] for t in c["workload"]["classes"]] == ["chat", "rag", "background"], c["workload"]
dist = {"count", "mean", "p50", "p90", "p99", "max"}
for g in r["tenants"] + [r["overall"]]:
    for k in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"):
        assert set(g[k]) == dist, (g["name"], k)
    for k in ("queue", "prefill", "first_step"):
        assert set(g["ttft_split_ms"][k]) == dist, (g["name"], k)
    for k in ("attainment", "goodput_rps", "request_throughput_rps", "prompt_throughput_tps",
              "output_throughput_tps", "rejected", "preemptions", "slo"):
        assert k in g, (g["name"], k)
o = r["overall"]
assert o["issued"] >= 4 and o["done"] == o["issued"], o  # a light load on an idle engine: all end
assert o["ttft_ms"]["count"] == o["done"] and o["ttft_ms"]["p50"] > 0, o["ttft_ms"]
assert 0 <= o["attainment"] <= 1 and o["goodput_rps"] <= o["request_throughput_rps"] + 1e-9
# TTFT's parts as the server measured them add up to no more than the client's TTFT.
for q in r["requests"]:
    s = q["server_ms"]
    assert s["queue"] + s["prefill"] + s["first_step"] <= q["ttft_ms"] + 1, q
steps = r["server"]["steps"]
assert steps["count"] > 0 and steps["seqs"]["max"] <= r["server"]["limits"]["max_seqs"], steps
# What --served-out kept: every step the server ran (tokens, seqs, decode and prompt kpairs, ms,
# idle ms before it; the first after an idle server) and every done request's way in and out.
served = json.load(open(sys.argv[1].replace("serve.json", "served.json")))
assert len(served["steps"]) == steps["count"] and len(served["requests"]) == o["done"], served.keys()
assert served["steps"][0][5] >= 1e9 and all(t >= s >= 1 and ms > 0 and idle >= 0
                                            for t, s, dk, pk, ms, idle in served["steps"]), served["steps"][:3]
assert all(n > 0 for n, ms in served["requests"]), served["requests"]
assert steps["prefill_tokens"]["max"] <= r["server"]["limits"]["max_batched_tokens"], steps
assert len(r["gauges"]["series"]) > 0 and r["gauges"]["kv_used_pct"]["max"] > 0, r["gauges"]
PY

cat >"$dir/trace.jsonl" <<'JSONL'
{"time": 0.0, "tenant": "chat", "prompt": "Lights off in the kitchen?", "max_tokens": 8}
{"time": 0.3, "tenant": "rag", "prompt_tokens": 300, "max_tokens": 8}
JSONL
"$hearth" bench serve --model "$dir/tiny.gguf" "${common[@]}" --trace "$dir/trace.jsonl" --drain 60 \
  --json "$dir/trace.json" >/dev/null
python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['report']
assert [q['tenant'] for q in r['requests']] == ['chat', 'rag'], r['requests']
assert r['requests'][1]['prompt_tokens'] == 300 and r['overall']['done'] == 2, r['overall']
" "$dir/trace.json"

# --via both: alternate requests over the bench's own ZeroMQ and HTTP gateways, twice with the
# gateways swapped (each carries every request once), and what each costs.
"$hearth" bench serve --model "$dir/tiny.gguf" "${common[@]}" --duration 3 --drain 60 --rate-scale 4 --via both \
  --json "$dir/both.json" >"$dir/both.txt"
grep -q "outside the engine" "$dir/both.txt" || fail "no gateway table: $(cat "$dir/both.txt")"
python3 - "$dir/both.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
o, g = j["report"]["overall"], j["gateways"]
assert j["config"]["via"] == "both" and [x["name"] for x in g] == ["zmq", "http"], g
assert o["done"] == o["issued"] and j["report_swapped"]["overall"]["done"] == o["done"], j["report_swapped"]
for x in g:  # each gateway carried every request, and its part outside the engine is measured
    assert x["done"] == o["done"] and x["outside_engine_ms"]["count"] == x["done"], x
    assert 0 < x["outside_engine_ms"]["p50"] < x["ttft_ms"]["p50"], x
assert g[1]["ttft_minus_first_ms"]["count"] == o["done"], g[1]  # every request paired
# The requests over HTTP have the server's split of their TTFT too (the usage chunk's timings).
for q in j["report"]["requests"]:
    assert q["server_ms"]["first_step"] > 0, q
PY

# --server: a running `hearth serve`, driven over its ipc:// endpoint, then over HTTP.
"$hearth" serve --model "$dir/tiny.gguf" --threads 1 --compute f32 --endpoint "ipc://$dir/serve.sock" \
  --http 127.0.0.1:0 --policy household >"$dir/serve.out" 2>"$dir/serve.err" &
serve_pid=$!
trap 'kill -9 "$serve_pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 200); do
  grep -q "on ipc://" "$dir/serve.out" && break
  kill -0 "$serve_pid" 2>/dev/null || fail "serve exited: $(cat "$dir/serve.err")"
  sleep 0.1
done
"$hearth" bench serve --model "$dir/tiny.gguf" --server "ipc://$dir/serve.sock" --no-progress --duration 2 --drain 60 \
  --rate-scale 4 --json "$dir/remote.json" >/dev/null 2>"$dir/remote.err" || fail "bench --server: $(cat "$dir/remote.err")"
python3 - "$dir/remote.json" "ipc://$dir/serve.sock" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
c, r = j["config"], j["report"]
assert c["target"] == sys.argv[2] and "engine" not in c, c
o = r["overall"]
assert o["issued"] >= 2 and o["done"] == o["issued"], o
limits = r["server"]["limits"]
assert limits["max_seqs"] == 64 and limits["policy"] == "household" and limits["mode"] == "colocated", limits
assert r["server"]["steps"]["count"] > 0, r["server"]
PY
http=$(grep -o "Ollama and OpenAI APIs on http://[0-9.:]*" "$dir/serve.out" | grep -o "http://.*")
"$hearth" bench serve --model "$dir/tiny.gguf" --server "$http" --no-progress --duration 2 --drain 60 --rate-scale 4 \
  --json "$dir/remote_http.json" >/dev/null 2>"$dir/remote_http.err" || fail "bench --server $http: $(cat "$dir/remote_http.err")"
python3 - "$dir/remote_http.json" "$http" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
o = j["report"]["overall"]
assert j["config"]["target"] == sys.argv[2] and o["issued"] >= 2 and o["done"] == o["issued"], (j["config"], o)
assert o["ttft_split_ms"]["first_step"]["p50"] > 0, o
PY
expect_one_line_error "--via with --server" "--via is for the bench's own server" \
  "$hearth" bench serve --model "$dir/tiny.gguf" --server "$http" --via both
kill -TERM "$serve_pid"
wait "$serve_pid" || fail "serve did not stop cleanly: $(cat "$dir/serve.err")"
expect_one_line_error "no HTTP server" "GET /v1/models failed" \
  "$hearth" bench serve --model "$dir/tiny.gguf" --server "$http"

"$hearth" bench sweep --model "$dir/tiny.gguf" "${common[@]}" --duration 2 --drain 30 --max-runs 2 --policy fcfs \
  --start-rate 1 --min-requests 2 -o "$dir/sweep" >"$dir/sweep.txt" 2>"$dir/sweep.err" || fail "sweep: $(cat "$dir/sweep.err")"
grep -q "baseline" "$dir/sweep.txt" || fail "sweep table lacks the baseline: $(cat "$dir/sweep.txt")"
for f in sweep.json trials.csv capacity.csv frontier.svg ttft_cdf.svg itl_cdf.svg; do
  [ -s "$dir/sweep/$f" ] || fail "sweep did not write $f"
done
python3 - "$dir/sweep" <<'PY'
import csv, json, sys, xml.dom.minidom
d = sys.argv[1]
full = json.load(open(d + "/sweep.json"))
assert full["config"]["search"]["min_requests"] == 2, full["config"]["search"]
s = full["sweep"]
assert len(s["configs"]) == 2 and s["configs"][0]["baseline"], s["configs"]
assert s["configs"][0]["engine"]["long_prefill_threshold"] == 0
for c in s["configs"]:
    assert 1 <= len(c["trials"]) <= 2, c
rows = list(csv.DictReader(open(d + "/capacity.csv")))
assert len(rows) == 2 and rows[0]["baseline"] == "1", rows
for f in ("frontier.svg", "ttft_cdf.svg", "itl_cdf.svg"):
    xml.dom.minidom.parse(d + "/" + f)  # well-formed
PY

expect_one_line_error "missing model" "none.gguf" "$hearth" bench serve --model "$dir/none.gguf"
echo 'name = "w"' >"$dir/bad.toml"
expect_one_line_error "bad workload" "bad.toml:1: class is missing" "$hearth" bench serve --model "$dir/tiny.gguf" --workload "$dir/bad.toml"
echo '{"time": 0, "tenant": "tv", "prompt": "x", "max_tokens": 1}' >"$dir/bad.jsonl"
expect_one_line_error "unknown tenant" "'tv'" "$hearth" bench serve --model "$dir/tiny.gguf" "${common[@]}" --trace "$dir/bad.jsonl"
# The simulator: a profile measured here, then a run and a sweep on it, with the same reports.
"$hearth" bench profile --model "$dir/tiny.gguf" --compute f32 --threads 1 --quick --calibrate 4 \
  -o "$dir/profile.json" >"$dir/profile.txt" 2>/dev/null || fail "bench profile: $(cat "$dir/profile.txt")"
grep -q "steps measured on .*, 1 threads, f32; fit within" "$dir/profile.txt" &&
  grep -q "calibrated on [0-9]* steps: .* ms a step, .* ms after idle time" "$dir/profile.txt" || fail "profile: $(cat "$dir/profile.txt")"
# The profile calibrated again on what the first run served: the same fields, its noise the
# served steps' spread at least.
"$hearth" bench calibrate --profile "$dir/profile.json" --served "$dir/served.json" -o "$dir/recal.json" \
  >"$dir/recal.txt" 2>&1 || fail "bench calibrate: $(cat "$dir/recal.txt")"
grep -q "calibrated on $(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['steps']))" "$dir/served.json") steps" \
  "$dir/recal.txt" || fail "bench calibrate: $(cat "$dir/recal.txt")"
python3 - "$dir/profile.json" "$dir/recal.json" <<'PY'
import json, sys
p, q = (json.load(open(f)) for f in sys.argv[1:])
assert set(p) == set(q) and q["points"] == p["points"] and q["noise"] >= p["noise"], (p, q)
assert q["overhead_ms"] >= p["overhead_ms"] and q["path_ms"] >= 0, q
PY
"$hearth" bench serve --model "$dir/tiny.gguf" "${common[@]}" --duration 8 --sim "$dir/profile.json" \
  --json "$dir/sim.json" >"$dir/sim.txt" 2>"$dir/sim.err" || fail "bench serve --sim: $(cat "$dir/sim.err")"
grep -q "simulated on $dir/profile.json" "$dir/sim.err" && grep -q "simulated [0-9]* requests in" "$dir/sim.err" ||
  fail "bench serve --sim does not say it simulated: $(cat "$dir/sim.err")"
python3 - "$dir/profile.json" "$dir/sim.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["threads"] == 1 and p["compute"] == "f32" and len(p["points"]) >= 30, p
assert 0 <= p["rms_error"] < 0.5 and p["overhead_ms"] > 0, p
o = json.load(open(sys.argv[2]))["report"]["overall"]
assert o["issued"] >= 4 and o["done"] == o["issued"] and o["ttft_ms"]["p50"] > 0, o
PY
"$hearth" bench sweep --model "$dir/tiny.gguf" "${common[@]}" --duration 4 --max-runs 2 --policy fcfs \
  --sim "$dir/profile.json" -o "$dir/simsweep" >"$dir/simsweep.txt" 2>/dev/null || fail "sweep --sim"
grep -q "trials in .* s (.* trials/s, simulated)" "$dir/simsweep.txt" || fail "sweep --sim: $(cat "$dir/simsweep.txt")"
[ -s "$dir/simsweep/frontier.svg" ] || fail "sweep --sim wrote no frontier.svg"
# The CDFs: a panel per class, titled with its name, its target marked (a dashed line and its
# label), and a legend naming the configurations shown.
python3 - "$dir/simsweep" <<'PY'
import json, sys, xml.dom.minidom
d = sys.argv[1]
classes = json.load(open(d + "/sweep.json"))["config"]["workload"]["classes"]
assert len(classes) == 3, classes
for f, kind, key in (("ttft_cdf.svg", "TTFT", "ttft_ms"), ("itl_cdf.svg", "ITL", "itl_ms")):
    svg = xml.dom.minidom.parse(d + "/" + f)
    texts = [t.firstChild.data for t in svg.getElementsByTagName("text") if t.firstChild]
    marks = [t for t in texts if t.startswith(("class ", "target "))]
    want = []
    for c in classes:
        want.append(f"class {c['name']}: {kind}")
        if c["slo"][key] > 0:
            want.append(f"target {c['slo'][key]:g} ms")
    assert marks == want, (f, marks, want)
    dashed = [l for l in svg.getElementsByTagName("line")
              if l.getAttribute("stroke-dasharray") and l.getAttribute("x1") == l.getAttribute("x2")]
    assert len(dashed) == sum(c["slo"][key] > 0 for c in classes), (f, len(dashed))
    assert texts.count("baseline") == len(classes), (f, texts)
PY
expect_one_line_error "--sim with --server" "--sim runs no server" \
  "$hearth" bench serve --model "$dir/tiny.gguf" --sim "$dir/profile.json" --server tcp://127.0.0.1:1
expect_one_line_error "--served-out with --sim" "--served-out records the bench's own server" \
  "$hearth" bench serve --model "$dir/tiny.gguf" --sim "$dir/profile.json" --served-out "$dir/x.json"
echo '{"steps": [[1, 1, 0, 0, 2.5, 0], [1, 2, 0, 0, 2.5, 0]], "requests": []}' >"$dir/bad_served.json"
expect_one_line_error "a step of more sequences than tokens" "bad_served.json: steps\[1\] is not a step" \
  "$hearth" bench calibrate --profile "$dir/profile.json" --served "$dir/bad_served.json" -o "$dir/x.json"
echo '{"steps": [[1, 1, 0, 0, 2.5, 0]], "requests": []}' >"$dir/few_served.json"
expect_one_line_error "too few steps" "1 served steps to calibrate on" \
  "$hearth" bench calibrate --profile "$dir/profile.json" --served "$dir/few_served.json" -o "$dir/x.json"
echo '{"cpu": "x"}' >"$dir/bad_profile.json"
expect_one_line_error "bad profile" "bad_profile.json" \
  "$hearth" bench serve --model "$dir/tiny.gguf" --sim "$dir/bad_profile.json"

echo "bench serve/sweep: all checks passed"
