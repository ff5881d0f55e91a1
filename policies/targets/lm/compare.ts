/**
 * Two zoo models on the same evaluation episodes (`hr1 zoo compare A B`): the paired difference
 * of their vanilla success (and score) per task, with a bootstrap interval over tasks. Two
 * intervals that overlap say little about the difference; the paired one does, since both models
 * play every task with the same seeds (the zoo table's episodes: the first `tasks` tasks of the
 * env's evaluation split × seeds 1…`seeds`). From the per-task figures `measureVanilla` caches
 * next to each model, so a comparison after `hr1 zoo table` plays nothing again.
 */
import { bootstrapCI } from '../../scorer/metrics.ts';
import { LM_ENVS, type LmEnv } from './bc.ts';
import { LmTargetError } from './errors.ts';
import { DEFAULT_TABLE_SEEDS, measureVanilla, type VanillaResult } from './table.ts';
import { resolveConfig, type ZooConfig } from './zoo.ts';

/** resamples of the paired bootstrap. @default 2000 */
export const COMPARE_RESAMPLES = 2000;

export interface CompareOptions {
  /** the env both models play (default: the one env they share) */
  env?: LmEnv;
  /** tasks of the evaluation split (its first ones). @default the whole split */
  tasks?: number;
  /** seeds per task. @default 3, as the zoo table */
  seeds?: number;
  dir?: string;
  zoo?: readonly ZooConfig[];
  onEpisode?: () => void;
}

/** One metric of a comparison: each model's mean and B − A paired over tasks. */
export interface PairedFigure {
  a: number;
  b: number;
  /** mean over tasks of (B − A) */
  diff: number;
  /** 95 % percentile bootstrap interval of `diff`, resampling tasks (a task's seeds stay together) */
  diffCi: [number, number];
  /** tasks where B's mean over seeds is above / below A's / equal */
  above: number;
  below: number;
  same: number;
}

export interface ZooComparison {
  a: string;
  b: string;
  env: LmEnv;
  tasks: number;
  seeds: number;
  /** episodes per model */
  episodes: number;
  success: PairedFigure;
  /** mean final reward (WebShop's partial score; ALFWorld's and DBBench's equal success) */
  score: PairedFigure;
  /** each model's own figures, as the zoo table prints them */
  vanillaA: VanillaResult;
  vanillaB: VanillaResult;
}

/** The env two models are compared on: `env` if both play it, else the one env they share. */
export function compareEnv(a: string, b: string, env: LmEnv | undefined, zoo?: readonly ZooConfig[]): LmEnv {
  const ea = resolveConfig(a, zoo).envs;
  const eb = resolveConfig(b, zoo).envs;
  if (env !== undefined) {
    if (!LM_ENVS.includes(env)) throw new LmTargetError('LM_BAD_OPTION', `zoo compare: --env must be one of ${LM_ENVS.join(', ')}, got ${JSON.stringify(env)}`, { data: { env } });
    for (const [n, es] of [[a, ea], [b, eb]] as const) {
      if (!es.includes(env)) throw new LmTargetError('LM_BAD_OPTION', `zoo compare: lm/${n} does not play ${env} (its envs: ${es.join(', ')}); compare it on one of those with --env`, { data: { name: n, env } });
    }
    return env;
  }
  const shared = ea.filter((e) => eb.includes(e));
  if (shared.length === 0) throw new LmTargetError('LM_BAD_OPTION', `zoo compare: lm/${a} (${ea.join(', ')}) and lm/${b} (${eb.join(', ')}) share no env; a paired comparison needs the same episodes, so pick two models of one env`, { data: { a, b } });
  if (shared.length > 1) throw new LmTargetError('LM_BAD_OPTION', `zoo compare: lm/${a} and lm/${b} both play ${shared.join(' and ')}; say which with --env`, { data: { a, b, envs: shared } });
  return shared[0]!;
}

/** B − A per task, paired: means, the interval of the difference and the per-task signs. */
export function pairedFigure(xa: readonly number[], xb: readonly number[], seed: string): PairedFigure {
  if (xa.length !== xb.length || xa.length === 0) throw new LmTargetError('LM_BAD_OPTION', `zoo compare: per-task figures of unequal or zero length (${xa.length} against ${xb.length})`);
  const d = xb.map((v, i) => v - xa[i]!);
  const mean = (xs: readonly number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
  const eps = 1e-12;
  return {
    a: mean(xa),
    b: mean(xb),
    diff: mean(d),
    diffCi: bootstrapCI(d, { seed, resamples: COMPARE_RESAMPLES }),
    above: d.filter((x) => x > eps).length,
    below: d.filter((x) => x < -eps).length,
    same: d.filter((x) => Math.abs(x) <= eps).length,
  };
}

/**
 * B against A on their shared env's evaluation split × seeds, paired per task. Each model's
 * episodes are measured (or read from its cached figures) as in the zoo table.
 */
export async function compareVanilla(a: string, b: string, o: CompareOptions = {}): Promise<ZooComparison> {
  const env = compareEnv(a, b, o.env, o.zoo);
  const seeds = o.seeds ?? DEFAULT_TABLE_SEEDS;
  const common = { ...(o.tasks !== undefined ? { tasks: o.tasks } : {}), seeds, perTask: true, ...(o.dir !== undefined ? { dir: o.dir } : {}), ...(o.zoo ? { zoo: o.zoo } : {}), ...(o.onEpisode ? { onEpisode: o.onEpisode } : {}) };
  const va = await measureVanilla(a, env, common);
  const vb = await measureVanilla(b, env, common);
  const pa = va.perTask!;
  const pb = vb.perTask!;
  const seed = `zoo-compare:${a}:${b}:${env}:${va.tasks}x${seeds}`;
  return {
    a,
    b,
    env,
    tasks: va.tasks,
    seeds,
    episodes: va.episodes,
    success: pairedFigure(pa.success, pb.success, `${seed}:success`),
    score: pairedFigure(pa.score, pb.score, `${seed}:score`),
    vanillaA: va,
    vanillaB: vb,
  };
}

/** The comparison as a few lines of text (points, one decimal). */
export function formatZooComparison(c: ZooComparison): string {
  const pt = (x: number): string => (100 * x).toFixed(1);
  const signed = (x: number): string => `${x >= 0 ? '+' : '−'}${pt(Math.abs(x))}`;
  const line = (what: string, f: PairedFigure): string => {
    const resolved = f.diffCi[0] > 0 ? 'B above A, the interval clear of 0' : f.diffCi[1] < 0 ? 'B below A, the interval clear of 0' : 'not resolved: the interval holds 0';
    return `${what}: A ${pt(f.a)} %, B ${pt(f.b)} %; B − A ${signed(f.diff)} points [${signed(f.diffCi[0])}, ${signed(f.diffCi[1])}] (${resolved}); B above on ${f.above} tasks, below on ${f.below}, level on ${f.same}`;
  };
  const lines = [`A = lm/${c.a}, B = lm/${c.b}: ${c.env}, ${c.tasks} tasks × ${c.seeds} seed${c.seeds === 1 ? "" : "s"} (${c.episodes} episodes each), paired per task, 95 % bootstrap over tasks (${COMPARE_RESAMPLES} resamples)`, line('success', c.success)];
  if (c.env === 'webshop') lines.push(line('score', c.score));
  return lines.join('\n');
}
