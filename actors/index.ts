/**
 * The project's actor roles. Every node imports this module so that it can host any of them.
 */
export { TargetActor, EpisodeRecordSchema, RolloutChunkSchema, RolloutReplySchema, TargetInfoSchema, ClientStatsSchema, ReplicaClientStatsSchema, WirePatchSchema, wirePatch, harnessFor, runEpisodes, DEFAULT_EPISODE_CONCURRENCY, DEFAULT_HARNESS_CACHE, type EpisodeRef, type RolloutChunk, type RolloutReply, type TargetInfo, type ClientStats, type ReplicaClientStats, type WirePatch } from './target.ts';
export { EnvActor, type Stepper } from './env.ts';
export { Learner } from './learner.ts';
export { EngineerSampler } from './sampler.ts';
import './grammars.ts';
export { Scorer } from './scorer.ts';
