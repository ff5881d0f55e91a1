/**
 * Target settings end to end: from targetOptions through rollout() (drivers/rollout.ts), the
 * TargetActor and makeModel to the HTTP requests an OpenAI-compatible server sees, and back
 * through the episode cache (the settings are part of its key). The server is a small scripted
 * node:http one that records every request body and answers DBBench's v0.2 protocol.
 */
import test from 'ava';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { init } from '../../../cluster/init.ts';
import { canonicalJson } from '../../../harness/index.ts';
import type { DecisionContext, EnvSession } from '../../../harness/types.ts';
import { EpisodeCache, rollout } from '../../../drivers/index.ts';
import { envFactory, listTasks } from '../../../envs/registry.ts';
import { closeAll } from '../../../envs/dbbench/index.ts';
import { makeModel } from '../../../policies/targets/make.ts';
import { OpenAIModel, OpenAIRetriesExhaustedError, OpenAITimeoutError } from '../../../policies/targets/openai.ts';
import { TargetOptionsError, resolveTargetOptions } from '../../../policies/targets/options.ts';
import { runExpSweep } from '../../../experiments/exp/index.ts';

type Body = Record<string, unknown> & { messages: { role: string; content: string | null }[] };
type Reply = { status?: number; delayMs?: number; message?: Record<string, unknown> };

interface Scripted {
  url: string;
  bodies: Body[];
  inFlight: number;
  maxInFlight: number;
  close(): Promise<void>;
}

