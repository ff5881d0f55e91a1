/**
 * The project's actor roles. Every node imports this module so that it can host any of them.
 */
export { TargetActor, EpisodeRecordSchema, RolloutChunkSchema, runEpisodes, DEFAULT_EPISODE_CONCURRENCY, type EpisodeRef, type RolloutChunk } from './target.ts';
export { EnvActor, type Stepper } from './env.ts';
export { rollout, targetGroup, envGroup, rolloutKeys, summarizeRecords, type RolloutOptions, type RolloutResult, type RolloutSpec } from './rollout.ts';
export { EpisodeCache, episodeKey, DEFAULT_CACHE_PATH, type EpisodeKey } from './cache.ts';
export { listTasks, envFactory, ENV_NAMES, DEFAULT_SPLIT, type EnvName, type EnvOptions } from './envs.ts';
export { makeModel } from './models.ts';
export { Learner } from './learner.ts';
export { EngineerSampler } from './sampler.ts';
import './grammars.ts';
export { Validator } from './validator.ts';
