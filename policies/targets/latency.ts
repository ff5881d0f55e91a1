/**
 * Request latencies as a log-scale histogram: bounded (a few hundred buckets at most, sent sparse),
 * mergeable by adding counts (replicas, restarts), and read as quantiles to within a bucket's width
 * (about 9 %). Latencies are wall-clock figures for reports, never results.
 *
 * @example
 * const h = new LatencyHistogram();
 * h.record(120); h.record(340);
 * latencyQuantile(h.snapshot(), 0.5); // ≈ 120
 */

/** Buckets per doubling of the latency: bucket i holds [2^(i/8), 2^((i+1)/8)) ms, so each is about 9 % wide. @default 8 */
export const LATENCY_BUCKETS_PER_DOUBLING = 8;
/** Bucket indices run 0 … this (2^(200/8) ms is about 9 hours): the histogram is bounded whatever it records. */
export const LATENCY_MAX_BUCKET = 200;

/** A latency histogram's counts: sparse `[bucket, count]` pairs sorted by bucket, and exact count, sum and extremes. */
export interface LatencyCounts {
  buckets: [number, number][];
  count: number;
  sumMs: number;
  /** 0 when empty */
  minMs: number;
  maxMs: number;
}

/** The empty histogram. */
export function emptyLatency(): LatencyCounts {
  return { buckets: [], count: 0, sumMs: 0, minMs: 0, maxMs: 0 };
}

/** The bucket a latency falls in (below 1 ms: bucket 0). */
export function latencyBucket(ms: number): number {
  if (!(ms > 1)) return 0;
  return Math.min(LATENCY_MAX_BUCKET, Math.floor(Math.log2(ms) * LATENCY_BUCKETS_PER_DOUBLING));
}

/** Counts of several histograms added up (replicas of one target, restarted replicas). */
export function mergeLatency(...hs: readonly LatencyCounts[]): LatencyCounts {
  const by = new Map<number, number>();
  let count = 0;
  let sumMs = 0;
  let minMs = Infinity;
  let maxMs = 0;
  for (const h of hs) {
    if (h.count === 0) continue;
    for (const [b, c] of h.buckets) by.set(b, (by.get(b) ?? 0) + c);
    count += h.count;
    sumMs += h.sumMs;
    minMs = Math.min(minMs, h.minMs);
    maxMs = Math.max(maxMs, h.maxMs);
  }
  if (count === 0) return emptyLatency();
  return { buckets: [...by].sort((a, b) => a[0] - b[0]), count, sumMs, minMs, maxMs };
}

/**
 * The latency below which a share `q` (0 … 1) of the requests fell: the geometric middle of the
 * bucket holding it, kept within the recorded min and max. null when nothing was recorded.
 * Monotone in `q`, so p50 ≤ p99.
 */
export function latencyQuantile(h: LatencyCounts, q: number): number | null {
  if (h.count === 0) return null;
  const rank = Math.max(1, Math.ceil(Math.min(1, Math.max(0, q)) * h.count));
  let seen = 0;
  for (const [b, c] of h.buckets) {
    seen += c;
    if (seen >= rank) {
      const mid = b === 0 ? 1 : 2 ** ((b + 0.5) / LATENCY_BUCKETS_PER_DOUBLING);
      return Math.min(h.maxMs, Math.max(h.minMs, mid));
    }
  }
  return h.maxMs;
}

/** A histogram that records latencies in ms. */
export class LatencyHistogram {
  readonly #buckets = new Map<number, number>();
  #count = 0;
  #sumMs = 0;
  #minMs = Infinity;
  #maxMs = 0;

  record(ms: number): void {
    if (!Number.isFinite(ms)) return;
    const v = Math.max(0, ms);
    const b = latencyBucket(v);
    this.#buckets.set(b, (this.#buckets.get(b) ?? 0) + 1);
    this.#count++;
    this.#sumMs += v;
    this.#minMs = Math.min(this.#minMs, v);
    this.#maxMs = Math.max(this.#maxMs, v);
  }

  /** a copy of the counts */
  snapshot(): LatencyCounts {
    if (this.#count === 0) return emptyLatency();
    return { buckets: [...this.#buckets].sort((a, b) => a[0] - b[0]), count: this.#count, sumMs: this.#sumMs, minMs: this.#minMs, maxMs: this.#maxMs };
  }
}
