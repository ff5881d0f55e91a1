import test from 'ava';
import { EpisodeCache, rollout, summarizeRecords } from '../../../drivers/index.ts';
import { listTasks } from '../../../envs/registry.ts';
import { init } from '../../../cluster/init.ts';
import { canonicalJson, parsedPatch } from '../../../harness/index.ts';
import { rolloutKeys } from '../../../drivers/index.ts';
import { LM_SERVING_VERSION, SKETCH_DECODE_VERSION } from '../../../policies/targets/lm/zoo.ts';
import { BASELINES } from '../../../policies/targets/baselines.ts';

const episodes = listTasks('alfworld').slice(0, 12).flatMap((taskId) => [1, 2].map((seed) => ({ taskId, seed })));

test('rollout - the same config and seeds give the same records; the cache serves a repeat without running it', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const cache = new EpisodeCache(':memory:');
    const a = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/qwen-3b', episodes }, { cache: null });
    const b = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/qwen-3b', episodes }, { cache });
    t.is(canonicalJson(a.records), canonicalJson(b.records));
    const c = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/qwen-3b', episodes }, { cache });
    t.is(c.stats.cached, episodes.length);
    t.is(c.stats.ran, 0);
    t.is(canonicalJson(c.records), canonicalJson(a.records));
    // a different patch is a different key: not served from the cache
    const d = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/qwen-3b', episodes, patch: BASELINES.selfRefine }, { cache });
    t.is(d.stats.cached, 0);
    t.not(canonicalJson(d.records), canonicalJson(a.records));
    t.is(a.records.length, episodes.length);
    t.deepEqual(a.records.map((r) => [r.taskId, r.seed]), episodes.map((e) => [e.taskId, e.seed]), 'records in request order');
    const s = summarizeRecords(a.records);
    t.true(s.success > 0 && s.success < 1);
    // interventions: none without a patch; Self-Refine adds a hint before each decision and one after each step, forces nothing
    t.is(s.interventionRate, 0);
    t.is(s.hintTokensPerDecision, 0);
    const sd = summarizeRecords(d.records);
    t.is(sd.interventionRate, 0);
    t.true(sd.hintTokensPerDecision > 30, `${sd.hintTokensPerDecision}`);
  } finally {
    await rt.shutdown();
  }
});

test('rollout - ALFWorld steps through the env worker pool or an EnvActor give the same records as inline steps', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const few = episodes.slice(0, 8);
    const inline = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/gemma-3b', episodes: few }, { cache: null });
    const pooled = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/gemma-3b', episodes: few }, { cache: null, envThreads: 2 });
    t.is(canonicalJson(pooled.records), canonicalJson(inline.records));
    // and through an EnvActor (its own actor, possibly on another node), batched across episodes
    const viaActor = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/gemma-3b', episodes: few }, { cache: null, envActors: 1, envActorThreads: 2 });
    t.is(canonicalJson(viaActor.records), canonicalJson(inline.records));
    const st = await rt.cluster.status();
    t.true(st.some((h) => h.actors.some((a) => a.cls === 'EnvActor')), 'an EnvActor served the steps');
  } finally {
    await rt.shutdown();
  }
});

test('rollout - an invalid patch is refused before anything runs, with the field path', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const e = await t.throwsAsync(rollout(rt.cluster, { env: 'alfworld', target: 'sim/qwen-3b', episodes, patch: { rules: [{ hook: 'preAction', effect: { type: 'explode' } }] } }, { cache: null }));
    t.regex(e!.message, /rules\[0\]\.effect/);
  } finally {
    await rt.shutdown();
  }
});

test('rollout - a ParsedPatch gives the same keys, records and bytes as the raw patch; the actor gets it as canonical text + hash', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const few = episodes.slice(0, 10);
    const raw = BASELINES.selfRefine;
    const pp = parsedPatch(raw);
    t.deepEqual(rolloutKeys({ env: 'alfworld', target: 'sim/qwen-3b', episodes: few, patch: pp }), rolloutKeys({ env: 'alfworld', target: 'sim/qwen-3b', episodes: few, patch: raw }));
    t.is(rolloutKeys({ env: 'alfworld', target: 'sim/qwen-3b', episodes: few, patch: pp }).patchHash, pp.hash);
    const a = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/qwen-3b', episodes: few, patch: raw }, { cache: null, chunk: 3 });
    const b = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/qwen-3b', episodes: few, patch: pp }, { cache: null, chunk: 3 });
    t.is(JSON.stringify(b.records), JSON.stringify(a.records));
    t.true(b.records.every((r) => r.harness.layers[1] === pp.hash));
  } finally {
    await rt.shutdown();
  }
});

test('episode cache - a stored row that is not a record of today\'s shape is a miss', (t) => {
  const cache = new EpisodeCache(':memory:');
  const key = { env: 'alfworld', taskId: 't', seed: 0, target: 'x', patch: '', harness: 'h', envOptions: {} };
  cache.put('k1', key, { v: 1, env: 'alfworld', old: true } as never);
  t.is(cache.get('k1'), undefined);
  t.is(cache.misses, 1);
  t.is(cache.get('nothing'), undefined);
  t.is(cache.misses, 2);
  t.is(cache.hits, 0);
});

test('rollout keys - a sketch parser\'s episodes carry its decoding version (a decoder change is not served from the cache); other learned targets keep their keys', (t) => {
  const ep = [{ taskId: 'v0.2/dev/0', seed: 1 }];
  const sketch = rolloutKeys({ env: 'dbbench', target: 'lm/db-sketch-a', episodes: ep }).keys[0]!.target;
  t.true(sketch.includes(`/s${LM_SERVING_VERSION}-d${SKETCH_DECODE_VERSION}`), sketch);
  const seq = rolloutKeys({ env: 'dbbench', target: 'lm/db-s-384-vrt', episodes: ep }).keys[0]!.target;
  t.regex(seq, new RegExp(`/s${LM_SERVING_VERSION}(/|$)`));
  t.false(seq.includes(`-d${SKETCH_DECODE_VERSION}`), seq);
});
