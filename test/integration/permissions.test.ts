/**
 * The bus locked down with NATS per-subject permissions (docs/examples/nats-permissions.conf,
 * docs/ARCHITECTURE.md "Locking the bus down"): a node and a driver with their users work; a
 * user without publish or subscribe rights on the actor and node subjects (the observer, and the
 * driver itself) cannot take a call in place of the actor, nor spawn. Also: what the refusals of
 * a secured server say, and credentials inside a URL.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { connect, type NatsConnection, type NatsError } from 'nats';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { pack } from '../../cluster/codec.ts';
import { ConnectionError } from '../../cluster/errors.ts';
import { NatsServer, freePort } from '../../cluster/nats-server.ts';
import { subjects } from '../../cluster/protocol.ts';
import { Counter } from '../fixtures/actors.ts';
import { hr1, startNode, stopAll, type Proc } from './processes.ts';
import { pollUntil } from './security-helpers.ts';

const STACK = /^\s+at /m;
const PASS = { node: 'node-pw-1', driver: 'driver-pw-2', observer: 'observer-pw-3' };
const CLUSTER = 'perm';

/** The shipped example config with its port substituted; the passwords come from the server's environment. */
async function lockedServer(): Promise<NatsServer> {
  const port = await freePort();
  const config = readFileSync(new URL('../../docs/examples/nats-permissions.conf', import.meta.url), 'utf8').replace('listen: 127.0.0.1:4222', `listen: 127.0.0.1:${port}`);
  Object.assign(process.env, { HR1_NODE_PASS: PASS.node, HR1_DRIVER_PASS: PASS.driver, HR1_OBSERVER_PASS: PASS.observer });
  return NatsServer.start({ port, config });
}

/** A raw nats.js connection as `user`, collecting the permission errors the server reports. */
async function rawAs(server: NatsServer, user: keyof typeof PASS): Promise<{ nc: NatsConnection; errors: string[] }> {
  const nc = await connect({ servers: server.url, user, pass: PASS[user] });
  const errors: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (String(s.type) === 'error') errors.push(String(s.data));
  })();
  return { nc, errors };
}

