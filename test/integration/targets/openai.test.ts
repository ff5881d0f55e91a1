import { inspect } from 'node:util';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { ConfigError } from '../../../cluster/errors.ts';
import { FC_TOOLS } from '../../../envs/dbbench/protocol.ts';
import type { DecisionContext, EnvSession } from '../../../harness/types.ts';
import {
  OpenAIBadResponseError,
  OpenAIClient,
  OpenAIHttpError,
  OpenAIModel,
  OpenAIRetriesExhaustedError,
  OpenAITimeoutError,
  openAIModelFromSpec,
  type OpenAIClientOptions,
  type ToolCall,
} from '../../../policies/targets/openai.ts';
import { echoBackend, scriptedBackend, startServer, type ServerOptions } from '../../../policies/targets/serve.ts';

const user = (content: string) => [{ role: 'user' as const, content }];
// fast backoff so retry tests take milliseconds; no key in the environment unless a test sets one
const FAST = { backoffBaseMs: 5, backoffCapMs: 20, env: {} } satisfies Partial<OpenAIClientOptions>;

async function serve(t: { teardown(fn: () => Promise<void>): void }, opts: Partial<ServerOptions> = {}) {
  const srv = await startServer({ backend: echoBackend(), ...opts });
  t.teardown(() => srv.close());
  return srv;
}

function ctx(messages: DecisionContext['messages']): DecisionContext {
  // OpenAIModel reads only the messages; the session is there for expert models
  return { messages, step: 0, env: 'dbbench', taskId: 't0', session: {} as EnvSession, seed: 0 };
}

test('openai client - a chat round trip returns the text, usage and finish reason', async (t) => {
  const srv = await serve(t);
  const c = new OpenAIClient({ baseUrl: srv.url, ...FAST });
  const r = await c.chat({ model: 'echo', messages: [{ role: 'system', content: 'be brief' }, ...user('go to desk 1')], temperature: 0, topP: 1, maxTokens: 32, stop: ['\n\n'], seed: 7 });
  t.is(r.content, 'go to desk 1');
  t.deepEqual(r.toolCalls, []);
  t.is(r.finishReason, 'stop');
  t.is(r.model, 'echo');
  t.is(r.attempts, 1);
  t.deepEqual(r.usage, { promptTokens: 6, completionTokens: 4, totalTokens: 10 });
  const s = c.stats();
  t.like(s, { calls: 1, requests: 1, retries: 0, failures: 0, totalTokens: 10 });
});

test('openai client - sampling options reach the server under their wire names', async (t) => {
  const b = scriptedBackend(['ok']);
  const srv = await serve(t, { backend: b });
  await new OpenAIClient({ baseUrl: srv.url, ...FAST }).chat({ model: 'm', messages: user('x'), temperature: 0.3, topP: 0.9, maxTokens: 64, stop: 'END', seed: 11 });
  t.like(b.requests[0], { model: 'm', temperature: 0.3, top_p: 0.9, max_tokens: 64, stop: 'END', seed: 11 });
  t.is(b.requests[0]!.tools, undefined);
});

test('openai client - tool calls round trip: tools and tool_choice go out, calls come back parsed', async (t) => {
  const b = scriptedBackend([{ content: 'let me look', toolCalls: [{ id: 'c1', name: 'execute_sql', arguments: { query: 'SELECT 1' } }, { name: 'commit_final_answer', arguments: '{"answers":["1"]}' }] }]);
  const srv = await serve(t, { backend: b });
  const c = new OpenAIClient({ baseUrl: srv.url, ...FAST });
  const r = await c.chat({ model: 'm', messages: user('q'), tools: FC_TOOLS, toolChoice: 'required' });
  t.is(r.finishReason, 'tool_calls');
  t.is(r.content, 'let me look');
  t.deepEqual(r.toolCalls, [
    { id: 'c1', name: 'execute_sql', arguments: '{"query":"SELECT 1"}', args: { query: 'SELECT 1' } },
    { id: 'call_1_1', name: 'commit_final_answer', arguments: '{"answers":["1"]}', args: { answers: ['1'] } },
  ]);
  t.deepEqual(b.requests[0]!.tools?.map((x) => x.function.name), ['execute_sql', 'commit_final_answer']);
  t.is(b.requests[0]!.tool_choice, 'required');
});

