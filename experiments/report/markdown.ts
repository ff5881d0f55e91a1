/** Markdown tables and number formats for reports. */
import type { Interval } from './bootstrap.ts';

function esc(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** A GitHub markdown table. */
export function mdTable(head: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const lines = [`| ${head.map(esc).join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`];
  for (const r of rows) lines.push(`| ${r.map((c) => esc(String(c))).join(' | ')} |`);
  return lines.join('\n');
}

/** `53.6 [48.1, 59.0]` for a rate in points (×100). */
export function fmtPct(i: Interval | null | undefined, digits = 1): string {
  if (!i || !Number.isFinite(i.mean)) return '—';
  const f = (x: number) => (x * 100).toFixed(digits);
  return `${f(i.mean)} [${f(i.lo)}, ${f(i.hi)}]`;
}

/** `+4.5 [1.2, 7.9]` for a Δ in points. */
export function fmtDelta(i: Interval | null | undefined, digits = 1): string {
  if (!i || !Number.isFinite(i.mean)) return '—';
  const f = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(digits)}`;
  return `${f(i.mean)} [${f(i.lo)}, ${f(i.hi)}]`;
}

/** `+8.9 ± 2.1` in points. */
export function fmtMeanStd(m: { mean: number; std: number } | null | undefined, digits = 1): string {
  if (!m || !Number.isFinite(m.mean)) return '—';
  return `${m.mean >= 0 ? '+' : ''}${(m.mean * 100).toFixed(digits)} ± ${(m.std * 100).toFixed(digits)}`;
}

/** A plain-text table for the terminal (columns padded). */
export function textTable(head: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const all = [head, ...rows].map((r) => r.map(String));
  const w = head.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ')).join('\n');
}
