import test from 'ava';
import { ConfigError } from '../../../cluster/errors.ts';
import { fixedClock } from '../../../cluster/clock.ts';
import { echoBackend, scriptedBackend, ServeError, serveTarget, startServer } from '../../../policies/targets/serve.ts';
import { TargetSpecError } from '../../../policies/targets/spec.ts';

async function post(url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const r = await fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: r.status, json: await r.json() };
}

test('serve - answers a chat request in the OpenAI response shape', async (t) => {
  const srv = await startServer({ backend: echoBackend() });
  t.teardown(() => srv.close());
  t.regex(srv.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  const r = await post(srv.url, JSON.stringify({ model: 'm', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'hello there' }] }));
  t.is(r.status, 200);
  t.is(r.json.object, 'chat.completion');
  t.is(r.json.model, 'm');
  t.deepEqual(r.json.choices[0].message, { role: 'assistant', content: 'hello there' });
  t.is(r.json.choices[0].finish_reason, 'stop');
  t.deepEqual(r.json.usage, { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
  t.is(srv.stats.completions, 1);
});

test('serve - tool calls come back as choices[0].message.tool_calls with finish_reason tool_calls', async (t) => {
  const b = scriptedBackend([{ toolCalls: [{ name: 'execute_sql', arguments: { query: 'SELECT 1' } }] }]);
  const srv = await startServer({ backend: b });
  t.teardown(() => srv.close());
  const r = await post(srv.url, JSON.stringify({ messages: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', function: { name: 'execute_sql' } }], tool_choice: 'auto' }));
  t.is(r.status, 200);
  t.is(r.json.choices[0].message.content, null);
  t.deepEqual(r.json.choices[0].message.tool_calls, [{ id: 'call_1_0', type: 'function', function: { name: 'execute_sql', arguments: '{"query":"SELECT 1"}' } }]);
  t.is(r.json.choices[0].finish_reason, 'tool_calls');
  t.is(b.requests[0]!.tools?.[0]?.function.name, 'execute_sql');
  t.is(b.requests[0]!.tool_choice, 'auto');
});

test('serve - malformed JSON, missing messages and stream:true answer 400 with an OpenAI error body', async (t) => {
  const srv = await startServer({ backend: echoBackend() });
  t.teardown(() => srv.close());
  const bad = await post(srv.url, '{not json');
  t.is(bad.status, 400);
  t.is(bad.json.error.code, 'invalid_json');
  t.is(bad.json.error.type, 'invalid_request_error');
  const none = await post(srv.url, JSON.stringify({ model: 'm' }));
  t.is(none.status, 400);
  t.regex(none.json.error.message, /'messages' must be a non-empty array/);
  const empty = await post(srv.url, JSON.stringify({ messages: [] }));
  t.is(empty.status, 400);
  const stream = await post(srv.url, JSON.stringify({ messages: [{ role: 'user', content: 'x' }], stream: true }));
  t.is(stream.status, 400);
  t.regex(stream.json.error.message, /stream: true is not supported by hr1 serve/);
  t.is(stream.json.error.param, 'stream');
  t.is(srv.stats.rejected, 4);
  t.is(srv.stats.completions, 0);
});

test('serve - GET /v1/models lists the models; unknown routes answer 404 and GET on chat 405', async (t) => {
  const srv = await startServer({ backend: echoBackend(), models: ['a', 'b'] });
  t.teardown(() => srv.close());
  const m = await fetch(`${srv.url}/models`);
  t.is(m.status, 200);
  t.deepEqual(((await m.json()) as { data: { id: string }[] }).data.map((d) => d.id), ['a', 'b']);
  const nf = await fetch(`${srv.url}/embeddings`, { method: 'POST', body: '{}' });
  t.is(nf.status, 404);
  t.regex(((await nf.json()) as { error: { message: string } }).error.message, /hr1 serve answers POST \/v1\/chat\/completions and GET \/v1\/models/);
  t.is((await fetch(`${srv.url}/chat/completions`)).status, 405);
});

test('serve - with apiKey set, a missing or wrong Bearer token answers 401', async (t) => {
  const srv = await startServer({ backend: echoBackend(), apiKey: 'sk-serve-1' });
  t.teardown(() => srv.close());
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'x' }] });
  const none = await post(srv.url, body);
  t.is(none.status, 401);
  t.is(none.json.error.code, 'invalid_api_key');
  t.is((await post(srv.url, body, { authorization: 'Bearer nope' })).status, 401);
  t.is((await post(srv.url, body, { authorization: 'Bearer sk-serve-1' })).status, 200);
});

