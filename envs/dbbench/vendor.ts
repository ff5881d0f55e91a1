/**
 * Rebuild envs/dbbench/data from AgentBench checkouts:
 *   node --import=tsx envs/dbbench/vendor.ts --v02 <AgentBench@v0.2>/data/dbbench --main-fc <AgentBench@main>/data/dbbench
 * dev.jsonl is copied whole; of standard.jsonl only the lines listed (by SHA-256) in
 * data/standard.lines are kept, so held-out tasks stay out. Files are checked against SHA256SUMS.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DATA = join(dirname(fileURLToPath(import.meta.url)), 'data');
const sha = (s: string | Buffer): string => createHash('sha256').update(s).digest('hex');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function subset(src: string, keep: Set<string>): string {
  const lines = readFileSync(src, 'utf8').split('\n').filter((l) => keep.has(sha(l)));
  return `${lines.join('\n')}\n`;
}

export function main(): void {
  const v02 = arg('--v02');
  const fc = arg('--main-fc');
  if (!v02 && !fc) {
    console.error('usage: vendor.ts --v02 <AgentBench@v0.2>/data/dbbench --main-fc <AgentBench@main>/data/dbbench');
    process.exitCode = 2;
    return;
  }
  const keep = new Set(readFileSync(join(DATA, 'standard.lines'), 'utf8').split('\n').filter(Boolean));
  const out: [string, string][] = [];
  if (v02) {
    out.push(['v0.2/dev.jsonl', readFileSync(join(v02, 'dev.jsonl'), 'utf8')]);
    out.push(['v0.2/standard.jsonl', subset(join(v02, 'standard.jsonl'), keep)]);
  }
  if (fc) out.push(['main-fc/standard.jsonl', subset(join(fc, 'standard.jsonl'), keep)]);
  const sums = new Map(readFileSync(join(DATA, 'SHA256SUMS'), 'utf8').split('\n').filter(Boolean).map((l) => {
    const [h, f] = l.split(/\s+/);
    return [f ?? '', h ?? ''] as const;
  }));
  for (const [rel, text] of out) {
    mkdirSync(dirname(join(DATA, rel)), { recursive: true });
    writeFileSync(join(DATA, rel), text);
    const ok = sums.get(rel) === sha(text);
    console.log(`${rel}: ${text.split('\n').filter(Boolean).length} tasks, ${ok ? 'matches SHA256SUMS' : 'DIFFERS from SHA256SUMS (another upstream commit?)'}`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
