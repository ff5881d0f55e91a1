/**
 * Token choice from one row of logits: the grammar mask, temperature, top-p and a seeded RNG.
 * Shared by every decoding path (learner/onnx.ts, learner/batcher.ts), so a token depends only
 * on its logits and its RNG, never on the path that produced them.
 */
import type { Rng } from '../cluster/rng.ts';
import { SamplerError } from './errors.ts';

/**
 * Version of the decoding path: bumped when it can change a sampled token (caches of what was
 * sampled, such as trained engineers, key on it). 2: the key/value-cache decode graph and the
 * batcher (1: one full forward per token; float sums differ in the last bits).
 */
export const DECODE_PATH_VERSION = 2;

/** log softmax(logits[off..off+v] / temperature)[tok], in float64. */
export function logSoftmaxAt(data: Float32Array, off: number, v: number, temperature: number, tok: number): number {
  let max = -Infinity;
  for (let j = 0; j < v; j++) max = Math.max(max, data[off + j]! / temperature);
  let s = 0;
  for (let j = 0; j < v; j++) s += Math.exp(data[off + j]! / temperature - max);
  return data[off + tok]! / temperature - max - Math.log(s);
}

// scratch buffers of pick(): it runs to completion, so one set serves every call
let scratchP = new Float64Array(0);
let scratchHeap = new Int32Array(0);

/**
 * Sample one id: grammar mask, then temperature, then top-p (ids by probability, ties broken by
 * the smaller id), then the RNG. Temperature 0 is the argmax (the first id on ties).
 *
 * The nucleus is taken from a max-heap rather than a full sort, so a peaked distribution costs
 * O(V) and not O(V log V); the order the mass is summed in (and so every float) is the sort's.
 */
export function pick(data: Float32Array, off: number, v: number, temperature: number, topP: number, allowed: readonly number[] | null, rng: Rng): number {
  return choose(data, off, v, temperature, topP, allowed, rng).tok;
}

/**
 * {@link pick} and the log-prob {@link logSoftmaxAt} gives the chosen id (at temperature 1 when
 * greedy), from one pass over the logits when nothing is masked; the same floats as the two apart.
 */
export function pickWithLogprob(data: Float32Array, off: number, v: number, temperature: number, topP: number, allowed: readonly number[] | null, rng: Rng): { tok: number; logprob: number } {
  const c = choose(data, off, v, temperature, topP, allowed, rng);
  // unmasked and not greedy: max and z are logSoftmaxAt's, summed in the same order
  if (c.z > 0) return { tok: c.tok, logprob: data[off + c.tok]! / temperature - c.max - Math.log(c.z) };
  return { tok: c.tok, logprob: logSoftmaxAt(data, off, v, temperature === 0 ? 1 : temperature, c.tok) };
}

/** the choice; max and z over the whole vocabulary when nothing was masked and T > 0 (else z = 0) */
function choose(data: Float32Array, off: number, v: number, temperature: number, topP: number, allowed: readonly number[] | null, rng: Rng): { tok: number; max: number; z: number } {
  const ids = allowed ? [...new Set(allowed)].filter((x) => Number.isInteger(x) && x >= 0 && x < v) : null;
  const n = ids ? ids.length : v;
  if (n === 0) throw new SamplerError('SAMPLER_GRAMMAR', `the grammar constraint allowed no valid next id (it returned ${JSON.stringify(allowed)} for a vocabulary of ${v})`);
  const id = (i: number): number => (ids ? ids[i]! : i);
  if (temperature === 0) {
    let best = id(0);
    for (let i = 1; i < n; i++) if (data[off + id(i)]! > data[off + best]!) best = id(i);
    return { tok: best, max: 0, z: 0 };
  }
  let max = -Infinity;
  for (let i = 0; i < n; i++) max = Math.max(max, data[off + id(i)]! / temperature);
  if (scratchP.length < n) {
    scratchP = new Float64Array(n);
    scratchHeap = new Int32Array(n);
  }
  const p = scratchP;
  const heap = scratchHeap;
  let z = 0;
  for (let i = 0; i < n; i++) z += p[i] = Math.exp(data[off + id(i)]! / temperature - max);
  // i comes before j: the larger probability, then the smaller id
  const before = (i: number, j: number): boolean => p[i]! > p[j]! || (p[i] === p[j] && id(i) < id(j));
  for (let i = 0; i < n; i++) heap[i] = i;
  let size = n;
  const down = (at: number): void => {
    for (;;) {
      const l = 2 * at + 1;
      if (l >= size) return;
      const r = l + 1;
      const c = r < size && before(heap[r]!, heap[l]!) ? r : l;
      if (!before(heap[c]!, heap[at]!)) return;
      const t = heap[c]!;
      heap[c] = heap[at]!;
      heap[at] = t;
      at = c;
    }
  };
  for (let i = (n >> 1) - 1; i >= 0; i--) down(i);
  const kept: number[] = [];
  let mass = 0;
  while (size > 0) {
    const top = heap[0]!;
    heap[0] = heap[--size]!;
    down(0);
    kept.push(top);
    mass += p[top]! / z;
    if (mass >= topP) break;
  }
  let u = rng.next() * kept.reduce((a, i) => a + p[i]!, 0);
  let tok = id(kept[kept.length - 1]!);
  for (const i of kept) {
    u -= p[i]!;
    if (u < 0) {
      tok = id(i);
      break;
    }
  }
  return { tok, max, z: ids ? 0 : z };
}