test('serve - failEvery makes every Nth chat request answer failStatus with Retry-After', async (t) => {
  const srv = await startServer({ backend: echoBackend(), failEvery: 3, failStatus: 503, failRetryAfterS: 2 });
  t.teardown(() => srv.close());
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await fetch(`${srv.url}/chat/completions`, { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }) });
    statuses.push(r.status);
    if (r.status === 503) t.is(r.headers.get('retry-after'), '2');
    await r.arrayBuffer();
  }
  t.deepEqual(statuses, [200, 200, 503, 200, 200, 503]);
  t.is(srv.stats.injectedFailures, 2);
});

test('serve - a scripted backend that runs out answers 500 saying so', async (t) => {
  const srv = await startServer({ backend: scriptedBackend(['one']) });
  t.teardown(() => srv.close());
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'x' }] });
  t.is((await post(srv.url, body)).json.choices[0].message.content, 'one');
  const r = await post(srv.url, body);
  t.is(r.status, 500);
  t.regex(r.json.error.message, /scripted backend has no answers left/);
  t.is(srv.stats.backendErrors, 1);
});

test('serve - bad options name the option', async (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ backend: 'echo' }, /serve\.backend: must be a function/],
    [{ backend: echoBackend(), port: -1 }, /serve\.port: must be an integer port/],
    [{ backend: echoBackend(), failEvery: 0 }, /serve\.failEvery: must be a positive integer/],
    [{ backend: echoBackend(), failStatus: 200 }, /serve\.failStatus: must be an HTTP error status/],
    [{ backend: echoBackend(), delayMs: 'soon' }, /serve\.delayMs: must be a non-negative duration/],
  ];
  for (const [o, re] of cases) {
    const e = await t.throwsAsync(startServer(o as never), { instanceOf: ConfigError });
    t.regex(e.message, re);
  }
});

test('serve - a port in use gives SERVE_LISTEN naming the port', async (t) => {
  const a = await startServer({ backend: echoBackend() });
  t.teardown(() => a.close());
  const e = await t.throwsAsync(startServer({ backend: echoBackend(), port: a.port }), { instanceOf: ServeError });
  t.is(e.code, 'SERVE_LISTEN');
  t.regex(e.message, new RegExp(`127\\.0\\.0\\.1:${a.port}: EADDRINUSE; choose another --port`));
});

test('serveTarget - serves echo; other specs name what it can serve', async (t) => {
  const srv = await serveTarget('echo', { port: 0 });
  t.teardown(() => srv.close());
  t.is(srv.target, 'echo');
  t.is((await post(srv.url, JSON.stringify({ messages: [{ role: 'user', content: 'ping' }] }))).json.choices[0].message.content, 'ping');
  t.is(srv.stats.completions, 1);
  const e = await t.throwsAsync(serveTarget('sim/small-7b', { port: 0 }), { instanceOf: ServeError });
  t.is(e.code, 'SERVE_UNSUPPORTED_TARGET');
  t.regex(e.message, /cannot serve sim target "sim\/small-7b" yet; it serves: echo/);
  await t.throwsAsync(serveTarget('gpt-4', { port: 0 }), { instanceOf: TargetSpecError });
});

test('serve - the response time comes from the clock passed in, not the host', async (t) => {
  const srv = await startServer({ backend: echoBackend(), clock: fixedClock(1_700_000_123_456) });
  try {
    const r = await post(srv.url, JSON.stringify({ model: 'hr1', messages: [{ role: 'user', content: 'hi' }] }));
    t.is(r.status, 200);
    t.is(r.json.created, 1_700_000_123);
  } finally {
    await srv.close();
  }
});
