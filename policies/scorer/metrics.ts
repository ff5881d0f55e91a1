/** Small, exact statistics for the report and the tests. */
import { Rng } from '../../cluster/rng.ts';

/** ROC AUC of scores against binary labels (ties count half); NaN when one class is absent. */
export function auc(scores: readonly number[], labels: readonly boolean[]): number {
  const idx = scores.map((s, i) => [s, i] as const).sort((a, b) => a[0] - b[0]);
  // average ranks over ties
  const rank = new Array<number>(scores.length);
  for (let i = 0; i < idx.length; ) {
    let j = i;
    while (j + 1 < idx.length && idx[j + 1]![0] === idx[i]![0]) j++;
    for (let m = i; m <= j; m++) rank[idx[m]![1]] = (i + j) / 2 + 1;
    i = j + 1;
  }
  const pos = labels.filter(Boolean).length;
  const neg = labels.length - pos;
  if (pos === 0 || neg === 0) return Number.NaN;
  let sum = 0;
  labels.forEach((l, i) => {
    if (l) sum += rank[i]!;
  });
  return (sum - (pos * (pos + 1)) / 2) / (pos * neg);
}

export function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN;
}

/** Pearson correlation of ranks (ties averaged). */
export function spearman(a: readonly number[], b: readonly number[]): number {
  const ranks = (xs: readonly number[]): number[] => {
    const idx = xs.map((x, i) => [x, i] as const).sort((p, q) => p[0] - q[0]);
    const r = new Array<number>(xs.length);
    for (let i = 0; i < idx.length; ) {
      let j = i;
      while (j + 1 < idx.length && idx[j + 1]![0] === idx[i]![0]) j++;
      for (let m = i; m <= j; m++) r[idx[m]![1]] = (i + j) / 2;
      i = j + 1;
    }
    return r;
  };
  const ra = ranks(a);
  const rb = ranks(b);
  const ma = mean(ra);
  const mb = mean(rb);
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < ra.length; i++) {
    num += (ra[i]! - ma) * (rb[i]! - mb);
    da += (ra[i]! - ma) ** 2;
    db += (rb[i]! - mb) ** 2;
  }
  return da && db ? num / Math.sqrt(da * db) : Number.NaN;
}

/** `n` seeded bootstrap resamples of the mean of `xs`, sorted ascending (RNG label `bootstrap|seed`). */
export function resampledMeans(xs: readonly number[], seed: number | string, n: number): number[] {
  const rng = new Rng(`bootstrap|${seed}`);
  const means: number[] = [];
  for (let b = 0; b < n; b++) {
    let s = 0;
    for (let i = 0; i < xs.length; i++) s += xs[rng.int(xs.length)]!;
    means.push(s / xs.length);
  }
  return means.sort((a, b) => a - b);
}

/** Seeded percentile bootstrap of the mean over units: [lo, hi] at 95%. */
export function bootstrapCI(xs: readonly number[], o: { seed: number | string; resamples?: number }): [number, number] {
  if (xs.length === 0) return [Number.NaN, Number.NaN];
  const n = o.resamples ?? 1000;
  const means = resampledMeans(xs, o.seed, n);
  return [means[Math.floor(0.025 * (n - 1))]!, means[Math.ceil(0.975 * (n - 1))]!];
}
