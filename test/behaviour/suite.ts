import type { TestFn } from 'ava';
import { z } from 'zod';
import { defineActor } from '../../cluster/actor.ts';
import { pack, unpack } from '../../cluster/codec.ts';
import { ActorDiedError, ActorInitError, ActorTaskError, BackpressureError, CallTimeoutError, CodecError, ConfigError, ObjectNotFoundError, PlacementError, UnknownActorError, UnknownMethodError } from '../../cluster/errors.ts';
import { Ledger, Shard } from '../../experiments/demo/actors.ts';
import { Counter, Fragile } from '../fixtures/actors.ts';
import { TestCluster, eventually, sleep, type Transport } from './harness.ts';

/** Labels placement test: an actor that says where it runs. */
const Where = defineActor({
  name: 'Where',
  protocol: { node: { input: z.null(), output: z.string() } },
  create: () => ({}),
  handlers: { node: (_s, _i, ctx) => ctx.nodeId },
});

/**
 * The actor runtime's behaviour, written once and run over every transport (in-process in
 * test/unit, a real nats-server in test/integration).
 */
export function behaviourSuite(test: TestFn, transport: () => Transport): void {
  const start = (nodes?: Parameters<typeof TestCluster.start>[1]) => TestCluster.start(transport(), nodes);

  test('call - returns typed results and keeps actor state between calls', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter, { start: 10 });
      t.is(await c.add(5), 15);
      t.is(await c.add(-3), 12);
      t.is(await c.get(null), 12);
      t.deepEqual(await c.echo({ s: 'é∑', n: 1.5 }), { s: 'é∑', n: 1.5 });
    } finally {
      await tc.close();
    }
  });

  test('call - runs one call at a time per actor, in arrival order', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter);
      const results = await Promise.all(Array.from({ length: 200 }, () => c.add(1)));
      t.deepEqual(results, Array.from({ length: 200 }, (_, i) => i + 1));
    } finally {
      await tc.close();
    }
  });

  test('tell - is fire-and-forget and its effect is seen by later calls', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter);
      for (let i = 0; i < 10; i++) c.add.tell(2);
      // a bad input to tell() does not throw on the caller
      t.notThrows(() => (c.add.tell as (x: unknown) => void)('oops'));
      await eventually(async () => (await c.get(null)) === 20, 3000, 'tells to land');
      t.is(await c.get(null), 20);
    } finally {
      await tc.close();
    }
  });

  test('errors - a handler that throws gives ActorTaskError with actor, method, node and remote stack; the actor lives on', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter);
      const e = await t.throwsAsync(c.fail('kaput'), { instanceOf: ActorTaskError });
      t.is(e!.code, 'ACTOR_TASK');
      t.is(e!.actor, c.ref.actorId);
      t.is(e!.method, 'fail');
      t.is(e!.node, tc.nodes[0]!.nodeId);
      t.regex(e!.message, /kaput/);
      t.regex(e!.remoteStack ?? '', /fixtures\/actors\.ts/);
      t.is(await c.add(1), 1);
    } finally {
      await tc.close();
    }
  });

  test('errors - schema-invalid input is refused on the caller, before sending', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter);
      const e = await t.throwsAsync((c.echo as (x: unknown) => Promise<unknown>)({ s: 1 }), { instanceOf: CodecError });
      t.is(e!.code, 'SCHEMA_INVALID');
      t.regex(e!.message, /input of Counter\.echo.*s: /);
      t.is(await c.get(null), 0);
    } finally {
      await tc.close();
    }
  });

  test('errors - a handler returning the wrong shape gives SCHEMA_INVALID naming the output', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter);
      const e = await t.throwsAsync(c.badOutput(null), { instanceOf: CodecError });
      t.is(e!.code, 'SCHEMA_INVALID');
      t.regex(e!.message, /output of Counter\.badOutput/);
      t.is(await c.add(2), 2);
    } finally {
      await tc.close();
    }
  });

  test('errors - malformed bytes and schema-invalid messages sent straight to the subject get typed error replies; the actor lives on', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter);
      const subject = `hr1.${tc.name}.a.${c.ref.actorId}.add`;
      const bus = tc.cluster.bus;
      const bad = unpack(await bus.request(subject, new Uint8Array([0xc1, 0xff, 0x00]), 3000)) as [number, { code: string; message: string }];
      t.is(bad[0], 1);
      t.is(bad[1].code, 'MALFORMED_MESSAGE');
      const invalid = unpack(await bus.request(subject, pack({ not: 'a number' }), 3000)) as [number, { code: string; message: string }];
      t.is(invalid[0], 1);
      t.is(invalid[1].code, 'SCHEMA_INVALID');
      t.regex(invalid[1].message, /input of Counter\.add/);
      const unknown = unpack(await bus.request(`hr1.${tc.name}.a.${c.ref.actorId}.nope`, pack(1), 3000)) as [number, { code: string; message: string }];
      t.is(unknown[1].code, 'UNKNOWN_METHOD');
      // garbage on the node's control subjects does not take the node down either
      await bus.request(`hr1.${tc.name}.node.${tc.nodes[0]!.nodeId}.spawn`, new Uint8Array([0xc1]), 3000);
      await bus.request(`hr1.${tc.name}.node.${tc.nodes[0]!.nodeId}.kill`, pack({ actorId: 5 }), 3000);
      bus.publish(`hr1.${tc.name}.sys.hb`, new Uint8Array([1, 2, 3]));
      t.is(await c.add(3), 3);
    } finally {
      await tc.close();
    }
  });

  test('errors - an unknown method gives UnknownMethodError naming the methods that exist', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter);
      const e = await t.throwsAsync(tc.cluster.call(c.ref, 'launch', { input: z.null(), output: z.null() }, null), { instanceOf: UnknownMethodError });
      t.regex(e!.message, /no method "launch".*add, get, echo/);
    } finally {
      await tc.close();
    }
  });

  test('errors - an unknown actor gives UnknownActorError', async (t) => {
    const tc = await start();
    try {
      const ref = { cluster: tc.name, actorId: 'Counter-nobody-0', cls: 'Counter', maxTaskRetries: 0 };
      const e = await t.throwsAsync(tc.cluster.handle(Counter, ref).get(null), { instanceOf: UnknownActorError });
      t.regex(e!.message, /no actor Counter-nobody-0/);
    } finally {
      await tc.close();
    }
  });

  test('spawn - a constructor that throws gives ActorInitError, not a death, and frees the resources', async (t) => {
    const tc = await start([{ resources: { cpu: 1 } }]);
    try {
      const e = await t.throwsAsync(tc.cluster.spawn(Fragile.options({ resources: { cpu: 1 }, maxRestarts: 3 }), { throwInCreate: true }), { instanceOf: ActorInitError });
      t.false(e instanceof ActorDiedError);
      t.regex(e!.message, /constructor refused/);
      const ok = await tc.cluster.spawn(Fragile.options({ resources: { cpu: 1 } }), { throwInCreate: false });
      t.is(await ok.ping(null), 'pong');
    } finally {
      await tc.close();
    }
  });

  test('spawn - invalid constructor arguments are refused with the argument path', async (t) => {
    const tc = await start();
    try {
      const e = await t.throwsAsync(tc.cluster.spawn(Fragile, { throwInCreate: 'yes' } as never), { instanceOf: CodecError });
      t.regex(e!.message, /arguments of Fragile.*throwInCreate/);
    } finally {
      await tc.close();
    }
  });

  test('call - a call that outlives its timeout gives CallTimeoutError', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter);
      const e = await t.throwsAsync(c.slow(1500, { timeout: '150ms' }), { instanceOf: CallTimeoutError });
      t.regex(e!.message, /within 150 ms/);
    } finally {
      await tc.close();
    }
  });

  test('backpressure - a full mailbox refuses calls with BackpressureError and serves the rest', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter.options({ maxPending: 3 }));
      const calls = Array.from({ length: 12 }, () => c.slow(100).then(() => 'ok', (e: Error) => e));
      const out = await Promise.all(calls);
      const refused = out.filter((x) => x instanceof BackpressureError);
      const served = out.filter((x) => x === 'ok');
      t.true(refused.length >= 1, `some calls refused (${refused.length})`);
      t.true(served.length >= 3, `some calls served (${served.length})`);
      t.true((refused[0] as BackpressureError).retryable);
      t.regex((refused[0] as Error).message, /mailbox .* is full \(3 pending\)/);
    } finally {
      await tc.close();
    }
  });

  test('named actors - get-or-create returns the same actor; a name held by another class is refused', async (t) => {
    const tc = await start();
    try {
      const a = await tc.cluster.spawn(Counter.options({ name: 'shared' }), { start: 1 });
      await a.add(1);
      const b = await tc.cluster.spawn(Counter.options({ name: 'shared' }), { start: 100 });
      t.is(b.ref.actorId, a.ref.actorId);
      t.is(await b.get(null), 2);
      const [x, y] = await Promise.all([tc.cluster.spawn(Counter.options({ name: 'race' })), tc.cluster.spawn(Counter.options({ name: 'race' }))]);
      await x.add(1);
      t.is(await y.get(null), 1);
      await t.throwsAsync(tc.cluster.spawn(Fragile.options({ name: 'shared' }), { throwInCreate: false }), { instanceOf: ConfigError, message: /taken by an actor of class Counter/ });
    } finally {
      await tc.close();
    }
  });

  test('refs - an ActorRef is plain data that travels in a message and becomes a handle again', async (t) => {
    const tc = await start();
    try {
      const ledger = await tc.cluster.spawn(Ledger.options({ name: 'ledger' }));
      t.deepEqual(JSON.parse(JSON.stringify(ledger.ref)), ledger.ref);
      const s = await tc.cluster.spawn(Shard, { label: 'a' });
      await s.add({ x: 4 });
      await s.add({ x: 5 });
      t.is(await s.flush({ ledger: ledger.ref }), 9);
      t.deepEqual(await ledger.totals(null), { a: 9 });
    } finally {
      await tc.close();
    }
  });

  test('replicas - calls to a replica group are spread over its replicas', async (t) => {
    const tc = await start([{}, {}]);
    try {
      const g = await tc.cluster.spawn(Counter.options({ replicas: 4 }));
      const seen = new Set<string>();
      const nodes = new Set<string>();
      for (let i = 0; i < 80; i++) {
        const w = await g.whoami(null);
        seen.add(w.instanceId);
        nodes.add(w.nodeId);
      }
      t.is(seen.size, 4);
      t.is(nodes.size, 2, 'replicas are spread over both nodes');
    } finally {
      await tc.close();
    }
  });

  test('placement - resources and labels choose the node; an impossible request names the nodes', async (t) => {
    const tc = await start([{ labels: { zone: 'a' }, resources: { cpu: 2 } }, { labels: { zone: 'b' }, resources: { cpu: 2, gpu: 1 } }]);
    try {
      const [na, nb] = tc.nodes;
      const ga = await tc.cluster.spawn(Where.options({ labels: { zone: 'a' } }));
      t.is(await ga.node(null), na!.nodeId);
      const gpu = await tc.cluster.spawn(Where.options({ resources: { gpu: 1 } }));
      t.is(await gpu.node(null), nb!.nodeId);
      // the only gpu is taken now
      const e = await t.throwsAsync(tc.cluster.spawn(Where.options({ resources: { gpu: 1 } })), { instanceOf: PlacementError });
      t.regex(e!.message, /no node can host Where/);
      t.regex(e!.message, /gpu 0\/1/);
      const e2 = await t.throwsAsync(tc.cluster.spawn(Where.options({ labels: { zone: 'c' } })), { instanceOf: PlacementError });
      t.regex(e2!.message, /labels/);
    } finally {
      await tc.close();
    }
  });

  test('supervision - kill with restart re-runs the constructor; kill without restart leaves ActorDiedError', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter.options({ maxRestarts: 1 }), { start: 7 });
      await c.add(3);
      await tc.cluster.kill(c, { restart: true });
      t.is(await c.get(null), 7, 'state came from a fresh constructor run');
      t.is((await c.whoami(null)).restartCount, 1);
      await tc.cluster.kill(c);
      const e = await t.throwsAsync(c.get(null), { instanceOf: ActorDiedError });
      t.is(e!.actor, c.ref.actorId);
      t.regex(e!.message, /killed/);
    } finally {
      await tc.close();
    }
  });

  test('supervision - queued calls of a restarted actor are retried with maxTaskRetries, and fail without', async (t) => {
    const tc = await start();
    try {
      for (const retries of [1, 0]) {
        const c = await tc.cluster.spawn(Counter.options({ maxRestarts: 1, maxTaskRetries: retries }));
        const slow = c.slow(300);
        const queued = [c.add(1), c.add(1), c.add(1)].map((p) => p.then((v) => v, (e: Error) => e));
        await sleep(50);
        await tc.cluster.kill(c, { restart: true });
        await slow.catch(() => {});
        const out = await Promise.all(queued);
        if (retries > 0) t.deepEqual(out, [1, 2, 3], 'retried on the fresh instance');
        else t.true(out.every((x) => x instanceof ActorDiedError), 'at most once: callers see ActorDiedError');
      }
    } finally {
      await tc.close();
    }
  });

  test('supervision - a node that vanishes: its actors restart on a live node, in-flight callers get ActorDiedError naming actor, method and node', async (t) => {
    const tc = await start([{}, {}]);
    try {
      const handles = await Promise.all(Array.from({ length: 4 }, (_, i) => tc.cluster.spawn(Counter.options({ maxRestarts: 2 }), { start: i })));
      const homes = await Promise.all(handles.map((h) => h.whoami(null)));
      const victim = tc.nodes.find((n) => homes.some((w) => w.nodeId === n.nodeId))!;
      const onVictim = handles.filter((_, i) => homes[i]!.nodeId === victim.nodeId);
      const inflight = onVictim.map((h) => h.slow(5000).then(() => null, (e: Error) => e));
      await sleep(100);
      victim.vanish();
      const errs = await Promise.all(inflight);
      for (const e of errs) {
        t.true(e instanceof ActorDiedError, `got ${e}`);
        t.is((e as ActorDiedError).method, 'slow');
        t.is((e as ActorDiedError).node, victim.nodeId);
      }
      for (const h of onVictim) {
        const w = await eventually(() => h.whoami(null), 8000, 'restart');
        t.not(w.nodeId, victim.nodeId);
        t.is(w.restartCount, 1);
      }
      t.true(tc.logs.some((l) => /restarted on/.test(l)));
    } finally {
      await tc.close();
    }
  });

  test('supervision - with maxRestarts 0 an actor on a lost node stays dead', async (t) => {
    const tc = await start([{}]);
    try {
      const c = await tc.cluster.spawn(Counter);
      await c.add(1);
      tc.nodes[0]!.vanish();
      await tc.addNode();
      await eventually(() => tc.logs.some((l) => /is dead/.test(l)), 5000, 'death noticed');
      const e = await t.throwsAsync(c.get(null, { timeout: 1000 }), { instanceOf: ActorDiedError });
      t.regex(e!.message, /no restarts left/);
    } finally {
      await tc.close();
    }
  });

  test('status - lists nodes with resources, labels and actors', async (t) => {
    const tc = await start([{ labels: { zone: 'z' }, resources: { cpu: 3 } }]);
    try {
      await tc.cluster.spawn(Counter.options({ resources: { cpu: 1 }, name: 'listed' }));
      const st = await tc.cluster.status();
      t.is(st.length, 1);
      t.deepEqual(st[0]!.labels, { zone: 'z' });
      t.is(st[0]!.total.cpu, 3);
      t.is(st[0]!.available.cpu, 2);
      t.deepEqual(st[0]!.actors.map((a) => [a.cls, a.name]), [['Counter', 'listed']]);
    } finally {
      await tc.close();
    }
  });

  test('objects - put, get, list and delete blobs; a missing object gives ObjectNotFoundError', async (t) => {
    const tc = await start();
    try {
      const blob = new Uint8Array(300_000).map((_, i) => (i * 31) % 251);
      const info = await tc.cluster.objects.put(`${tc.name}/weights.bin`, blob);
      t.is(info.size, blob.length);
      const back = await tc.cluster.objects.get(`${tc.name}/weights.bin`);
      t.deepEqual(new Uint8Array(back), blob);
      t.true((await tc.cluster.objects.list()).some((o) => o.name === `${tc.name}/weights.bin`));
      t.true(await tc.cluster.objects.delete(`${tc.name}/weights.bin`));
      await t.throwsAsync(tc.cluster.objects.get(`${tc.name}/weights.bin`), { instanceOf: ObjectNotFoundError });
    } finally {
      await tc.close();
    }
  });

  test('backpressure - a client over its in-flight limit gets BackpressureError', async (t) => {
    const tc = await start();
    try {
      const { Cluster } = await import('../../cluster/client.ts');
      const small = new Cluster(tc.cluster.bus, { cluster: tc.name, maxInflight: 2 });
      const c = await tc.cluster.spawn(Counter);
      const h = small.handle(Counter, c.ref);
      const out = await Promise.all([h.slow(100), h.slow(100), h.slow(100)].map((p) => p.then(() => 'ok', (e: Error) => e)));
      t.is(out.filter((x) => x === 'ok').length, 2);
      t.true(out[2] instanceof BackpressureError);
      await small.close();
    } finally {
      await tc.close();
    }
  });
}
