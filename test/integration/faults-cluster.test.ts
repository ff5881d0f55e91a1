/**
 * Faults of the cluster against a real nats-server and real `hr1 node` processes: the server
 * restarted under an in-flight call, a reused named actor whose node dies unheard, and the loss
 * of every node under a restarting actor. No timing is asserted: what distinguishes a prompt
 * failure from a hang is its class (a hang ends as CallTimeoutError at the call's timeout).
 */
import test from 'ava';
import { NatsBus } from '../../cluster/bus-nats.ts';
import type { BusStatus } from '../../cluster/bus.ts';
import { Cluster } from '../../cluster/client.ts';
import { ActorDiedError, CallLostError, PlacementError } from '../../cluster/errors.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { Sleeper } from '../fixtures/slow-actors.ts';
import { eventually, sleep } from '../behaviour/harness.ts';
import { startNode, stopAll, waitFor, type Proc } from './processes.ts';

const SLOW = ['--module', 'test/fixtures/slow-actors.ts'];

/** Settle a promise now (so its rejection is never unhandled) and read the outcome later. */
function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** Pending calls of an actor as its node reports them (a status ping: no heartbeat reaches other clients). */
async function pendingOn(c: Cluster, actorId: string): Promise<number> {
  const nodes = await c.status(300);
  return nodes.flatMap((n) => n.actors).filter((a) => a.actorId === actorId).reduce((s, a) => s + a.pending, 0);
}

