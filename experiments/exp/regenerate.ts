/** `hr1 report RUN_DIR`: the report and plots again, from the run folder's stored rows only. */
import { ExpError } from '../runner/errors.ts';
import type { EvalRow } from '../runner/evaluate.ts';
import { RunDir, type RunMeta } from '../runner/run-dir.ts';
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

/**
 * Regenerate report.md, results.csv and plots/ of a run folder; no rollouts.
 *
 * @example
 * const r = await runReport('runs/main-1a2b3c4d5e');
 */
export async function runReport(runDir: string, io: { stdout?: (text: string) => void } = {}): Promise<{ runDir: string; meta: RunMeta; rows: EvalRow[]; report: Report }> {
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
  return { runDir, meta, rows, report };
}
