/**
 * summary.json: an exp run's tables as data. Per env × target × method × variant: success and
 * score with their intervals, Δ vs vanilla (paired), the intervention rate, episodes and units;
 * per target × method × variant the average of the envs' primary metrics. The bootstrap seeds are
 * the report's (`exp main`'s cells and Δs are the same numbers as report.md's), so a dashboard
 * shows what the report says without parsing markdown.
 */
import { envDescriptor, inReportOrder, isEnvName } from '../../envs/registry.ts';
import type { EvalRow } from '../runner/evaluate.ts';
import type { RunMeta } from '../runner/run-dir.ts';
import { bootstrapStrata, pairedDelta, type Interval } from './bootstrap.ts';
import { hintTokensPerDecision, interventionRate, taskSeedMatrix, validPatchRate, type Metric } from './data.ts';

/** The format tag of summary.json. */
export const SUMMARY_KIND = 'hr1-summary/1';

/** An interval as JSON: numbers, or null where there is no value. */
export interface SummaryInterval {
  mean: number;
  lo: number;
  hi: number;
  /** values it rests on (episodes) */
  n: number;
}

/** One env × target × method × variant. */
export interface SummaryGroup {
  env: string;
  target: string;
  method: string;
  /** the method's label in the report */
  label: string;
  variant: string;
  /** the env's reported metrics, the primary first */
  metrics: Metric[];
  success: SummaryInterval | null;
  score: SummaryInterval | null;
  /** paired Δ vs vanilla on the same target, env and episodes; null for vanilla itself or without a vanilla row */
  delta: { success: SummaryInterval | null; score: SummaryInterval | null };
  /** mean share of executed actions the patch chose (null when not recorded) */
  interventionRate: number | null;
  /** hint tokens the patch added per model decision (mean over episodes; null in older rows) */
  hintTokensPerDecision: number | null;
  /** the share of the group's units whose patch was valid */
  validPatchRate: number | null;
  /** episodes (over every unit of the group) and units (packets) */
  episodes: number;
  units: number;
}

/** The average of the envs' primary metrics (envs as strata), with its Δ vs vanilla. */
export interface SummaryAverage {
  target: string;
  method: string;
  label: string;
  variant: string;
  envs: string[];
  value: SummaryInterval | null;
  delta: SummaryInterval | null;
}

export interface RunSummary {
  kind: typeof SUMMARY_KIND;
  exp: string;
  targets: string[];
  simulated: string[];
  /** interval level and resamples */
  level: number;
  resamples: number;
  groups: SummaryGroup[];
  averages: SummaryAverage[];
  /** the run's splits per env (train split of the packets, test splits, test tasks, seeds) */
  splits: RunMeta['splits'];
  /** the episode sets checked apart before the run, and where its engineers were trained (absent in older runs) */
  disjoint?: RunMeta['disjoint'];
}

const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

function json(i: Interval | null): SummaryInterval | null {
  if (!i || !Number.isFinite(i.mean)) return null;
  return { mean: r6(i.mean), lo: r6(i.lo), hi: r6(i.hi), n: i.n };
}

function tryDelta(f: () => Interval): Interval | null {
  try {
    return f();
  } catch {
    // shapes that do not pair (other tasks or seeds than vanilla's): no Δ rather than a wrong one
    return null;
  }
}

/**
 * The summary of an exp run from its stored rows only.
 *
 * @example
 * const s = summarizeRun(run.readMeta(), run.rows() as EvalRow[]);
 * s.groups.find((g) => g.method === 'prompted-editor' && g.env === 'alfworld')?.delta.success
 */
