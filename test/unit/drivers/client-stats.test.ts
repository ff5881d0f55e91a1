import test from 'ava';
import { ClientStatsCollector, formatEndpointStats, sumClientStats } from '../../../drivers/client-stats.ts';
import { LatencyHistogram } from '../../../policies/targets/latency.ts';
import type { ClientStats } from '../../../actors/target.ts';

const TARGET = 'openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B';

function stats(o: Partial<ClientStats> & { latencies?: number[] } = {}): ClientStats {
  const h = new LatencyHistogram();
  for (const ms of o.latencies ?? []) h.record(ms);
  const { latencies: _, ...rest } = o;
  return { calls: 0, requests: 0, retries: 0, failures: 0, timeouts: 0, promptTokens: 0, completionTokens: 0, totalTokens: 0, inFlight: 0, maxInFlight: 0, latency: h.snapshot(), ...rest };
}

test('client stats - counters add up over replicas; the latency quantiles are over all their requests', (t) => {
  const s = sumClientStats(TARGET, [stats({ calls: 3, requests: 4, retries: 1, promptTokens: 100, completionTokens: 10, totalTokens: 110, maxInFlight: 2, latencies: [100, 100, 100, 100] }), stats({ calls: 2, requests: 2, timeouts: 1, failures: 1, promptTokens: 50, completionTokens: 5, totalTokens: 55, maxInFlight: 3, latencies: [1000, 1000] })]);
  t.like(s, { target: TARGET, model: 'Qwen/Qwen3-8B', replicas: 2, calls: 5, requests: 6, retries: 1, timeouts: 1, failures: 1, promptTokens: 150, completionTokens: 15, totalTokens: 165, maxInFlight: 3 });
  t.like(s.latencyMs, { count: 6, mean: 400, max: 1000 });
  // quantiles are read to within a bucket (about 9 %)
  t.true(Math.abs(s.latencyMs.p50! - 100) < 9, `p50 ${s.latencyMs.p50}`);
  t.true(Math.abs(s.latencyMs.p99! - 1000) < 90, `p99 ${s.latencyMs.p99}`);
  t.is(formatEndpointStats(s), `endpoint Qwen/Qwen3-8B: 6 requests, 165 tokens (150 prompt + 15 completion), 1 retries, 1 timeouts, 1 failures, latency p50 ${Math.round(s.latencyMs.p50!)} ms p99 ${Math.round(s.latencyMs.p99!)} ms`);
});

test('client stats - the collector keeps the latest snapshot per replica (replies overtaking each other, a lost one) and sums the replicas', (t) => {
  const c = new ClientStatsCollector();
  c.add(TARGET, { replica: 'a~0#0', seq: 2, stats: stats({ requests: 20 }) });
  // an older reply arriving late does not go back
  c.add(TARGET, { replica: 'a~0#0', seq: 1, stats: stats({ requests: 10 }) });
  c.add(TARGET, { replica: 'a~1#0', seq: 1, stats: stats({ requests: 7 }) });
  // the same replica restarted counts from 0 again: another key, both kept
  c.add(TARGET, { replica: 'a~1#1', seq: 1, stats: stats({ requests: 3 }) });
  t.like(c.total(TARGET), { replicas: 3, requests: 30 });
  t.is(c.total('sim/qwen-3b'), null);
  t.deepEqual(c.targets, [TARGET]);
  t.is(c.totals().length, 1);
});

test('client stats - no answered request gives a line without latencies', (t) => {
  const s = sumClientStats(TARGET, [stats({ calls: 1, requests: 5, failures: 1, timeouts: 5 })]);
  t.deepEqual(s.latencyMs, { count: 0, p50: null, p99: null, mean: null, max: null });
  t.regex(formatEndpointStats(s), /5 requests, 0 tokens .* 5 timeouts, 1 failures, latency p50 - p99 -$/);
});
