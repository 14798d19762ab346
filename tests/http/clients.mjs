// The real client packages, `ollama` and `openai` (pinned in package-lock.json, installed by
// scripts/install-deps.sh with `npm ci`), against `hearth serve --http` on a generated model:
// chat, generate, streaming, a stream aborted mid-way (AbortController; then /metrics shows the
// engine idle, its KV blocks freed), and the errors each client turns into its own exception
// (400, 401, 404, 429 with Retry-After).
// Usage: node clients.mjs PATH/TO/hearth
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';

import { Ollama, OpenAI } from './packages.mjs';

const hearth = process.argv[2];
const dir = mkdtempSync(join(tmpdir(), 'hearth-http-'));
const model = join(dir, 'tiny.gguf');
execFileSync(hearth, ['model', 'make', '--preset', 'tiny', '--dtype', 'f32', '--seed', '5', '-o', model], { stdio: 'ignore' });
// A keyed tenant with a small token bucket (for 429), the guest: requests without a key (the
// ollama client's) and with its key (the openai client always sends one), and an admin, who may
// read /metrics.
const voiceKey = 'voice-secret', guestKey = 'guest-secret', adminKey = 'admin-secret';
const sha = (key) => execFileSync('sha256sum', { input: key }).toString().split(' ')[0];
writeFileSync(join(dir, 'home.toml'), `[http]
endpoint = "127.0.0.1:0"
anonymous_tenant = "guest"

[[tenant]]
name = "guest"
http_key_sha256 = "${sha(guestKey)}"

[[tenant]]
name = "voice"
http_key_sha256 = "${sha(voiceKey)}"
quota = { tokens_per_minute = 100 }

[[tenant]]
name = "house"
http_key_sha256 = "${sha(adminKey)}"
admin = true
`);

const server = spawn(hearth, ['serve', '--threads', '1', '--compute', 'f32', '--endpoint', 'tcp://127.0.0.1:*',
                              '--model', model, '--config', join(dir, 'home.toml')]);
let out = '', err = '';
server.stdout.on('data', (d) => { out += d; });
server.stderr.on('data', (d) => { err += d; });
const cleanup = () => { server.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }); };

async function until(what, test, ms = 20000) {
  for (const t0 = Date.now(); Date.now() - t0 < ms;) {
    const v = await test();
    if (v) return v;
    if (server.exitCode !== null) throw new Error(`serve exited: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}: ${out} ${err}`);
}

// Whether /metrics shows the engine idle: nothing running or waiting, no KV block in use.
async function engineIdle(host) {
  const r = await fetch(`${host}/metrics`, { headers: { Authorization: `Bearer ${adminKey}` } });
  assert.equal(r.status, 200);
  const text = await r.text();
  const gauge = (name) => Number(text.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1]);
  // The engine's one worker, labelled by name and device.
  const worker = (name) => gauge(`${name}\\{worker="worker",device="cpu"\\}`);
  assert.equal(worker('hearth:worker_up'), 1);
  return gauge('hearth:num_requests_running') === 0 && gauge('hearth:num_requests_waiting') === 0 &&
         gauge('hearth:kv_cache_usage_perc') === 0 && worker('hearth:worker_kv_cache_used_blocks') === 0;
}

async function rejects(promise, check) {
  try {
    await promise;
  } catch (e) {
    check(e);
    return;
  }
  assert.fail('expected an error');
}

