import { z } from 'zod';
import { defineActor } from '../../cluster/actor.ts';
import { InProcessBus } from '../../cluster/bus-inproc.ts';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { pack, unpack } from '../../cluster/codec.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { ClusterNode } from '../../cluster/node.ts';
import { WorkerPool } from '../../cluster/pool.ts';
import { summarize, table } from '../cli/stats.ts';

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
async function drive(what: string, inflight: number, ms: number, fn: () => Promise<unknown> | unknown): Promise<Row> {
  // warm up
  for (let i = 0; i < 200; i++) await fn();
  const lat: number[] = [];
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
  const s = summarize(lat, performance.now() - t0);
  return { what, inflight, ...s };
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
    // raw: same client, a responder that decodes and re-encodes like a handler would not (pure echo)
    const raw = nc.subscribe('hr1bench.raw', { callback: (_e, m) => m.respond(m.data) });
    await nc.flush();
    for (const k of [1, 64]) rows.push(await drive('raw NATS request/reply', k, ms, () => nc.request('hr1bench.raw', payload, { timeout: 5000 })));
    raw.unsubscribe();
    // actor calls over NATS: node and client share the connection, like the raw responder
    const cluster = new Cluster(bus, { cluster: 'bench' });
    const node = new ClusterNode(bus, { cluster: 'bench', resources: { cpu: 1 } });
    const h = await cluster.spawn(BenchEcho.options({ maxPending: 100_000 }));
    for (const k of [1, 64]) rows.push(await drive('actor call over NATS', k, ms, () => h.step(samplePayload)));
    await cluster.close({ killOwned: true });
    await node.stop();
    await bus.close();
    // in-process transport: same codec and validation, no network
    const ib = new InProcessBus();
    const ic = new Cluster(ib, { cluster: 'bench' });
    const inode = new ClusterNode(ib, { cluster: 'bench', resources: { cpu: 1 } });
    const ih = await ic.spawn(BenchEcho.options({ maxPending: 100_000 }));
    for (const k of [1, 64]) rows.push(await drive('actor call in-process', k, ms, () => ih.step(samplePayload)));
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
  const rawOf = (k: number) => rows.find((r) => r.what.startsWith('raw') && r.inflight === k);
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
  const r1 = rawOf(1);
  const r64 = rawOf(64);
  if (a1 && a64 && r1 && r64) {
    const p = a1.p50 / r1.p50;
    const t = a64.rate / r64.rate;
    log(`\ntargets: actor p50 / raw p50 = ${p.toFixed(2)} (target ≤ 1.25: ${p <= 1.25 ? 'met' : 'NOT met'}); pipelined actor rate / raw = ${t.toFixed(2)} (target ≥ 0.75: ${t >= 0.75 ? 'met' : 'NOT met'})`);
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
