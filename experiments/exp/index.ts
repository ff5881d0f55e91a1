/**
 * The experiments: one runner per experiment, each seeded and resumable, writing a run folder
 * (run.json, results.jsonl, cache.sqlite, results.csv, report.md, plots/), and `runReport` to
 * regenerate a report from stored results. The CLI wires these to `hr1 exp …` and `hr1 report`.
 */
export { runExpMain, resolveExpMain, mainTargets, reportMain, ExpMainSchema, DEFAULT_MAIN_TARGET, DEFAULT_MAIN_METHODS, PAPER_MAIN, type ExpMainInput, type ExpMainOptions } from './main.ts';
export { runExpSweep, resolveExpSweep, reportSweep, ExpSweepSchema, DEFAULT_SWEEP_TARGETS, DEFAULT_SWEEP_METHOD, DEFAULT_SWEEP_TEST, DEFAULT_SWEEP_TRAIN, type ExpSweepInput, type ExpSweepOptions } from './sweep.ts';
export { runExpCrosstask, resolveExpCrosstask, reportCrosstask, ExpCrosstaskSchema, DEFAULT_CROSSTASK_TARGET, DEFAULT_CROSSTASK_METHODS, DEFAULT_FAILURES, DEFAULT_CROSSTASK_SEEDS, DEFAULT_CROSSTASK_TEST, type ExpCrosstaskInput, type ExpCrosstaskOptions } from './crosstask.ts';
export { runExpAblate, resolveExpAblate, reportAblate, withoutHook, ExpAblateSchema, DEFAULT_ABLATE_TARGET, DEFAULT_ABLATE_METHOD, type ExpAblateInput, type ExpAblateOptions } from './ablate.ts';
export { runExpCoevolve, resolveExpCoevolve, reportCoevolve, tunedOf, coevolvePairs, ExpCoevolveSchema, DEFAULT_COEVOLVE_BASE, DEFAULT_COEVOLVE_METHOD, type ExpCoevolveInput, type ExpCoevolveOptions } from './coevolve.ts';
export { runReport, REPORTERS, type ExpReportResult, type TrainReportResult } from './regenerate.ts';
export {
  DEFAULT_SEED,
  DEFAULT_TEST,
  DEFAULT_TRAIN,
  DEFAULT_EDITOR,
  DEFAULT_BOOTSTRAP,
  DEFAULT_ROLLOUT,
  defaultRunDir,
  initOptionsOf,
  targetsByEnv,
  expTargetOptions,
  type CommonOptions,
  type ExpIO,
  type ExpResult,
  type Report,
} from './common.ts';
export { registerMethod, resetMethods, getMethod, methodNames, ENGINEER_MISSING, PROMPTED_EDITOR, type Method, type MethodContext, type MethodKind, type MethodOptions } from '../runner/methods.ts';
export { ExpError, type ExpErrorCode } from '../runner/errors.ts';
export { RunDir, RUN_FILES, type RunMeta } from '../runner/run-dir.ts';
export { envMetrics, primaryMetric, type EvalRow, type Outcome } from '../runner/evaluate.ts';
