/**
 * The layers of the checkout and the direction their imports must point: a file may import its
 * own layer and the layers below it, never one above.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';

/** Bottom first: each layer may import only the ones before it (and itself). */
export const LAYERS = ['cluster', 'envs', 'harness', 'learner', 'policies', 'actors', 'drivers', 'experiments'] as const;

export interface Violation {
  file: string;
  line: number;
  imports: string;
  from: string;
  to: string;
}

function walk(root: string, dir: string, out: string[]): string[] {
  for (const n of readdirSync(join(root, dir))) {
    const p = posix.join(dir, n);
    if (statSync(join(root, p)).isDirectory()) walk(root, p, out);
    else if (/\.(ts|mjs)$/.test(n)) out.push(p);
  }
  return out;
}

const SPEC = /(?:from\s+|import\s*\(\s*|new URL\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** Every relative import under the layer folders of `root` that points to a higher layer. */
export function upwardImports(root: string): Violation[] {
  const rank = new Map<string, number>(LAYERS.map((l, i) => [l, i]));
  const out: Violation[] = [];
  for (const layer of LAYERS) {
    for (const file of walk(root, layer, [])) {
      const src = readFileSync(join(root, file), 'utf8');
      for (const m of src.matchAll(SPEC)) {
        const target = posix.normalize(posix.join(posix.dirname(file), m[1]!));
        const to = target.split('/')[0]!;
        const r = rank.get(to);
        if (r === undefined) continue;
        if (r > rank.get(layer)!) {
          const line = src.slice(0, m.index).split('\n').length;
          out.push({ file: relative('.', file), line, imports: target, from: layer, to });
        }
      }
    }
  }
  return out;
}
