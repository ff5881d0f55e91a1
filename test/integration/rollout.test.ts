import test from 'ava';
import { listTasks } from '../../envs/registry.ts';
import { rollout } from '../../drivers/index.ts';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { ActorDiedError, PlacementError } from '../../cluster/errors.ts';
import { Cluster } from '../../cluster/client.ts';
import { init } from '../../cluster/init.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { canonicalJson, type EpisodeRecord } from '../../harness/index.ts';
import { sleep } from '../behaviour/harness.ts';
import { hr1, startNode, stopAll, waitFor, type Proc } from './processes.ts';

const episodes = listTasks('alfworld').slice(0, 40).map((taskId) => ({ taskId, seed: 3 }));
const essence = (rs: EpisodeRecord[]) => canonicalJson(rs.map((r) => ({ t: r.taskId, s: r.seed, steps: r.steps.map((x) => [x.action, x.observation]), o: r.outcome })));

let reference: EpisodeRecord[];
test.before(async () => {
  const rt = await init({ inProcess: true });
  reference = (await rollout(rt.cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes }, { cache: null })).records;
  await rt.shutdown();
});

test.serial('rollout - over NATS across node processes gives the same records as in-process', async (t) => {
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const cluster = new Cluster(bus, { cluster: 'ro1', deadAfterMs: 1500 });
  try {
    for (let i = 0; i < 2; i++) procs.push(await startNode(server.url, 'ro1', ['--resources', 'cpu=2']));
    await cluster.waitForNodes(2, 10_000);
    const r = await rollout(cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes }, { cache: null, replicas: 2, chunk: 4 });
    t.is(canonicalJson(r.records), canonicalJson(reference));
    t.is(r.stats.nodes.length, 2, 'both node processes ran chunks');
  } finally {
    await cluster.close({ killOwned: true });
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('rollout - a straggling replica (its node stalled) does not hold the rollout up: its chunks are sent to the other replica, the first answer is kept, the result is unchanged', async (t) => {
  t.timeout(180_000);
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const logs: string[] = [];
  // the stalled node must stay alive in the table: a straggler, not a dead node
  const cluster = new Cluster(bus, { cluster: 'ros', deadAfterMs: 120_000, log: (l) => logs.push(l) });
  let stalled: Proc | undefined;
  try {
    for (let i = 0; i < 2; i++) procs.push(await startNode(server.url, 'ros', ['--resources', 'cpu=2', '--node-id', `s${i}`]));
    await cluster.waitForNodes(2, 10_000);
    const opts = { cache: null, replicas: 2, chunk: 4, stragglers: { factor: 2, minMs: 300 } } as const;
    // the replica group is placed on both nodes first
    const warm = await rollout(cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes: episodes.slice(0, 8) }, opts);
    t.is(warm.stats.nodes.length, 2);
    stalled = procs[1]!;
    stalled.child.kill('SIGSTOP');
    const lines: string[] = [];
    const r = await rollout(cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes }, { ...opts, log: (l) => lines.push(l) });
    t.is(canonicalJson(r.records), canonicalJson(reference));
    t.true(r.stats.stragglers >= 1, JSON.stringify(r.stats));
    t.true(r.stats.stragglersWon >= 1, JSON.stringify(r.stats));
    t.deepEqual(r.stats.nodes, ['s0'], 'every answer came from the node that was not stalled');
    t.true(lines.some((l) => /a straggler; sending it to another replica too/.test(l)), lines.join('\n'));
  } finally {
    stalled?.child.kill('SIGCONT');
    await cluster.close({ killOwned: true });
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('rollout - a node killed mid-rollout costs no episode: its chunks are re-sent and the result is unchanged', async (t) => {
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const logs: string[] = [];
  const cluster = new Cluster(bus, { cluster: 'ro2', deadAfterMs: 1200, log: (l) => logs.push(l) });
  try {
    for (let i = 0; i < 3; i++) procs.push(await startNode(server.url, 'ro2', ['--resources', 'cpu=2', '--node-id', `k${i}`]));
    await cluster.waitForNodes(3, 10_000);
    // long enough that the rollout is still running when the first status replies come back
    const more = [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14].flatMap((seed) => episodes.map((e) => ({ ...e, seed })));
    let killed = '';
    let started = false;
    let finished = false;
    const run = rollout(cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes: more }, {
      cache: null,
      replicas: 3,
      chunk: 6,
      window: 2,
      onProgress: (p) => {
        if (started || p.done === 0) return;
        started = true;
        // kill a node while one of its target replicas has chunks in flight; look until the
        // rollout ends (a fixed number of looks ran out on a loaded machine, where status replies are slow)
        void (async () => {
          while (!killed && !finished) {
            const st = await cluster.status(200);
            const busy = st.find((h) => h.actors.some((a) => a.cls === 'TargetActor' && a.pending > 0));
            if (busy) {
              killed = busy.nodeId;
              procs[Number(busy.nodeId.slice(1))]!.child.kill('SIGKILL');
            }
          }
        })();
      },
    });
    const r = await run.finally(() => (finished = true));
    t.truthy(killed, 'a busy node was killed');
    t.true(r.stats.resent > 0, 'some chunks were re-sent');
    t.is(canonicalJson(r.records.slice(0, episodes.length)), canonicalJson(reference));
    t.false(r.stats.nodes.length === 0);
    t.true(r.records.every((x) => x !== undefined));
    // the same rollout without the fault, for the rest of the records
    const clean = await rollout(cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes: more }, { cache: null, replicas: 3 });
    t.is(essence(r.records), essence(clean.records));
  } finally {
    await cluster.close({ killOwned: true });
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('rollout - the only node killed and a new one started 9 s later: the lost chunks wait for it (workerWaitMs) and the result is unchanged; with only the quick re-sends the rollout fails', async (t) => {
  t.timeout(420_000);
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  // 3 s, not less: on a loaded machine a node that has just started can be silent for over a second
  const cluster = new Cluster(bus, { cluster: 'row', deadAfterMs: 3000 });
  // once a chunk is done: SIGKILL the node that ran it, and start another well after the loss is
  // seen (3 s) and the five quick re-sends' back-off (~3 s) has run out
  const run = (id: number, workerWaitMs?: number) => {
    let replacing: Promise<void> | undefined;
    const lines: string[] = [];
    const p = rollout(cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes }, {
      cache: null,
      chunk: 4,
      window: 1,
      log: (l) => lines.push(l),
      ...(workerWaitMs !== undefined ? { workerWaitMs } : {}),
      onProgress: (x) => {
        if (replacing || x.done === 0) return;
        replacing = (async () => {
          procs.at(-1)!.child.kill('SIGKILL');
          await sleep(9000);
          procs.push(await startNode(server.url, 'row', ['--resources', 'cpu=2', '--node-id', `w${id}`]));
        })();
      },
    });
    return { p: p.finally(() => replacing), lines };
  };
  try {
    procs.push(await startNode(server.url, 'row', ['--resources', 'cpu=2', '--node-id', 'w0']));
    await cluster.waitForNodes(1, 10_000);
    // a generous wait (the default is 60 s): on a starved machine the new node's start-up alone
    // (tsx, imports, the target actor) can take a minute; the test is about waiting, not its length
    const waited = run(1, 240_000);
    const r = await waited.p;
    t.is(canonicalJson(r.records), canonicalJson(reference));
    t.true(r.stats.resent > 0, JSON.stringify(r.stats));
    t.deepEqual(r.stats.nodes.sort(), ['w0', 'w1']);
    t.true(waited.lines.some((l) => /waiting for a replica at most/.test(l)), waited.lines.join('\n'));
    // the same loss with only the quick re-sends: the rollout fails, nothing is returned as a result
    const quick = run(2, 0);
    const e = await t.throwsAsync(quick.p);
    t.true(e instanceof ActorDiedError || e instanceof PlacementError, `a lost-actor error, not ${String(e)}`);
  } finally {
    await cluster.close({ killOwned: true });
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('serve - a SIMULATED target served over HTTP plays the same episodes through the openai client', async (t) => {
  const port = 20000 + (process.pid % 20000);
  const srv = hr1(['serve', 'sim/llama-3b', '--env', 'alfworld', '--port', String(port)]);
  try {
    await waitFor(srv, /OpenAI-compatible/);
    const rt = await init({ inProcess: true });
    try {
      // the episode seed travels as the request's seed, so the served sim draws as the direct one
      const few = episodes.slice(0, 8);
      const direct = await rollout(rt.cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes: few }, { cache: null });
      const served = await rollout(rt.cluster, { env: 'alfworld', target: `openai:http://127.0.0.1:${port}/v1#sim/llama-3b`, episodes: few }, { cache: null });
      t.is(essence(served.records), essence(direct.records));
    } finally {
      await rt.shutdown();
    }
  } finally {
    srv.child.kill('SIGTERM');
    await srv.exited;
    await sleep(10);
  }
});
