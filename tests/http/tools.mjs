// The client packages' tool round trip, as Home Assistant makes it: `ollama` and `openai` send
// tools, get the model's call back as their own tool_calls (whole and streamed), and send the
// call and its result back. The server is http_script_server (tests/http/script_server.cpp): the
// HTTP gateway on a backend that answers with fixed tokens, once a call, once text.
// Usage: node tools.mjs PATH/TO/http_script_server
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';

import { Ollama, OpenAI } from './packages.mjs';

const turnOn = {
  type: 'function',
  function: {
    name: 'HassTurnOn',
    description: 'Turns on a device',
    parameters: { type: 'object', properties: { name: { type: 'string' }, area: { type: 'string' } }, required: ['name'] },
  },
};
const ask = [{ role: 'user', content: 'Turn on the kitchen light' }];
const calls = {
  'qwen2.5': '<tool_call>\n{"name": "HassTurnOn", "arguments": {"name": "kitchen light"}}\n</tool_call>',
  'llama3.1': '{"name": "HassTurnOn", "parameters": {"name": "kitchen light"}}',
};

// A script server answering every request with `reply`; its URL and a way to stop it.
async function serve(family, reply) {
  const server = spawn(process.argv[2], [family, reply]);
  let out = '', err = '';
  server.stdout.on('data', (d) => { out += d; });
  server.stderr.on('data', (d) => { err += d; });
  for (const t0 = Date.now(); Date.now() - t0 < 30000;) {
    const url = out.match(/(http:\/\/[0-9.:]+)/)?.[1];
    if (url) return { url, stop: () => server.kill('SIGKILL'), err: () => err };
    if (server.exitCode !== null) throw new Error(`script server exited: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`script server did not start: ${err}`);
}

async function calling(family) {
  const s = await serve(family, calls[family]);
  try {
    const ollama = new Ollama({ host: s.url });
    const whole = await ollama.chat({ model: 'micro', messages: ask, tools: [turnOn] });
    assert.equal(whole.message.tool_calls.length, 1);
    assert.equal(whole.message.tool_calls[0].function.name, 'HassTurnOn');
    assert.deepEqual(whole.message.tool_calls[0].function.arguments, { name: 'kitchen light' });
    const streamed = [];
    for await (const part of await ollama.chat({ model: 'micro', messages: ask, tools: [turnOn], stream: true })) {
      streamed.push(...(part.message.tool_calls ?? []));
      assert.ok(!part.message.content.includes('HassTurnOn'), `the call leaked as text: ${part.message.content}`);
    }
    assert.deepEqual(streamed, whole.message.tool_calls);

    const openai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const completion = await openai.chat.completions.create({ model: 'micro', messages: ask, tools: [turnOn] });
    const choice = completion.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.tool_calls[0].function.name, 'HassTurnOn');
    assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { name: 'kitchen light' });
    // The package's own stream helper adds the deltas up into the final message.
    const stream = openai.chat.completions.stream({ model: 'micro', messages: ask, tools: [turnOn] });
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    const call = final.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'HassTurnOn');
    assert.deepEqual(JSON.parse(call.function.arguments), { name: 'kitchen light' });
    assert.ok(call.id.startsWith('call_'));
    return { ollama: whole.message, openai: choice.message };
  } finally {
    s.stop();
  }
}

async function answering(family, made) {
  const s = await serve(family, 'The kitchen light is on.');
  try {
    const ollama = new Ollama({ host: s.url });
    const back = await ollama.chat({
      model: 'micro', tools: [turnOn],
      messages: [...ask, made.ollama, { role: 'tool', content: '{"success": true}', tool_name: 'HassTurnOn' }],
    });
    assert.equal(back.message.content, 'The kitchen light is on.');
    const openai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const reply = await openai.chat.completions.create({
      model: 'micro', tools: [turnOn],
      messages: [...ask, made.openai, { role: 'tool', content: '{"success": true}', tool_call_id: made.openai.tool_calls[0].id }],
    });
    assert.equal(reply.choices[0].message.content, 'The kitchen light is on.');
    assert.equal(reply.choices[0].finish_reason, 'stop');
  } finally {
    s.stop();
  }
}

let step = 'start';
try {
  for (const family of ['qwen2.5', 'llama3.1']) {
    step = `${family}: the call`;
    const made = await calling(family);
    step = `${family}: the result back`;
    await answering(family, made);
  }
  console.log('http clients (ollama, openai): tool round trips passed');
} catch (e) {
  console.error(`tools.mjs: ${step}: ${e.stack}`);
  process.exitCode = 1;
}
