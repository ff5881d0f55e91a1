import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsBus } from '../../../cluster/bus-nats.ts';
import { Cluster } from '../../../cluster/client.ts';
import { init } from '../../../cluster/init.ts';
import { NatsServer } from '../../../cluster/nats-server.ts';
import { RUN_FILES, runExpMain, type ExpMainInput } from '../../../experiments/exp/index.ts';
import { startNode, stopAll, type Proc } from '../processes.ts';

const root = mkdtempSync(join(tmpdir(), 'hr1-exp-nodes-'));
const OPTS: ExpMainInput = { progress: 'silent', envs: ['alfworld', 'dbbench', 'webshop'], test: { tasks: 12, seeds: [0, 1] }, train: { packets: 2, batchSize: 12 } };
const quiet = { stdout: () => {} };

test.after.always(() => rmSync(root, { recursive: true, force: true }));

test.serial('exp main - over three node processes gives the same numbers as in-process, also when a node stalls past the dead-after limit mid-run and comes back', async (t) => {
  t.timeout(600_000);
  const rt = await init({ inProcess: true });
  const local = join(root, 'local');
  try {
    await runExpMain({ ...OPTS, out: local }, { ...quiet, cluster: rt.cluster });
  } finally {
    await rt.shutdown();
  }
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const logs: string[] = [];
  const cluster = new Cluster(bus, { cluster: 'exp3', deadAfterMs: 3000, log: (l) => logs.push(l) });
  const remote = join(root, 'remote');
  let stalled: Proc | undefined;
  try {
    for (let i = 0; i < 3; i++) procs.push(await startNode(server.url, 'exp3', ['--resources', 'cpu=2', '--node-id', `n${i}`]));
    await cluster.waitForNodes(3, 15_000);
    let finished = false;
    // every node seen hosting a target replica during the run (a snapshot can catch a replica still starting)
    const hostSet = new Set<string>();
    const run = runExpMain({ ...OPTS, out: remote, rollout: { replicas: 3, chunk: 4 } }, { ...quiet, cluster }).finally(() => (finished = true));
    // a loaded machine can starve a node of CPU for seconds: stop one while its target replica
    // has chunks in flight, past the 3 s dead-after limit (so it is counted as lost), then let it go on
    const stall = (async () => {
      while (!finished) {
        const st = await cluster.status(300);
        for (const h of st) if (h.actors.some((a) => a.cls === 'TargetActor')) hostSet.add(h.nodeId);
        if (stalled) {
          await new Promise((res) => setTimeout(res, 200));
          continue;
        }
        const busy = st.find((h) => h.nodeId !== 'n0' && h.actors.some((a) => a.cls === 'TargetActor' && a.pending > 0));
        if (!busy) continue;
        stalled = procs[Number(busy.nodeId.slice(1))]!;
        stalled.child.kill('SIGSTOP');
        await new Promise((res) => setTimeout(res, 4500));
        stalled.child.kill('SIGCONT');
      }
    })();
    const r = await run;
    await stall;
    t.is(r.ran, 15);
    const hosts = [...hostSet].sort();
    t.is(hosts.length, 3, `target replicas on ${hosts.join(', ')}`);
    t.truthy(stalled, 'a node was stalled while its replica had work');
    t.true(logs.some((l) => /was lost/.test(l)), logs.join('\n'));
  } finally {
    stalled?.child.kill('SIGCONT');
    await cluster.close({ killOwned: true });
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
  // same units in the same order with the same outcomes, so the same report
  for (const f of [RUN_FILES.results, RUN_FILES.csv, RUN_FILES.report, 'plots/main-primary.svg']) t.is(readFileSync(join(remote, f), 'utf8'), readFileSync(join(local, f), 'utf8'), f);
});