// these tests start real processes: run them one at a time
test.serial('faults-cluster - nats-server restarted mid-call: the in-flight call fails with CallLostError, is sent again after reconnect with the same result, and maxTaskRetries re-sends it by itself', async (t) => {
  t.timeout(120_000);
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const statuses: BusStatus[] = [];
  bus.onStatus((s) => statuses.push(s));
  // a wide liveness window: the node process may reconnect a little after this client
  const cluster = new Cluster(bus, { cluster: 'lost', deadAfterMs: 6000 });
  try {
    procs.push(await startNode(server.url, 'lost', [...SLOW, '--node-id', 'n0']));
    await cluster.waitForNodes(1, 20_000);
    const once = await cluster.spawn(Sleeper);
    const retried = await cluster.spawn(Sleeper.options({ maxTaskRetries: -1 }));
    const home = await once.nap(0);
    const lost = settle(once.nap(3000, { timeout: 60_000 }));
    const resent = settle(retried.nap(3000, { timeout: 60_000 }));
    await eventually(async () => (await pendingOn(cluster, once.ref.actorId)) === 1 && (await pendingOn(cluster, retried.ref.actorId)) === 1, 20_000, 'both calls in flight on n0');

    await server.restart(1000);

    const r1 = await lost;
    t.false(r1.ok, 'the call in flight across the outage does not succeed');
    const e = r1.ok ? undefined : r1.error;
    t.true(e instanceof CallLostError, `CallLostError, not a hang until CallTimeoutError: ${String(e)}`);
    if (e instanceof CallLostError) {
      t.is(e.code, 'CALL_LOST');
      t.true(e.retryable);
      t.is(e.actor, once.ref.actorId);
      t.is(e.method, 'nap');
      t.regex(e.message, /connection to NATS .* was lost while Sleeper\.nap/);
      t.regex(e.message, /may be sent again/);
    }
    t.true(statuses.includes('disconnect'), statuses.join(','));

    // the node reconnects with its actors: the same call sent again gives the same result
    await waitFor(procs[0]!, /NATS reconnect/, 30_000);
    const again = await eventually(() => once.nap(3000, { timeout: 20_000 }), 30_000, 'the call sent again after reconnect');
    t.deepEqual(again, { ...home, ms: 3000 }, 'same instance on the same node, not a restart');

    // an actor with maxTaskRetries: the cluster re-sent the lost call once the actor answered again
    const r2 = await resent;
    t.true(r2.ok, r2.ok ? '' : String(r2.error));
    if (r2.ok) {
      t.is(r2.value.ms, 3000);
      t.is(r2.value.restartCount, 0);
      t.is(r2.value.nodeId, 'n0');
    }
  } finally {
    await cluster.close();
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('faults-cluster - a named actor reused (not created) by a client, its node SIGKILLed before that client heard the node: the in-flight call fails with ActorDiedError, not at the call timeout', async (t) => {
  t.timeout(120_000);
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const busA = await NatsBus.connect({ address: server.url });
  const busB = await NatsBus.connect({ address: server.url });
  // a consistent configuration: heartbeats every 5 s, a node is dead after 12 s without one
  const a = new Cluster(busA, { cluster: 'adopt', deadAfterMs: 12_000 });
  let b: Cluster | undefined;
  try {
    procs.push(await startNode(server.url, 'adopt', [...SLOW, '--node-id', 'n0', '--heartbeat', '5s']));
    await a.waitForNodes(1, 20_000);
    const created = await a.spawn(Sleeper.options({ name: 'shared' }));
    t.is(created.ref.actorId, '@shared');
    // start B right after a periodic heartbeat of n0: the next one is 5 s away
    const n0 = () => a.liveNodes().find((n) => n.nodeId === 'n0');
    await eventually(() => n0()?.actors.some((x) => x.actorId === '@shared'), 20_000, 'n0 to announce @shared');
    const seq = n0()!.seq;
    await eventually(() => (n0()?.seq ?? -1) > seq, 20_000, 'a periodic heartbeat of n0');
    b = new Cluster(busB, { cluster: 'adopt', deadAfterMs: 12_000, log: (l) => t.log(`[B] ${l}`) });
    const reused = await b.spawn(Sleeper.options({ name: 'shared' }));
    const call = settle(reused.nap(40_000, { timeout: 45_000 }));
    await eventually(async () => (await pendingOn(a, '@shared')) === 1, 10_000, 'the call in flight on n0');
    const heard = b.liveNodes().some((n) => n.nodeId === 'n0');
    procs[0]!.child.kill('SIGKILL');
    await procs[0]!.exited;
    // the case under test: B had not heard a heartbeat of n0 when it died. On a machine so loaded
    // that the 5 s to the next heartbeat passed before the kill, B heard it, and the ordinary
    // node-lost path must give the same answer: both are checked below, the case is logged
    if (heard) t.log('B heard a heartbeat of n0 before the kill (a loaded machine): the ordinary node-lost path was tested');

    const r = await call;
    const e = r.ok ? undefined : r.error;
    t.true(e instanceof ActorDiedError, `ActorDiedError, not CallTimeoutError at the call timeout: ${String(e)}`);
    if (e instanceof ActorDiedError) {
      t.is(e.actor, '@shared');
      t.is(e.method, 'nap');
      t.is(e.node, 'n0');
      t.regex(e.message, /node n0 was lost/);
      t.regex(e.message, /does not own it/);
    }
    // later calls know it died, rather than calling it unknown
    await t.throwsAsync(reused.nap(0, { timeout: 5000 }), { instanceOf: ActorDiedError });
  } finally {
    await b?.close();
    await a.close();
    await busB.close();
    await busA.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('faults-cluster - every node lost under a restartable actor: the restart waits for a node started later, and the retried call succeeds there', async (t) => {
  t.timeout(120_000);
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const logs: string[] = [];
  const cluster = new Cluster(bus, { cluster: 'alllost', deadAfterMs: 1500, log: (l) => logs.push(l) });
  try {
    procs.push(await startNode(server.url, 'alllost', [...SLOW, '--node-id', 'n1', '--resources', 'cpu=2']));
    procs.push(await startNode(server.url, 'alllost', [...SLOW, '--node-id', 'n2', '--resources', 'cpu=2']));
    await cluster.waitForNodes(2, 20_000);
    const h = await cluster.spawn(Sleeper.options({ maxRestarts: -1, maxTaskRetries: -1 }));
    const call = settle(h.napOnce(60_000, { timeout: 90_000 }));
    await eventually(async () => (await pendingOn(cluster, h.ref.actorId)) === 1, 20_000, 'the call in flight');
    for (const p of procs) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await eventually(() => logs.filter((l) => /node n[12] lost/.test(l)).length === 2, 20_000, 'both nodes declared lost');
    await sleep(3000);
    procs.push(await startNode(server.url, 'alllost', [...SLOW, '--node-id', 'n3', '--resources', 'cpu=2']));

    const r = await call;
    t.true(r.ok, `the call is re-sent to the restarted actor: ${r.ok ? '' : String(r.error)}\n${logs.join('\n')}`);
    if (r.ok) {
      t.is(r.value.nodeId, 'n3');
      t.is(r.value.restartCount, 1);
    }
    t.true(logs.some((l) => /restarted on n3/.test(l)), logs.join('\n'));
    t.false(logs.some((l) => /no responders/.test(l)), logs.join('\n'));
  } finally {
    await cluster.close();
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('faults-cluster - every node lost and none comes back: the restart fails after the spawn timeout with a PlacementError naming the lost nodes', async (t) => {
  t.timeout(120_000);
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const logs: string[] = [];
  const cluster = new Cluster(bus, { cluster: 'nonecome', deadAfterMs: 1500, spawnTimeoutMs: 4000, log: (l) => logs.push(l) });
  try {
    procs.push(await startNode(server.url, 'nonecome', [...SLOW, '--node-id', 'n1', '--resources', 'cpu=2']));
    procs.push(await startNode(server.url, 'nonecome', [...SLOW, '--node-id', 'n2', '--resources', 'cpu=2']));
    await cluster.waitForNodes(2, 20_000);
    const h = await cluster.spawn(Sleeper.options({ maxRestarts: -1, maxTaskRetries: -1 }));
    const call = settle(h.napOnce(60_000, { timeout: 90_000 }));
    await eventually(async () => (await pendingOn(cluster, h.ref.actorId)) === 1, 20_000, 'the call in flight');
    for (const p of procs) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));

    const r = await call;
    const e = r.ok ? undefined : r.error;
    t.true(e instanceof ActorDiedError, String(e));
    if (e instanceof ActorDiedError) {
      t.regex(e.message, /no live node can host Sleeper .* after waiting 4000 ms: every node was lost \(n1: no heartbeat for \d+ ms.*; n2: /);
      t.regex(e.message, /start one with `hr1 node --address nats:\/\/127\.0\.0\.1:\d+ --cluster nonecome`/);
      t.notRegex(e.message, /no responders/);
      t.true(e.cause instanceof PlacementError, `cause: ${String(e.cause)}`);
    }
    t.true(logs.some((l) => /is dead: restart after node n[12] was lost .* failed: no live node can host Sleeper/.test(l)), logs.join('\n'));
    t.false(logs.some((l) => /no responders/.test(l)), logs.join('\n'));
  } finally {
    await cluster.close();
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});
