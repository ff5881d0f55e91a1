/**
 * Seeded RNG (sfc32 seeded through splitmix32). Deterministic code takes one of these from its
 * context; `Math.random` has no place in envs/ or policies/.
 *
 * @example
 * const rng = new Rng(42);
 * rng.int(10); // same sequence for the same seed
 */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number | string) {
    let s = typeof seed === 'number' ? seed >>> 0 : hashString(seed);
    const next = (): number => {
      // splitmix32: spreads a small seed over the whole state
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.nextU32();
  }

  /** A uniform 32-bit unsigned integer. */
  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** A uniform float in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** A uniform integer in [0, n). */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0) throw new RangeError(`rng.int(n) needs a positive integer, got ${n}`);
    return Math.floor(this.next() * n);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element of a non-empty array. */
  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new RangeError('rng.pick() needs a non-empty array');
    return xs[this.int(xs.length)] as T;
  }

  /** A shuffled copy (Fisher–Yates). */
  shuffle<T>(xs: readonly T[]): T[] {
    const out = xs.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = out[i] as T;
      out[i] = out[j] as T;
      out[j] = tmp;
    }
    return out;
  }

  /** An independent child stream, e.g. one per episode: `rng.fork('episode-3')`. */
  fork(label: string | number): Rng {
    return new Rng((this.nextU32() ^ hashString(String(label))) >>> 0);
  }
}

/** FNV-1a 32-bit hash of a string; stable across runs and machines. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
