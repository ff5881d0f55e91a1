import test from 'ava';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { ActorDiedError, ConnectionError } from '../../cluster/errors.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { Counter } from '../fixtures/actors.ts';
import { eventually, sleep } from '../behaviour/harness.ts';
import { hr1, startNode, stopAll, waitFor, type Proc } from './processes.ts';

// these tests start real processes: run them one at a time
test.serial('faults - kill -9 of a node process under load: its actors restart on other nodes, callers see ActorDiedError and succeed on retry', async (t) => {
  t.timeout(300_000); // three node processes to start on a possibly busy machine
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const logs: string[] = [];
  const cluster = new Cluster(bus, { cluster: 'faults', deadAfterMs: 1500, log: (l) => logs.push(l) });
  try {
    for (let i = 0; i < 3; i++) procs.push(await startNode(server.url, 'faults', ['--resources', 'cpu=4', '--node-id', `n${i}`]));
    await cluster.waitForNodes(3, 10_000);
    const actors = await Promise.all(Array.from({ length: 6 }, (_, i) => cluster.spawn(Counter.options({ maxRestarts: 3 }), { start: i * 1000 })));
    const homes = await Promise.all(actors.map((a) => a.whoami(null)));
    t.is(new Set(homes.map((h) => h.nodeId)).size, 3, 'actors spread over the three node processes');
    const victimId = homes[0]!.nodeId;
    const victim = procs[Number(victimId.slice(1))]!;
    t.is(homes[0]!.pid, victim.child.pid ?? -1, 'the actor runs in the node process');
    // load: every actor called continuously; retry on ActorDiedError like a driver re-running lost work
    let stop = false;
    const died: ActorDiedError[] = [];
    let ok = 0;
    const loops = actors.map(async (a) => {
      while (!stop) {
        try {
          await a.add(1, { timeout: 5000 });
          ok++;
        } catch (e) {
          if (e instanceof ActorDiedError) {
            died.push(e);
            await sleep(100);
          } else throw e;
        }
      }
    });
    await sleep(500);
    victim.child.kill('SIGKILL');
    await victim.exited;
    const onVictim = actors.filter((_, i) => homes[i]!.nodeId === victimId);
    for (const a of onVictim) {
      const w = await eventually(() => a.whoami(null, { timeout: 1000 }), 15_000, 'restart on a live node');
      t.not(w.nodeId, victimId);
      t.is(w.restartCount, 1);
    }
    const okBefore = ok;
    await sleep(500);
    stop = true;
    await Promise.all(loops);
    t.true(ok > okBefore, 'calls succeed again after the restart');
    t.true(died.length > 0, 'callers saw ActorDiedError');
    for (const e of died) {
      t.true(onVictim.some((a) => a.ref.actorId === e.actor), `only actors of the lost node died (${e.actor})`);
      t.is(e.method, 'add');
    }
    t.true(logs.some((l) => l.includes(`node ${victimId} lost`)), logs.join('\n'));
    // the restarted actors start from a fresh constructor run: state from the constructor, then the new calls
    const fresh = await onVictim[0]!.get(null);
    t.true(fresh >= 0 && fresh < 1000 + 100_000);
  } finally {
    await cluster.close();
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('faults - nats-server restarted mid-run: clients and nodes reconnect and calls resume', async (t) => {
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const cluster = new Cluster(bus, { cluster: 'restart', deadAfterMs: 1500 });
  try {
    procs.push(await startNode(server.url, 'restart', ['--resources', 'cpu=2']));
    await cluster.waitForNodes(1, 10_000);
    const c = await cluster.spawn(Counter);
    t.is(await c.add(1), 1);
    await server.restart(300);
    const v = await eventually(() => c.add(1, { timeout: 1000 }), 15_000, 'calls to resume');
    t.true(v >= 2);
    // no restart happened: the same instance, with its state
    const w = await c.whoami(null);
    t.is(w.restartCount, 0);
    t.is(await c.get(null), v);
    await waitFor(procs[0]!, /NATS reconnect/);
  } finally {
    await cluster.close();
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('security - a secured cluster refuses a node and a client without credentials, and admits them with', async (t) => {
  const server = await NatsServer.start({ user: 'hr1', pass: 's3cret' });
  const procs: Proc[] = [];
  try {
    const anon = hr1(['node', '--address', server.url, '--module', 'test/fixtures/actors.ts']);
    procs.push(anon);
    const code = await anon.exited;
    t.not(code, 0);
    t.regex(anon.out(), /AUTH_REFUSED/);
    t.regex(anon.out(), /requires credentials/);
    t.regex(anon.out(), /--user\/--pass/);
    const wrong = hr1(['node', '--address', server.url, '--user', 'hr1', '--pass', 'nope']);
    procs.push(wrong);
    t.not(await wrong.exited, 0);
    t.regex(wrong.out(), /refused the credentials/);
    await t.throwsAsync(NatsBus.connect({ address: server.url }), { instanceOf: ConnectionError, message: /requires credentials/ });
    // credentials through flags and through the environment both work
    procs.push(await startNode(server.url, 'sec', ['--user', 'hr1', '--pass', 's3cret']));
    procs.push(await startNode(server.url, 'sec', [], { HR1_NATS_USER: 'hr1', HR1_NATS_PASS: 's3cret' }));
    const bus = await NatsBus.connect({ address: server.url, user: 'hr1', pass: 's3cret' });
    const cluster = new Cluster(bus, { cluster: 'sec' });
    await cluster.waitForNodes(2, 10_000);
    const c = await cluster.spawn(Counter);
    t.is(await c.add(2), 2);
    const st = hr1(['status', '--address', server.url, '--cluster', 'sec', '--user', 'hr1', '--pass', 's3cret']);
    t.is(await st.exited, 0);
    t.regex(st.out(), /2 node\(s\), 1 actor\(s\)/);
    t.regex(st.out(), /Counter/);
    await cluster.close({ killOwned: true });
    await bus.close();
  } finally {
    await stopAll(procs);
    await server.dispose();
  }
});
