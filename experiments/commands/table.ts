/** Small helpers for benchmark figures. */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))));
  return sorted[i]!;
}

export function summarize(latMs: number[], wallMs: number): { n: number; rate: number; p50: number; p99: number } {
  const s = latMs.slice().sort((a, b) => a - b);
  return { n: latMs.length, rate: (latMs.length / wallMs) * 1000, p50: quantile(s, 0.5), p99: quantile(s, 0.99) };
}

/** Render rows as an aligned text table. */
export function table(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const w = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(cells[0]!), w.map((n) => '-'.repeat(n)).join('  '), ...cells.slice(1).map(line)].join('\n');
}
