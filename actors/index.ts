/**
 * The project's actor roles. Every node imports this module so that it can host any of them.
 */
export { TargetActor, EpisodeRecordSchema, RolloutChunkSchema, runEpisodes, DEFAULT_EPISODE_CONCURRENCY, type EpisodeRef, type RolloutChunk } from './target.ts';
export { EnvActor, type Stepper } from './env.ts';
export { Learner } from './learner.ts';
export { EngineerSampler } from './sampler.ts';
import './grammars.ts';
export { Validator } from './scorer.ts';
