/**
 * `hr1 bench train`: the same small training config, synchronous against pipelined GRPO
 * (experiments/train-pipeline.ts), on the embedded cluster (one process: driver, actors, learner)
 * and on three `hr1 node` processes (the driver alone in this process; the target replicas, the
 * learner and the sampler on the nodes). Per run: wall time per GRPO iteration, the share of that
 * time each stage was idle, and the learning curve (mean Δ per iteration); then the speedup.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { init, type Runtime } from '../../cluster/init.ts';
import { Hr1Error } from '../../cluster/errors.ts';
import { table } from '../commands/table.ts';
import type { TrainConfig, TrainResult } from '../train.ts';
import { project } from './pipeline-sim.ts';

/** how much faster a GPU runs the learner's update and the sampler than this machine's CPU (an assumption, stated with every projection) */
export const GPU_FACTOR = 10;

const HR1 = fileURLToPath(new URL('../../bin/hr1.js', import.meta.url));

export interface BenchTrainOptions {
  config: TrainConfig;
  /** which clusters: 'embedded', 'nodes' (three hr1 node processes) */
  clusters: ('embedded' | 'nodes')[];
  maxStaleness: number;
  nodes: number;
  /** runs of each mode per cluster (the figures are medians). @default 1 */
  repeats: number;
  json: boolean;
  log?: (l: string) => void;
}

interface RunFigures {
  cluster: string;
  mode: 'synchronous' | 'pipelined';
  rep: number;
  iterations: number;
  s_per_iter: number;
  idle: Record<string, number>;
  curve: number[];
  /** mean ms per GRPO iteration of each stage (the iteration log's ms) */
  stageMs: { rollout: number; sampling: number; validation: number; update: number };
}

/** Start `n` hr1 node processes on the runtime's NATS server; resolves when all joined. */
async function startNodes(rt: Runtime, n: number, log: (l: string) => void): Promise<ChildProcess[]> {
  const kids: ChildProcess[] = [];
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      new Promise<void>((resolve, reject) => {
        const c = spawn(process.execPath, [HR1, 'node', '--address', rt.address, '--cluster', rt.cluster.name, '--node-id', `bench-${i + 1}`], { stdio: ['ignore', 'pipe', 'pipe'] });
        kids.push(c);
        let out = '';
        const timer = setTimeout(() => reject(new Hr1Error('BENCH_NODES', `hr1 node ${i + 1} did not join within 90 s: ${out.slice(-400)}`)), 90_000);
        const seen = (d: Buffer) => {
          out += d.toString();
          if (/joined cluster/.test(out)) {
            clearTimeout(timer);
            resolve();
          }
        };
        c.stdout!.on('data', seen);
        c.stderr!.on('data', (d: Buffer) => (out += d.toString()));
        c.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Hr1Error('BENCH_NODES', `hr1 node ${i + 1} exited (${code}) before joining: ${out.slice(-400)}`));
        });
      }),
    ),
  );
  log(`  ${n} hr1 node processes joined ${rt.address}`);
  return kids;
}

