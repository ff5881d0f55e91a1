import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { init } from '../../cluster/init.ts';
import { EpisodeCache, RolloutInfraError, rollout, rolloutKeys } from '../../drivers/index.ts';
import { listTasks } from '../../envs/registry.ts';
import { canonicalJson, type EpisodeRecord } from '../../harness/index.ts';
import { serveLocal } from '../../policies/targets/serve-local.ts';

const episodes = listTasks('alfworld').slice(0, 6).map((taskId) => ({ taskId, seed: 5 }));
const essence = (rs: EpisodeRecord[]) => canonicalJson(rs.map((r) => ({ t: r.taskId, s: r.seed, steps: r.steps.map((x) => [x.action, x.observation]), o: r.outcome })));

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

// these tests start an embedded nats-server and HTTP servers: one at a time
test.serial('infra - an endpoint down, then up: its episodes are re-run, never cached as failures, and equal a clean run', async (t) => {
  const port = await freePort();
  const target = `openai:http://127.0.0.1:${port}/v1#sim/llama-3b`;
  const dir = mkdtempSync(join(tmpdir(), 'hr1-infra-'));
  const rt = await init({});
  let srv: Awaited<ReturnType<typeof serveLocal>> | undefined;
  try {
    const cache = new EpisodeCache(join(dir, 'episodes.sqlite'));
    const logs: string[] = [];
    // nothing listens on the port: every episode ends in model_error; the endpoint comes up once the rollout said so
    const r = await rollout(rt.cluster, { env: 'alfworld', target, episodes }, {
      cache,
      infraBackoffMs: 300,
      infraRetries: 4,
      log: (l) => {
        logs.push(l);
        if (/infra error/.test(l) && !srv) void serveLocal('sim/llama-3b', { env: 'alfworld', port }).then((s) => (srv = s));
      },
    });
    t.true(r.stats.rerun >= episodes.length, `episodes were run again (${r.stats.rerun}); ${logs.join(' | ')}`);
    t.true(logs.some((l) => /model_error/.test(l)), logs.join('\n'));
    t.true(r.records.every((x) => x.outcome.status !== 'model_error'));
    // the clean run, on the endpoint that was up all along
    const clean = await rollout(rt.cluster, { env: 'alfworld', target, episodes }, { cache: null });
    t.is(essence(r.records), essence(clean.records));
    // the cache holds exactly the good records: a rerun is all cached and the same
    const again = await rollout(rt.cluster, { env: 'alfworld', target, episodes }, { cache });
    t.is(again.stats.cached, episodes.length);
    t.is(essence(again.records), essence(clean.records));
    cache.close();
  } finally {
    await srv?.close();
    await rt.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.serial('infra - an endpoint that stays down: the rollout fails with a typed error naming the status and the first error, and caches nothing', async (t) => {
  const port = await freePort();
  const target = `openai:http://127.0.0.1:${port}/v1#sim/llama-3b`;
  const dir = mkdtempSync(join(tmpdir(), 'hr1-infra-'));
  const rt = await init({});
  try {
    const cache = new EpisodeCache(join(dir, 'episodes.sqlite'));
    const few = episodes.slice(0, 2);
    const e = await t.throwsAsync(rollout(rt.cluster, { env: 'alfworld', target, episodes: few }, { cache, infraBackoffMs: 50, infraRetries: 1 }));
    t.true(e instanceof RolloutInfraError, String(e));
    const err = e as RolloutInfraError;
    t.is(err.code, 'ROLLOUT_INFRA');
    t.is(err.failures[0]?.status, 'model_error');
    t.is(err.failures[0]?.count, 2);
    t.regex(err.message, /2 of 2 episodes ended in an infra error in each of 2 attempts: model_error ×2 \(first: .* seed 5: .*127\.0\.0\.1/);
    t.is(cache.size(), 0, 'nothing cached');
    for (const h of rolloutKeys({ env: 'alfworld', target, episodes: few }).hashes) t.is(cache.get(h), undefined);
    cache.close();
  } finally {
    await rt.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.serial('infra - hr1 eval against an endpoint that is down exits non-zero with the first errors, no stack, and caches nothing', async (t) => {
  const { hr1 } = await import('./processes.ts');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'hr1-infra-'));
  try {
    const cachePath = join(dir, 'episodes.sqlite');
    const p = hr1(['eval', '--env', 'alfworld', '--target', `openai:http://127.0.0.1:${port}/v1#m`, '--tasks', '2', '--target-retries', '0', '--cache-path', cachePath, '--in-process']);
    const code = await p.exited;
    t.not(code, 0, p.out());
    t.regex(p.out(), /ROLLOUT_INFRA/);
    t.regex(p.out(), /2 of 2 episodes ended in an infra error in each of 4 attempts: model_error ×2/);
    t.regex(p.out(), /running them again in 1000 ms \(1\/3\)/);
    t.notRegex(p.out(), /\n\s+at /, 'no stack trace');
    t.notRegex(p.out(), /0\.0 ?%/, 'no success rate reported');
    const cache = new EpisodeCache(cachePath);
    t.is(cache.size(), 0);
    cache.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