test('openai model - text mode sends the context messages and is named openai:<base>#<model>', async (t) => {
  const b = scriptedBackend(['Action: Operation\n```sql\nSELECT 1\n```']);
  const srv = await serve(t, { backend: b });
  const m = openAIModelFromSpec(`openai:${srv.url}/#Qwen/Qwen2.5-7B-Instruct`, { client: FAST, temperature: 0 });
  t.is(m.name, `openai:${srv.url}#Qwen/Qwen2.5-7B-Instruct`);
  const messages = [{ role: 'system' as const, content: 'sys' }, { role: 'user' as const, content: 'task' }, { role: 'assistant' as const, content: 'OK.' }, { role: 'user' as const, content: 'Hint: quote names' }];
  t.is(await m.decide(ctx(messages)), 'Action: Operation\n```sql\nSELECT 1\n```');
  t.deepEqual(b.requests[0]!.messages, messages);
  t.is(b.requests[0]!.model, 'Qwen/Qwen2.5-7B-Instruct');
  t.is(b.requests[0]!.temperature, 0);
  t.is(m.lastResult?.finishReason, 'stop');
});

test('openai model - tools mode turns a tool call into the action text with the formatter', async (t) => {
  const b = scriptedBackend([{ toolCalls: [{ name: 'execute_sql', arguments: { query: 'SELECT name FROM t' } }] }, { toolCalls: [{ name: 'commit_final_answer', arguments: { answers: ['a', 'b'] } }] }, 'I think the answer is a']);
  const srv = await serve(t, { backend: b });
  const format = (calls: readonly ToolCall[]) => {
    const c = calls[0]!;
    return c.name === 'execute_sql' ? `Action: Operation\n\`\`\`sql\n${String(c.args?.query)}\n\`\`\`` : `Action: Answer\nFinal Answer: ${JSON.stringify(c.args?.answers)}`;
  };
  const m = new OpenAIModel({ model: 'm', client: { baseUrl: srv.url, ...FAST }, mode: 'tools', tools: FC_TOOLS, formatToolCalls: format });
  t.is(await m.decide(ctx(user('q'))), 'Action: Operation\n```sql\nSELECT name FROM t\n```');
  t.is(await m.decide(ctx(user('q'))), 'Action: Answer\nFinal Answer: ["a","b"]');
  // no tool call: the text goes to the env's parser as is
  t.is(await m.decide(ctx(user('q'))), 'I think the answer is a');
  t.is(b.requests[0]!.tools?.length, 2);
  t.is(m.client.stats().calls, 3);
});

test('openai model - tools mode without tools or a formatter is a ConfigError naming the option', (t) => {
  const client = { baseUrl: 'http://127.0.0.1:1/v1', env: {} };
  t.throws(() => new OpenAIModel({ model: 'm', client, mode: 'tools', formatToolCalls: () => '' }), { instanceOf: ConfigError, message: /openai\.tools: tools mode needs at least one function tool/ });
  t.throws(() => new OpenAIModel({ model: 'm', client, mode: 'tools', tools: FC_TOOLS }), { instanceOf: ConfigError, message: /openai\.formatToolCalls: tools mode needs a function/ });
  t.throws(() => new OpenAIModel({ model: '', client }), { instanceOf: ConfigError, message: /openai\.model: must name the served model/ });
});

test('openai client - retries after injected 500s succeed and are counted', async (t) => {
  const srv = await serve(t, { failEvery: 2 });
  const c = new OpenAIClient({ baseUrl: srv.url, ...FAST });
  const out: string[] = [];
  for (let i = 0; i < 4; i++) out.push((await c.chat({ model: 'm', messages: user(`n${i}`) })).content);
  t.deepEqual(out, ['n0', 'n1', 'n2', 'n3']);
  // requests 2, 4 and 6 fail: calls 2, 3 and 4 each take one retry
  t.like(c.stats(), { calls: 4, requests: 7, retries: 3, failures: 0 });
  t.like(srv.stats, { injectedFailures: 3, completions: 4 });
});

test('openai client - every attempt failing gives OPENAI_RETRIES_EXHAUSTED with the attempts and the last HTTP error', async (t) => {
  const srv = await serve(t, { failEvery: 1, failStatus: 503 });
  const c = new OpenAIClient({ baseUrl: srv.url, ...FAST, maxRetries: 3 });
  const e = await t.throwsAsync(c.chat({ model: 'm', messages: user('x') }), { instanceOf: OpenAIRetriesExhaustedError });
  t.is(e.code, 'OPENAI_RETRIES_EXHAUSTED');
  t.is(e.attempts, 4);
  t.is(e.lastCode, 'OPENAI_HTTP');
  t.is((e.cause as OpenAIHttpError).status, 503);
  t.regex(e.message, /gave up after 4 attempts; last: OPENAI_HTTP: HTTP 503 .*injected failure/);
  t.like(c.stats(), { requests: 4, retries: 3, failures: 1 });
});

