import test from 'ava';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EpisodeCache } from '../../../drivers/index.ts';
import { listTasks } from '../../../envs/registry.ts';
import { init } from '../../../cluster/init.ts';
import { canonicalJson, patchHash, toPatch } from '../../../harness/index.ts';
import { MissingEvaluationError, extractPacket, formatPacket, packetHash } from '../../../policies/engineer/index.ts';
import { abstainRows, buildSftDataset, makeBatches, patchParts, rewardGroup, rewardOf, type SftRow } from '../../../drivers/index.ts';

const target = 'sim/llama-3b';
const episodes = listTasks('alfworld').slice(0, 20).flatMap((taskId) => [1, 2].map((seed) => ({ taskId, seed })));
const HELPFUL = { rules: [{ hook: 'preAction', when: { pred: 'proposedRepeatsLast' }, effect: { type: 'block_and_prompt', message: 'Do not repeat the same action; you are stuck. Try something different.' } }] };
// fires only on SQL errors: on ALFWorld it never changes a context
const NOOP = { rules: [{ hook: 'preDecision', when: { pred: 'sqlError' }, effect: { type: 'hint', message: 'Fix the query.' } }] };

test('reward - a no-op patch scores exactly 0 on paired seeds; a known-helpful one scores above 0; the base runs once', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const cache = new EpisodeCache(':memory:');
    const spec = { env: 'alfworld', target, episodes, cache };
    const noop = await rewardOf(rt.cluster, { ...spec, patch: NOOP });
    t.true(noop.valid);
    t.is(noop.delta, 0);
    t.is(noop.base, noop.patched);
    t.deepEqual(noop.won && [noop.won.gained, noop.won.lost], [0, 0]);
    t.true(noop.base! > 0 && noop.base! < 1, `base success ${noop.base}`);
    const size = cache.size();
    const helpful = await rewardOf(rt.cluster, { ...spec, patch: HELPFUL });
    t.true(helpful.valid);
    t.true(helpful.delta > 0, `Δ ${helpful.delta}`);
    t.is(helpful.base, noop.base);
    t.is(helpful.patchHash, patchHash(toPatch(HELPFUL)));
    // the base came from the cache: only the patched episodes were added
    t.is(cache.size(), size + episodes.length);
    // a group runs the base once and scores each patch
    const g = await rewardGroup(rt.cluster, { ...spec, cache: null, patches: [NOOP, HELPFUL, { skills: 'oops' }] });
    t.deepEqual(g.results.map((r) => (r.ok ? r.reward.delta : null)), [0, helpful.delta, 0]);
    t.is(g.base.length, episodes.length);
  } finally {
    await rt.shutdown();
  }
});

test('reward - an invalid patch scores 0 and is flagged with its issues, nothing runs', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const cache = new EpisodeCache(':memory:');
    const r = await rewardOf(rt.cluster, { env: 'alfworld', target, episodes, cache, patch: { rules: [{ hook: 'init', effect: { type: 'block_and_prompt', message: 'x' } }] } });
    t.false(r.valid);
    t.is(r.delta, 0);
    t.is(r.base, null);
    t.regex(r.issues!.map((i) => i.path).join(' '), /rules\[0\]\.effect\.type/);
    t.is(cache.size(), 0);
    // a code hook that throws in the smoke episode is invalid too
    const thrower = await rewardOf(rt.cluster, { env: 'alfworld', target, episodes, cache, patch: { code: [{ hook: 'preDecision', source: 'function hook(ctx, nb) { throw new Error("boom"); }' }] } });
    t.false(thrower.valid);
    t.is(thrower.issues![0]!.code, 'PATCH_SMOKE');
  } finally {
    await rt.shutdown();
  }
});

test('reward - a target that fails is a missing evaluation (typed error), not a 0', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const e = await t.throwsAsync(rewardOf(rt.cluster, { env: 'alfworld', target: 'sim/no-such-profile', episodes: episodes.slice(0, 2), cache: null, patch: HELPFUL }, { rollout: { retries: 0 } }), { instanceOf: MissingEvaluationError });
    t.is(e!.side, 'base');
    t.is(e!.code, 'ENGINEER_EVAL_FAILED');
    t.regex(e!.message, /not 0/);
  } finally {
    await rt.shutdown();
  }
});

