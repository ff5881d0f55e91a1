import { z } from 'zod';
import { defineActor } from '../../cluster/actor.ts';
import { InProcessBus } from '../../cluster/bus-inproc.ts';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { pack, unpack } from '../../cluster/codec.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { ClusterNode } from '../../cluster/node.ts';
import { WorkerPool } from '../../cluster/pool.ts';
import { summarize, table } from '../commands/table.ts';

// an env-step-like message, about 250 bytes of msgpack
const StepMsg = z.object({
  episode: z.string(),
  step: z.number().int(),
  action: z.string(),
  observation: z.string(),
  reward: z.number(),
  done: z.boolean(),
  admissible: z.array(z.string()),
});
type StepMsg = z.infer<typeof StepMsg>;

export const BenchEcho = defineActor({
  name: 'BenchEcho',
  protocol: { step: { input: StepMsg, output: StepMsg } },
  create: () => ({}),
  handlers: { step: (_s, m) => m },
});

export const samplePayload: StepMsg = {
  episode: 'alfworld/valid_seen/pick_and_place_simple-Pencil-None-Shelf-308#seed=7',
  step: 12,
  action: 'take pencil 1 from desk 2',
  observation: 'You pick up the pencil 1 from the desk 2. On the desk 2, you see a alarmclock 1.',
  reward: 0,
  done: false,
  admissible: ['go to shelf 1', 'go to shelf 2', 'inventory', 'look'],
};

export interface Row {
  what: string;
  inflight: number;
  n: number;
  rate: number;
  p50: number;
  p99: number;
}

/** Drive `fn` with `inflight` concurrent callers for `ms`, recording each call's latency. */
async function drive(what: string, inflight: number, ms: number, fn: () => Promise<unknown> | unknown, lat: number[]): Promise<{ wall: number }> {
  // warm up
  for (let i = 0; i < 50; i++) await fn();
  const t0 = performance.now();
  const end = t0 + ms;
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await fn();
        lat.push(performance.now() - t);
      }
    }),
  );
  return { wall: performance.now() - t0 };
}

function driveSync(what: string, ms: number, fn: () => unknown): Row {
  const lat: number[] = [];
  const t0 = performance.now();
  const end = t0 + ms;
  while (performance.now() < end) {
    const t = performance.now();
    fn();
    lat.push(performance.now() - t);
  }
  return { what, inflight: 1, ...summarize(lat, performance.now() - t0) };
}

export interface BenchClusterOptions {
  address?: string;
  seconds: number;
  pool: boolean;
  log?: (l: string) => void;
}

/**
 * `hr1 bench cluster`: raw NATS request/reply vs actor calls over NATS vs in-process vs a direct
 * call, in one run, same client and payload. Returns the rows and prints a table with ratios.
 */
