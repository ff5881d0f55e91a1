import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { bootstrapGroups, bootstrapMean, bootstrapStrata, meanStd, pairedDelta } from '../../../experiments/report/index.ts';

function normal(rng: Rng, mu: number, sd: number): number {
  // Box–Muller from the seeded stream
  const u = Math.max(rng.next(), 1e-12);
  const v = rng.next();
  return mu + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

test('bootstrap - a 95% interval covers the true mean in about 95% of samples, with the normal width', (t) => {
  const rng = new Rng('coverage');
  const trials = 200;
  const n = 60;
  let covered = 0;
  let widths = 0;
  for (let i = 0; i < trials; i++) {
    const xs = Array.from({ length: n }, () => normal(rng, 0.3, 1));
    const ci = bootstrapMean(xs, { seed: i, resamples: 500 });
    if (ci.lo <= 0.3 && 0.3 <= ci.hi) covered++;
    widths += ci.hi - ci.lo;
  }
  const coverage = covered / trials;
  t.true(coverage >= 0.88 && coverage <= 0.99, `coverage ${coverage}`);
  const expected = (2 * 1.96) / Math.sqrt(n);
  const mean = widths / trials;
  t.true(Math.abs(mean - expected) / expected < 0.15, `mean width ${mean.toFixed(3)} vs ${expected.toFixed(3)}`);
});

test('bootstrap - same data and seed give the same interval; another seed another one', (t) => {
  const xs = Array.from({ length: 40 }, (_, i) => (i * 7919) % 13);
  const a = bootstrapMean(xs, { seed: 3 });
  const b = bootstrapMean(xs, { seed: 3 });
  const c = bootstrapMean(xs, { seed: 4 });
  t.deepEqual(a, b);
  t.notDeepEqual([a.lo, a.hi], [c.lo, c.hi]);
  t.is(a.mean, xs.reduce((s, x) => s + x, 0) / xs.length);
  t.true(a.lo < a.mean && a.mean < a.hi);
});

test('bootstrap - constant data have a zero-width interval; empty data give NaN', (t) => {
  const ci = bootstrapGroups([[1, 1], [1, 1], [1, 1]], { seed: 1 });
  t.deepEqual([ci.mean, ci.lo, ci.hi, ci.n], [1, 1, 1, 6]);
  t.true(Number.isNaN(bootstrapMean([]).mean));
});

test('bootstrap - resampling tasks widens the interval when seeds of one task agree', (t) => {
  // 20 tasks, each either always won or always lost over 5 seeds: the effective n is 20, not 100
  const groups = Array.from({ length: 20 }, (_, i) => Array<number>(5).fill(i % 2));
  const clustered = bootstrapGroups(groups, { seed: 1 });
  const flat = bootstrapMean(groups.flat(), { seed: 1 });
  t.is(clustered.mean, 0.5);
  t.true(clustered.hi - clustered.lo > 1.8 * (flat.hi - flat.lo), `${clustered.hi - clustered.lo} vs ${flat.hi - flat.lo}`);
});

test('bootstrap - strata: the mean of the envs\' means, each env resampled on its own', (t) => {
  const ci = bootstrapStrata([[[1], [1]], [[0], [0], [0], [0]]], { seed: 2 });
  t.is(ci.mean, 0.5);
  t.is(ci.lo, 0.5);
  t.is(ci.hi, 0.5);
});

test('pairedDelta - a constant shift has a point interval at the shift', (t) => {
  const rng = new Rng('paired');
  const base = [Array.from({ length: 30 }, () => [rng.next(), rng.next()])];
  const treated = base.map((g) => g.map((v) => v.map((x) => x + 0.1)));
  const d = pairedDelta(treated, base, { seed: 1 });
  t.true(Math.abs(d.mean - 0.1) < 1e-12 && Math.abs(d.lo - 0.1) < 1e-12 && Math.abs(d.hi - 0.1) < 1e-12);
});

test('pairedDelta - pairing makes the interval narrower than comparing two unpaired means', (t) => {
  const rng = new Rng('paired2');
  const base: number[][] = [];
  const treated: number[][] = [];
  for (let i = 0; i < 50; i++) {
    const task = normal(rng, 0, 1); // a task effect both sides share
    base.push([task + normal(rng, 0, 0.2)]);
    treated.push([task + 0.2 + normal(rng, 0, 0.2)]);
  }
  const paired = pairedDelta([treated], [base], { seed: 1 });
  const a = bootstrapGroups(treated, { seed: 1 });
  const b = bootstrapGroups(base, { seed: 2 });
  const unpairedWidth = Math.sqrt(((a.hi - a.lo) / 2) ** 2 + ((b.hi - b.lo) / 2) ** 2) * 2;
  t.true(paired.hi - paired.lo < unpairedWidth / 3, `${paired.hi - paired.lo} vs ${unpairedWidth}`);
  t.true(paired.lo > 0, 'a real shift of 0.2 with small noise is detected');
});

test('pairedDelta - refuses data that are not paired', (t) => {
  t.throws(() => pairedDelta([[[1, 0]]], [[[1]]]), { message: /seeds treated vs/ });
  t.throws(() => pairedDelta([[[1]]], [[[1], [0]]]), { message: /pair the same tasks/ });
});

test('meanStd - the sample standard deviation', (t) => {
  const r = meanStd([2, 4, 4, 4, 5, 5, 7, 9]);
  t.is(r.mean, 5);
  t.true(Math.abs(r.std - Math.sqrt(32 / 7)) < 1e-12);
  t.is(meanStd([3]).std, 0);
});