test('sft - rows carry provenance and only non-regressive proposals; the JSONL file holds exactly the rows', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const dir = mkdtempSync(join(tmpdir(), 'hr1-sft-'));
    const out = join(dir, 'sft.jsonl');
    const batches = makeBatches('alfworld', { count: 2, size: 12, seed: 3 });
    t.is(batches.length, 2);
    t.deepEqual(makeBatches('alfworld', { count: 2, size: 12, seed: 3 }), batches);
    const phases: string[] = [];
    const cache = new EpisodeCache(':memory:');
    // minDelta 0.05: non-regressive and at least one episode gained out of 12
    const { rows, summary } = await buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 4, out, cache, teacherSeed: 7, minDelta: 0.05, onProgress: (p) => phases.push(p.phase) });
    t.is(summary.proposals, 8);
    t.is(summary.kept, rows.length);
    t.true(summary.valid >= summary.kept);
    t.true(rows.length > 0);
    t.true(phases.includes('verify') && phases[phases.length - 1] === 'done');
    for (const r of rows) {
      t.true(r.delta > 0.05);
      t.is(r.target, target);
      t.is(r.env, 'alfworld');
      const b = batches.findIndex((x) => JSON.stringify(x) === JSON.stringify(r.batch));
      t.true(b >= 0);
      t.is(r.teacher.seed, 7 + b);
      t.is(r.packetHash, packetHash(r.packet));
      t.is(r.patchHash, patchHash(toPatch(r.patch)));
      t.true(Math.abs(r.delta - (r.patched - r.base)) < 1e-12);
    }
    const lines = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as SftRow);
    t.deepEqual(lines, JSON.parse(JSON.stringify(rows)));
    // the stored packet renders to the same text as a fresh extraction of the batch's base rollout
    t.true(formatPacket(lines[0]!.packet).startsWith('# failure packet v1'));
    // every proposal scored below the threshold was left out
    t.is(summary.meanDeltaKept, rows.reduce((n, r) => n + r.delta, 0) / rows.length);
    // same inputs → same dataset (served from the cache this time)
    const again = await buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 4, cache, teacherSeed: 7, minDelta: 0.05 });
    t.deepEqual(again.rows, rows);
    // verified on a second set of episode seeds: only proposals whose mean Δ stays above minDelta
    const twice = await buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 4, cache, teacherSeed: 7, minDelta: 0.05, verifySeeds: 2 });
    t.true(twice.rows.length > 0 && twice.rows.length <= rows.length, `${twice.rows.length} of ${rows.length}`);
    t.true(twice.rows.every((r) => rows.some((x) => x.patchHash === r.patchHash && x.packetHash === r.packetHash)));
    for (const r of twice.rows) {
      t.is(r.deltas?.length, 2);
      t.true(r.deltas![0]! > 0.05);
      t.true(Math.abs(r.delta - (r.deltas![0]! + r.deltas![1]!) / 2) < 1e-12);
      t.true(r.delta > 0.05);
    }
    t.true(rows.every((r) => r.deltas === undefined));
    // rule 'all': every verification above minDelta, a subset of the mean rule's rows on the same seeds
    const strict = await buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 4, cache, teacherSeed: 7, minDelta: 0.05, verifySeeds: 2, verifyRule: 'all' });
    t.true(strict.rows.every((r) => r.deltas!.length === 2 && r.deltas!.every((d) => d > 0.05)));
    t.true(strict.rows.every((r) => twice.rows.some((x) => x.patchHash === r.patchHash && x.packetHash === r.packetHash)));
    // …and every mean-rule row that passed both seeds is there too
    t.is(strict.rows.length, twice.rows.filter((r) => r.deltas!.every((d) => d > 0.05)).length);
    // minimize: each kept proposal shrinks to parts that still pass, never doing worse than the whole
    const small = await buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 4, cache, teacherSeed: 7, minDelta: 0.05, minimize: true });
    t.is(small.rows.length, rows.length, 'the same proposals pass; only their parts change');
    const whole = (r: SftRow) => rows.find((x) => x.packetHash === r.packetHash && x.teacher.index === r.teacher.index)!;
    for (const r of small.rows) {
      t.truthy(whole(r));
      t.true(r.delta >= whole(r).delta && r.delta > 0.05);
      t.true(patchParts(r.patch).length <= patchParts(whole(r).patch).length);
      t.is(r.completion, canonicalJson(r.patch));
    }
    t.true(small.summary.partsDropped > 0, "the sim target gives minimize something to drop");
    // each drop takes one part off the list
    t.is(small.summary.partsDropped, small.rows.reduce((n, r) => n + patchParts(whole(r).patch).length - patchParts(r.patch).length, 0));
    await t.throwsAsync(buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 4, cache, verifySeeds: 2, verifyRule: 'most' as never }), { message: /sft\.verifyRule must be one of mean, all/ });
    await t.throwsAsync(buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 4, cache, verifySeeds: 0 }), { message: /sft\.verifySeeds must be an integer in \[1, 8\]/ });
    await t.throwsAsync(buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 4, cache, kinds: ['lamp' as never] }), { message: /sft\.kinds: lamp is not a finding kind; use some of .*seen_target/ });
    await t.throwsAsync(buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 4, cache, kinds: [] }), { message: /sft\.kinds is empty/ });
    t.is(extractPacket([]).episodes.length, 0);
  } finally {
    await rt.shutdown();
  }
});

