import test from 'ava';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { pack, unpack } from '../../cluster/codec.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { init } from '../../cluster/init.ts';
import { ReplyMismatchError, checkReply, rollout } from '../../drivers/index.ts';
import { listTasks } from '../../envs/registry.ts';
import { canonicalJson, type EpisodeRecord } from '../../harness/index.ts';
import { startNode, stopAll, type Proc } from './processes.ts';

const episodes = listTasks('alfworld').slice(0, 24).map((taskId) => ({ taskId, seed: 4 }));
const target = 'sim/llama-3b';

let reference: EpisodeRecord[];
test.before(async () => {
  const rt = await init({ inProcess: true });
  reference = (await rollout(rt.cluster, { env: 'alfworld', target, episodes }, { cache: null })).records;
  await rt.shutdown();
});

type Forge = (chunk: { episodes: { taskId: string; seed: number }[]; chunkId?: string }, n: number) => unknown;

/**
 * A rogue client on the bus that answers TargetActor.rollout requests before the actor can:
 * schema-valid replies that do not answer the request. Forges the first `times` requests.
 */
async function withForger(url: string, cluster: string, times: number, forge: Forge, fn: (seen: () => number) => Promise<void>): Promise<void> {
  const rogue = await NatsBus.connect({ address: url, name: 'rogue' });
  let n = 0;
  rogue.subscribe(`hr1.${cluster}.a.*.rollout`, (m) => {
    if (n >= times) return;
    const chunk = unpack(m.data) as { episodes: { taskId: string; seed: number }[]; chunkId?: string };
    m.respond(pack([0, forge(chunk, n++)]));
  });
  await rogue.flush();
  try {
    await fn(() => n);
  } finally {
    await rogue.close();
  }
}

async function setup(name: string): Promise<{ server: NatsServer; bus: NatsBus; cluster: Cluster; procs: Proc[] }> {
  const server = await NatsServer.start();
  const procs = [await startNode(server.url, name, ['--resources', 'cpu=2'])];
  const bus = await NatsBus.connect({ address: server.url });
  const cluster = new Cluster(bus, { cluster: name, deadAfterMs: 3000 });
  await cluster.waitForNodes(1, 20_000);
  return { server, bus, cluster, procs };
}

async function teardown(s: { server: NatsServer; bus: NatsBus; cluster: Cluster; procs: Proc[] }): Promise<void> {
  await s.cluster.close({ killOwned: true });
  await s.bus.close();
  await stopAll(s.procs);
  await s.server.dispose();
}

// forged replies, each schema-valid: every record is a real record, and all of them won
const wonRecord = (r: EpisodeRecord): EpisodeRecord => ({ ...r, outcome: { ...r.outcome, status: 'won', won: true, reward: 1 } });

test.serial('replies - short, replayed and mismatched forged replies are typed errors and their chunks are sent again: the result equals a clean run', async (t) => {
  const s = await setup('rep1');
  try {
    const forges: Forge[] = [
      // fewer records than the chunk asked for (this crashed with an untyped TypeError before)
      (c) => ({ records: [wonRecord(reference[0]!)], node: 'rogue', chunkId: c.chunkId }),
      // a replayed reply: the right count, other episodes, all won (a reply with the right episodes, the chunk id and forged outcomes passes every check: that is what per-subject permissions are for)
      (c) => ({ records: c.episodes.map((_, j) => wonRecord(reference[(j + 3) % reference.length]!)), node: 'rogue', chunkId: c.chunkId }),
      // the right episodes under another chunk's id
      (c) => ({ records: c.episodes.map((e) => wonRecord(reference.find((r) => r.taskId === e.taskId)!)), node: 'rogue', chunkId: 'not-this-chunk' }),
    ];
    await withForger(s.server.url, 'rep1', 3, (c, n) => forges[n % forges.length]!(c, n), async (seen) => {
      const logs: string[] = [];
      const r = await rollout(s.cluster, { env: 'alfworld', target, episodes }, { cache: null, chunk: 8, log: (l) => logs.push(l) });
      t.is(seen(), 3, 'the rogue answered three requests (there are at least three: three chunks)');
      // a forged reply that lost the race to the actor's is ignored as late; each one that won was caught
      t.true(r.stats.resent >= 1, `chunks sent again: ${r.stats.resent}`);
      const forged = logs.filter((l) => /has 1 records for a chunk of 8|record \d+ of a reply is alfworld|a reply for chunk not-this-chunk came for chunk/.test(l)).length;
      // on a loaded machine a node can also be taken for lost (no heartbeat in time) and its chunks sent again: still the clean result
      const lost = logs.filter((l) => /died while rollout was in flight: node \S+ was lost/.test(l)).length;
      t.true(forged >= 1, logs.join('\n'));
      t.is(forged + lost, r.stats.resent, logs.join('\n'));
      t.is(canonicalJson(r.records), canonicalJson(reference));
    });
  } finally {
    await teardown(s);
  }
});

test.serial('replies - a rogue that keeps answering makes the rollout fail with ReplyMismatchError, never report its numbers', async (t) => {
  const s = await setup('rep2');
  try {
    await withForger(s.server.url, 'rep2', Infinity, (c) => ({ records: [wonRecord(reference[0]!)], node: 'rogue', chunkId: c.chunkId }), async () => {
      const e = await t.throwsAsync(rollout(s.cluster, { env: 'alfworld', target, episodes: episodes.slice(0, 8) }, { cache: null, retries: 2 }));
      t.true(e instanceof ReplyMismatchError, String(e));
      t.regex(e!.message, /Locking the bus down/);
    });
  } finally {
    await teardown(s);
  }
});

test('replies - checkReply: fewer records, other episodes, another chunk id or another harness are each a typed, retryable error', (t) => {
  const eps = episodes.slice(0, 2);
  const recs = reference.slice(0, 2);
  const chunk = { env: 'alfworld', chunkId: 'c1', episodes: eps };
  const hv = recs[0]!.harness.version;
  t.deepEqual(checkReply({ records: recs, chunkId: 'c1' }, chunk, hv), recs);
  const cases: [unknown, RegExp][] = [
    [{ records: recs.slice(0, 1), chunkId: 'c1' }, /has 1 records for a chunk of 2/],
    [{ records: [recs[1], recs[0]], chunkId: 'c1' }, /record 0 of a reply is alfworld .* the chunk asked for alfworld/],
    [{ records: recs, chunkId: 'c2' }, /a reply for chunk c2 came for chunk c1/],
    [{ records: recs }, /a reply for chunk \(none\) came for chunk c1/],
  ];
  for (const [reply, re] of cases) {
    const e = t.throws(() => checkReply(reply as never, chunk, hv));
    t.true(e instanceof ReplyMismatchError);
    t.true((e as ReplyMismatchError).retryable);
    t.regex(e!.message, re);
  }
  t.throws(() => checkReply({ records: recs, chunkId: 'c1' }, chunk, 'f'.repeat(64)), { instanceOf: ReplyMismatchError, message: /ran harness/ });
});
