import test from 'ava';
import { NatsServer } from '../../cluster/nats-server.ts';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { hr1, startNode, stopAll, type Proc } from './processes.ts';

const evalArgs = (url: string) => ['eval', '--address', url, '--cluster', 'rst', '--env', 'alfworld', '--target', 'sim/llama-3b', '--tasks', '140', '--seeds', '1-2', '--no-cache', '--json', '--env-threads', '0'];

function parse(out: string): Record<string, unknown> {
  const j = JSON.parse(out.slice(out.indexOf('{'), out.lastIndexOf('}') + 1)) as Record<string, unknown>;
  return { ...j, stats: undefined };
}

// real processes: one test at a time
test.serial('restart - nats-server restarted while hr1 eval --address has chunks in flight: the eval completes with the fault-free result', async (t) => {
  t.timeout(600_000);
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  try {
    procs.push(await startNode(server.url, 'rst', ['--resources', 'cpu=4', '--node-id', 'r0']));
    const clean = hr1(evalArgs(server.url));
    t.is(await clean.exited, 0, clean.out());
    const expected = parse(clean.out());

    const faulty = hr1(evalArgs(server.url));
    // once the eval's TargetActor has chunks in flight, take the server away for 1 s
    const bus = await NatsBus.connect({ address: server.url });
    const watcher = new Cluster(bus, { cluster: 'rst' });
    try {
      for (;;) {
        const st = await watcher.status(200);
        if (st.some((h) => h.actors.some((a) => a.cls === 'TargetActor' && a.pending > 0))) break;
        if (faulty.child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await watcher.close();
      await bus.close();
    }
    t.is(faulty.child.exitCode, null, `the eval is still running when the server goes: ${faulty.out()}`);
    await server.restart(1000);
    const code = await faulty.exited;
    t.is(code, 0, faulty.out());
    t.deepEqual(parse(faulty.out()), expected);
    t.regex(faulty.out(), /sending it again|"resent": [1-9]/, 'chunks in flight were sent again');
  } finally {
    await stopAll(procs);
    await server.dispose();
  }
});
