/** `hr1 report RUN_DIR`: the report and plots again, from the run folder's stored rows only. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExpError } from '../runner/errors.ts';
import { writeTrainReport } from '../report/training.ts';
import { trainPairs } from '../train-plan.ts';
import type { IterationLog } from '../train.ts';
import type { EvalRow } from '../runner/evaluate.ts';
import { RunDir, type RunMeta } from '../runner/run-dir.ts';
import { readJsonl, runKindOf, TRAIN_FILES } from '../runs/index.ts';
import { reportAblate } from './ablate.ts';
import { reportCoevolve } from './coevolve.ts';
import { writeReport, type Report } from './common.ts';
import { reportCrosstask } from './crosstask.ts';
import { reportMain } from './main.ts';
import { reportSweep } from './sweep.ts';

export const REPORTERS: Record<string, (meta: RunMeta, rows: EvalRow[]) => Report> = {
  main: reportMain,
  sweep: reportSweep,
  crosstask: reportCrosstask,
  ablate: reportAblate,
  coevolve: reportCoevolve,
};

/** What `runReport` made of an exp run folder. */
export interface ExpReportResult {
  kind: 'exp';
  runDir: string;
  meta: RunMeta;
  rows: EvalRow[];
  report: Report;
}

/** What `runReport` made of a train run folder: scalars.csv and plots/training.svg, .png. */
export interface TrainReportResult {
  kind: 'train';
  runDir: string;
  iterations: IterationLog[];
  files: { scalars: string; svg: string; png: string };
}

function trainReport(runDir: string, io: { stdout?: (text: string) => void }): TrainReportResult {
  const cfg = JSON.parse(readFileSync(join(runDir, 'config.json'), 'utf8')) as { env?: string; target?: string };
  const pairs = trainPairs({ env: cfg.env ?? 'alfworld', target: cfg.target ?? '' });
  // a line being written is left out
  const iterations = readJsonl<IterationLog>(join(runDir, TRAIN_FILES.iterations));
  const files = writeTrainReport(runDir, iterations, pairs);
  (io.stdout ?? ((s: string) => console.log(s)))(`hr1 report: ${runDir} (train run, ${iterations.length} iterations): ${files.svg}, ${files.png}, ${files.scalars}`);
  return { kind: 'train', runDir, iterations, files };
}

/**
 * Regenerate a run folder's report from what it stores; no rollouts. An exp run folder: report.md,
 * results.csv, summary.json, scalars.csv and plots/; a train run folder: scalars.csv and
 * plots/training.svg and .png.
 *
 * @example
 * const r = await runReport('runs/main-1a2b3c4d5e');
 * if (r.kind === 'exp') console.log(r.rows.length);
 */
export async function runReport(runDir: string, io: { stdout?: (text: string) => void } = {}): Promise<ExpReportResult | TrainReportResult> {
  if (runKindOf(runDir) === 'train') return trainReport(runDir, io);
  if (!existsSync(join(runDir, 'run.json'))) throw new ExpError('EXP_RUN_DIR', `${runDir} is not a run folder (no run.json, nor config.json with iterations.jsonl); pass a folder that hr1 exp or hr1 train wrote`, { data: { dir: runDir } });
  const run = new RunDir(runDir, { create: false });
  const meta = run.readMeta();
  const reporter = REPORTERS[meta.exp];
  if (!reporter) throw new ExpError('EXP_RUN_DIR', `${runDir}: unknown experiment "${meta.exp}" in run.json; this hr1 reports ${Object.keys(REPORTERS).join(', ')}`);
  const rows = run.rows() as EvalRow[];
  if (rows.length === 0) throw new ExpError('EXP_NO_RESULTS', `${runDir}: no results yet (results.jsonl is empty); run the experiment first`);
  const report = reporter(meta, rows);
  writeReport(run, meta, rows, report);
  run.close();
  (io.stdout ?? ((s: string) => console.log(s)))(report.text);
  return { kind: 'exp', runDir, meta, rows, report };
}
