import test from 'ava';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServer } from '../../cluster/nats-server.ts';
import { hr1, startNode, stopAll, waitFor, type Proc } from './processes.ts';

const STACK = /^\s+at /m;

// real processes: a driver (hr1 train --address) and node processes that are killed under it
test.serial('train - every node killed mid-run: training stops with TRAIN_NO_WORKERS naming its checkpoint (no waiting, nothing scored), and --resume on a new node finishes the run', async (t) => {
  t.timeout(600_000);
  const dir = join(tmpdir(), `hr1-train-workers-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const cfgFile = join(dir, 'cfg.yaml');
  // a short worker wait, so the test sees the stop quickly; the default is a minute
  writeFileSync(cfgFile, 'env: alfworld\ntarget: sim/llama-3b\nbatchSize: 6\nmodel: { dModel: 64, nLayers: 1, nHeads: 2, maxLen: 768 }\nsft: { batches: 1, k: 2, epochs: 2, batchSize: 8 }\ngrpo: { iterations: 6, k: 3 }\ncheckpointEvery: 1\nworkers: { replicas: 2, waitMs: 3000 }\n');
  const server = await NatsServer.start();
  const nodes: Proc[] = [];
  const procs: Proc[] = [];
  try {
    for (let i = 0; i < 2; i++) nodes.push(await startNode(server.url, 'tw', ['--node-id', `w${i}`]));
    const args = ['train', '--config', cfgFile, '--address', server.url, '--cluster', 'tw', '--out', join(dir, 'run')];
    const run = hr1(args);
    procs.push(run);
    await waitFor(run, /grpo 2\/6/, 240_000);
    const t0 = Date.now();
    for (const n of nodes) n.child.kill('SIGKILL');
    const code = await run.exited;
    const stoppedIn = Date.now() - t0;
    t.not(code, 0, run.out());
    t.regex(run.out(), /training stopped: .*last checkpoint, after GRPO iteration \d, is kept .*--resume/s, run.out());
    t.notRegex(run.out(), STACK);
    t.true(stoppedIn < 120_000, `stopped ${stoppedIn} ms after the nodes died`);
    const state = JSON.parse(readFileSync(join(dir, 'run', 'state.json'), 'utf8')) as { iteration: number };
    t.true(state.iteration >= 2, `checkpoint at iteration ${state.iteration}`);
    // nothing from the lost work was scored: every logged iteration is a complete group
    const logged = readFileSync(join(dir, 'run', 'iterations.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { phase: string; dropped?: unknown[] });
    t.true(logged.filter((x) => x.phase === 'grpo').every((x) => x.dropped === undefined), 'no candidate was dropped or scored from a lost rollout');
    // a node comes back: the run continues from its checkpoint to the end
    nodes.push(await startNode(server.url, 'tw', ['--node-id', 'w9']));
    const resumed = hr1([...args, '--resume']);
    procs.push(resumed);
    t.is(await resumed.exited, 0, resumed.out());
    t.regex(resumed.out(), new RegExp(`resuming after GRPO iteration ${state.iteration}`));
    const it = readFileSync(join(dir, 'run', 'iterations.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { phase: string; iteration: number }).filter((x) => x.phase === 'grpo');
    t.deepEqual(it.map((x) => x.iteration), [1, 2, 3, 4, 5, 6]);
  } finally {
    await stopAll([...procs, ...nodes]);
    await server.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
