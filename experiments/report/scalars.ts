/**
 * scalars.csv: every scalar of a run folder in one long table (one row per scalar), which pandas,
 * a spreadsheet or a dashboard reads as it is: `pd.read_csv('scalars.csv').pivot_table(...)`.
 *
 * Columns {@link SCALAR_COLUMNS}. Train runs: scope `sft` or `grpo`, one row per field of each
 * iteration of iterations.jsonl. Exp runs: scope `unit` (one results.jsonl row: a patch on one
 * env's episodes; `iteration_or_unit` is its index in results.jsonl), `method` (env × target ×
 * method × variant, as in summary.json, with interval bounds) and `average` (the envs' primary
 * metrics).
 */
import type { IterationLog } from '../train.ts';
import type { EvalRow } from '../runner/evaluate.ts';
import { csvCell } from './data.ts';
import type { RunSummary, SummaryInterval } from './summary.ts';

/** The header of scalars.csv. */
export const SCALAR_COLUMNS = ['scope', 'iteration_or_unit', 'env', 'target', 'method', 'variant', 'name', 'value'] as const;

/** One row of scalars.csv. */
export interface Scalar {
  scope: 'sft' | 'grpo' | 'unit' | 'method' | 'average';
  /** the iteration (train) or the unit's index in results.jsonl (exp); null for aggregates */
  iterationOrUnit: number | null;
  env: string;
  target: string;
  method: string;
  variant: string;
  name: string;
  value: number;
}

/** The CSV text of scalars (header first; non-finite values are left out). */
export function scalarsToCsv(rows: readonly Scalar[]): string {
  const lines = [SCALAR_COLUMNS.join(',')];
  for (const s of rows) {
    if (!Number.isFinite(s.value)) continue;
    lines.push([s.scope, s.iterationOrUnit ?? '', s.env, s.target, s.method, s.variant, s.name, s.value].map(csvCell).join(','));
  }
  return `${lines.join('\n')}\n`;
}

const ITERATION_FIELDS: [keyof IterationLog, string][] = [
  ['loss', 'loss'],
  ['meanDelta', 'mean_delta'],
  ['bestDelta', 'best_delta'],
  ['validRate', 'valid_rate'],
  ['baseSuccess', 'base_success'],
  ['entropy', 'entropy'],
  ['clipFrac', 'clip_frac'],
  ['kl', 'kl'],
];

/**
 * Scalars of a train run: every numeric field of every iteration (`ms_*` for its time split,
 * `dropped` for candidates left out). `pairs` gives each env's target (the first pair's env for
 * SFT epochs, which train on every env at once).
 */
export function trainScalars(iterations: readonly IterationLog[], pairs: readonly { env: string; target: string }[]): Scalar[] {
  const out: Scalar[] = [];
  const targetOf = (env: string) => pairs.find((p) => p.env === env)?.target ?? '';
  const allEnvs = pairs.map((p) => p.env).join('+');
  const allTargets = [...new Set(pairs.map((p) => p.target))].join('+');
  for (const it of iterations) {
    const env = it.env ?? allEnvs;
    const target = it.env ? targetOf(it.env) : allTargets;
    const push = (name: string, value: number | undefined) => {
      if (value !== undefined) out.push({ scope: it.phase, iterationOrUnit: it.iteration, env, target, method: 'engineer', variant: '', name, value });
    };
    for (const [k, name] of ITERATION_FIELDS) push(name, it[k] as number | undefined);
    if (it.phase === 'grpo') push('dropped', it.dropped?.length ?? 0);
    for (const [k, v] of Object.entries(it.ms)) push(`ms_${k}`, v);
  }
  return out;
}

function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
}

/** Scalars of an exp run: per unit (row), per group and per average (from its summary). */
export function expScalars(rows: readonly EvalRow[], summary: RunSummary): Scalar[] {
  const out: Scalar[] = [];
  // vanilla's outcome per episode, for each unit's paired Δ
  const vanilla = new Map<string, [number, number]>();
  for (const r of rows) if (r.method === 'vanilla' && r.variant === '') for (const [t, s, w, rw] of r.outcomes) vanilla.set(`${r.env}|${r.target}|${t}|${s}`, [w, rw]);
  rows.forEach((r, i) => {
    const push = (name: string, value: number) => out.push({ scope: 'unit', iterationOrUnit: i, env: r.env, target: r.target, method: r.method, variant: r.variant, name, value });
    push('success', mean(r.outcomes.map((o) => o[2])));
    push('score', mean(r.outcomes.map((o) => o[3])));
    push('episodes', r.outcomes.length);
    const iv = r.outcomes.flatMap((o) => (o[4] === undefined ? [] : [o[4]]));
    if (iv.length) push('intervention_rate', mean(iv));
    if (r.packet !== null) push('packet', r.packet);
    if (!(r.method === 'vanilla' && r.variant === '')) {
      const paired = r.outcomes.flatMap(([t, s, w, rw]) => {
        const v = vanilla.get(`${r.env}|${r.target}|${t}|${s}`);
        return v ? [[w - v[0], rw - v[1]] as const] : [];
      });
      if (paired.length) {
        push('delta_success', mean(paired.map((p) => p[0])));
        push('delta_score', mean(paired.map((p) => p[1])));
      }
    }
    push('errors', r.errors);
  });
  const interval = (push: (name: string, v: number) => void, name: string, i: SummaryInterval | null) => {
    if (!i) return;
    push(name, i.mean);
    push(`${name}_lo`, i.lo);
    push(`${name}_hi`, i.hi);
  };
  for (const g of summary.groups) {
    const push = (name: string, value: number) => out.push({ scope: 'method', iterationOrUnit: null, env: g.env, target: g.target, method: g.method, variant: g.variant, name, value });
    interval(push, 'success', g.success);
    interval(push, 'score', g.score);
    interval(push, 'delta_success', g.delta.success);
    interval(push, 'delta_score', g.delta.score);
    if (g.interventionRate !== null) push('intervention_rate', g.interventionRate);
    push('episodes', g.episodes);
    push('units', g.units);
  }
  for (const a of summary.averages) {
    const push = (name: string, value: number) => out.push({ scope: 'average', iterationOrUnit: null, env: a.envs.join('+'), target: a.target, method: a.method, variant: a.variant, name, value });
    interval(push, 'average', a.value);
    interval(push, 'delta_average', a.delta);
  }
  return out;
}