test('sft - abstain: where no proposal passes, each packet gets the empty patch, which scores exactly 0 on its batch', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const cache = new EpisodeCache(':memory:');
    const batches = makeBatches('alfworld', { count: 2, size: 8, seed: 5 });
    // Δ > 1 is impossible: nothing is kept, but every batch's packet is returned
    const ds = await buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target, batches, k: 2, cache, minDelta: 1 });
    t.is(ds.rows.length, 0);
    t.is(ds.packets.length, 2);
    const rows = abstainRows('alfworld', target, ds.packets);
    t.true(rows.length > 0 && rows.length <= 2);
    for (const r of rows) {
      t.deepEqual(r.patch, {});
      t.is(r.teacher.name, 'abstain');
      t.is(r.packetHash, packetHash(r.packet));
      t.true(r.packet.episodes.length > 0, 'a packet without failures teaches nothing');
      const scored = await rewardOf(rt.cluster, { env: 'alfworld', target, episodes: r.batch, cache, patch: r.patch });
      t.true(scored.valid);
      t.is(scored.delta, 0);
      t.is(scored.base, r.base);
    }
    // a packet with no failed episode is left out
    t.deepEqual(abstainRows('alfworld', target, [{ ...ds.packets[0]!, packet: extractPacket([]) }]), []);
  } finally {
    await rt.shutdown();
  }
});

test('sft - patchParts: all skills, each named rule, the unnamed rules together, each code hook', (t) => {
  const hint = (name?: string) => ({ ...(name ? { name } : {}), hook: 'preDecision' as const, when: { pred: 'nothingHappens' as const }, effect: { type: 'hint' as const, message: 'm' } });
  const p = { skills: ['a', 'b'], rules: [hint('x'), hint(), hint('y'), hint()], code: [{ hook: 'postFeedback' as const, source: 'function hook(ctx, nb) { return null; }' }] };
  const parts = patchParts(p as never);
  t.deepEqual(parts.map((q) => q.label), ['skills', 'rule x', 'rule y', 'unnamed rules', 'code 0']);
  t.false('skills' in parts[0]!.without);
  t.deepEqual(parts[1]!.without.rules!.map((r) => r.name ?? null), [null, 'y', null]);
  t.deepEqual(parts[3]!.without.rules!.map((r) => r.name), ['x', 'y']);
  t.false('code' in parts[4]!.without);
  t.deepEqual(patchParts({}), []);
});

test('reward - metric score measures WebShop\'s partial score on a learned target: a patch that fixes the query gains score that success alone misses', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const cache = new EpisodeCache(':memory:');
    const eps = listTasks('webshop', 'train').slice(0, 30).map((taskId) => ({ taskId, seed: 1 }));
    const spec = { env: 'webshop', target: 'lm/ws-s-256-srt-hi', episodes: eps, cache };
    const { composeSource } = await import('../../../policies/engineer/blocks.ts');
    const patch = { code: [{ name: 'query', hook: 'preAction', source: composeSource('preAction', [{ id: 'search_goal', params: [2] }, { id: 'select_options', params: [] }]) }] };
    const succ = await rewardOf(rt.cluster, { ...spec, patch });
    const score = await rewardOf(rt.cluster, { ...spec, patch }, { metric: 'score' });
    t.true(score.valid && succ.valid);
    // the same episodes (from the cache), read two ways
    t.deepEqual(score.won, succ.won);
    t.true(score.base! > succ.base!, `a mean score above the success rate (partial purchases): ${score.base} vs ${succ.base}`);
    t.not(score.delta, succ.delta);
    t.true(score.delta > 0, `Δ score ${score.delta}`);
    // exactly 0 for a patch that changes nothing
    t.is((await rewardOf(rt.cluster, { ...spec, patch: NOOP }, { metric: 'score' })).delta, 0);
  } finally {
    await rt.shutdown();
  }
});
