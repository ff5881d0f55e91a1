/**
 * What an endpoint target's client did over a run: requests, tokens, retries, timeouts, failures
 * and latencies, summed over the target's replicas. Every rollout reply of an endpoint target
 * carries its replica's counters since that replica started; the collector keeps the latest per
 * replica (a lost reply is covered by the next one) and adds them up.
 *
 * @example
 * const stats = new ClientStatsCollector();
 * await rollout(cluster, spec, { clientStats: stats });
 * for (const s of stats.totals()) console.log(formatEndpointStats(s));
 * // endpoint Qwen/Qwen3-8B: 1,204 requests, 3,456,789 tokens (3,300,000 prompt + 156,789 completion), 2 retries, 0 timeouts, 0 failures, latency p50 412 ms p99 1,930 ms
 */
import type { ClientStats, ReplicaClientStats } from '../actors/target.ts';
import type { OpenAIClientStats } from '../policies/targets/openai.ts';
import { latencyQuantile, mergeLatency } from '../policies/targets/latency.ts';
import { parseTargetSpec } from '../policies/targets/spec.ts';

/** The client counters that add up over replicas (the fields of OpenAIClientStats, policies/targets/openai.ts). */
const SUMMED = ['calls', 'requests', 'retries', 'failures', 'timeouts', 'promptTokens', 'completionTokens', 'totalTokens'] as const;

/**
 * An endpoint target's client counters summed over its replicas: the summed fields of
 * OpenAIClientStats, the most one replica had in flight, and latency quantiles.
 */
export interface EndpointStats extends Pick<OpenAIClientStats, (typeof SUMMED)[number] | 'maxInFlight'> {
  /** the target spec, `openai:<base-url>#<model>` */
  target: string;
  /** the served model (after `#` in the spec) */
  model: string;
  /** replica instances that reported (a restarted replica counts again: its counters began at 0) */
  replicas: number;
  /** latencies of the attempts the server answered, ms (null when none were) */
  latencyMs: { count: number; p50: number | null; p99: number | null; mean: number | null; max: number | null };
}

const round1 = (x: number | null): number | null => (x === null ? null : Math.round(x * 10) / 10);

/** The counters of one target's replicas added up. */
export function sumClientStats(target: string, replicas: readonly ClientStats[]): EndpointStats {
  const t = (() => {
    try {
      return parseTargetSpec(target);
    } catch {
      return null;
    }
  })();
  const lat = mergeLatency(...replicas.map((r) => r.latency));
  return {
    target,
    model: t?.kind === 'openai' ? t.model : target,
    replicas: replicas.length,
    ...(Object.fromEntries(SUMMED.map((k) => [k, replicas.reduce((a, r) => a + r[k], 0)])) as Record<(typeof SUMMED)[number], number>),
    maxInFlight: replicas.reduce((a, r) => Math.max(a, r.maxInFlight), 0),
    latencyMs: { count: lat.count, p50: round1(latencyQuantile(lat, 0.5)), p99: round1(latencyQuantile(lat, 0.99)), mean: round1(lat.count ? lat.sumMs / lat.count : null), max: round1(lat.count ? lat.maxMs : null) },
  };
}

/** Collects the replicas' counters from rollout replies, per target (see {@link RolloutOptions.clientStats}). */
export class ClientStatsCollector {
  readonly #byTarget = new Map<string, Map<string, ReplicaClientStats>>();

  /** a replica's snapshot; an older one (lower `seq`) than the one kept is ignored */
  add(target: string, s: ReplicaClientStats): void {
    let m = this.#byTarget.get(target);
    if (!m) this.#byTarget.set(target, (m = new Map()));
    const have = m.get(s.replica);
    if (!have || have.seq < s.seq) m.set(s.replica, s);
  }

  /** targets that reported any counters */
  get targets(): string[] {
    return [...this.#byTarget.keys()].sort();
  }

  /** one target's counters, summed over its replicas; null when it reported none */
  total(target: string): EndpointStats | null {
    const m = this.#byTarget.get(target);
    return m ? sumClientStats(target, [...m.values()].map((r) => r.stats)) : null;
  }

  /** every target's counters, by target */
  totals(): EndpointStats[] {
    return this.targets.map((t) => this.total(t)!);
  }
}

const num = (x: number): string => Math.round(x).toLocaleString('en-US');
const ms = (x: number | null): string => (x === null ? '-' : x < 10 ? `${x.toFixed(1)} ms` : `${num(x)} ms`);

/**
 * One line for a report:
 * `endpoint <model>: N requests, T tokens (P prompt + C completion), R retries, X timeouts, F failures, latency p50 … ms p99 … ms`.
 */
export function formatEndpointStats(s: EndpointStats): string {
  return `endpoint ${s.model}: ${num(s.requests)} requests, ${num(s.totalTokens)} tokens (${num(s.promptTokens)} prompt + ${num(s.completionTokens)} completion), ${num(s.retries)} retries, ${num(s.timeouts)} timeouts, ${num(s.failures)} failures, latency p50 ${ms(s.latencyMs.p50)} p99 ${ms(s.latencyMs.p99)}`;
}
