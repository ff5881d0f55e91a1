import { Ledger, Shard } from '../demo/actors.ts';
import { summarize, table } from './table.ts';
import { startCluster, type ClusterCliOptions } from './runtime.ts';

export interface DemoOptions extends ClusterCliOptions {
  shards: number;
  calls: number;
  inProcess?: boolean;
}

/** A small demo of the cluster: a few actors, a few thousand calls, a summary. */
export async function runDemo(o: DemoOptions): Promise<void> {
  const rt = await startCluster(o);
  try {
    console.log(`hr1 demo: ${rt.note}`);
    const ledger = await rt.cluster.spawn(Ledger.options({ name: 'demo-ledger' }));
    const shards = await Promise.all(Array.from({ length: o.shards }, (_, i) => rt.cluster.spawn(Shard.options({ maxRestarts: 1 }), { label: `shard-${i}` })));
    const lat: number[] = [];
    const t0 = performance.now();
    let next = 0;
    const expected = new Array<number>(o.shards).fill(0);
    // 32 callers in flight, round robin over the shards
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        for (;;) {
          const i = next++;
          if (i >= o.calls) return;
          const k = i % o.shards;
          expected[k]! += i;
          const t = performance.now();
          await shards[k]!.add({ x: i });
          lat.push(performance.now() - t);
        }
      }),
    );
    const wall = performance.now() - t0;
    await Promise.all(shards.map((s) => s.flush({ ledger: ledger.ref })));
    const totals = await ledger.totals(null);
    const ok = expected.every((v, k) => totals[`shard-${k}`] === v);
    const s = summarize(lat, wall);
    const nodes = await rt.cluster.status();
    console.log(table(['shard', 'total', 'expected'], expected.map((v, k) => [`shard-${k}`, totals[`shard-${k}`] ?? 'missing', v])));
    console.log(`\n${s.n} calls to ${o.shards} actors over ${rt.mode} in ${wall.toFixed(0)} ms: ${s.rate.toFixed(0)} calls/s, p50 ${(s.p50 * 1000).toFixed(0)} µs, p99 ${(s.p99 * 1000).toFixed(0)} µs; ${nodes.length} node(s); totals ${ok ? 'match' : 'DO NOT match'}`);
    if (!ok) process.exitCode = 1;
  } finally {
    await rt.shutdown();
  }
}
