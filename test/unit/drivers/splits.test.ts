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