test('openai client - a Retry-After from the server is honoured over a shorter backoff', async (t) => {
  const srv = await serve(t, { failEvery: 1, failStatus: 429, failRetryAfterS: 0.4 });
  const c = new OpenAIClient({ baseUrl: srv.url, ...FAST, maxRetries: 1 });
  const t0 = performance.now();
  await t.throwsAsync(c.chat({ model: 'm', messages: user('x') }), { instanceOf: OpenAIRetriesExhaustedError });
  t.true(performance.now() - t0 >= 380, `waited ${performance.now() - t0} ms`);
});

test('openai client - a 400 is not retried and gives OPENAI_HTTP naming the status', async (t) => {
  const srv = await serve(t);
  const c = new OpenAIClient({ baseUrl: srv.url, ...FAST });
  const e = await t.throwsAsync(c.chat({ model: 'm', messages: [] }), { instanceOf: OpenAIHttpError });
  t.is(e.code, 'OPENAI_HTTP');
  t.is(e.status, 400);
  t.false(e.retryable);
  t.regex(e.message, /^HTTP 400 Bad Request from http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: .*'messages' must be a non-empty array.*; the server refused the request/);
  t.like(c.stats(), { requests: 1, retries: 0, failures: 1 });
  t.is(srv.stats.rejected, 1);
});

test('openai client - a server slower than timeoutMs gives OPENAI_TIMEOUT after the retries', async (t) => {
  const srv = await serve(t, { delayMs: 2000 });
  const c = new OpenAIClient({ baseUrl: srv.url, ...FAST, timeoutMs: 100, maxRetries: 2 });
  const t0 = performance.now();
  const e = await t.throwsAsync(c.chat({ model: 'm', messages: user('x') }), { instanceOf: OpenAIRetriesExhaustedError });
  const took = performance.now() - t0;
  t.is(e.lastCode, 'OPENAI_TIMEOUT');
  t.true(e.cause instanceof OpenAITimeoutError);
  t.regex((e.cause as Error).message, /no answer from .* within 100 ms; raise openai\.timeoutMs/);
  t.like(c.stats(), { requests: 3, retries: 2, timeouts: 3, failures: 1 });
  t.true(took >= 300 && took < 1500, `took ${took} ms`);
  // with no retries the timeout itself is thrown
  const once = new OpenAIClient({ baseUrl: srv.url, ...FAST, timeoutMs: '50ms', maxRetries: 0 });
  const e1 = await t.throwsAsync(once.chat({ model: 'm', messages: user('x') }), { instanceOf: OpenAITimeoutError });
  t.is(e1.code, 'OPENAI_TIMEOUT');
  t.true(e1.retryable);
});

test('openai client - never more than `concurrency` requests in flight', async (t) => {
  const srv = await serve(t, { delayMs: 40 });
  const c = new OpenAIClient({ baseUrl: srv.url, ...FAST, concurrency: 3 });
  const out = await Promise.all(Array.from({ length: 12 }, (_, i) => c.chat({ model: 'm', messages: user(`m${i}`) })));
  t.deepEqual(out.map((r) => r.content), Array.from({ length: 12 }, (_, i) => `m${i}`));
  t.is(srv.stats.maxInFlight, 3);
  t.is(c.stats().maxInFlight, 3);
  t.is(c.stats().inFlight, 0);
});