export function summarizeRun(meta: RunMeta, rows: readonly EvalRow[]): RunSummary {
  const b = (meta.config.bootstrap as { resamples: number; seed: number; level: number } | undefined) ?? { resamples: 1000, seed: 0, level: 0.95 };
  const boot = (label: string) => ({ resamples: b.resamples, level: b.level, seed: `${b.seed}|${label}` });
  const envs = inReportOrder([...new Set([...Object.keys(meta.splits), ...rows.map((r) => r.env)])]);
  const labelOf = new Map(meta.methods.map((m) => [m.name, m.label]));
  // `exp main`'s seed labels (one target, no variant); other shapes add target and variant
  const single = meta.targets.length <= 1;
  const tag = (target: string, variant: string) => (single && variant === '' ? '' : `|${target}|${variant}`);
  const keyOf = (r: Pick<EvalRow, 'target' | 'method' | 'variant'>) => `${r.target}\u0000${r.method}\u0000${r.variant}`;
  const arms = [...new Map(rows.map((r) => [keyOf(r), { target: r.target, method: r.method, variant: r.variant }])).values()];
  const sel = (env: string, a: { target: string; method: string; variant: string }) => rows.filter((r) => r.env === env && r.target === a.target && r.method === a.method && r.variant === a.variant);
  const vanillaOf = (env: string, target: string) => rows.filter((r) => r.env === env && r.target === target && r.method === 'vanilla' && r.variant === '');
  const metricsOf = (env: string): Metric[] => (isEnvName(env) ? [...envDescriptor(env).metrics] : ['success']);
  const primaryOf = (env: string): Metric => metricsOf(env)[0]!;

  const groups: SummaryGroup[] = [];
  for (const env of envs) {
    for (const a of arms) {
      const own = sel(env, a);
      if (own.length === 0) continue;
      const t = tag(a.target, a.variant);
      const isVanilla = a.method === 'vanilla' && a.variant === '';
      const van = vanillaOf(env, a.target);
      const cell = (metric: Metric) => {
        const m = taskSeedMatrix(own, metric);
        return m ? bootstrapStrata([m], boot(`${a.method}|${env}|${metric}${t}`)) : null;
      };
      const delta = (metric: Metric) => {
        if (isVanilla || van.length === 0) return null;
        const m = taskSeedMatrix(own, metric);
        const v = taskSeedMatrix(van, metric);
        return m && v ? tryDelta(() => pairedDelta([m], [v], boot(`d|${a.method}|${env}|${metric}${t}`))) : null;
      };
      groups.push({
        env,
        target: a.target,
        method: a.method,
        label: labelOf.get(a.method) ?? a.method,
        variant: a.variant,
        metrics: metricsOf(env),
        success: json(cell('success')),
        score: json(cell('score')),
        delta: { success: json(delta('success')), score: json(delta('score')) },
        interventionRate: ((v) => (v === null ? null : r6(v)))(interventionRate(own)),
        hintTokensPerDecision: ((v) => (v === null ? null : r6(v)))(hintTokensPerDecision(own)),
        validPatchRate: validPatchRate(own),
        episodes: own.reduce((n, r) => n + r.outcomes.length, 0),
        units: own.length,
      });
    }
  }

  const averages: SummaryAverage[] = [];
  for (const a of arms) {
    const have = envs.filter((env) => sel(env, a).length > 0);
    if (have.length === 0) continue;
    const t = tag(a.target, a.variant);
    const as = have.map((env) => taskSeedMatrix(sel(env, a), primaryOf(env))!);
    const vs = have.map((env) => taskSeedMatrix(vanillaOf(env, a.target), primaryOf(env)));
    const isVanilla = a.method === 'vanilla' && a.variant === '';
    averages.push({
      target: a.target,
      method: a.method,
      label: labelOf.get(a.method) ?? a.method,
      variant: a.variant,
      envs: have,
      value: json(bootstrapStrata(as, boot(`${a.method}|avg${t}`))),
      delta: isVanilla || vs.some((v) => v === null) ? null : json(tryDelta(() => pairedDelta(as, vs as number[][][], boot(`d|${a.method}|avg${t}`)))),
    });
  }
  return { kind: SUMMARY_KIND, exp: meta.exp, targets: [...meta.targets], simulated: [...meta.simulated], level: b.level, resamples: b.resamples, groups, averages, splits: meta.splits, ...(meta.disjoint ? { disjoint: meta.disjoint } : {}) };
}