/** A chat-completions server: `answer(body)` decides each reply; every body is recorded. */
async function scripted(t: { teardown(fn: () => Promise<void>): void }, answer: (b: Body) => Reply): Promise<Scripted> {
  const s = { bodies: [] as Body[], inFlight: 0, maxInFlight: 0 };
  const timers = new Set<NodeJS.Timeout>();
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Body;
      s.bodies.push(body);
      const r = answer(body);
      s.inFlight++;
      s.maxInFlight = Math.max(s.maxInFlight, s.inFlight);
      const send = () => {
        s.inFlight--;
        if (res.destroyed) return;
        const status = r.status ?? 200;
        const out = status === 200 ? { id: 'x', object: 'chat.completion', model: body.model, choices: [{ index: 0, message: { role: 'assistant', ...r.message }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } } : { error: { message: 'scripted failure' } };
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(out));
      };
      if (r.delayMs) {
        const tm = setTimeout(() => {
          timers.delete(tm);
          send();
        }, r.delayMs);
        timers.add(tm);
      } else send();
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    for (const tm of timers) clearTimeout(tm);
    srv.closeAllConnections();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  };
  t.teardown(close);
  return Object.assign(s, { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`, close });
}

const ANSWER = 'Action: Answer\nFinal Answer: ["1"]';
const OPERATION = 'Action: Operation\n```sql\nSELECT 1\n```';
/** the first decision of a v0.2 episode: only the pre-filled "Ok." turn is the assistant's so far */
const firstDecision = (b: Body) => b.messages.filter((m) => m.role === 'assistant').length === 1;
const episodes = listTasks('dbbench').slice(0, 3).map((taskId) => ({ taskId, seed: 1 }));

test.after.always(async () => {
  await closeAll();
});

test('target options - rollout: the same settings are served from the cache; a changed temperature misses every episode and reaches the server with the others', async (t) => {
  const srv = await scripted(t, () => ({ message: { content: ANSWER } }));
  const target = `openai:${srv.url}#Qwen/Qwen3-8B`;
  const dir = mkdtempSync(join(tmpdir(), 'hr1-target-options-'));
  const cache = new EpisodeCache(join(dir, 'episodes.sqlite'));
  const rt = await init({ inProcess: true });
  t.teardown(async () => {
    await rt.shutdown();
    cache.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const base = { topP: 0.9, maxTokens: 256, stop: '\n', extraBody: { chat_template_kwargs: { enable_thinking: false } } };
  const a = resolveTargetOptions(target, { ...base, temperature: 0.2 });
  const spec = { env: 'dbbench', target, episodes, targetOptions: { ...a } };

  const r1 = await rollout(rt.cluster, spec, { cache });
  t.like(r1.stats, { episodes: 3, cached: 0, ran: 3 });
  t.is(srv.bodies.length, 3, 'one decision per episode');
  for (const b of srv.bodies) t.like(b, { model: 'Qwen/Qwen3-8B', temperature: 0.2, top_p: 0.9, max_tokens: 256, stop: ['\n'], chat_template_kwargs: { enable_thinking: false }, seed: 1, stream: false });

  // same settings: every episode from the cache, nothing sent
  const r2 = await rollout(rt.cluster, { ...spec, targetOptions: { ...resolveTargetOptions(target, { ...base, temperature: 0.2 }) } }, { cache });
  t.like(r2.stats, { cached: 3, ran: 0 });
  t.is(srv.bodies.length, 3);
  t.is(canonicalJson(r2.records), canonicalJson(r1.records));

  // temperature changed: no episode cached, and the new requests carry the new temperature and the rest
  const b = resolveTargetOptions(target, { ...base, temperature: 0.7 });
  const r3 = await rollout(rt.cluster, { ...spec, targetOptions: { ...b } }, { cache });
  t.like(r3.stats, { cached: 0, ran: 3 });
  const seen = srv.bodies.slice(3);
  t.is(seen.length, 3);
  for (const x of seen) t.like(x, { temperature: 0.7, top_p: 0.9, max_tokens: 256, stop: ['\n'], chat_template_kwargs: { enable_thinking: false } });
  // and back to the first settings: cached again
  t.like((await rollout(rt.cluster, spec, { cache })).stats, { cached: 3, ran: 0 });
  // no settings is another key again (the defaults, not these)
  t.like((await rollout(rt.cluster, { env: 'dbbench', target, episodes }, { cache })).stats, { cached: 0, ran: 3 });
  t.false('temperature' in srv.bodies.at(-1)!, 'nothing set: no temperature sent');
});

test('target options - an endpoint concurrency above the default runs that many episodes at once on the actor; below it, the default', async (t) => {
  const srv = await scripted(t, () => ({ message: { content: ANSWER } }));
  const target = `openai:${srv.url}#m`;
  const rt = await init({ inProcess: true });
  t.teardown(() => rt.shutdown());
  const actorConcurrency = async () => {
    const names = (await rt.cluster.status(300)).flatMap((h) => h.actors.filter((a) => a.cls === 'TargetActor').map((a) => a.actorId));
    return names.map((n) => /-c(\d+)-/.exec(n)?.[1]).map(Number).sort((x, y) => x - y);
  };
  await rollout(rt.cluster, { env: 'dbbench', target, episodes, targetOptions: { ...resolveTargetOptions(target, { concurrency: 32 }) } }, { cache: null });
  t.deepEqual(await actorConcurrency(), [32]);
  await rollout(rt.cluster, { env: 'dbbench', target, episodes, targetOptions: { ...resolveTargetOptions(target, { concurrency: 4 }) } }, { cache: null });
  t.deepEqual(await actorConcurrency(), [16, 32]);
  // an explicit rollout option wins
  await rollout(rt.cluster, { env: 'dbbench', target, episodes, targetOptions: { ...resolveTargetOptions(target, { concurrency: 32 }) } }, { cache: null, concurrency: 8 });
  t.deepEqual(await actorConcurrency(), [8, 16, 32]);
});

test('target options - reasoning blocks and reasoning_content are stripped before the action is parsed (by default); --no-strip-reasoning keeps them', async (t) => {
  // the first decision thinks about an operation, then answers; later decisions answer
  const think = `<think>Maybe look first:\n${OPERATION}\n</think>\n${ANSWER}`;
  const srv = await scripted(t, (b) => ({ message: firstDecision(b) ? { content: think } : { content: ANSWER } }));
  const field = await scripted(t, (b) => ({ message: firstDecision(b) ? { content: ANSWER, reasoning_content: `Maybe look first:\n${OPERATION}\n` } : { content: ANSWER } }));
  const rt = await init({ inProcess: true });
  t.teardown(() => rt.shutdown());
  const few = episodes.slice(0, 2);
  for (const s of [srv, field]) {
    const target = `openai:${s.url}#m`;
    const stripped = await rollout(rt.cluster, { env: 'dbbench', target, episodes: few }, { cache: null });
    for (const r of stripped.records) {
      t.is(r.outcome.steps, 1, 'the answer ended the episode: the operation inside the reasoning was never parsed');
      t.is(r.steps[0]!.proposal, ANSWER);
    }
    const kept = await rollout(rt.cluster, { env: 'dbbench', target, episodes: few, targetOptions: { ...resolveTargetOptions(target, { stripReasoning: false }) } }, { cache: null });
    for (const r of kept.records) {
      t.is(r.outcome.steps, 2, 'kept: the parser saw the operation first');
      t.regex(r.steps[0]!.proposal ?? '', /^<think>Maybe look first:\nAction: Operation/);
      t.is(r.steps[0]!.action.includes('SELECT 1'), true);
    }
  }
});

function ctx(env: string, taskId: string, session: EnvSession = {} as EnvSession): DecisionContext {
  return { messages: [{ role: 'user', content: 'go' }], step: 0, env, taskId, session, seed: 3 };
}

test('target options - makeModel applies timeout, retries and concurrency to the client', async (t) => {
  const slow = await scripted(t, () => ({ delayMs: 5_000, message: { content: 'late' } }));
  const m1 = (await makeModel(`openai:${slow.url}#m`, { timeout: 150, retries: 0 })) as OpenAIModel;
  t.like(m1.client.options, { timeoutMs: 150, maxRetries: 0 });
  const e1 = await t.throwsAsync(m1.decide(ctx('dbbench', 'v0.2/dev/0')), { instanceOf: OpenAITimeoutError });
  t.is(e1!.timeoutMs, 150);

  const failing = await scripted(t, () => ({ status: 500 }));
  const m2 = (await makeModel(`openai:${failing.url}#m`, { retries: 2 })) as OpenAIModel;
  const e2 = await t.throwsAsync(m2.decide(ctx('dbbench', 'v0.2/dev/0')), { instanceOf: OpenAIRetriesExhaustedError });
  t.is(e2!.attempts, 3);
  t.is(failing.bodies.length, 3, 'the first attempt and 2 retries');

  const busy = await scripted(t, () => ({ delayMs: 30, message: { content: 'ok' } }));
  const m3 = (await makeModel(`openai:${busy.url}#m`, { concurrency: 2 })) as OpenAIModel;
  t.is(m3.client.options.concurrency, 2);
  const out = await Promise.all(Array.from({ length: 6 }, () => m3.decide(ctx('dbbench', 'v0.2/dev/0'))));
  t.deepEqual(out, Array(6).fill('ok'));
  t.true(busy.maxInFlight <= 2, `at most 2 requests in flight, saw ${busy.maxInFlight}`);
  t.true(m3.client.stats().maxInFlight <= 2);
});

test('target options - tools mode offers the env\'s function tools and turns a tool call into its text action (v0.2) or the calls (main-fc)', async (t) => {
  const call = (name: string, args: unknown): Record<string, unknown> => ({ content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name, arguments: JSON.stringify(args) } }] });
  let next = call('execute_sql', { query: 'SELECT 1' });
  const srv = await scripted(t, () => ({ message: next }));
  const model = await makeModel(`openai:${srv.url}#m`, { tools: true, extraBody: { tool_choice: 'required' } });
  const v02 = envFactory('dbbench', 'v0.2/dev/0').open(1);
  t.is(await model.decide(ctx('dbbench', 'v0.2/dev/0', v02)), OPERATION);
  t.deepEqual((srv.bodies[0]!.tools as { function: { name: string } }[]).map((x) => x.function.name), ['execute_sql', 'commit_final_answer']);
  t.is(srv.bodies[0]!.tool_choice, 'required', 'extraBody wins over the default tool_choice');
  next = call('commit_final_answer', { answers: ['42'] });
  t.is(await model.decide(ctx('dbbench', 'v0.2/dev/0', v02)), 'Action: Answer\nFinal Answer: ["42"]');
  const fcTask = listTasks('dbbench', 'main-fc/standard')[0]!;
  const fc = envFactory('dbbench', fcTask).open(1);
  const json = JSON.parse(await model.decide(ctx('dbbench', fcTask, fc))) as { tool_calls: { function: { name: string; arguments: string } }[] };
  t.is(json.tool_calls[0]!.function.name, 'commit_final_answer');
  t.deepEqual(JSON.parse(json.tool_calls[0]!.function.arguments), { answers: ['42'] });
  // an env without tools: a typed error (the CLI refuses --tools for it before anything starts)
  await t.throwsAsync(model.decide(ctx('alfworld', 'x')), { message: /tools mode, but alfworld has no function tools/ });
  // text mode (the default) sends no tools
  const plain = await makeModel(`openai:${srv.url}#m`, {});
  next = { content: 'hello' };
  t.is(await plain.decide(ctx('dbbench', 'v0.2/dev/0', v02)), 'hello');
  t.false('tools' in srv.bodies.at(-1)!);
});

