/**
 * Run folders and their episodes as data: list the runs under a directory (`hr1 exp`, `hr1
 * train`), read one (meta, summary, plots), list its episodes, read one with its patch and its
 * unpatched counterpart, export them as JSONL. Read-only: nothing here writes a run folder.
 */
export { listRuns, RUN_SEARCH_DEPTH, readJsonl, readRun, runInfo, runKindOf, requireRun, trainSummary, TRAIN_FILES, type RunInfo, type RunDetail, type RunKind, type TrainSummary } from './list.ts';
export { listEpisodes, readEpisode, firstDivergence, parseEpisodeFilter, EpisodeReader, EPISODE_FILTER_KEYS, type EpisodeRef, type EpisodeFilter, type EpisodeView } from './episodes.ts';
export { exportEpisodes, EXPORT_FORMATS, type ExportFormat, type ExportOptions, type ExportedEpisode } from './export.ts';
export { RunsError, type RunsErrorCode } from './errors.ts';
