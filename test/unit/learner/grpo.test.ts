import test from 'ava';
import { groupAdvantages, grpoLoss, k3, ratio, tokenLoss, tokenMean } from '../../../learner/grpo.ts';

const close = (t: { true: (b: boolean, m?: string) => void }, a: number, b: number, tol = 1e-9, what = ''): void => t.true(Math.abs(a - b) <= tol, `${what} ${a} ≠ ${b} (tol ${tol})`);

test('advantages - two rewards in one group: ±0.5/(√0.5 + 1e-6) with the unbiased std', (t) => {
  const a = groupAdvantages([1, 0], ['g', 'g']);
  close(t, a[0]!, 0.5 / (Math.SQRT1_2 + 1e-6));
  close(t, a[0]!, 0.7071057811, 1e-9);
  close(t, a[1]!, -0.7071057811, 1e-9);
});

test('advantages - the std is the unbiased one (n − 1), not the population std', (t) => {
  // mean 2.5; unbiased var = (2.25 + 0.25 + 0.25 + 2.25) / 3 = 5/3; population var would be 1.25
  const a = groupAdvantages([1, 2, 3, 4], [0, 0, 0, 0]);
  const std = Math.sqrt(5 / 3);
  close(t, a[0]!, -1.5 / (std + 1e-6));
  close(t, a[3]!, 1.5 / (std + 1e-6));
  close(t, a[0]!, -1.161894, 1e-6);
  t.true(Math.abs(a[0]! - -1.5 / Math.sqrt(1.25)) > 0.1);
});

test('advantages - a group of one gives 0 (no baseline), whatever the reward', (t) => {
  t.deepEqual(groupAdvantages([5], ['solo']), [0]);
  t.deepEqual(groupAdvantages([1, 0, -3], ['a', 'a', 'b']).slice(2), [0]);
});

test('advantages - a group of equal rewards gives exactly 0', (t) => {
  t.deepEqual(groupAdvantages([0.1, 0.1, 0.1], ['x', 'x', 'x']), [0, 0, 0]);
  t.deepEqual(groupAdvantages([0, 0], [1, 1]), [0, 0]);
});

test('advantages - groups are normalised apart, interleaved in the batch', (t) => {
  const a = groupAdvantages([1, 10, 0, 20], ['a', 'b', 'a', 'b']);
  const u = 0.5 / (Math.SQRT1_2 + 1e-6);
  const v = 5 / (Math.sqrt(50) + 1e-6);
  close(t, a[0]!, u);
  close(t, a[2]!, -u);
  close(t, a[1]!, -v);
  close(t, a[3]!, v);
});

test('ratio - exp of the log-prob difference, clamped to ±20', (t) => {
  close(t, ratio(Math.log(1.5), 0), 1.5, 1e-12);
  close(t, ratio(-1, -1), 1, 0);
  t.is(ratio(100, 0), Math.exp(20));
  t.is(ratio(-100, 0), Math.exp(-20));
  t.is(ratio(0, 1e9), Math.exp(-20));
});

test('clip - A > 0: the ratio is clipped above at 1+ε_high, not below', (t) => {
  const up = tokenLoss(Math.log(1.5), 0, 1);
  close(t, up.loss, -1.2, 1e-12);
  t.true(up.clipped);
  const down = tokenLoss(Math.log(0.5), 0, 1);
  close(t, down.loss, -0.5, 1e-12);
  t.false(down.clipped);
});

test('clip - A < 0: the ratio is clipped below at 1−ε_low, not above (until the dual clip)', (t) => {
  const down = tokenLoss(Math.log(0.5), 0, -1);
  close(t, down.loss, 0.8, 1e-12);
  t.true(down.clipped);
  const up = tokenLoss(Math.log(1.5), 0, -1);
  close(t, up.loss, 1.5, 1e-12);
  t.false(up.clipped);
  t.false(up.dualClipped);
});

test('clip - ε_low and ε_high apply separately', (t) => {
  close(t, tokenLoss(Math.log(1.5), 0, 1, { epsLow: 0.2, epsHigh: 0.28 }).loss, -1.28, 1e-12);
  close(t, tokenLoss(Math.log(0.5), 0, -2, { epsLow: 0.1, epsHigh: 0.28 }).loss, 2 * 0.9, 1e-12);
  close(t, tokenLoss(0, 0, 0.7).loss, -0.7, 1e-12);
});