test('target options - makeModel refuses settings the target kind does not take, naming the kind', async (t) => {
  await t.throwsAsync(makeModel('sim/qwen-3b', { temperature: 0.2 }), { instanceOf: TargetOptionsError, message: /does not apply to sim targets/ });
  await t.throwsAsync(makeModel('openai:http://127.0.0.1:1/v1#m', { temprature: 0.2 }), { instanceOf: TargetOptionsError, message: /unknown target setting; accepted: temperature, topP/ });
});

test('target options - hr1 exp: a targetOptions map reaches every rollout of its target; a changed setting runs the units again', async (t) => {
  const srv = await scripted(t, () => ({ message: { content: ANSWER } }));
  const other = await scripted(t, () => ({ message: { content: ANSWER } }));
  const a = `openai:${srv.url}#m`;
  const b = `openai:${other.url}#m`;
  const dir = mkdtempSync(join(tmpdir(), 'hr1-target-options-exp-'));
  const rt = await init({ inProcess: true });
  t.teardown(async () => {
    await rt.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });
  const input = (temperature: number) => ({
    out: dir,
    progress: 'silent' as const,
    envs: ['dbbench'],
    targets: [a, b],
    method: 'react',
    test: { tasks: 2, seeds: [0] },
    // top level: every target; the entry keyed by b's spec: b only, over the top level
    targetOptions: { temperature, maxTokens: 64, [b]: { temperature: 0.9, stop: 'END' } },
  });
  const io = { cluster: rt.cluster, stdout: () => {} };
  const r1 = await runExpSweep(input(0.1), io);
  t.is(r1.ran, 4, 'vanilla and react on each target');
  t.is(srv.bodies.length, 4);
  for (const x of srv.bodies) t.like(x, { temperature: 0.1, max_tokens: 64 });
  t.is(other.bodies.length, 4);
  for (const x of other.bodies) t.like(x, { temperature: 0.9, max_tokens: 64, stop: ['END'] });
  // the same settings: every unit is in the run folder
  const r2 = await runExpSweep(input(0.1), io);
  t.like(r2, { ran: 0, skipped: 4 });
  // a changed setting: the units run again, the new value reaches the server
  const r3 = await runExpSweep(input(0.4), io);
  t.is(r3.ran, 4);
  t.true(srv.bodies.slice(4).length === 4 && srv.bodies.slice(4).every((x) => x.temperature === 0.4));
  // b's own settings did not change: its episodes came from the run's cache
  t.is(other.bodies.length, 4);
});
