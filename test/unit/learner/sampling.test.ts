/**
 * Token choice: the heap-based nucleus and the one-pass log-prob give bitwise what the plain
 * algorithm gives (a full sort by probability, ties by id; log softmax in a second pass).
 */
import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { logSoftmaxAt, pick, pickWithLogprob } from '../../../learner/sampling.ts';

/** the plain algorithm, as it was before the heap (reference only) */
function reference(data: Float32Array, off: number, v: number, temperature: number, topP: number, allowed: readonly number[] | null, rng: Rng): number {
  const ids = allowed ? [...new Set(allowed)].filter((x) => Number.isInteger(x) && x >= 0 && x < v) : Array.from({ length: v }, (_, j) => j);
  if (temperature === 0) {
    let best = ids[0]!;
    for (const j of ids) if (data[off + j]! > data[off + best]!) best = j;
    return best;
  }
  let max = -Infinity;
  for (const j of ids) max = Math.max(max, data[off + j]! / temperature);
  const p = ids.map((j) => Math.exp(data[off + j]! / temperature - max));
  const z = p.reduce((a, b) => a + b, 0);
  const order = ids.map((_, i) => i).sort((a, b) => p[b]! - p[a]! || ids[a]! - ids[b]!);
  const kept: number[] = [];
  let mass = 0;
  for (const i of order) {
    kept.push(i);
    mass += p[i]! / z;
    if (mass >= topP) break;
  }
  let u = rng.next() * kept.reduce((a, i) => a + p[i]!, 0);
  for (const i of kept) {
    u -= p[i]!;
    if (u < 0) return ids[i]!;
  }
  return ids[kept[kept.length - 1]!]!;
}

test('sampling - the heap nucleus and the one-pass log-prob equal the sort and the two-pass log-prob, bitwise (ties, masks, greedy)', (t) => {
  const gen = new Rng(7);
  for (let trial = 0; trial < 300; trial++) {
    const v = 2 + gen.int(600);
    const data = new Float32Array(v + 5);
    // coarse values make ties common
    const coarse = trial % 3 === 0;
    for (let j = 0; j < data.length; j++) data[j] = coarse ? gen.int(4) : (gen.next() - 0.5) * 12;
    const off = gen.int(5);
    const temperature = [0, 0.3, 0.5, 1, 1.7][trial % 5]!;
    const topP = [1, 0.95, 0.5, 1e-6][gen.int(4)]!;
    const allowed = trial % 4 === 1 ? Array.from({ length: 1 + gen.int(v) }, () => gen.int(v + 3) - 1) : null;
    if (allowed && !allowed.some((x) => x >= 0 && x < v)) allowed.push(0);
    const seed = gen.int(1e9);
    const want = reference(data, off, v, temperature, topP, allowed, new Rng(seed));
    t.is(pick(data, off, v, temperature, topP, allowed, new Rng(seed)), want);
    const both = pickWithLogprob(data, off, v, temperature, topP, allowed, new Rng(seed));
    t.is(both.tok, want);
    t.is(both.logprob, logSoftmaxAt(data, off, v, temperature === 0 ? 1 : temperature, want));
  }
});