test.serial('permissions - with the example config a node and a driver work; the observer and the driver cannot answer calls in place of the actor, nor spawn', async (t) => {
  const server = await lockedServer();
  const procs: Proc[] = [];
  const raws: NatsConnection[] = [];
  let bus: NatsBus | undefined;
  let cluster: Cluster | undefined;
  try {
    // a node without its user is refused by the locked server
    const anon = hr1(['node', '--address', server.url, '--cluster', CLUSTER, '--module', 'test/fixtures/actors.ts']);
    procs.push(anon);
    t.is(await anon.exited, 2);
    t.regex(anon.out(), /AUTH_REFUSED.*requires credentials; pass --user\/--pass, --token or --creds/);
    t.notRegex(anon.out(), STACK);

    procs.push(await startNode(server.url, CLUSTER, ['--node-id', 'n0', '--user', 'node', '--pass', PASS.node]));
    bus = await NatsBus.connect({ address: server.url, user: 'driver', pass: PASS.driver });
    cluster = new Cluster(bus, { cluster: CLUSTER });
    await cluster.waitForNodes(1, 15_000);
    const c = await cluster.spawn(Counter);
    t.is(await c.add(1), 1, 'the driver spawns and calls through the node');

    // the impostors: subscribe to every actor subject of the cluster, in the actor's own queue group, and answer
    const actorSubjects = `hr1.${CLUSTER}.a.>`;
    const impostors: { who: string; got: number; errors: string[]; subErr: string[] }[] = [];
    for (const who of ['observer', 'driver'] as const) {
      const { nc, errors } = await rawAs(server, who);
      raws.push(nc);
      const entry = { who, got: 0, errors, subErr: [] as string[] };
      for (const queue of [undefined, `q.${c.ref.actorId}`]) {
        nc.subscribe(actorSubjects, {
          ...(queue ? { queue } : {}),
          callback: (err: NatsError | null, m) => {
            if (err) {
              entry.subErr.push(err.code ?? err.message);
              return;
            }
            entry.got++;
            m.respond(pack([0, -1]));
          },
        });
      }
      await nc.flush();
      impostors.push(entry);
    }
    for (const e of impostors) {
      const refused = await pollUntil(() => e.subErr.length > 0 || e.errors.some((x) => /Permissions Violation for Subscription/i.test(x)), 10_000);
      t.true(refused, `the ${e.who}'s subscription to ${actorSubjects} is refused (${[...e.subErr, ...e.errors].join('; ')})`);
    }
    // every call gets the real actor's answer, none is taken by an impostor
    let expect = 1;
    for (let i = 0; i < 40; i++) t.is(await c.add(1), ++expect);
    for (const e of impostors) t.is(e.got, 0, `the ${e.who} received no call`);

    // the observer cannot spawn: its publish to the node's spawn subject is refused and nothing starts
    const obs = await rawAs(server, 'observer');
    raws.push(obs.nc);
    const spawnReq = { actorId: 'rogue-1', instanceId: 'rogue-1-0', cls: 'Counter', args: { start: 0 }, owner: 'observer', resources: {}, labels: {}, maxPending: 16, maxConcurrency: 1, restartCount: 0 };
    const denied = (e: unknown) => `${(e as NatsError).code} ${(e as Error).message}`;
    const spawnErr = await t.throwsAsync(obs.nc.request(subjects.nodeSpawn(CLUSTER, 'n0'), pack(spawnReq), { timeout: 5000 }));
    t.regex(denied(spawnErr), /PERMISSIONS_VIOLATION|Permissions Violation for Publish/i);
    // nor call: a request to the actor is refused as well
    const callErr = await t.throwsAsync(obs.nc.request(subjects.actor(CLUSTER, c.ref.actorId, 'add'), pack(5), { timeout: 5000 }));
    t.regex(denied(callErr), /PERMISSIONS_VIOLATION|Permissions Violation for Publish/i);
    const nodes = await cluster.status(1000);
    const hosted = nodes.flatMap((n) => n.actors.map((a) => a.actorId));
    t.deepEqual(hosted, [c.ref.actorId], 'only the driver\'s actor runs');
    t.is(await c.get(null), expect, 'the observer\'s call did not reach the actor');

    // the observer can still observe: hr1 status as the observer lists the node and its actor
    const st = hr1(['status', '--address', server.url, '--cluster', CLUSTER, '--user', 'observer', '--pass', PASS.observer, '--json']);
    procs.push(st);
    t.is(await st.exited, 0, st.out());
    const status = JSON.parse(st.out()) as { nodes: { nodeId: string; actors: { actorId: string }[] }[] };
    t.deepEqual(status.nodes.map((n) => n.nodeId), ['n0']);
    t.deepEqual(status.nodes[0]!.actors.map((a) => a.actorId), [c.ref.actorId]);

    // the real workload fits the driver's rights: hr1 eval as the driver, its rollout on the node
    const ev = hr1(['eval', '--env', 'alfworld', '--target', 'sim/qwen-3b', '--tasks', '2', '--no-cache', '--no-progress', '--json', '--address', server.url, '--cluster', CLUSTER, '--user', 'driver', '--pass', PASS.driver]);
    procs.push(ev);
    t.is(await ev.exited, 0, ev.out());
    t.regex(ev.out(), /"episodes": 2/);
    // the server logged violations for the impostors' attempts only, none for the node's or the driver's work
    const violations = [...server.stderr.matchAll(/(Publish|Subscription) Violation - User "([^"]*)", Subject "([^"]+)"/g)].map((m) => `${m[2]} ${m[1]} ${m[3]}`);
    const attempts = new Set([
      `observer Subscription ${actorSubjects}`,
      `driver Subscription ${actorSubjects}`,
      `observer Publish ${subjects.nodeSpawn(CLUSTER, 'n0')}`,
      `observer Publish ${subjects.actor(CLUSTER, c.ref.actorId, 'add')}`,
    ]);
    t.deepEqual(new Set(violations), attempts, server.stderr.slice(-3000));
  } finally {
    for (const nc of raws) await nc.close().catch(() => {});
    await cluster?.close();
    await bus?.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('permissions - an auth refusal says "refused the credentials" only when credentials were given', async (t) => {
  const server = await NatsServer.start({ jetstream: false, user: 'hr1', pass: 's3cret' });
  try {
    const none = await t.throwsAsync(NatsBus.connect({ address: server.url }), { instanceOf: ConnectionError });
    t.is(none.code, 'AUTH_REFUSED');
    t.regex(none.message, /requires credentials.*pass --user\/--pass, --token or --creds/);
    t.notRegex(none.message, /refused the credentials/);
    const wrong = await t.throwsAsync(NatsBus.connect({ address: server.url, user: 'hr1', pass: 'wrong-pw' }), { instanceOf: ConnectionError });
    t.is(wrong.code, 'AUTH_REFUSED');
    t.regex(wrong.message, /refused the credentials/);
    t.notRegex(wrong.message, /wrong-pw/);
    // the CLI: the same sentences, no stack, exit 2
    const anon = hr1(['status', '--address', server.url]);
    t.is(await anon.exited, 2);
    t.regex(anon.out(), /^hr1: ConnectionError \[AUTH_REFUSED\]: .*requires credentials/m);
    t.notRegex(anon.out(), STACK);
    const bad = hr1(['status', '--address', server.url, '--user', 'hr1', '--pass', 'wrong-pw']);
    t.is(await bad.exited, 2);
    t.regex(bad.out(), /\[AUTH_REFUSED\]: .*refused the credentials/);
    t.notRegex(bad.out(), /wrong-pw/);
    const ok = hr1(['status', '--address', server.url], { HR1_NATS_USER: 'hr1', HR1_NATS_PASS: 's3cret' });
    t.is(await ok.exited, 0, ok.out());
  } finally {
    await server.dispose();
  }
});

test.serial('permissions - credentials inside the URL are refused with a typed error that never shows the password', async (t) => {
  const server = await NatsServer.start({ jetstream: false, user: 'hr1', pass: 's3cret' });
  try {
    const url = `nats://hr1:s3cret@127.0.0.1:${server.port}`;
    const e = await t.throwsAsync(NatsBus.connect({ address: url }), { instanceOf: ConnectionError });
    t.is(e.code, 'CREDENTIALS_IN_URL');
    t.regex(e.message, /nats:\/\/\*\*\*@127\.0\.0\.1:\d+ carries credentials in the URL.*--user\/--pass/);
    t.notRegex(e.message, /s3cret/);
    for (const args of [['status', '--address', url], ['node', '--address', url], ['eval', '--env', 'alfworld', '--target', 'sim/qwen-3b', '--tasks', '1', '--no-cache', '--address', `tls://tok3n-secret@127.0.0.1:${server.port}`]]) {
      const p = hr1(args);
      t.is(await p.exited, 2, args.join(' '));
      t.regex(p.out(), /^hr1: ConnectionError \[CREDENTIALS_IN_URL\]: /m);
      t.notRegex(p.out(), /s3cret|tok3n-secret/);
      t.notRegex(p.out(), STACK);
    }
  } finally {
    await server.dispose();
  }
});
