#!/usr/bin/env python3
"""`hearth serve`'s /metrics read by Prometheus' own parser (Debian's python3-prometheus-client):

    python3 integration_metrics.py HEARTH_BINARY MODEL_FILE

Serves over HTTP with two keyed tenants (`voice`, an admin, and `docs`, with a small token
bucket), sends requests over Ollama's and OpenAI's APIs, one of them refused with 429, and checks
that the exposition parses, that each family has its type, and that its counts agree with what
was sent: TTFT / ITL / e2e / queue histograms per tenant (count = requests, +Inf bucket = count,
buckets cumulative), tokens, finish reasons, the rejection, the gauges. A non-admin key is
refused (403), no key too (401). Not a unittest module: it needs the binary and a model.
"""

import hashlib
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_script import check, run_main  # noqa: E402

KEYS = {"voice": "voice-secret", "docs": "docs-secret"}


def call(port: int, path: str, key: str | None, body: dict | None = None) -> tuple[int, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=None if body is None else json.dumps(body).encode())
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(fams: dict, family: str, sample: str, **labels) -> float:
    return sum(s.value for s in fams[family].samples
               if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()))


def send(port: int) -> dict:
    """The requests, and what each tenant should be counted for."""
    sent = {"voice": {"n": 0, "prompt": 0, "gen": 0, "length": 0}, "docs": {"n": 0, "prompt": 0, "gen": 0, "length": 0}}
    for i in range(3):
        status, body = call(port, "/api/chat", KEYS["voice"], {
            "model": "tiny", "stream": i % 2 == 0, "options": {"num_predict": 6, "temperature": 0},
            "messages": [{"role": "user", "content": f"turn on light {i}"}]})
        last = json.loads(body.strip().splitlines()[-1])
        sent["voice"]["n"] += 1
        sent["voice"]["prompt"] += last["prompt_eval_count"]
        sent["voice"]["gen"] += last["eval_count"]
        sent["voice"]["length"] += last["done_reason"] == "length"
    status, body = call(port, "/v1/completions", KEYS["docs"], {"model": "tiny", "prompt": "Summarise the day", "max_tokens": 5})
    usage = json.loads(body)["usage"]
    sent["docs"]["n"] += 1
    sent["docs"]["prompt"] += usage["prompt_tokens"]
    sent["docs"]["gen"] += usage["completion_tokens"]
    sent["docs"]["length"] += json.loads(body)["choices"][0]["finish_reason"] == "length"
    # The bucket's 40 tokens per minute are spent: refused before any step.
    sent["refused"], _ = call(port, "/v1/completions", KEYS["docs"], {"model": "tiny", "prompt": "Again", "max_tokens": 30})
    return sent


