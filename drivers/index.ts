/**
 * The drivers: what drives rollouts above the actors. Rollout over TargetActor groups with the
 * episode cache, the reward Δ_B on paired seeds, train batches and the cold-start SFT dataset,
 * and the scorer's logged-outcome dataset and report. Experiments call these; nothing below
 * (actors, policies, harness, envs, cluster) imports them.
 */
export { rollout, targetGroup, envGroup, rolloutKeys, summarizeRecords, checkReply, RolloutInfraError, ReplyMismatchError, NoWorkersError, ChunkTimes, ChunkGate, stragglerDeadline, DEFAULT_INFRA_RETRIES, DEFAULT_INFRA_BACKOFF_MS, DEFAULT_WORKER_WAIT_MS, type InfraFailure, type RolloutOptions, type RolloutResult, type RolloutSpec, type StragglerOptions } from './rollout.ts';
export { ClientStatsCollector, sumClientStats, formatEndpointStats, type EndpointStats } from './client-stats.ts';
export { EpisodeCache, episodeKey, DEFAULT_CACHE_PATH, type EpisodeKey } from './episode-cache.ts';
export { rewardOf, rewardGroup, baseRecords, checkCandidate, type RewardSpec, type RewardOptions, type RewardResult } from './reward.ts';
export { abstainRows, buildSftDataset, makeBatches, heldoutBatch, formatSftSummary, patchParts, VERIFY_RULES, VERIFY_SEED_STRIDE, type VerifyRule, DEFAULT_BATCH_SIZE, DEFAULT_MIN_DELTA, SFT_ROW_KIND, type SftRow, type SftPacket, type SftOptions, type SftSummary, type SftProgress } from './sft-dataset.ts';
export {
  OUTCOME_ROW_KIND,
  DEFAULT_VALIDATOR_DIR,
  DEFAULT_TARGETS,
  DEFAULT_ENVS,
  generateOutcomes,
  readOutcomes,
  outcomesKey,
  candidatePool,
  randomWalkPatch,
  type OutcomeRow,
  type OutcomeOptions,
} from './scorer-dataset.ts';
export { validatorReport, formatTable, DEFAULT_REPORT_K, DEFAULT_DRAWS, type ReportOptions, type ValidatorReport, type StrategyRow, type HeldoutMetrics } from './scorer-report.ts';
export { SEED_SPACES, SplitOverlapError, assertDisjoint, findOverlaps, describeSet, type EpisodeSet, type SplitOverlap } from './splits.ts';