export async function benchCluster(o: BenchClusterOptions): Promise<Row[]> {
  const log = o.log ?? console.log;
  const ms = o.seconds * 1000;
  const server = o.address ? undefined : await NatsServer.start({ jetstream: false });
  const address = o.address ?? server!.url;
  const rows: Row[] = [];
  try {
    const bus = await NatsBus.connect({ address, name: 'hr1-bench' });
    const nc = bus.nc;
    const payload = pack(samplePayload);
    log(`bench cluster: NATS at ${address}${server ? ' (private nats-server)' : ''}; payload ${payload.length} bytes; ${o.seconds}s per row`);
    // raw: same client, a responder that echoes the bytes (no decode, no validation)
    const raw = nc.subscribe('hr1bench.raw', { callback: (_e, m) => m.respond(m.data) });
    await nc.flush();
    // actor calls over NATS: node and client share the connection, like the raw responder
    const cluster = new Cluster(bus, { cluster: 'bench' });
    const node = new ClusterNode(bus, { cluster: 'bench', resources: { cpu: 1 } });
    const h = await cluster.spawn(BenchEcho.options({ maxPending: 100_000 }));
    // in-process transport: same codec and validation, no network
    const ib = new InProcessBus();
    const ic = new Cluster(ib, { cluster: 'bench' });
    const inode = new ClusterNode(ib, { cluster: 'bench', resources: { cpu: 1 } });
    const ih = await ic.spawn(BenchEcho.options({ maxPending: 100_000 }));
    const contenders: [string, () => Promise<unknown>][] = [
      ['raw NATS request/reply', () => nc.request('hr1bench.raw', payload, { timeout: 5000 })],
      // the same round trip through the cluster's request mux (one inbox subscription, no per-call Error/timer)
      ['raw NATS, cluster request mux', () => bus.request('hr1bench.raw', payload, 5000)],
      ['actor call over NATS', () => h.step(samplePayload)],
      ['actor call in-process', () => ih.step(samplePayload)],
    ];
    // interleave the contenders in rounds: the machine's state (other load, CPU wake-ups) moves
    // latencies a lot, and side by side in short turns is the only fair comparison
    const rounds = 5;
    for (const k of [1, 64]) {
      const acc = contenders.map(([what]) => ({ what, lat: [] as number[], wall: 0 }));
      for (let r = 0; r < rounds; r++) {
        for (let c = 0; c < contenders.length; c++) {
          const row = await drive(contenders[c]![0], k, ms / rounds, contenders[c]![1], acc[c]!.lat);
          acc[c]!.wall += row.wall;
        }
      }
      for (const a of acc) rows.push({ what: a.what, inflight: k, ...summarize(a.lat, a.wall) });
    }
    raw.unsubscribe();
    await cluster.close({ killOwned: true });
    await node.stop();
    await bus.close();
    await ic.close({ killOwned: true });
    await inode.stop();
    await ib.close();
    // the handler as a plain function, and with the codec round trip it pays on the wire
    const handler = BenchEcho.def.handlers.step;
    rows.push(driveSync('direct function call', Math.min(ms, 1000), () => handler({}, samplePayload, undefined as never)));
    rows.push(driveSync('direct call + codec (4× zod, 2× msgpack)', Math.min(ms, 1000), () => StepMsg.parse(unpack(pack(StepMsg.parse(handler({}, StepMsg.parse(unpack(pack(StepMsg.parse(samplePayload)))), undefined as never)))))));
  } finally {
    await server?.dispose();
  }
  // table ratios against the better of the two raw baselines, so the cluster's own mux cannot flatter it
  const rawOf = (k: number) =>
    rows
      .filter((r) => r.what.startsWith('raw') && r.inflight === k)
      .sort((a, b) => (k === 1 ? a.p50 - b.p50 : b.rate - a.rate))[0];
  const fmt = (x: number) => (x < 0.01 ? `${(x * 1000).toFixed(2)} µs` : x < 1 ? `${(x * 1000).toFixed(0)} µs` : `${x.toFixed(2)} ms`);
  log(
    table(
      ['what', 'in flight', 'calls', 'calls/s', 'p50', 'p99', 'rate / raw', 'p50 / raw'],
      rows.map((r) => {
        const base = rawOf(r.inflight);
        return [r.what, r.inflight, r.n, r.rate.toFixed(0), fmt(r.p50), fmt(r.p99), base ? (r.rate / base.rate).toFixed(2) : '-', base ? (r.p50 / base.p50).toFixed(2) : '-'];
      }),
    ),
  );
  const a1 = rows.find((r) => r.what === 'actor call over NATS' && r.inflight === 1);
  const a64 = rows.find((r) => r.what === 'actor call over NATS' && r.inflight === 64);
  for (const base of ['raw NATS request/reply', 'raw NATS, cluster request mux']) {
    const r1 = rows.find((r) => r.what === base && r.inflight === 1);
    const r64 = rows.find((r) => r.what === base && r.inflight === 64);
    if (!a1 || !a64 || !r1 || !r64) continue;
    const p = a1.p50 / r1.p50;
    const t = a64.rate / r64.rate;
    log(`targets vs "${base}": actor p50 / raw p50 = ${p.toFixed(2)} (≤ 1.25: ${p <= 1.25 ? 'met' : 'NOT met'}); pipelined actor rate / raw = ${t.toFixed(2)} (≥ 0.75: ${t >= 0.75 ? 'met' : 'NOT met'})`);
  }
  if (o.pool) {
    const mod = new URL('../../test/fixtures/pool-tasks.ts', import.meta.url).href;
    const poolRows: (string | number)[][] = [];
    for (const bs of [1, 64]) {
      const pool = new WorkerPool({ module: mod, threads: 2, batchSize: bs });
      await pool.runMany('spin', [1, 1, 1, 1]);
      const n = 20_000;
      const t0 = performance.now();
      await pool.runMany('spin', Array.from({ length: n }, () => 50));
      const rate = (n / (performance.now() - t0)) * 1000;
      poolRows.push([`piscina pool, 2 threads, 50 µs task, ${bs} per message`, n, rate.toFixed(0)]);
      await pool.destroy();
    }
    const t0 = performance.now();
    const end = t0 + 1000;
    let n = 0;
    while (performance.now() < end) {
      const e = performance.now() + 0.05;
      while (performance.now() < e);
      n++;
    }
    poolRows.push(['direct on the main thread, 50 µs task', n, ((n / (performance.now() - t0)) * 1000).toFixed(0)]);
    log(`\n${table(['worker pool', 'tasks', 'tasks/s'], poolRows)}`);
  }
  return rows;
}
