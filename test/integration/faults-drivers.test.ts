import test from 'ava';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { hr1, startNode, stopAll, type Proc } from './processes.ts';

const evalArgs = (url: string, cluster: string, tasks: number) => ['eval', '--address', url, '--cluster', cluster, '--env', 'alfworld', '--target', 'sim/llama-3b', '--tasks', String(tasks), '--seeds', '1-2', '--no-cache', '--json'];

async function runEval(url: string, cluster: string, tasks: number): Promise<{ code: number | null; json: Record<string, unknown>; out: string }> {
  const p = hr1(evalArgs(url, cluster, tasks));
  const code = await p.exited;
  const out = p.out();
  const start = out.indexOf('{');
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(out.slice(start, out.lastIndexOf('}') + 1)) as Record<string, unknown>;
  } catch {
    // reported by the assertions below
  }
  return { code, json, out };
}

/** what a run decides (stats hold timings and nodes) */
const result = (j: Record<string, unknown>) => ({ ...j, stats: undefined });

// real processes: one test at a time
test.serial('drivers - four concurrent evals of the same target on the same nodes all complete, each with its solo result, and leave no actor behind', async (t) => {
  t.timeout(600_000);
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const watcher = new Cluster(bus, { cluster: 'drv' });
  try {
    for (let i = 0; i < 2; i++) procs.push(await startNode(server.url, 'drv', ['--resources', 'cpu=4', '--node-id', `d${i}`]));
    await watcher.waitForNodes(2, 20_000);
    // drivers of different sizes, so that they finish at different times
    const sizes = [6, 12, 18, 24];
    const solo: ReturnType<typeof result>[] = [];
    for (const n of sizes) {
      const r = await runEval(server.url, 'drv', n);
      t.is(r.code, 0, r.out);
      solo.push(result(r.json));
    }
    const together = await Promise.all(sizes.map((n) => runEval(server.url, 'drv', n)));
    together.forEach((r, i) => {
      t.is(r.code, 0, r.out);
      t.deepEqual(result(r.json), solo[i], `driver ${i} (${sizes[i]} tasks) has its solo result`);
    });
    // every driver killed its own actors when it closed
    let left: string[] = [];
    for (let i = 0; i < 30; i++) {
      left = (await watcher.status(500)).flatMap((h) => h.actors.filter((a) => a.cls === 'TargetActor').map((a) => `${h.nodeId}:${a.actorId}`));
      if (left.length === 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    t.deepEqual(left, [], 'no TargetActor left on the nodes');
  } finally {
    await watcher.close();
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});
