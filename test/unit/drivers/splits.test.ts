import test from 'ava';
import { SEED_SPACES, SplitOverlapError, assertDisjoint, describeSet, findOverlaps } from '../../../drivers/index.ts';

const eps = (tasks: string[], seed: number) => tasks.map((taskId) => ({ taskId, seed }));

test('splits - sets of one env that share a (task, seed) are found, with the count and examples', (t) => {
  const sft = [...eps(['a', 'b', 'c'], 0), ...eps(['a'], 1)];
  const packets = [...eps(['c', 'd'], 0), ...eps(['a'], 1), ...eps(['a'], 1)];
  const test_ = eps(['x', 'y'], 0);
  const o = findOverlaps([{ name: 'SFT', env: 'alfworld', episodes: sft }, { name: 'packets', env: 'alfworld', episodes: packets }, { name: 'test', env: 'alfworld', episodes: test_ }]);
  t.is(o.length, 1);
  t.is(o[0]!.a, 'SFT');
  t.is(o[0]!.b, 'packets');
  t.is(o[0]!.count, 2, 'a pair counted once however often it recurs');
  t.deepEqual(o[0]!.examples, [{ taskId: 'c', seed: 0 }, { taskId: 'a', seed: 1 }]);
  // the same task under another seed, or the same pair in another env, is no overlap
  t.deepEqual(findOverlaps([{ name: 'a', env: 'alfworld', episodes: eps(['a'], 0) }, { name: 'b', env: 'alfworld', episodes: eps(['a'], 1) }, { name: 'c', env: 'webshop', episodes: eps(['a'], 0) }]), []);
});

test('splits - assertDisjoint refuses an overlap with a typed error that names both sets, the pairs and the fix', (t) => {
  const e = t.throws(() => assertDisjoint([{ name: 'engineer SFT', env: 'webshop', episodes: eps(['goal-7'], 3) }, { name: 'test', env: 'webshop', episodes: eps(['goal-7', 'goal-8'], 3) }]), { instanceOf: SplitOverlapError });
  t.is(e!.code, 'SPLIT_OVERLAP');
  t.regex(e!.message, /webshop: the engineer SFT and test episodes share 1 \(task, seed\) pair \(goal-7 seed 3\)/);
  t.regex(e!.message, /must not be trained on the episodes it is evaluated on/);
  t.notThrows(() => assertDisjoint([{ name: 'a', env: 'webshop', episodes: eps(['goal-7'], 3) }]));
});

test('splits - the seed spaces are ordered apart, and a set is described by size and seed range', (t) => {
  t.true(SEED_SPACES.sft < SEED_SPACES.grpo && SEED_SPACES.grpo < SEED_SPACES.packets);
  t.deepEqual(describeSet({ name: 'p', env: 'alfworld', episodes: [...eps(['a', 'b'], 900_000), ...eps(['a'], 900_001)] }), { name: 'p', env: 'alfworld', episodes: 3, tasks: 2, seeds: [900_000, 900_001] });
  t.is(describeSet({ name: 'p', env: 'alfworld', episodes: [] }).seeds, null);
});

test('splits - a held-out reward (reward.on heldout) scores on tasks outside the packet batch, under seeds of its own, listed in splits.json', async (t) => {
  const { heldoutBatch } = await import('../../../drivers/index.ts');
  const { resolveTrainConfig, trainSplits, grpoBatch, grpoHeldoutBatch, sftVerifyBatches } = await import('../../../experiments/train.ts');
  const { makeBatches } = await import('../../../drivers/index.ts');
  const cfg = resolveTrainConfig(undefined, { env: 'alfworld', target: 'sim/qwen-3b', split: 'seen_dev', batchSize: 10, reward: { on: 'heldout', heldoutTasks: 20 }, sft: { batches: 3, verifySeeds: 3 }, grpo: { iterations: 2 } });
  const batches = makeBatches('alfworld', { count: 3, size: 10, split: 'seen_dev', seed: 0 });
  for (let b = 0; b < 3; b++) {
    const vs = sftVerifyBatches(cfg, 'alfworld', 'seen_dev', b, batches[b]!);
    t.is(vs.length, 2, 'verifySeeds − 1 held-out batches');
    const own = new Set(batches[b]!.map((e) => e.taskId));
    for (const v of vs) {
      t.is(v.length, 20);
      t.is(new Set(v.map((e) => e.taskId)).size, 20, 'each task once');
      t.false(v.some((e) => own.has(e.taskId)), 'no task of the packet batch');
      t.true(v.every((e) => e.seed >= SEED_SPACES.heldout && e.seed < SEED_SPACES.grpo));
    }
    t.notDeepEqual(vs[0], vs[1], 'the verifications draw other tasks');
  }
  const g = grpoBatch(cfg, 'alfworld', 'seen_dev', 1);
  const h = grpoHeldoutBatch(cfg, 'alfworld', 'seen_dev', 1, g);
  t.false(h.some((e) => g.some((x) => x.taskId === e.taskId)));
  t.deepEqual(grpoHeldoutBatch(cfg, 'alfworld', 'seen_dev', 1, g), h, 'deterministic');
  const s = trainSplits(cfg).envs.alfworld!;
  t.is(s.verify.length, 3 * 2 * 20, 'the held-out verifications are the verify set');
  t.true(h.every((e) => s.grpo.some((x) => x.taskId === e.taskId && x.seed === e.seed)), 'GRPO\'s held-out batch is in its set');
  // without heldout, verify keeps the batch's own tasks under other seeds
  const plain = trainSplits(resolveTrainConfig(undefined, { env: 'alfworld', target: 'sim/qwen-3b', split: 'seen_dev', batchSize: 10, sft: { batches: 3, verifySeeds: 2 }, grpo: { iterations: 2 } })).envs.alfworld!;
  t.deepEqual(new Set(plain.verify.map((e) => e.taskId)), new Set(plain.sft.map((e) => e.taskId)));
  // a split too small for the held-out batch is a typed error naming the fix
  t.throws(() => heldoutBatch('alfworld', { exclude: batches[0]!, size: 65, split: 'seen_dev', seed: 1 }), { message: /has 60 tasks outside the packet's batch, fewer than the 65 .* lower reward\.heldoutTasks/ });
});