export async function benchTrain(o: BenchTrainOptions): Promise<{ runs: RunFigures[]; summary: Record<string, unknown> }> {
  const log = o.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const { trainEngineer } = await import('../train.ts');
  const dir = mkdtempSync(join(tmpdir(), 'hr1-bench-train-'));
  const runs: RunFigures[] = [];
  try {
    for (const where of o.clusters) {
      const rt = where === 'embedded' ? await init({}) : await init({ localNode: false });
      const kids = where === 'nodes' ? await startNodes(rt, o.nodes, log) : [];
      try {
        // repeats alternate the order (sync first, then pipelined first, …), so a drift in the machine's speed hits both
        const order = Array.from({ length: o.repeats }, (_, rep) => (rep % 2 === 0 ? (['synchronous', 'pipelined'] as const) : (['pipelined', 'synchronous'] as const)).map((mode) => ({ mode, rep }))).flat();
        for (const { mode, rep } of order) {
          const cfg: TrainConfig = {
            ...o.config,
            out: join(dir, `${where}-${mode}-${rep}`),
            workers: { ...o.config.workers, replicas: where === 'nodes' ? o.nodes : o.config.workers.replicas },
            ...(mode === 'pipelined' ? { pipeline: { maxStaleness: o.maxStaleness } } : { pipeline: undefined }),
          };
          log(`bench train: ${where === 'nodes' ? `${o.nodes} hr1 node processes` : 'embedded cluster'}, ${mode}${mode === 'pipelined' ? ` (max staleness ${o.maxStaleness})` : ''}${o.repeats > 1 ? `, repeat ${rep + 1}/${o.repeats}` : ''}: ${cfg.grpo.iterations} GRPO iterations of K ${cfg.grpo.k} on ${cfg.target}`);
          const r: TrainResult = await trainEngineer(rt.cluster, cfg, (l) => {
            if (/^\s+grpo|straggler|lost/.test(l)) log(`  ${l.trim()}`);
          });
          const g = r.iterations.filter((x) => x.phase === 'grpo');
          const avg = (k: 'rollout' | 'sampling' | 'validation' | 'update') => g.reduce((a, x) => a + (x.ms[k] ?? 0), 0) / Math.max(1, g.length);
          runs.push({ cluster: where, mode, rep, iterations: g.length, s_per_iter: r.pipeline.wallMs / 1000 / Math.max(1, g.length), idle: r.pipeline.idleShare, curve: g.map((x) => x.meanDelta ?? 0), stageMs: { rollout: avg('rollout'), sampling: avg('sampling'), validation: avg('validation'), update: avg('update') } });
        }
      } finally {
        for (const k of kids) k.kill('SIGTERM');
        await rt.shutdown();
        await Promise.all(kids.map((k) => (k.exitCode !== null ? Promise.resolve() : new Promise((res) => k.once('exit', res)))));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const all = (c: string, m: string) => runs.filter((r) => r.cluster === c && r.mode === m);
  // a mode's figures: its median run by s / iteration (the curves are the same in every repeat: the runs are deterministic)
  const pick = (c: string, m: string) => {
    const xs = [...all(c, m)].sort((a, b) => a.s_per_iter - b.s_per_iter);
    return xs[Math.floor((xs.length - 1) / 2)];
  };
  const per = Object.fromEntries(
    o.clusters.map((c) => {
      const s = pick(c, 'synchronous')!;
      const p = pick(c, 'pipelined')!;
      return [c, { sync_s_per_iter: round(s.s_per_iter), pipelined_s_per_iter: round(p.s_per_iter), sync_runs: all(c, 'synchronous').map((r) => round(r.s_per_iter)), pipelined_runs: all(c, 'pipelined').map((r) => round(r.s_per_iter)), curves_repeat: [...all(c, 'synchronous'), ...all(c, 'pipelined')].every((r) => JSON.stringify(r.curve) === JSON.stringify((r.mode === 'synchronous' ? s : p).curve)), speedup: round(s.s_per_iter / p.s_per_iter), idle_sync: roundAll(s.idle), idle_pipelined: roundAll(p.idle), curve_sync: s.curve.map(round), curve_pipelined: p.curve.map(round) }];
    }),
  );
  const first = per[o.clusters[0]!] as { sync_s_per_iter: number; pipelined_s_per_iter: number; speedup: number };
  // the projection to many workers: a discrete-event simulation driven by the first cluster's synchronous stage times
  const sync = pick(o.clusters[0]!, 'synchronous')!;
  const held = o.config.reward.on === 'heldout' ? (o.config.reward.heldoutTasks ?? o.config.batchSize) : 0;
  const measured = { rolloutMs: sync.stageMs.rollout, samplingMs: sync.stageMs.sampling, validationMs: sync.stageMs.validation, updateMs: sync.stageMs.update, cores: availableParallelism(), baseEpisodes: o.config.batchSize + held, rerunEpisodes: o.config.grpo.k * (held || o.config.batchSize) };
  const projection = project(measured, { staleness: o.maxStaleness, gpuFactor: GPU_FACTOR });
  const here = project(measured, { staleness: o.maxStaleness, gpuFactor: GPU_FACTOR, workers: [measured.cores] }).find((x) => x.learner === 'cpu')!;
  const summary = {
    repeats: o.repeats,
    target: o.config.target,
    env: o.config.env,
    iterations: o.config.grpo.iterations,
    k: o.config.grpo.k,
    max_staleness: o.maxStaleness,
    cluster: o.clusters[0],
    sync_s_per_iter: first.sync_s_per_iter,
    pipelined_s_per_iter: first.pipelined_s_per_iter,
    speedup: first.speedup,
    clusters: per,
    projection: { measured: roundAll(measured), gpu_factor: GPU_FACTOR, simulated_here: { workers: measured.cores, sync_s_per_iter: round(here.sync_s_per_iter), pipelined_s_per_iter: round(here.pipelined_s_per_iter), speedup: round(here.speedup) }, rows: projection.map((p) => roundAll(p)) },
  };
  if (o.json) console.log(JSON.stringify(summary, null, 2));
  else {
    const stages = ['rollout', 'sampling', 'validation', 'update'];
    console.log(
      table(
        ['cluster', 'mode', 's / iteration', ...stages.map((s) => `${s} idle`), 'mean Δ per iteration'],
        runs.map((r) => [r.cluster === 'nodes' ? `${o.nodes} hr1 nodes` : 'embedded', `${r.mode === 'pipelined' ? `pipelined (staleness ≤ ${o.maxStaleness})` : r.mode}${o.repeats > 1 ? ` #${r.rep + 1}` : ''}`, r.s_per_iter.toFixed(1), ...stages.map((s) => `${((r.idle[s] ?? 0) * 100).toFixed(0)}%`), r.curve.map((d) => d.toFixed(2)).join(' ')]),
      ),
    );
    for (const c of o.clusters) {
      const x = per[c] as { speedup: number };
      console.log(`speedup, pipelined over synchronous (${c === 'nodes' ? `${o.nodes} hr1 nodes` : 'embedded'}${o.repeats > 1 ? `, medians of ${o.repeats} runs each` : ''}): ${x.speedup.toFixed(2)}×`);
    }
    console.log(`\nprojection (discrete-event simulation, experiments/bench/pipeline-sim.ts) from the ${o.clusters[0]} synchronous stage times: one episode ${((measured.validationMs * measured.cores) / measured.rerunEpisodes).toFixed(0)} ms of one worker, sampling ${(measured.samplingMs / 1000).toFixed(2)} s, update ${(measured.updateMs / 1000).toFixed(2)} s per iteration; GPU learner and sampler ${GPU_FACTOR}× faster (assumed)`);
    console.log(`  simulated on ${measured.cores} workers (this machine): synchronous ${here.sync_s_per_iter.toFixed(1)} s, pipelined ${here.pipelined_s_per_iter.toFixed(1)} s per iteration, ${here.speedup.toFixed(2)}× (measured: ${first.sync_s_per_iter.toFixed(1)} s, ${first.pipelined_s_per_iter.toFixed(1)} s, ${first.speedup.toFixed(2)}×)`);
    console.log(table(['rerun workers', 'learner', 'sync s / iteration', 'pipelined s / iteration', 'speedup', 'worker use sync', 'worker use pipelined'], projection.map((p) => [p.workers, p.learner, p.sync_s_per_iter.toFixed(2), p.pipelined_s_per_iter.toFixed(2), `${p.speedup.toFixed(2)}×`, `${(p.worker_utilisation_sync * 100).toFixed(0)}%`, `${(p.worker_utilisation_pipelined * 100).toFixed(0)}%`])));
    console.log(`(a stage's idle share: the part of the GRPO wall time when none of its operations was in flight; SIMULATED targets are for throughput only, their Δ is not evidence)`);
  }
  return { runs, summary };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
function roundAll<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v])) as T;
}
