import test from 'ava';
import { MissingEvaluationError } from '../../../policies/engineer/errors.ts';
import { scoredGroup } from '../../../experiments/train.ts';
import type { RewardResult } from '../../../drivers/index.ts';

const reward = (delta: number, valid = true): { ok: true; reward: RewardResult } => ({ ok: true, reward: { delta, base: 0.5, patched: 0.5 + delta, valid, patchHash: 'h', episodes: 8 } });
const missing = (msg: string) => ({ ok: false as const, error: new MissingEvaluationError('patched', msg, []) });

test('train group - a candidate whose evaluation is missing leaves the group instead of scoring 0', (t) => {
  const g = scoredGroup(3, [reward(0.25), missing('patched rollout: 8 of 8 episodes ended in model_error'), reward(-0.125, false), reward(0)]);
  t.deepEqual(g.kept, [0, 2, 3]);
  t.deepEqual(g.deltas, [0.25, -0.125, 0]);
  t.is(g.valid, 2);
  t.deepEqual(g.dropped.map((d) => d.index), [1]);
  t.regex(g.dropped[0]!.error, /model_error/);
  t.false(g.deltas.includes(Number.NaN));
});

test('train group - every evaluation missing stops training with a typed error', (t) => {
  const e = t.throws(() => scoredGroup(2, [missing('endpoint down'), missing('endpoint down')]));
  t.is((e as { code?: string }).code, 'TRAIN_EVAL_MISSING');
  t.regex(e!.message, /iteration 2: the evaluation of every candidate is missing \(first: .*endpoint down\); training stops rather than score them 0/);
});
