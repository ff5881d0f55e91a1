/**
 * Seeded percentile bootstrap over tasks and seeds. Data are strata (envs) of groups (tasks) of
 * values (one per episode seed; a paired Δ is already a difference per episode). A replicate
 * resamples the tasks of each stratum with replacement, then the seeds within each drawn task,
 * and takes the mean of the strata's means. Same data and seed → the same interval.
 */
import { Rng } from '../../cluster/rng.ts';

/** Resamples per interval. @default 1000 */
export const DEFAULT_RESAMPLES = 1000;
/** Confidence level. @default 0.95 */
export const DEFAULT_LEVEL = 0.95;

export interface BootstrapOptions {
  /** @default DEFAULT_RESAMPLES */
  resamples?: number;
  /** @default DEFAULT_LEVEL */
  level?: number;
  /** seed of the resampling (string or number). @default 0 */
  seed?: number | string;
}

/** A point estimate with its percentile interval. */
export interface Interval {
  mean: number;
  lo: number;
  hi: number;
  /** the number of values it rests on */
  n: number;
}

function quantile(sorted: readonly number[], q: number): number {
  // linear interpolation between order statistics (type 7, as numpy's default)
  const h = (sorted.length - 1) * q;
  const i = Math.floor(h);
  const a = sorted[i]!;
  const b = sorted[Math.min(i + 1, sorted.length - 1)]!;
  return a + (h - i) * (b - a);
}

function meanOf(xs: readonly number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return xs.length ? s / xs.length : NaN;
}

/** Mean of strata means over strata[s][task][seed]. */
function statistic(strata: readonly (readonly (readonly number[])[])[]): number {
  return meanOf(strata.map((groups) => meanOf(groups.flat())));
}

/**
 * The interval of the mean of the strata's means, resampling tasks then seeds within tasks.
 *
 * @example
 * bootstrapStrata([[[1, 0], [1, 1], [0, 0]]], { seed: 1 }) // one env, three tasks × two seeds
 */
export function bootstrapStrata(strata: readonly (readonly (readonly number[])[])[], o: BootstrapOptions = {}): Interval {
  const resamples = o.resamples ?? DEFAULT_RESAMPLES;
  const level = o.level ?? DEFAULT_LEVEL;
  const live = strata.map((g) => g.filter((x) => x.length > 0)).filter((g) => g.length > 0);
  const n = live.reduce((a, g) => a + g.reduce((b, x) => b + x.length, 0), 0);
  if (live.length === 0) return { mean: NaN, lo: NaN, hi: NaN, n: 0 };
  const mean = statistic(live);
  const rng = new Rng(`bootstrap|${String(o.seed ?? 0)}`);
  const reps = new Array<number>(resamples);
  for (let b = 0; b < resamples; b++) {
    let sum = 0;
    for (const groups of live) {
      let s = 0;
      let c = 0;
      for (let g = 0; g < groups.length; g++) {
        const vals = groups[rng.int(groups.length)]!;
        for (let j = 0; j < vals.length; j++) s += vals[rng.int(vals.length)]!;
        c += vals.length;
      }
      sum += s / c;
    }
    reps[b] = sum / live.length;
  }
  reps.sort((a, b) => a - b);
  const alpha = (1 - level) / 2;
  return { mean, lo: quantile(reps, alpha), hi: quantile(reps, 1 - alpha), n };
}

/** The interval of a mean over groups (tasks) of values (seeds). */
export function bootstrapGroups(groups: readonly (readonly number[])[], o: BootstrapOptions = {}): Interval {
  return bootstrapStrata([groups], o);
}

/** The interval of the mean of plain values (each value its own group). */
export function bootstrapMean(values: readonly number[], o: BootstrapOptions = {}): Interval {
  return bootstrapStrata([values.map((v) => [v])], o);
}

/**
 * Paired Δ = treated − base over the same units, as strata[s][task][seed] of both; the interval
 * resamples the differences, so the pairing (same task, same seed) is kept.
 */
export function pairedDelta(treated: readonly (readonly (readonly number[])[])[], base: readonly (readonly (readonly number[])[])[], o: BootstrapOptions = {}): Interval {
  if (treated.length !== base.length) throw new RangeError(`pairedDelta: ${treated.length} strata treated vs ${base.length} base; pair the same envs`);
  const diff = treated.map((groups, s) => {
    const bg = base[s]!;
    if (groups.length !== bg.length) throw new RangeError(`pairedDelta: stratum ${s} has ${groups.length} tasks treated vs ${bg.length} base; pair the same tasks`);
    return groups.map((vals, g) => {
      const bv = bg[g]!;
      if (vals.length !== bv.length) throw new RangeError(`pairedDelta: stratum ${s} task ${g} has ${vals.length} seeds treated vs ${bv.length} base`);
      return vals.map((v, j) => v - bv[j]!);
    });
  });
  return bootstrapStrata(diff, o);
}

/** Mean and sample standard deviation (n − 1). */
export function meanStd(xs: readonly number[]): { mean: number; std: number; n: number } {
  const n = xs.length;
  const m = meanOf(xs);
  if (n < 2) return { mean: m, std: n === 1 ? 0 : NaN, n };
  let s = 0;
  for (const x of xs) s += (x - m) ** 2;
  return { mean: m, std: Math.sqrt(s / (n - 1)), n };
}
