import test from 'ava';
import type { Clock } from '../../../cluster/clock.ts';
import { OpenAIClient } from '../../../policies/targets/openai.ts';
import { clientStatsOf, makeModel } from '../../../policies/targets/make.ts';
import { latencyQuantile } from '../../../policies/targets/latency.ts';
import { echoBackend, startServer } from '../../../policies/targets/serve.ts';
import type { DecisionContext, EnvSession } from '../../../harness/types.ts';

/** a clock that moves 100 ms each time it is read: every answered attempt takes exactly 100 ms */
function steppingClock(): Clock {
  let t = 0;
  return { nowMs: () => (t += 100) };
}

const user = (content: string) => [{ role: 'user' as const, content }];

test('openai client stats - each attempt the server answered has a latency, failed answers included; unreachable ones none', async (t) => {
  const srv = await startServer({ backend: echoBackend(), failEvery: 2 });
  t.teardown(() => srv.close());
  const c = new OpenAIClient({ baseUrl: srv.url, backoffBaseMs: 1, backoffCapMs: 2, env: {}, clock: steppingClock() });
  for (let i = 0; i < 3; i++) await c.chat({ model: 'm', messages: user(`n${i}`) });
  const s = c.stats();
  // requests 2 and 4 were injected 500s: 5 attempts, all answered
  t.like(s, { calls: 3, requests: 5, retries: 2 });
  t.is(s.latency.count, 5);
  t.is(latencyQuantile(s.latency, 0.5), 100);
  t.is(latencyQuantile(s.latency, 0.99), 100);
  // nobody listens there: no answer, no latency
  const down = new OpenAIClient({ baseUrl: 'http://127.0.0.1:1/v1', maxRetries: 0, env: {}, clock: steppingClock() });
  await t.throwsAsync(down.chat({ model: 'm', messages: user('x') }));
  t.like(down.stats(), { requests: 1, failures: 1 });
  t.is(down.stats().latency.count, 0);
});

test('openai client stats - an endpoint model made from a spec exposes its client counters; a sim model has none', async (t) => {
  const srv = await startServer({ backend: echoBackend() });
  t.teardown(() => srv.close());
  const m = await makeModel(`openai:${srv.url}#echo`);
  const ctx: DecisionContext = { messages: user('go'), step: 0, env: 'alfworld', taskId: 't0', session: {} as EnvSession, seed: 0 };
  await m.decide(ctx);
  await m.decide(ctx);
  t.like(clientStatsOf(m), { calls: 2, requests: 2 });
  t.true(clientStatsOf(m)!.totalTokens > 0);
  t.is(clientStatsOf(m)!.latency.count, 2);
  t.is(clientStatsOf(await makeModel('sim/qwen-3b')), null);
});