test('openai client - a wrong API key gives 401 and a typed error telling which env var to set; the key is never printed', async (t) => {
  const srv = await serve(t, { apiKey: 'sk-right-0123456789' });
  const wrong = new OpenAIClient({ baseUrl: srv.url, ...FAST, apiKeyEnv: 'MY_LLM_KEY', env: { MY_LLM_KEY: 'sk-wrong-9876543210' } });
  t.is(wrong.apiKeySource, 'MY_LLM_KEY');
  const e = await t.throwsAsync(wrong.chat({ model: 'm', messages: user('x') }), { instanceOf: OpenAIHttpError });
  t.is(e.status, 401);
  t.regex(e.message, /HTTP 401 .*the key in MY_LLM_KEY was refused: set MY_LLM_KEY to the server's key, or point openai\.apiKeyEnv/);
  t.is(wrong.stats().retries, 0);
  for (const shown of [e.message, inspect(e, { depth: 5 }), inspect(wrong, { depth: 5 }), JSON.stringify(wrong), JSON.stringify(e.toWire())]) t.false(shown.includes('sk-wrong-9876543210'));

  const none = new OpenAIClient({ baseUrl: srv.url, ...FAST });
  const e2 = await t.throwsAsync(none.chat({ model: 'm', messages: user('x') }), { instanceOf: OpenAIHttpError });
  t.regex(e2.message, /no API key was sent: set OPENAI_API_KEY \(or HR1_OPENAI_API_KEY\) to the server's key/);

  // the default variable, then the HR1_ fallback
  const right = new OpenAIClient({ baseUrl: srv.url, ...FAST, env: { OPENAI_API_KEY: 'sk-right-0123456789' } });
  t.is((await right.chat({ model: 'm', messages: user('ok') })).content, 'ok');
  const fallback = new OpenAIClient({ baseUrl: srv.url, ...FAST, env: { HR1_OPENAI_API_KEY: 'sk-right-0123456789' } });
  t.is(fallback.apiKeySource, 'HR1_OPENAI_API_KEY');
  t.is((await fallback.chat({ model: 'm', messages: user('ok') })).content, 'ok');
});

test('openai client - nothing listening is a retried network error, then exhausted', async (t) => {
  const srv = await startServer({ backend: echoBackend() });
  const url = srv.url;
  await srv.close();
  const c = new OpenAIClient({ baseUrl: url, ...FAST, maxRetries: 1 });
  const e = await t.throwsAsync(c.chat({ model: 'm', messages: user('x') }), { instanceOf: OpenAIRetriesExhaustedError });
  t.is(e.lastCode, 'OPENAI_NETWORK');
  t.regex(e.message, /could not reach http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: ECONNREFUSED; is the server running there\? check openai\.baseUrl/);
});

test('openai client - a 2xx that is not a chat completion gives OPENAI_BAD_RESPONSE', async (t) => {
  // a real HTTP server that speaks something else
  const other = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [] }));
  });
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => other.close(() => r())));
  other.unref();
  const c = new OpenAIClient({ baseUrl: `http://127.0.0.1:${(other.address() as AddressInfo).port}/v1`, ...FAST });
  const e = await t.throwsAsync(c.chat({ model: 'm', messages: user('x') }), { instanceOf: OpenAIBadResponseError });
  t.is(e.code, 'OPENAI_BAD_RESPONSE');
  t.regex(e.message, /answered 2xx but not a chat completion \(choices: .*\).*is openai\.baseUrl an OpenAI-compatible \/v1 endpoint\?/);
  t.is(c.stats().retries, 0);
});

test('openai options - every bad option is rejected with openai.<option> and what it must be', (t) => {
  const base = { baseUrl: 'http://127.0.0.1:8000/v1' };
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ baseUrl: 'localhost:8000' }, /^openai\.baseUrl: must be an http\(s\) URL .* got "localhost:8000"$/],
    [{ ...base, concurrency: 0 }, /^openai\.concurrency: must be a positive integer .* got 0$/],
    [{ ...base, concurrency: 1.5 }, /^openai\.concurrency: must be a positive integer/],
    [{ ...base, maxRetries: -1 }, /^openai\.maxRetries: must be a non-negative integer \(0 = no retries\), got -1$/],
    [{ ...base, timeoutMs: 0 }, /^openai\.timeoutMs: must be a positive duration: .* got 0$/],
    [{ ...base, timeoutMs: 'soon' }, /^openai\.timeoutMs: must be a positive duration: .* got "soon"$/],
    [{ ...base, backoffBaseMs: -5 }, /^openai\.backoffBaseMs: must be a non-negative duration/],
    [{ ...base, backoffCapMs: 'x' }, /^openai\.backoffCapMs: must be a non-negative duration/],
    [{ ...base, maxRetryAfterMs: [] }, /^openai\.maxRetryAfterMs: must be a non-negative duration.* got an array$/],
    [{ ...base, apiKeyEnv: 'my key' }, /^openai\.apiKeyEnv: must name an environment variable/],
    [{ ...base, seed: 0.5 }, /^openai\.seed: must be an integer/],
    [{ ...base, headers: { a: 1 } }, /^openai\.headers: must be an object of header names to strings/],
    [{ ...base, timeout: 5 }, /^openai: unknown option "timeout"; known options are baseUrl, concurrency/],
  ];
  for (const [o, re] of cases) {
    const e = t.throws(() => new OpenAIClient(o as never), { instanceOf: ConfigError }, JSON.stringify(o));
    t.regex(e.message, re, JSON.stringify(o));
    t.is(e.code, 'CONFIG');
  }
  const ok = new OpenAIClient({ ...base, timeoutMs: '30s', backoffCapMs: '2s', env: {} });
  t.like(ok.options, { timeoutMs: 30_000, backoffCapMs: 2_000, backoffBaseMs: 500, maxRetries: 4, concurrency: 8, apiKeyEnv: 'OPENAI_API_KEY' });
});
