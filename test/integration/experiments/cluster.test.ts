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

test.serial('exp main - over three node processes gives the same numbers as in-process', async (t) => {
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
  const cluster = new Cluster(bus, { cluster: 'exp3', deadAfterMs: 3000 });
  const remote = join(root, 'remote');
  try {
    for (let i = 0; i < 3; i++) procs.push(await startNode(server.url, 'exp3', ['--resources', 'cpu=2', '--node-id', `n${i}`]));
    await cluster.waitForNodes(3, 15_000);
    const r = await runExpMain({ ...OPTS, out: remote, rollout: { replicas: 3, chunk: 4 } }, { ...quiet, cluster });
    t.is(r.ran, 15);
    const st = await cluster.status(500);
    const hosts = st.filter((h) => h.actors.some((a) => a.cls === 'TargetActor')).map((h) => h.nodeId);
    t.is(hosts.length, 3, `target replicas on ${hosts.join(', ')}`);
  } finally {
    await cluster.close({ killOwned: true });
    await bus.close();
    await stopAll(procs);
    await server.dispose();
  }
  // same units in the same order with the same outcomes, so the same report
  for (const f of [RUN_FILES.results, RUN_FILES.csv, RUN_FILES.report, 'plots/main-primary.svg']) t.is(readFileSync(join(remote, f), 'utf8'), readFileSync(join(local, f), 'utf8'), f);
});
