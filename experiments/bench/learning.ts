/**
 * `hr1 bench learning`: the learning report. Trains the built-in engineer (or reads a run folder),
 * then on held-out batches compares the mean Δ of the teacher (prompted editor), the SFT engineer
 * and the SFT+GRPO engineer, with the training curve as a plot.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { envDescriptor } from '../../envs/registry.ts';
import { charting } from '../report/charting.ts';
import type { Cluster } from '../../cluster/client.ts';
import { resampledMeans } from '../../policies/scorer/metrics.ts';
import { EpisodeCache, rollout } from '../../drivers/index.ts';
import { extractPacket, loadBuiltinEngineer, teacherPropose } from '../../policies/engineer/index.ts';
import { makeBatches, rewardOf } from '../../drivers/index.ts';
import { table } from '../commands/table.ts';
import { trainEngineer, type IterationLog, type TrainConfig } from '../train.ts';

/** Seeded bootstrap interval of the mean. */
export function bootstrapMean(xs: readonly number[], seed = 0, n = 1000): { mean: number; lo: number; hi: number } {
  const m = xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  if (xs.length < 2) return { mean: m, lo: m, hi: m };
  const ms = resampledMeans(xs, seed, n);
  return { mean: m, lo: ms[Math.floor(0.025 * n)]!, hi: ms[Math.ceil(0.975 * n) - 1]! };
}

function curvePlot(iters: IterationLog[], out: string): void {
  const g = iters.filter((x) => x.phase === 'grpo');
  const sft = iters.filter((x) => x.phase === 'sft');
  const chart = charting().echarts.init(null, null, { renderer: 'svg', ssr: true, width: 720, height: 360 });
  chart.setOption({
    animation: false,
    title: { text: 'hr1 train: SFT loss and GRPO mean delta of success (SIMULATED target)', left: 'center', textStyle: { fontSize: 13 } },
    grid: [{ left: 50, right: '55%', top: 50, bottom: 40 }, { left: '55%', right: 20, top: 50, bottom: 40 }],
    xAxis: [{ gridIndex: 0, type: 'value', name: 'SFT epoch', nameLocation: 'middle', nameGap: 25 }, { gridIndex: 1, type: 'value', name: 'GRPO iteration', nameLocation: 'middle', nameGap: 25 }],
    yAxis: [{ gridIndex: 0, type: 'value', name: 'loss' }, { gridIndex: 1, type: 'value', name: 'delta' }],
    series: [
      { type: 'line', xAxisIndex: 0, yAxisIndex: 0, data: sft.map((x) => [x.iteration, x.loss]), showSymbol: false },
      { type: 'line', xAxisIndex: 1, yAxisIndex: 1, name: 'mean Δ', data: g.map((x) => [x.iteration, x.meanDelta]) },
      { type: 'line', xAxisIndex: 1, yAxisIndex: 1, name: 'best Δ', data: g.map((x) => [x.iteration, x.bestDelta]), lineStyle: { type: 'dashed' } },
    ],
  });
  const svg = chart.renderToSVGString();
  chart.dispose();
  writeFileSync(`${out}.svg`, svg);
  writeFileSync(`${out}.png`, new (charting().Resvg)(svg, { background: 'white' }).render().asPng());
}

export interface LearningOptions {
  config: TrainConfig;
  /** reuse a finished run folder instead of training */
  run?: string;
  heldoutBatches: number;
  log?: (l: string) => void;
}

export async function benchLearning(cluster: Cluster, o: LearningOptions): Promise<{ rows: { method: string; mean: number; lo: number; hi: number }[]; out: string }> {
  const log = o.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const cfg = o.config;
  let out: string;
  let iterations: IterationLog[];
  if (o.run && existsSync(join(o.run, 'engineer.onnx'))) {
    out = o.run;
    iterations = readFileSync(join(out, 'iterations.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as IterationLog);
  } else {
    const r = await trainEngineer(cluster, cfg, log);
    out = r.out;
    iterations = r.iterations;
  }
  const sftEng = loadBuiltinEngineer(join(out, 'engineer-sft.onnx'), { maxLen: cfg.model.maxLen, name: 'SFT engineer' });
  const grpoEng = loadBuiltinEngineer(join(out, 'engineer.onnx'), { maxLen: cfg.model.maxLen, name: 'SFT+GRPO engineer' });
  const split = envDescriptor(cfg.env).splits.heldout;
  const batches = makeBatches(cfg.env, { count: o.heldoutBatches, size: cfg.batchSize, split, seed: 4242 });
  const cache = new EpisodeCache(join(out, 'heldout.sqlite'));
  const deltas: Record<string, number[]> = { 'prompted editor (teacher)': [], 'SFT engineer': [], 'SFT+GRPO engineer': [] };
  try {
    for (const [i, batch] of batches.entries()) {
      const base = await rollout(cluster, { env: cfg.env, target: cfg.target, episodes: batch }, { cache });
      const packet = extractPacket(base.records);
      const candidates: [string, unknown][] = [
        ['prompted editor (teacher)', teacherPropose(packet, { k: 4, seed: cfg.seed })[0]?.patch ?? null],
        ['SFT engineer', (await sftEng.propose(packet))[0] ?? null],
        ['SFT+GRPO engineer', (await grpoEng.propose(packet))[0] ?? null],
      ];
      for (const [name, patch] of candidates) {
        const d = patch === null ? 0 : (await rewardOf(cluster, { env: cfg.env, target: cfg.target, episodes: batch, patch, cache, base: base.records })).delta;
        deltas[name]!.push(d);
      }
      log(`  held-out batch ${i + 1}/${batches.length}: ${Object.entries(deltas).map(([k, v]) => `${k} ${v[v.length - 1]!.toFixed(2)}`).join(', ')}`);
    }
  } finally {
    cache.close();
  }
  const rows = Object.entries(deltas).map(([method, xs]) => ({ method, ...bootstrapMean(xs, cfg.seed) }));
  curvePlot(iterations, join(out, 'learning-curve'));
  const md = [
    `# Learning report`,
    '',
    `Target ${cfg.target}${cfg.target.startsWith('sim/') ? ' (SIMULATED)' : ''}, env ${cfg.env}; trained on ${cfg.sft.batches} SFT batches and ${cfg.grpo.iterations} GRPO iterations of ${cfg.batchSize} tasks from the training split; evaluated on ${batches.length} held-out batches of ${cfg.batchSize} tasks (${split}), Δ_B on paired seeds, 95% bootstrap intervals over batches.`,
    '',
    '| method | mean Δ_B | 95% CI |',
    '|---|---|---|',
    ...rows.map((r) => `| ${r.method} | ${r.mean.toFixed(3)} | [${r.lo.toFixed(3)}, ${r.hi.toFixed(3)}] |`),
    '',
    '![training curve](learning-curve.svg)',
    '',
  ].join('\n');
  writeFileSync(join(out, 'learning-report.md'), md);
  console.log(table(['method', 'mean Δ_B', '95% CI'], rows.map((r) => [r.method, r.mean.toFixed(3), `[${r.lo.toFixed(3)}, ${r.hi.toFixed(3)}]`])));
  const [t, s, g] = rows;
  console.log(`\nSFT+GRPO vs SFT: ${(g!.mean - s!.mean >= 0 ? '+' : '')}${(g!.mean - s!.mean).toFixed(3)}; vs teacher: ${(g!.mean - t!.mean >= 0 ? '+' : '')}${(g!.mean - t!.mean).toFixed(3)}; report ${join(out, 'learning-report.md')}, curve ${join(out, 'learning-curve.svg')} (.png)`);
  return { rows, out };
}
