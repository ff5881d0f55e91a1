/**
 * Logs and call counters over a real nats-server: the shared suite (test/behaviour/logs-suite.ts),
 * then `hr1 logs` as a real process following a real `hr1 node` process.
 */
import test from 'ava';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { ActorTaskError } from '../../cluster/errors.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { LogRecordSchema } from '../../cluster/protocol.ts';
import { natsTransport, type Transport } from '../behaviour/harness.ts';
import { logsSuite } from '../behaviour/logs-suite.ts';
import { Counter } from '../fixtures/actors.ts';
import { startCluster } from '../../experiments/commands/runtime.ts';
import { hr1, startNode, stopAll, waitFor, type Proc } from './processes.ts';

let transport: Transport;
test.before(async () => {
  transport = await natsTransport();
});
test.after.always(async () => {
  await transport?.close();
});

logsSuite(test, () => transport);

test.serial('hr1 logs - follows a real node process: an actor\'s warning and a failed call arrive as JSON records; the node prints its actor\'s warning itself; heartbeats count the calls', async (t) => {
  t.timeout(120_000);
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const cluster = new Cluster(bus, { cluster: 'logs' });
  try {
    const node = await startNode(server.url, 'logs', ['--node-id', 'ln0']);
    procs.push(node);
    const logs = hr1(['logs', '--address', server.url, '--cluster', 'logs', '--json']);
    procs.push(logs);
    await waitFor(logs, /following cluster "logs"/, 60_000);
    // a CLI driver (startCluster, as `hr1 eval --address …` runs) prints forwarded warnings on stderr
    const rt = await startCluster({ address: server.url, cluster: 'logs' });
    const stderr: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => (stderr.push(String(chunk)), write(chunk, ...rest))) as typeof process.stderr.write;
    await rt.bus.flush();
    await cluster.waitForNodes(1, 20_000);
    const c = await cluster.spawn(Counter);
    try {
      await c.warn('queue is 90% full');
      await t.throwsAsync(c.fail('bad shard'), { instanceOf: ActorTaskError });
      await waitFor(logs, /"message":"fail failed: bad shard/);
      const deadline = Date.now() + 5000;
      while (stderr.filter((l) => l.startsWith('[node ln0]')).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      process.stderr.write = write;
      await rt.shutdown();
    }
    t.true(stderr.includes(`[node ln0] ${c.ref.actorId} warn: queue is 90% full\n`), stderr.join(''));
    t.true(stderr.some((l) => l.startsWith(`[node ln0] ${c.ref.actorId} error: fail failed: bad shard`)), stderr.join(''));
    const records = logs
      .out()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => LogRecordSchema.parse(JSON.parse(l)));
    t.like(records.find((r) => r.level === 'warn'), { nodeId: 'ln0', actorId: c.ref.actorId, cls: 'Counter', source: 'actor', message: 'queue is 90% full' });
    t.like(records.find((r) => r.level === 'error'), { nodeId: 'ln0', actorId: c.ref.actorId, cls: 'Counter', source: 'call', method: 'fail' });
    // logs still print on the node itself
    await waitFor(node, new RegExp(`\\[node ln0\\] ${c.ref.actorId} warn: queue is 90% full`));
    const hosted = (await cluster.status(500)).flatMap((h) => h.actors).find((a) => a.actorId === c.ref.actorId);
    t.like(hosted, { calls: 2, errors: 1 });
    logs.child.kill('SIGINT');
    t.is(await logs.exited, 130, logs.out());
  } finally {
    await cluster.close({ killOwned: true }).catch(() => {});
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});
