import test from 'ava';
import { LATENCY_MAX_BUCKET, LatencyHistogram, emptyLatency, latencyBucket, latencyQuantile, mergeLatency } from '../../../policies/targets/latency.ts';

test('latency - quantiles are within a bucket (about 9 %) of the true ones, and p50 ≤ p99', (t) => {
  const h = new LatencyHistogram();
  // 1 … 1000 ms, once each: p50 ≈ 500, p99 ≈ 990
  for (let ms = 1; ms <= 1000; ms++) h.record(ms);
  const s = h.snapshot();
  t.is(s.count, 1000);
  t.is(s.minMs, 1);
  t.is(s.maxMs, 1000);
  t.is(s.sumMs, 500_500);
  const p50 = latencyQuantile(s, 0.5)!;
  const p99 = latencyQuantile(s, 0.99)!;
  t.true(Math.abs(p50 - 500) / 500 < 0.09, `p50 ${p50}`);
  t.true(Math.abs(p99 - 990) / 990 < 0.09, `p99 ${p99}`);
  t.true(p50 <= p99);
  // quantiles never leave the recorded range
  t.is(latencyQuantile(s, 0), latencyQuantile(s, 0.001));
  t.true(latencyQuantile(s, 1)! <= 1000);
});

test('latency - one value gives that value at every quantile; nothing recorded gives null', (t) => {
  const h = new LatencyHistogram();
  h.record(123);
  h.record(123);
  t.is(latencyQuantile(h.snapshot(), 0.5), 123);
  t.is(latencyQuantile(h.snapshot(), 0.99), 123);
  t.is(latencyQuantile(emptyLatency(), 0.5), null);
  t.is(latencyQuantile(new LatencyHistogram().snapshot(), 0.5), null);
});

test('latency - the histogram stays bounded whatever it records', (t) => {
  const h = new LatencyHistogram();
  for (const ms of [0, 0.3, -5, 1e12, Infinity, NaN, 42]) h.record(ms);
  const s = h.snapshot();
  // Infinity and NaN are not latencies; a negative one counts as 0
  t.is(s.count, 5);
  t.true(s.buckets.every(([b]) => b >= 0 && b <= LATENCY_MAX_BUCKET));
  t.is(latencyBucket(1e12), LATENCY_MAX_BUCKET);
  t.is(latencyBucket(0.5), 0);
});

test('latency - merging adds counts: the merge of two halves is the whole', (t) => {
  const a = new LatencyHistogram();
  const b = new LatencyHistogram();
  const all = new LatencyHistogram();
  for (let ms = 1; ms <= 400; ms++) {
    (ms % 2 ? a : b).record(ms * 3);
    all.record(ms * 3);
  }
  t.deepEqual(mergeLatency(a.snapshot(), b.snapshot(), emptyLatency()), all.snapshot());
  t.deepEqual(mergeLatency(), emptyLatency());
});
