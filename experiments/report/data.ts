/** Shaping stored evaluation rows into tasks × seeds matrices for the bootstrap, and into CSV. */
import type { EvalRow } from '../runner/evaluate.ts';

export type Metric = 'success' | 'score';

/**
 * Values per task (sorted by task id) and seed (sorted), averaged over the given rows (e.g. the
 * packets of one method). Null when there are no rows.
 */
export function taskSeedMatrix(rows: readonly EvalRow[], metric: Metric): number[][] | null {
  if (rows.length === 0) return null;
  const acc = new Map<string, Map<number, { s: number; n: number }>>();
  for (const r of rows) {
    for (const [t, seed, won, reward] of r.outcomes) {
      let m = acc.get(t);
      if (!m) acc.set(t, (m = new Map()));
      const c = m.get(seed) ?? { s: 0, n: 0 };
      c.s += metric === 'success' ? won : reward;
      c.n++;
      m.set(seed, c);
    }
  }
  return [...acc.keys()].sort().map((t) => {
    const m = acc.get(t)!;
    return [...m.keys()].sort((a, b) => a - b).map((s) => m.get(s)!.s / m.get(s)!.n);
  });
}

/** Mean success or score of each row on its own (per packet), for spreads across packets. */
export function rowMean(r: EvalRow, metric: Metric): number {
  if (r.outcomes.length === 0) return NaN;
  let s = 0;
  for (const o of r.outcomes) s += metric === 'success' ? o[2] : o[3];
  return s / r.outcomes.length;
}

/** The mean of one optional outcome field over the episodes of these rows that recorded it; null when none did. */
function outcomeMean(rows: readonly EvalRow[], field: 4 | 5): number | null {
  let s = 0;
  let n = 0;
  for (const r of rows) {
    for (const o of r.outcomes) {
      const v = o[field];
      if (v === undefined) continue;
      s += v;
      n++;
    }
  }
  return n > 0 ? s / n : null;
}

/**
 * The mean intervention rate (executed actions the patch forced or rewritten, per episode) over
 * the episodes of these rows that recorded one; null when none did.
 */
export function interventionRate(rows: readonly EvalRow[]): number | null {
  return outcomeMean(rows, 4);
}

/** Mean hint tokens the patches added per model decision, over the episodes that recorded it; null when none did. */
export function hintTokensPerDecision(rows: readonly EvalRow[]): number | null {
  return outcomeMean(rows, 5);
}

/** The share of a method's units whose patch was valid (a unit without a patch counts as valid: it asked for none); null without rows. */
export function validPatchRate(rows: readonly EvalRow[]): number | null {
  return rows.length ? rows.filter((r) => r.invalid === undefined).length / rows.length : null;
}

/** An intervention rate as a table cell: `12.5 %`, `—` when not recorded. */
export function fmtInterventions(v: number | null): string {
  return v === null ? '—' : `${(v * 100).toFixed(1)} %`;
}

/** A CSV cell: quoted when it holds a comma, a quote or a newline (RFC 4180). */
export function csvCell(v: unknown): string {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One CSV line per episode of every evaluation row, in the given row order. */
export function rowsToCsv(exp: string, rows: readonly EvalRow[]): string {
  const head = ['exp', 'env', 'target', 'method', 'packet', 'variant', 'patch_hash', 'task', 'seed', 'won', 'reward', 'intervention_rate'];
  const lines = [head.join(',')];
  for (const r of rows) for (const [t, s, w, rw, iv] of r.outcomes) lines.push([exp, r.env, r.target, r.method, r.packet ?? '', r.variant, r.patchHash, t, s, w, rw, iv].map(csvCell).join(','));
  return `${lines.join('\n')}\n`;
}
