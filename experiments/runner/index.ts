/** The experiment runner: run folders, units, methods, options and progress. */
export { ExpError, type ExpErrorCode } from './errors.ts';
export { resolveOptions, loadConfigFile, mergeOptions, withConfigFile, configHash } from './config.ts';
export { RunDir, RUN_FILES, type RunMeta, type ResultRow } from './run-dir.ts';
export { registerMethod, resetMethods, getMethod, methodNames, methodAvailable, ENGINEER_MISSING, PROMPTED_EDITOR, type Method, type MethodContext, type MethodKind, type MethodOptions } from './methods.ts';
export { ExpRun, envMetrics, primaryMetric, testTasks, trainBatches, episodesOf, outcomesOf, type EvalRow, type Outcome, type PacketSource, type RolloutSettings } from './evaluate.ts';
export { makeProgress, countProgress, formatProgressLine, formatDurationShort, formatRate, progressIntervalMs, DEFAULT_PROGRESS_INTERVAL_MS, PROGRESS_INTERVAL_ENV, PROGRESS_QUIET_MS, type Progress, type ProgressMode, type CountProgress, type CountProgressOptions, type ProgressSnapshot } from './progress.ts';
