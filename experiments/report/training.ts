/**
 * What a train run folder shows besides its engineer: plots/training.svg (and .png), the
 * per-iteration curves, and scalars.csv, every per-iteration scalar; both from iterations.jsonl
 * alone, so `hr1 report TRAIN_DIR` makes them again.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { IterationLog } from '../train.ts';
import { panelChart, svgToPng, type Panel } from './plots.ts';
import { scalarsToCsv, trainScalars } from './scalars.ts';

/** Where the training plot goes in a train run folder (plus `.png`). */
export const TRAINING_PLOT = 'plots/training';

const C = {
  sftLoss: '#4e79a7',
  mean: '#59a14f',
  best: '#edc948',
  base: '#8c8c8c',
  valid: '#76b7b2',
  entropy: '#b07aa1',
  clip: '#f28e2b',
  kl: '#e15759',
  loss: '#9c755f',
  rollout: '#4e79a7',
  sampling: '#f28e2b',
  validation: '#59a14f',
  update: '#b07aa1',
};

const num = (v: number | undefined): number | null => (v === undefined || !Number.isFinite(v) ? null : v);
const secs = (v: number | undefined): number | null => (v === undefined ? null : Math.round(v) / 1000);

/**
 * The training chart: SFT loss per epoch; per GRPO iteration mean and best Δ with the batch's base
 * success, the valid-patch rate, entropy, clip fraction, KL, the loss, and the time split
 * (rollout, sampling, validation, update) as stacked bars. Panels without data are left out.
 *
 * @example
 * trainingChart(iterations, [{ env: 'alfworld', target: 'sim/llama-3b' }])
 */
export function trainingChart(iterations: readonly IterationLog[], pairs: readonly { env: string; target: string; label?: string }[]): string {
  const sft = iterations.filter((x) => x.phase === 'sft');
  const g = iterations.filter((x) => x.phase === 'grpo');
  const gx = g.map((x) => x.iteration);
  const panels: Panel[] = [];
  if (sft.length) panels.push({ title: 'SFT loss per epoch', x: sft.map((x) => x.iteration), xName: 'epoch', series: [{ name: 'SFT loss', values: sft.map((x) => num(x.loss)), colour: C.sftLoss }] });
  if (g.length) {
    panels.push({
      title: 'GRPO: Δ on the batch (and its base success)',
      x: gx,
      xName: 'iteration',
      series: [
        { name: 'mean Δ', values: g.map((x) => num(x.meanDelta)), colour: C.mean },
        { name: 'best Δ', values: g.map((x) => num(x.bestDelta)), colour: C.best },
        { name: 'base success', values: g.map((x) => num(x.baseSuccess)), colour: C.base },
      ],
    });
    panels.push({ title: 'valid-patch rate', x: gx, xName: 'iteration', series: [{ name: 'valid rate', values: g.map((x) => num(x.validRate)), colour: C.valid }] });
    panels.push({ title: 'policy entropy (nats)', x: gx, xName: 'iteration', series: [{ name: 'entropy', values: g.map((x) => num(x.entropy)), colour: C.entropy }] });
    panels.push({ title: 'clip fraction', x: gx, xName: 'iteration', series: [{ name: 'clip fraction', values: g.map((x) => num(x.clipFrac)), colour: C.clip }] });
    panels.push({ title: 'KL to the sampling policy', x: gx, xName: 'iteration', series: [{ name: 'KL', values: g.map((x) => num(x.kl)), colour: C.kl }] });
    panels.push({ title: 'GRPO loss', x: gx, xName: 'iteration', series: [{ name: 'GRPO loss', values: g.map((x) => num(x.loss)), colour: C.loss }] });
    panels.push({
      title: 'time per iteration (s)',
      x: gx,
      xName: 'iteration',
      series: (['rollout', 'sampling', 'validation', 'update'] as const).map((k) => ({ name: `${k} s`, kind: 'bar' as const, stack: 'ms', values: g.map((x) => secs(x.ms[k])), colour: C[k] })),
    });
  }
  const envs = [...new Set(g.map((x) => x.env).filter((e): e is string => !!e))];
  return panelChart({
    title: `hr1 train: ${pairs.map((p) => `${p.env} on ${p.label ?? p.target}${(p.label ?? p.target).includes('sim/') ? ' (SIMULATED)' : ''}`).join('; ')}`,
    subtitle: `${sft.length} SFT epochs, ${g.length} GRPO iterations${envs.length > 1 ? ` (envs in turn: ${envs.join(', ')})` : ''}`,
    panels: panels.length ? panels : [{ title: 'no iterations logged yet', x: [], series: [] }],
  });
}

function writeAtomic(file: string, data: string | Uint8Array): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

/** Write scalars.csv of a train run folder (every scalar of every iteration so far). */
export function writeTrainScalars(dir: string, iterations: readonly IterationLog[], pairs: readonly { env: string; target: string; label?: string }[]): void {
  writeAtomic(join(dir, 'scalars.csv'), scalarsToCsv(trainScalars(iterations, pairs)));
}

/** Write scalars.csv and plots/training.svg and .png of a train run folder. */
export function writeTrainReport(dir: string, iterations: readonly IterationLog[], pairs: readonly { env: string; target: string; label?: string }[]): { scalars: string; svg: string; png: string } {
  writeTrainScalars(dir, iterations, pairs);
  const svg = trainingChart(iterations, pairs);
  const files = { scalars: join(dir, 'scalars.csv'), svg: join(dir, `${TRAINING_PLOT}.svg`), png: join(dir, `${TRAINING_PLOT}.png`) };
  writeAtomic(files.svg, svg);
  writeAtomic(files.png, svgToPng(svg));
  return files;
}
