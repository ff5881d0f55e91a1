/**
 * The cluster's fault handling on the in-process bus (fast, deterministic): a dropped connection
 * fails in-flight calls with CallLostError, a reused named actor's unheard node is watched, and
 * a restart after every node was lost waits for a node or names the lost ones. The same faults
 * against real processes: test/integration/faults-cluster.test.ts.
 */
import test from 'ava';
import { InProcessBus } from '../../cluster/bus-inproc.ts';
import { BusDisconnectedError, BusTimeoutError } from '../../cluster/bus.ts';
import { Cluster } from '../../cluster/client.ts';
import { ActorDiedError, CallLostError, PlacementError, fromWire } from '../../cluster/errors.ts';
import { ClusterNode } from '../../cluster/node.ts';
import { PendingRequests } from '../../cluster/pending.ts';
import { Sleeper } from '../fixtures/slow-actors.ts';
import { eventually, sleep } from '../behaviour/harness.ts';

let seq = 0;
const clusterName = () => `u${process.pid}f${seq++}`;

function node(bus: InProcessBus, cluster: string, nodeId: string, heartbeatMs = 100): ClusterNode {
  return new ClusterNode(bus, { cluster, nodeId, heartbeatMs, resources: { cpu: 2, gpu: 0 } });
}

test('pending - failAll rejects every pending request at once and leaves later ones alone', async (t) => {
  const p = new PendingRequests();
  const sent: number[] = [];
  const a = p.open('hr1.x.a.one.m', 60_000, (id) => sent.push(id), (e) => e as Error);
  const b = p.open('hr1.x.a.two.m', 60_000, (id) => sent.push(id), (e) => e as Error);
  t.is(p.failAll((s) => new BusDisconnectedError(s, 'nats://h:1')), 2);
  const ea = await t.throwsAsync(a, { instanceOf: BusDisconnectedError });
  t.is(ea!.subject, 'hr1.x.a.one.m');
  t.regex(ea!.message, /connection to NATS at nats:\/\/h:1 was lost while the request on hr1\.x\.a\.one\.m was pending/);
  t.is(ea!.code, 'DISCONNECTED');
  t.is(ea!.name, 'Error', 'a bus signal, as its siblings');
  await t.throwsAsync(b, { instanceOf: BusDisconnectedError });
  const c = p.open('hr1.x.a.three.m', 60_000, (id) => sent.push(id), (e) => e as Error);
  t.is(p.failAll((s) => new BusDisconnectedError(s, 'nats://h:1')), 1);
  await t.throwsAsync(c, { instanceOf: BusDisconnectedError });
  t.is(p.failAll((s) => new BusTimeoutError(s, 1)), 0);
  p.close('done');
});

test('call lost - a dropped connection fails the in-flight call with CallLostError; sent again it succeeds; maxTaskRetries re-sends it', async (t) => {
  const bus = new InProcessBus();
  const name = clusterName();
  const n = node(bus, name, 'n0');
  const c = new Cluster(bus, { cluster: name, deadAfterMs: 900 });
  try {
    await c.waitForNodes(1, 5000);
    const once = await c.spawn(Sleeper);
    const retried = await c.spawn(Sleeper.options({ maxTaskRetries: 2 }));
    const lost = once.nap(300, { timeout: 30_000 }).then(() => null, (e: unknown) => e);
    const resent = retried.nap(300, { timeout: 30_000 });
    await sleep(50);
    t.is(bus.interrupt(), 2, 'both calls were pending');
    const e = await lost;
    t.true(e instanceof CallLostError, String(e));
    const err = e as CallLostError;
    t.is(err.code, 'CALL_LOST');
    t.true(err.retryable);
    t.is(err.actor, once.ref.actorId);
    t.is(err.method, 'nap');
    t.regex(err.message, /the connection to NATS at inproc was lost while Sleeper\.nap on Sleeper-\S+ was in flight/);
    t.regex(err.message, /may be sent again/);
    t.true(err.cause instanceof BusDisconnectedError);
    t.is((await once.nap(10)).ms, 10, 'sent again after the reconnect, it succeeds');
    const r = await resent;
    t.is(r.ms, 300);
    t.is(r.restartCount, 0, 'the same instance: a lost call is not a death');
    // it travels as itself
    t.true(fromWire(err.toWire()) instanceof CallLostError);
  } finally {
    await c.close();
    await n.stop();
    await bus.close();
  }
});

test('adopted actor - a named actor reused (not created) here, its node vanishes before this client heard it: in-flight calls fail with ActorDiedError saying nobody here restarts it', async (t) => {
  const bus = new InProcessBus();
  const name = clusterName();
  const owner = new Cluster(bus, { cluster: name, deadAfterMs: 900 });
  // one beat at start, then none for a minute: a client created later never hears this node
  const n = node(bus, name, 'quiet', 60_000);
  const logs: string[] = [];
  let user: Cluster | undefined;
  try {
    await owner.waitForNodes(1, 5000);
    await owner.spawn(Sleeper.options({ name: 'reused' }));
    user = new Cluster(bus, { cluster: name, deadAfterMs: 300, log: (l) => logs.push(l) });
    const h = await user.spawn(Sleeper.options({ name: 'reused' }));
    t.is(h.ref.actorId, '@reused');
    t.deepEqual(user.liveNodes(), [], 'the user client has not heard the node');
    const call = h.nap(20_000, { timeout: 20_000 }).then(() => null, (e: unknown) => e);
    await sleep(50);
    // alive, in this process, the node is never timed out; it vanishes as a SIGKILLed process would
    n.vanish();
    const e = await call;
    t.true(e instanceof ActorDiedError, String(e));
    const err = e as ActorDiedError;
    t.is(err.node, 'quiet');
    t.is(err.method, 'nap');
    t.regex(err.message, /node quiet was lost \(no heartbeat for \d+ ms since it answered a ping\)/);
    t.regex(err.message, /this client does not own it .*its owner is client \w+.*so it does not restart it/);
    t.true(logs.some((l) => /node quiet lost .* actor\(s\) reused here were on it: @reused/.test(l)), logs.join('\n'));
    await t.throwsAsync(h.nap(0, { timeout: 2000 }), { instanceOf: ActorDiedError, message: /is not running: its node quiet was lost/ });
  } finally {
    await user?.close();
    await owner.close();
    await bus.close();
  }
});