let step = 'start';
try {
  const host = await until('the http endpoint', () => out.match(/APIs on (http:\/\/[0-9.:]+)/)?.[1]);
  const ollama = new Ollama({ host });
  const options = { temperature: 0, repeat_penalty: 1, num_predict: 24 };  // greedy, as OpenAI's below
  const messages = [{ role: 'user', content: 'Turn the kitchen light off.' }];

  step = 'ollama list, version, show';
  const tags = await ollama.list();
  assert.equal(tags.models[0].name, 'tiny:latest');
  assert.ok((await ollama.version()).version);
  assert.equal((await ollama.show({ model: 'tiny' })).details.format, 'gguf');

  step = 'ollama chat';
  const whole = await ollama.chat({ model: 'tiny', messages, options, keep_alive: '5m' });
  assert.equal(whole.done, true);
  assert.ok(whole.message.content.length > 0);
  assert.ok(whole.eval_count > 0 && whole.prompt_eval_count > 0 && whole.total_duration > 0);
  let streamed = '', last;
  for await (const part of await ollama.chat({ model: 'tiny', messages, options, stream: true })) {
    streamed += part.message.content;
    last = part;
  }
  assert.equal(streamed, whole.message.content);
  assert.equal(last.done, true);
  assert.equal(last.eval_count, whole.eval_count);

  step = 'ollama generate';
  const gen = await ollama.generate({ model: 'tiny', prompt: 'Lights?', options });
  let genStreamed = '';
  for await (const part of await ollama.generate({ model: 'tiny', prompt: 'Lights?', options, stream: true }))
    genStreamed += part.response;
  assert.equal(genStreamed, gen.response);

  // A raw prompt whose greedy completion does not end within 200 tokens: a stream from it is
  // still running when it is aborted.
  step = 'find a long completion';
  let longPrompt;
  for (let i = 0; i < 20 && !longPrompt; ++i) {
    const p = `the kitchen light number ${i}`;
    const r = await ollama.generate({ model: 'tiny', prompt: p, raw: true, options: { ...options, num_predict: 200 } });
    if (r.eval_count === 200) longPrompt = p;
  }
  assert.ok(longPrompt, 'no prompt of the tiny model runs 200 tokens');

  step = 'ollama abort mid-stream';
  const long = await ollama.generate({ model: 'tiny', prompt: longPrompt, raw: true, stream: true,
                                       options: { ...options, num_predict: -1 } });
  let parts = 0, busy = false;  // busy: /metrics shows the stream running before the abort
  const abortAtTwo = async () => {
    for await (const _ of long) {
      if (++parts !== 2) continue;
      busy = !(await engineIdle(host));
      long.abort();
    }
  };
  await rejects(abortAtTwo(), (e) => assert.equal(e.name, 'AbortError'));
  assert.ok(busy, '/metrics showed the engine idle while a stream ran');
  await until('the server to cancel the aborted stream', () => err.includes('client left mid-stream'));
  await until('the engine to free the aborted stream\'s KV blocks', () => engineIdle(host));

  step = 'ollama errors';
  await rejects(ollama.chat({ model: 'tiny', messages, format: 'json' }), (e) => {
    assert.equal(e.status_code, 400);
    assert.match(e.error, /format/);
  });
  await rejects(ollama.chat({ model: 'nope', messages }), (e) => assert.equal(e.status_code, 404));

  step = 'openai models and chat';
  const openai = new OpenAI({ baseURL: `${host}/v1`, apiKey: guestKey, maxRetries: 0 });
  assert.equal((await openai.models.list()).data[0].id, 'tiny');
  const body = { model: 'tiny', messages, temperature: 0, max_tokens: 24 };
  const completion = await openai.chat.completions.create(body);
  assert.equal(completion.choices[0].message.content, whole.message.content);
  assert.equal(completion.usage.total_tokens, completion.usage.prompt_tokens + completion.usage.completion_tokens);
  let sse = '', usage;
  const stream = await openai.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    sse += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(sse, completion.choices[0].message.content);
  assert.equal(usage.completion_tokens, completion.usage.completion_tokens);
  const legacy = await openai.completions.create({ model: 'tiny', prompt: 'Lights?', max_tokens: 8, temperature: 0 });
  assert.equal(typeof legacy.choices[0].text, 'string');

  step = 'openai abort mid-stream';
  const controller = new AbortController();
  const before = (err.match(/client left mid-stream/g) ?? []).length;
  const aborted = await openai.completions.create(
    { model: 'tiny', prompt: longPrompt, temperature: 0, max_tokens: 1000, stream: true }, { signal: controller.signal });
  let chunks = 0;
  // The openai package ends a stream it was told to abort as if it had ended: no error.
  for await (const _ of aborted) {
    if (++chunks !== 2) continue;
    assert.ok(!(await engineIdle(host)), '/metrics showed the engine idle while a stream ran');
    controller.abort();
  }
  assert.ok(chunks < 100, `the aborted stream went on for ${chunks} chunks`);
  await until('the server to cancel the aborted SSE stream',
              () => (err.match(/client left mid-stream/g) ?? []).length > before);
  await until('the engine to free the aborted SSE stream\'s KV blocks', () => engineIdle(host));

  step = 'openai errors';
  await rejects(openai.chat.completions.create({ ...body, n: 2 }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.param, 'n');
    assert.equal(e.type, 'invalid_request_error');
  });
  const stranger = new OpenAI({ baseURL: `${host}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await rejects(stranger.chat.completions.create(body), (e) => assert.equal(e.status, 401));
  const voice = new OpenAI({ baseURL: `${host}/v1`, apiKey: voiceKey, maxRetries: 0 });
  // The long prompt's 60 tokens all come (no early end, so no refund): the second request's
  // prompt + 60 no longer fits in the minute's 100.
  const sixty = { model: 'tiny', prompt: longPrompt, temperature: 0, max_tokens: 60 };
  assert.equal((await voice.completions.create(sixty)).usage.completion_tokens, 60);
  await rejects(voice.completions.create(sixty), (e) => {
    assert.equal(e.status, 429);
    assert.ok(Number(e.headers.get('retry-after')) >= 1);
    assert.match(e.message, /voice/);
  });
  console.log('http clients (ollama, openai): all checks passed');
} catch (e) {
  console.error(`clients.mjs: ${step}: ${e.stack}\n--- serve stderr:\n${err}`);
  process.exitCode = 1;
} finally {
  cleanup();
}