def check_metrics(port: int) -> bool:
    sent = send(port)
    ok = check("the second docs request is over its quota (429)", sent["refused"] == 429, str(sent["refused"]))
    ok &= check("no key: 401", call(port, "/metrics", None)[0] == 401)
    ok &= check("a tenant that is not an admin: 403", call(port, "/metrics", KEYS["docs"])[0] == 403)
    time.sleep(0.5)  # the metrics actor takes each request's record after its terminal event
    status, text = call(port, "/metrics", KEYS["voice"])
    ok &= check("an admin reads /metrics", status == 200, str(status))
    fams = families(text)
    for name, kind in [("hearth:time_to_first_token_seconds", "histogram"), ("hearth:inter_token_latency_seconds", "histogram"),
                       ("hearth:e2e_request_latency_seconds", "histogram"), ("hearth:request_queue_time_seconds", "histogram"),
                       ("hearth:num_requests_running", "gauge"), ("hearth:num_requests_waiting", "gauge"),
                       ("hearth:kv_cache_usage_perc", "gauge"), ("hearth:kv_cache_used_blocks", "gauge"),
                       ("hearth:kv_cache_capacity_blocks", "gauge"), ("hearth:num_preemptions", "counter"),
                       ("hearth:prefix_cache_queries", "counter"), ("hearth:prefix_cache_hits", "counter"),
                       ("hearth:prompt_tokens", "counter"), ("hearth:generation_tokens", "counter"),
                       ("hearth:request_success", "counter"), ("hearth:request_rejected", "counter"),
                       ("hearth:step_duration_seconds", "histogram"), ("hearth:step_prefill_tokens", "histogram")]:
        ok &= check(f"{name} is a {kind}", name in fams and fams[name].type == kind, str(fams.get(name)))
    for tenant in ("voice", "docs"):
        s = sent[tenant]
        for fam in ("hearth:time_to_first_token_seconds", "hearth:e2e_request_latency_seconds", "hearth:request_queue_time_seconds"):
            n = value(fams, fam, fam + "_count", tenant=tenant)
            inf = value(fams, fam, fam + "_bucket", tenant=tenant, le="+Inf")
            ok &= check(f"{fam}{{tenant={tenant}}} counts {s['n']} requests", n == s["n"] == inf, f"count {n}, +Inf {inf}")
            buckets = [x.value for x in fams[fam].samples if x.name == fam + "_bucket" and x.labels["tenant"] == tenant]
            ok &= check(f"{fam}{{tenant={tenant}}} buckets are cumulative", buckets == sorted(buckets), str(buckets))
        itl = value(fams, "hearth:inter_token_latency_seconds", "hearth:inter_token_latency_seconds_count", tenant=tenant)
        ok &= check(f"ITL {tenant}: one gap per token after the first", itl == s["gen"] - s["n"], f"{itl} vs {s['gen'] - s['n']}")
        ok &= check(f"prompt tokens {tenant}", value(fams, "hearth:prompt_tokens", "hearth:prompt_tokens_total", tenant=tenant) == s["prompt"])
        ok &= check(f"generation tokens {tenant}",
                    value(fams, "hearth:generation_tokens", "hearth:generation_tokens_total", tenant=tenant) == s["gen"])
        ended = {r: value(fams, "hearth:request_success", "hearth:request_success_total", tenant=tenant, finished_reason=r)
                 for r in ("stop", "length", "abort")}
        ok &= check(f"finish reasons {tenant}", ended == {"stop": s["n"] - s["length"], "length": s["length"], "abort": 0}, str(ended))
    rejected = value(fams, "hearth:request_rejected", "hearth:request_rejected_total", tenant="docs", reason="over_quota")
    ok &= check("the refusal is counted: rejected{docs, over_quota} = 1", rejected == 1, str(rejected))
    ok &= check("nothing runs now", value(fams, "hearth:num_requests_running", "hearth:num_requests_running") == 0)
    usage = value(fams, "hearth:kv_cache_usage_perc", "hearth:kv_cache_usage_perc")
    ok &= check("KV usage is a share", 0 <= usage <= 1, str(usage))
    used = value(fams, "hearth:kv_cache_used_blocks", "hearth:kv_cache_used_blocks")
    capacity = value(fams, "hearth:kv_cache_capacity_blocks", "hearth:kv_cache_capacity_blocks")
    ok &= check("KV blocks: none in use of a pool", used == 0 and capacity > 0 and usage == used / capacity,
                f"{used} of {capacity}")
    steps = value(fams, "hearth:step_duration_seconds", "hearth:step_duration_seconds_count")
    ok &= check("steps were timed", steps > 0, str(steps))
    return ok


def run(hearth: str, model: str, tmp: str) -> bool:
    sha = {t: hashlib.sha256(k.encode()).hexdigest() for t, k in KEYS.items()}
    config = Path(tmp, "hearth.toml")
    config.write_text(f'[server]\nendpoint = "ipc://{tmp}/hearth.sock"\n[model]\npath = "{model}"\n'
                      f'[http]\nendpoint = "127.0.0.1:0"\n'
                      f'[[tenant]]\nname = "voice"\nadmin = true\nhttp_key_sha256 = "{sha["voice"]}"\n'
                      f'[[tenant]]\nname = "docs"\nhttp_key_sha256 = "{sha["docs"]}"\nquota = {{ tokens_per_minute = 40 }}\n')
    log_path = Path(tmp, "serve.log")
    with open(log_path, "w") as log:
        server = subprocess.Popen([hearth, "serve", "--threads", "1", "--config", str(config)], stdout=log,
                                  stderr=subprocess.STDOUT)
    try:
        port = None
        for _ in range(600):
            found = re.search(r"APIs on http://127\.0\.0\.1:(\d+)", log_path.read_text(errors="replace"))
            if found:
                port = int(found.group(1))
                break
            if server.poll() is not None:
                break
            time.sleep(0.1)
        if not check("serve announces its HTTP port", port is not None):
            return False
        return check_metrics(port)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(run_main(__doc__, sys.argv, run))