test('adopted actor - a live node heard only through the pong is not declared lost once its heartbeats arrive', async (t) => {
  const bus = new InProcessBus();
  const name = clusterName();
  const owner = new Cluster(bus, { cluster: name, deadAfterMs: 900 });
  const n = node(bus, name, 'beating', 100);
  const logs: string[] = [];
  const user = new Cluster(bus, { cluster: name, deadAfterMs: 600, log: (l) => logs.push(l) });
  try {
    await owner.waitForNodes(1, 5000);
    await owner.spawn(Sleeper.options({ name: 'kept' }));
    const h = await user.spawn(Sleeper.options({ name: 'kept' }));
    const r = await h.nap(1500, { timeout: 10_000 });
    t.is(r.nodeId, 'beating');
    t.false(logs.some((l) => /lost/.test(l)), logs.join('\n'));
  } finally {
    await user.close();
    await owner.close();
    await n.stop();
    await bus.close();
  }
});

test('every node lost - a restart waits for a node that joins later; the call re-sent by maxTaskRetries succeeds there', async (t) => {
  const bus = new InProcessBus();
  const name = clusterName();
  const logs: string[] = [];
  const c = new Cluster(bus, { cluster: name, deadAfterMs: 300, log: (l) => logs.push(l) });
  const nodes = [node(bus, name, 'n1'), node(bus, name, 'n2')];
  try {
    await c.waitForNodes(2, 5000);
    const h = await c.spawn(Sleeper.options({ maxRestarts: -1, maxTaskRetries: -1 }));
    const call = h.napOnce(30_000, { timeout: 30_000 });
    await sleep(50);
    for (const n of nodes) n.vanish();
    await eventually(() => logs.filter((l) => /node n[12] lost/.test(l)).length === 2, 5000, 'both nodes lost');
    await sleep(800);
    nodes.push(node(bus, name, 'n3'));
    const r = await call;
    t.is(r.nodeId, 'n3');
    t.is(r.restartCount, 1);
    t.false(logs.some((l) => /no responders/.test(l)), logs.join('\n'));
  } finally {
    await c.close();
    for (const n of nodes) await n.stop();
    await bus.close();
  }
});

test('every node lost - with none coming back the restart fails after spawnTimeout with a PlacementError naming the lost nodes', async (t) => {
  const bus = new InProcessBus();
  const name = clusterName();
  const logs: string[] = [];
  const c = new Cluster(bus, { cluster: name, deadAfterMs: 300, spawnTimeoutMs: 1000, log: (l) => logs.push(l) });
  const nodes = [node(bus, name, 'n1'), node(bus, name, 'n2')];
  try {
    await c.waitForNodes(2, 5000);
    const h = await c.spawn(Sleeper.options({ maxRestarts: -1, maxTaskRetries: -1 }));
    const call = h.napOnce(30_000, { timeout: 30_000 }).then(() => null, (e: unknown) => e);
    await sleep(50);
    for (const n of nodes) n.vanish();
    const e = await call;
    t.true(e instanceof ActorDiedError, String(e));
    const err = e as ActorDiedError;
    t.regex(err.message, /is not running: restart after node n[12] was lost .* failed: no live node can host Sleeper \(Sleeper-\S+\) after waiting 1000 ms: every node was lost \(n1: no heartbeat for \d+ ms[^;)]*; n2: no heartbeat for \d+ ms[^;)]*\); start a ClusterNode on this bus/);
    t.notRegex(err.message, /no responders/);
    t.true(err.cause instanceof PlacementError);
    // a later call says the same
    await t.throwsAsync(h.napOnce(0, { timeout: 2000 }), { instanceOf: ActorDiedError, message: /every node was lost/ });
  } finally {
    await c.close();
    await bus.close();
  }
});

test('spawn sent twice for one instance (a retry after a lost connection) runs the constructor once', async (t) => {
  const bus = new InProcessBus();
  const name = clusterName();
  const n = node(bus, name, 'n0');
  const c = new Cluster(bus, { cluster: name });
  try {
    await c.waitForNodes(1, 5000);
    const h = await c.spawn(Sleeper.options({ resources: { cpu: 2 } }));
    const w = await h.nap(0);
    // the same spawn again: answered from the running instance, not refused for lack of cpu
    const { pack, unpack } = await import('../../cluster/codec.ts');
    const req = { actorId: h.ref.actorId, instanceId: w.instanceId, cls: 'Sleeper', args: undefined, owner: c.clientId, resources: { cpu: 2 }, labels: {}, maxPending: 10, maxConcurrency: 1, restartCount: 0 };
    const [tag, val] = unpack(await bus.request(`hr1.${name}.node.n0.spawn`, pack(req), 5000)) as [number, unknown];
    t.is(tag, 0, JSON.stringify(val));
    t.is(n.hosted().length, 1);
  } finally {
    await c.close({ killOwned: true });
    await n.stop();
    await bus.close();
  }
});
