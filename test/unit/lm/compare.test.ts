/**
 * The paired figure of `hr1 zoo compare` (policies/targets/lm/compare.ts): B − A per task, its
 * bootstrap interval and signs, and which env two models are compared on.
 */
import test from 'ava';
import { compareEnv, formatZooComparison, pairedFigure, type ZooComparison } from '../../../policies/targets/lm/compare.ts';
import { isLmTargetError } from '../../../policies/targets/lm/errors.ts';

test('pairedFigure: mean of B − A per task, signs counted, the interval around the mean', (t) => {
  const f = pairedFigure([0, 1, 0.5, 0], [1, 1, 0, 1], 's');
  t.is(f.a, 0.375);
  t.is(f.b, 0.75);
  t.is(f.diff, 0.375);
  t.is(f.above, 2);
  t.is(f.below, 1);
  t.is(f.same, 1);
  t.true(f.diffCi[0] <= f.diff && f.diff <= f.diffCi[1]);
  t.true(f.diffCi[0] >= -0.5 && f.diffCi[1] <= 1);
  // the same inputs and seed give the same interval; a shift of every task shifts it
  t.deepEqual(pairedFigure([0, 1, 0.5, 0], [1, 1, 0, 1], 's').diffCi, f.diffCi);
  const all = pairedFigure([0, 0, 0], [1, 1, 1], 's');
  t.deepEqual(all.diffCi, [1, 1]);
});

test('pairedFigure refuses figures of unequal length', (t) => {
  const e = t.throws(() => pairedFigure([0, 1], [1], 's'));
  t.true(isLmTargetError(e));
  t.regex(e!.message, /unequal/);
});

test('compareEnv: the one shared env, --env checked against both, none shared is an error', (t) => {
  t.is(compareEnv('alf-s-256-ecrt-xl', 'alf-s-256-ecrt-xl-da3', undefined), 'alfworld');
  t.is(compareEnv('ws-s-256-a', 'ws-s-256-b', 'webshop'), 'webshop');
  t.regex(t.throws(() => compareEnv('alf-s-256-ecrt-xl', 'db-s-384-vrt', undefined))!.message, /share no env/);
  t.regex(t.throws(() => compareEnv('alf-s-256-ecrt-xl', 'alf-s-256-ecrt-b', 'dbbench'))!.message, /lm\/alf-s-256-ecrt-xl does not play dbbench/);
  t.regex(t.throws(() => compareEnv('alf-s-256-ecrt-xl', 'alf-s-256-ecrt-b', 'chess' as never))!.message, /--env must be one of/);
});

test('formatZooComparison says whether the interval is clear of 0, and the score only on WebShop', (t) => {
  const f = (lo: number, hi: number) => ({ a: 0.3, b: 0.4, diff: 0.1, diffCi: [lo, hi] as [number, number], above: 5, below: 1, same: 4 });
  const c = { a: 'x', b: 'y', env: 'alfworld', tasks: 10, seeds: 1, episodes: 10, success: f(0.02, 0.2), score: f(0.02, 0.2) } as unknown as ZooComparison;
  const s = formatZooComparison(c);
  t.regex(s, /10 tasks × 1 seed \(/);
  t.regex(s, /B − A \+10\.0 points \[\+2\.0, \+20\.0\] \(B above A, the interval clear of 0\)/);
  t.notRegex(s, /score:/);
  t.regex(formatZooComparison({ ...c, success: f(-0.05, 0.2) }), /not resolved/);
  t.regex(formatZooComparison({ ...c, env: 'webshop' } as ZooComparison), /score: /);
});