test('dual clip - for A < 0 the loss is bounded by −A·c (c = 3)', (t) => {
  const r = tokenLoss(Math.log(5), 0, -1);
  close(t, r.loss, 3, 1e-12);
  t.true(r.dualClipped);
  close(t, tokenLoss(Math.log(5), 0, -2).loss, 6, 1e-12);
  close(t, tokenLoss(Math.log(5), 0, -1, { clipC: 4 }).loss, 4, 1e-12);
  // just under the bound: no dual clip
  const under = tokenLoss(Math.log(2.9), 0, -1);
  close(t, under.loss, 2.9, 1e-12);
  t.false(under.dualClipped);
});

test('dual clip - does not apply to A > 0', (t) => {
  const r = tokenLoss(Math.log(5), 0, 1);
  close(t, r.loss, -1.2, 1e-12);
  t.false(r.dualClipped);
});

test('token-mean - over every valid token of the batch, not the mean of row means', (t) => {
  t.is(tokenMean([[1, 2, 3], [4]]), 10 / 4);
  t.not(tokenMean([[1, 2, 3], [4]]), (2 + 4) / 2);
  t.is(tokenMean([[], [5, 7]]), 6);
  t.is(tokenMean([[], []]), 0);
});

test('k3 - exp(ref − logp) − (ref − logp) − 1, zero at equality, clamped at 10', (t) => {
  close(t, k3(-1, -2), Math.exp(-1), 1e-12);
  close(t, k3(-2, -1), Math.E - 2, 1e-12);
  t.is(k3(-0.3, -0.3), 0);
  t.is(k3(-50, 0), 10);
  t.true(k3(-1, -1.5) >= 0);
});

test('grpoLoss - uneven lengths: on-policy loss is the token-weighted −A, so longer samples weigh more', (t) => {
  const lp = [[-1, -2, -3], [-0.5]];
  const out = grpoLoss({ logprobs: lp, oldLogprobs: lp, rewards: [1, 0], groupIds: [0, 0] });
  const a = 0.5 / (Math.SQRT1_2 + 1e-6);
  t.deepEqual(out.ratio, [[1, 1, 1], [1]]);
  close(t, out.pgLoss, (3 * -a + 1 * a) / 4);
  close(t, out.pgLoss, -0.3535528906, 1e-9);
  t.is(out.clipFrac, 0);
  t.is(out.kl, 0);
  t.is(out.loss, out.pgLoss);
});

test('grpoLoss - clip fractions and the KL term with a coefficient', (t) => {
  const out = grpoLoss({
    logprobs: [[Math.log(1.5), 0], [Math.log(5)]],
    oldLogprobs: [[0, 0], [0]],
    rewards: [1, 0],
    groupIds: ['g', 'g'],
    refLogprobs: [[0, 0], [0]],
    klCoef: 0.5,
  });
  const a = 0.5 / (Math.SQRT1_2 + 1e-6);
  // sample 0 (A = a): token 0 clipped at 1.2, token 1 ratio 1; sample 1 (A = −a): ratio 5 → dual clip 3a
  close(t, out.perTokenLoss[0]![0]!, -1.2 * a);
  close(t, out.perTokenLoss[0]![1]!, -a);
  close(t, out.perTokenLoss[1]![0]!, 3 * a);
  close(t, out.pgLoss, (-1.2 * a - a + 3 * a) / 3);
  close(t, out.clipFrac, 1 / 3, 1e-12); // only token 0: for A < 0 and ρ > 1+ε the ε-clip is not the max (verl's pg_clipfrac)
  close(t, out.dualClipFrac, 1 / 3, 1e-12);
  const kl = (k3(Math.log(1.5), 0) + 0 + k3(Math.log(5), 0)) / 3;
  close(t, out.kl, kl);
  close(t, out.loss, out.pgLoss + 0.5 * kl);
});

test('grpoLoss - refuses mismatched shapes with the sample named', (t) => {
  const e = t.throws(() => grpoLoss({ logprobs: [[-1, -2]], oldLogprobs: [[-1]], rewards: [1], groupIds: [0] }));
  t.regex(e!.message, /sample 0 has 2 logprobs but 1 old/);
});
