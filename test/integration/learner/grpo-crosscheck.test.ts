import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { LearnerProcess, grpoLoss, type GrpoInput } from '../../../learner/index.ts';

let lp: LearnerProcess;
test.before(async () => {
  lp = await LearnerProcess.start();
});
test.after.always(async () => lp?.close());

function randomCase(seed: number): Required<Pick<GrpoInput, 'logprobs' | 'oldLogprobs' | 'rewards' | 'groupIds' | 'refLogprobs'>> & { klCoef: number; epsLow: number; epsHigh: number; clipC: number; stdFloor?: number } {
  const rng = new Rng(seed);
  const n = 12;
  const logprobs: number[][] = [];
  const oldLogprobs: number[][] = [];
  const refLogprobs: number[][] = [];
  for (let i = 0; i < n; i++) {
    const len = rng.int(7); // uneven, some empty
    logprobs.push(Array.from({ length: len }, () => -4 * rng.next()));
    // wide differences so that clipping, dual clipping and the ±20 clamp all occur
    oldLogprobs.push(logprobs[i]!.map((x) => x + (rng.chance(0.3) ? 30 * (rng.next() - 0.5) * 2 : 1.5 * (rng.next() - 0.5))));
    refLogprobs.push(logprobs[i]!.map((x) => x + (rng.next() - 0.5)));
    // a ratio of e² on every third sample: ε-clipped when A > 0, dual-clipped when A < 0
    if (i % 3 === 0) {
      logprobs[i]!.push(-1);
      oldLogprobs[i]!.push(-3);
      refLogprobs[i]!.push(-1.2);
    }
  }
  const rewards = Array.from({ length: n }, () => rng.int(3) / 2);
  rewards[0] = 0; // group g0 (0, 3, 6): sample 0 below the mean, sample 3 above
  rewards[3] = 1;
  const groupIds = Array.from({ length: n }, (_, i) => (i < 9 ? `g${i % 3}` : i === 9 ? 'solo' : 'same'));
  rewards[10] = rewards[11] = 0.5; // group 'same': equal rewards
  // case 3 floors the group std above every group's own (rewards in {0, 0.5, 1}: std ≤ 0.58)
  return { logprobs, oldLogprobs, refLogprobs, rewards, groupIds, klCoef: 0.05, epsLow: 0.2, epsHigh: 0.28, clipC: 3, ...(seed === 3 ? { stdFloor: 0.9 } : {}) };
}

for (const seed of [1, 2, 3]) {
  test(`grpo cross-check - grpo.py and grpo.ts agree within 1e-6 on every value (case ${seed})`, async (t) => {
    const c = randomCase(seed);
    const ts = grpoLoss(c);
    const py = await lp.grpoMath(c);
    const flat = (x: number[][]) => x.flat();
    const pairs: [string, number[], number[]][] = [
      ['advantages', ts.advantages, py.advantages],
      ['ratio', flat(ts.ratio), flat(py.ratio)],
      ['perTokenLoss', flat(ts.perTokenLoss), flat(py.perTokenLoss)],
      ['scalars', [ts.pgLoss, ts.clipFrac, ts.dualClipFrac, ts.kl, ts.loss], [py.pgLoss, py.clipFrac, py.dualClipFrac, py.kl, py.loss]],
    ];
    for (const [what, a, b] of pairs) {
      t.is(a.length, b.length, what);
      // relative for the huge exp(±20) ratios, absolute elsewhere
      a.forEach((x, i) => t.true(Math.abs(x - b[i]!) <= 1e-6 * Math.max(1, Math.abs(x)), `${what}[${i}]: ts ${x} py ${b[i]}`));
    }
    t.true(ts.clipFrac > 0 && ts.dualClipFrac > 0, 'the case exercises both clips');
    t.is(ts.advantages[9], 0);
    if (c.stdFloor !== undefined) {
      // the floor shrinks every advantage against the plain group std
      const plain = grpoLoss({ ...c, stdFloor: 0 }).advantages;
      ts.advantages.forEach((a, i) => t.true(Math.abs(a) <= Math.abs(plain[i]!) * 0.99 || a === 0, `advantage ${i}: ${a} vs ${plain[i]}`));
      t.true(ts.advantages.some((a) => a !== 0));
    }
    t.deepEqual(ts.advantages.slice(10), [0, 0]);
  });
}
