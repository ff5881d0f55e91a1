/**
 * `hr1 train`: the engineer (built-in, or an hf: checkpoint; experiments/train-engineer.ts).
 * Cold-start SFT on teacher proposals verified against the frozen target, then GRPO: per
 * iteration a batch, its failure packet, K sampled patches, their rewards Δ_B on paired seeds, one
 * learner update, the new policy published to the sampler (ONNX, or the hf: engineer's weights).
 */
import { mkdirSync, writeFileSync, appendFileSync, readFileSync, existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import YAML from 'yaml';
import type { Cluster } from '../cluster/client.ts';
import { ActorDiedError, ConfigError, Hr1Error, PlacementError } from '../cluster/errors.ts';
import { Rng } from '../cluster/rng.ts';
import { describeIssues } from '../cluster/codec.ts';
// the samplers decode under the `patch` grammar, registered by this module (a node imports it through actors/index.ts)
import '../actors/grammars.ts';
import { Learner } from '../actors/learner.ts';
import { EpisodeCache, rollout } from '../drivers/index.ts';
import { abstainRows, buildSftDataset, makeBatches, rewardGroup, type RewardResult, type SftRow } from '../drivers/index.ts';
import { extractPacket, FINDING_KINDS } from '../policies/engineer/index.ts';
import { envDescriptor, envNames, isEnvName } from '../envs/registry.ts';
import { canonicalJson, toPatch } from '../harness/index.ts';
import { ValueModel, rankCandidates } from '../policies/scorer/index.ts';
import { writeTrainReport, writeTrainScalars } from './report/training.ts';
import { DEFAULT_PROMPT_TOKENS, MAX_COMPLETION_TOKENS, PATCH_LANG_VERSION, tokensToPatch } from '../policies/engineer/patch-lang.ts';
import { engineerBackend, type SampledCompletion } from './train-engineer.ts';
import { PolicyVersions, StageClock, policyFile, pruneFiles, range, runTrainPipeline, type PipelineStages } from './train-pipeline.ts';
import { ChunkGate, ChunkTimes, DEFAULT_WORKER_WAIT_MS, LM_WINDOW, NoWorkersError, type RolloutOptions } from '../drivers/rollout.ts';
import type { Packet } from '../policies/engineer/packet.ts';
import type { EpisodeRecord } from '../harness/index.ts';
import type { MissingEvaluationError } from '../policies/engineer/errors.ts';

export const TrainConfigSchema = z
  .object({
    /** an env, or several separated by commas: one engineer for all of them (its input starts with an env token) */
    env: z.string().refine((v) => v.split(',').every((e) => isEnvName(e.trim())), { error: () => `must be one of ${envNames().join(', ')}, or several of them separated by commas` }).default('alfworld'),
    /**
     * the frozen target; with several envs, one per env in the same order (or one for all). An env
     * may train on several targets joined by `+` (`lm/a+lm/b`): its SFT batches and its GRPO
     * iterations take them in turn, so the engineer sees packets of targets that fail differently
     */
    target: z.string().default('sim/llama-3b'),
    seed: z.number().int().default(0),
    /** tasks per batch B (the reference used 10) */
    batchSize: z.number().int().min(2).max(200).default(10),
    split: z.string().optional(),
    /**
     * what Δ (the SFT verification and the GRPO reward) measures: 'success', or 'primary', the
     * env's primary metric (WebShop's score, which credits a better purchase that is not a full
     * success; success elsewhere). @default success
     */
    reward: z
      .strictObject({
        metric: z.enum(['success', 'primary'], { error: 'must be "success" or "primary"' }).default('success'),
        /**
         * which tasks Δ is measured on: 'batch', the packet's own batch (the paper's reward), or
         * 'heldout', other tasks of the split that the packet never showed (what an evaluation on
         * held-out test tasks measures: a rewrite keyed to one batch's goals earns nothing there).
         * With 'heldout', SFT verifications 2..verifySeeds are held-out batches and GRPO scores
         * its candidates on one. @default batch
         */
        on: z.enum(['batch', 'heldout'], { error: 'must be "batch" or "heldout"' }).default('batch'),
        /** tasks per held-out batch. @default batchSize */
        heldoutTasks: z.number().int().min(2).max(400).optional(),
      })
      .prefault({}),
    model: z.object({ dModel: z.number().int().positive().default(128), nLayers: z.number().int().positive().default(2), nHeads: z.number().int().positive().default(4), maxLen: z.number().int().min(DEFAULT_PROMPT_TOKENS + MAX_COMPLETION_TOKENS, { error: () => `must be at least ${DEFAULT_PROMPT_TOKENS + MAX_COMPLETION_TOKENS}: the packet's ${DEFAULT_PROMPT_TOKENS} prompt tokens and a ${MAX_COMPLETION_TOKENS}-token patch` }).default(768) }).strict().default({ dModel: 128, nLayers: 2, nHeads: 4, maxLen: 768 }),
    sft: z
      .object({
        batches: z.number().int().min(1).default(8),
        k: z.number().int().min(1).max(16).default(4),
        minDelta: z.number().default(0),
        /** verifications per proposal (the batch's seeds, then other episode seeds of its tasks); kept if the mean Δ > minDelta */
        verifySeeds: z.number().int().min(1).max(8).default(1),
        /** 'mean': kept if the mean Δ over the verifications > minDelta; 'all': if every one is */
        verifyRule: z.enum(['mean', 'all']).default('mean'),
        /** keep the smallest verified edit: drop a kept proposal's parts while it still passes (drivers/sft-dataset.ts) */
        minimize: z.boolean().default(false),
        /**
         * an env where no teacher proposal passed verification learns the empty patch on each of its
         * packets (drivers/sft-dataset.ts abstainRows) instead of leaving its engineer untrained
         */
        abstain: z.boolean().default(true),
        /** the finding kinds the teacher answers (all when omitted): e.g. [seen_target], a teacher that only copies what the excerpts showed */
        kinds: z.array(z.enum(FINDING_KINDS)).min(1).optional(),
        epochs: z.number().int().min(0).default(30),
        batchSize: z.number().int().min(1).default(16),
        lr: z.number().positive().default(3e-3),
      })
      .strict()
      .default({ batches: 8, k: 4, minDelta: 0, verifySeeds: 1, verifyRule: 'mean', minimize: false, abstain: true, epochs: 30, batchSize: 16, lr: 3e-3 }),
    grpo: z
      .object({
        iterations: z.number().int().min(0).default(24),
        k: z.number().int().min(2).max(64).default(8),
        // the reference samples at T 0.7, top-p 0.95; the tiny engineer leaves SFT with low entropy
        // (0.2–0.3 nats), so at 0.7 most groups share one reward and get zero advantage
        temperature: z.number().positive().default(1.0),
        topP: z.number().gt(0).max(1).default(1.0),
        epsLow: z.number().min(0).max(1).default(0.2),
        epsHigh: z.number().min(0).default(0.28),
        /** weight of the KL to the SFT engineer (the reference is set when SFT ends); 0 = off */
        klCoef: z.number().min(0).default(0),
        /** advantages divide by max(group std, stdFloor): Δ differences far below one task's worth stay small. @default 0 */
        stdFloor: z.number().min(0).default(0),
        updateIters: z.number().int().min(1).default(2),
        lr: z.number().positive().default(1e-3),
      })
      .strict()
      .default({ iterations: 24, k: 8, temperature: 1.0, topP: 1.0, epsLow: 0.2, epsHigh: 0.28, klCoef: 0, stdFloor: 0, updateIters: 2, lr: 1e-3 }),
    /**
     * the engineer: `builtin` (the project's small transformer over the patch language's own
     * vocabulary) or `hf:DIR` (a decoder-only checkpoint in the Hugging Face layout: Llama, Qwen2,
     * Qwen3; LoRA by default). Both write the patch language under its grammar.
     */
    engineer: z.string().default('builtin'),
    /** options of an hf: engineer */
    hf: z
      .object({
        /** LoRA adapters (rank, alpha, dropout, target modules); null trains every weight */
        lora: z.object({ r: z.number().int().min(1).default(16), alpha: z.number().positive().default(32), dropout: z.number().min(0).max(1).default(0), targets: z.array(z.string()).min(1).optional() }).strict().nullable().default({ r: 16, alpha: 32, dropout: 0 }),
        /** train every weight (same as lora: null) */
        full: z.boolean().default(false),
        /** bf16 on CUDA, fp32 on the CPU by default */
        dtype: z.enum(['auto', 'float32', 'bfloat16']).default('auto'),
        /** the packet's rendering is cut to fit this many prompt tokens (chat template included; the fixed part, system message and names, is ~1–1.8k ids) */
        promptTokens: z.number().int().min(256).default(3072),
        /** tokenizer ids a patch may take (the grammar ends every sample in a valid patch within it; teacher patches reach ~1k Qwen ids, ~1.3k Llama ids) */
        maxNewTokens: z.number().int().min(64).default(1280),
        maxLen: z.number().int().min(2).optional(),
      })
      .strict()
      .default({ lora: { r: 16, alpha: 32, dropout: 0 }, full: false, dtype: 'auto', promptTokens: 3072, maxNewTokens: 1280 }),
    /** where the learner (and an hf: sampler) runs: auto takes CUDA when torch sees a GPU */
    device: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
    /** the Python with torch for the learner (a GPU machine has its own). @default /usr/bin/python3 */
    python: z.string().optional(),
    /** save a resumable checkpoint every N GRPO iterations */
    checkpointEvery: z.number().int().min(1).default(2),
    /** how the rollouts are spread (none of it changes a result: episodes are deterministic) */
    workers: z
      .strictObject({
        /** replicas of the target actor group, spread over the nodes. @default 1 */
        replicas: z.number().int().min(1).max(256).default(1),
        /**
         * with 2+ replicas: a rollout chunk not answered after max(minMs, factor × the median answer
         * time of the run's chunks so far) is sent to another replica too; the first answer is kept
         */
        stragglers: z.strictObject({ factor: z.number().min(1).default(3), minMs: z.number().int().min(0).default(10_000), maxResends: z.number().int().min(0).max(8).default(1) }).prefault({}),
        /**
         * how long a rollout waits for a replica when every node that could host the target is
         * gone, ms; then training stops with TRAIN_NO_WORKERS, resumable from its last checkpoint
         */
        waitMs: z.number().int().min(0).default(DEFAULT_WORKER_WAIT_MS),
      })
      .prefault({}),
    /**
     * pipelined GRPO (`hr1 train --pipeline [--max-staleness N]`; experiments/train-pipeline.ts):
     * the rollouts, samples and reruns of later iterations run while earlier ones are rerun and
     * the learner updates. Absent: the synchronous loop.
     */
    pipeline: z
      .strictObject({
        /**
         * how many policy versions a sample may be behind: iteration t samples from the engineer
         * after update t−1−N (exactly; so results do not depend on timing). 0 makes the
         * synchronous loop's updates. @default 1
         */
        maxStaleness: z.number().int().min(0).max(8).default(1),
        /** candidates of one group rerun at once (a repeated patch is evaluated once). @default grpo.k */
        reruns: z.number().int().min(1).max(64).optional(),
      })
      .optional(),
    /**
     * oversample 2K candidates per packet and rerun only the K the validator's reward model ranks
     * best (`hr1 bench validator` trains the models into this folder: validation.onnx, reward.onnx)
     */
    validator: z.string().optional(),
    out: z.string().optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const envs = c.env.split(',');
    const targets = c.target.split(',');
    if (targets.length !== 1 && targets.length !== envs.length) ctx.addIssue({ code: 'custom', path: ['target'], message: `give one target, or one per env (${envs.length}: ${envs.join(', ')}); got ${targets.length}` });
    for (const spec of targets) {
      const parts = spec.split(TARGET_JOIN).map((t) => t.trim());
      if (parts.some((t) => t === '')) ctx.addIssue({ code: 'custom', path: ['target'], message: `"${spec}" has an empty target; join an env's targets with ${TARGET_JOIN} (lm/a${TARGET_JOIN}lm/b)` });
      else if (new Set(parts).size !== parts.length) ctx.addIssue({ code: 'custom', path: ['target'], message: `"${spec}" names a target twice; each of an env's targets once` });
      else if (parts.length > c.sft.batches) ctx.addIssue({ code: 'custom', path: ['target'], message: `"${spec}" has ${parts.length} targets but sft.batches is ${c.sft.batches}: every target needs an SFT batch; raise sft.batches or name fewer targets` });
    }
    if (c.split !== undefined && envs.length > 1) ctx.addIssue({ code: 'custom', path: ['split'], message: 'split names one env\'s split; with several envs each trains on its own training split' });
  });
export type TrainConfig = z.output<typeof TrainConfigSchema>;

// the run's plan (pairs, the episodes of each purpose, file names): apart, so reading a run folder does not load the training stack
export { TARGET_JOIN, TRAIN_CANDIDATES_FILE, TRAIN_LEARNER_FILE, TRAIN_SPLITS_FILE, grpoBatch, grpoHeldoutBatch, grpoPairOf, sftTargetOf, sftVerifyBatches, trainPairs, trainSplits, type TrainPair, type TrainSplits } from './train-plan.ts';
import { TARGET_JOIN, TRAIN_CANDIDATES_FILE, TRAIN_LEARNER_FILE, TRAIN_SPLITS_FILE, grpoBatch, grpoHeldoutBatch, grpoPairOf, sftTargetOf, sftVerifyBatches, trainPairs, trainSplits } from './train-plan.ts';

/** Read a YAML config (optional) and merge CLI overrides; errors name the option path. */
/** What Δ measures for `env` under `cfg` (RewardOptions.metric). */
export function rewardMetric(cfg: Pick<TrainConfig, 'reward'>, env: string): 'success' | 'score' {
  return cfg.reward.metric === 'primary' ? envDescriptor(env).metrics[0] : 'success';
}

export function resolveTrainConfig(file: string | undefined, overrides: Record<string, unknown>): TrainConfig {
  let base: unknown = {};
  if (file) {
    if (!existsSync(file)) throw new ConfigError('--config', `no config file at ${file}; pass a YAML file (see experiments/configs/train.default.yaml)`);
    try {
      base = YAML.parse(readFileSync(file, 'utf8')) ?? {};
    } catch (e) {
      throw new ConfigError('--config', `${file} is not valid YAML: ${(e as Error).message}`);
    }
  }
  const merged = { ...(base as Record<string, unknown>), ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)) };
  const r = TrainConfigSchema.safeParse(merged);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new ConfigError(`config.${i.path.join('.')}`, `${i.message} (${describeIssues(r.error)})`);
  }
  return r.data;
}

export interface IterationLog {
  iteration: number;
  phase: 'sft' | 'grpo';
  /** the env of a GRPO iteration's batch */
  env?: string;
  /** the target a GRPO iteration played (one of its env's targets) */
  target?: string;
  meanDelta?: number;
  bestDelta?: number;
  validRate?: number;
  baseSuccess?: number;
  loss?: number;
  entropy?: number;
  clipFrac?: number;
  kl?: number;
  /** the policy version the group was sampled from (pipelined runs with staleness ≥ 1) */
  policyVersion?: number;
  /** candidates left out of the group because their evaluation is missing (infra errors): never scored 0 */
  dropped?: { index: number; error: string }[];
  ms: { rollout?: number; sampling?: number; validation?: number; update?: number; total: number };
}

/**
 * The part of a GRPO group that is scored: a candidate whose evaluation is missing (its rollout
 * hit infra errors, MissingEvaluationError) is not a 0, it leaves the group (`dropped`); when every
 * evaluation is missing, training stops (TRAIN_EVAL_MISSING) rather than score them.
 */
export function scoredGroup(iteration: number, results: readonly ({ ok: true; reward: RewardResult } | { ok: false; error: Error })[]): { kept: number[]; deltas: number[]; valid: number; dropped: { index: number; error: string }[] } {
  const kept = results.flatMap((r, i) => (r.ok ? [i] : []));
  const dropped = results.flatMap((r, i) => (r.ok ? [] : [{ index: i, error: r.error.message }]));
  if (kept.length === 0) throw new Hr1Error('TRAIN_EVAL_MISSING', `GRPO iteration ${iteration}: the evaluation of every candidate is missing (first: ${dropped[0]?.error ?? '?'}); training stops rather than score them 0. Fix the target or env and resume with the same command`);
  const ok = kept.map((i) => (results[i] as { ok: true; reward: RewardResult }).reward);
  return { kept, deltas: ok.map((r) => r.delta), valid: ok.filter((r) => r.valid).length, dropped };
}

export interface TrainResult {
  out: string;
  sft: { rows: number; representable: number; finalLoss: number | null };
  iterations: IterationLog[];
  /** the engineer after GRPO: engineer.onnx (built-in), or engineer.safetensors, its trainable weights (hf:; the PEFT-layout folder is engineer-hf/) */
  onnx: string;
  /** the engineer after SFT only (engineer-sft.onnx, or engineer-sft.safetensors and engineer-sft-hf/) */
  sftOnnx: string;
  checkpoint: string;
  /** wall time of the GRPO iterations and the share of it each stage was busy (also pipeline.json) */
  pipeline: ReturnType<StageClock['report']>;
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

interface ResumeState {
  /** the last GRPO iteration whose update is in `checkpoint` */
  iteration: number;
  checkpoint: string;
  configHash: string;
  /** a pipelined run: the files of the policy versions its next samples draw from (version → file in checkpoints/) */
  policies?: Record<string, string>;
}

/** A GRPO iteration's policy-free part: its batch, base rollouts and packet. */
interface Prepared {
  it: number;
  env: string;
  target: string;
  batch: { taskId: string; seed: number }[];
  baseSuccess: number;
  packet: Packet;
  scoredOn: { taskId: string; seed: number }[];
  scoredBase: EpisodeRecord[];
  msRollout: number;
  tIt: number;
}
interface Sampled {
  version: number;
  prompt: number[];
  group: SampledCompletion[];
  patches: unknown[];
  msSampling: number;
}
interface Scored {
  results: ({ ok: true; reward: RewardResult } | { ok: false; error: MissingEvaluationError })[];
  msValidation: number;
}

/** candidates.jsonl lines of one group: every candidate with its reward (or why it is missing) */
function candidateLines(it: number, env: string, results: Scored['results'], patches: readonly unknown[]): string {
  return results
    .map((r, i) => {
      if (!r.ok) return `${JSON.stringify({ iteration: it, env, index: i, missing: r.error.message })}\n`;
      const w = r.reward;
      let patch: unknown = null;
      try {
        patch = w.valid ? toPatch(patches[i]) : null;
      } catch {
        patch = null;
      }
      return `${JSON.stringify({ iteration: it, env, index: i, valid: w.valid, delta: w.delta, patchHash: w.patchHash, patch })}\n`;
    })
    .join('');
}

/**
 * The part of a config that names a run (its folder, its resume check): the Python path never
 * counts, the engineer's fields only for an hf: engineer, the device only when it is not `auto`; so
 * a built-in engineer's run keeps the name it had before the hf: engineer existed.
 */
export function hashedConfig(cfg: TrainConfig): Record<string, unknown> {
  const { python: _python, engineer, hf, device, pipeline, workers: _workers, ...rest } = cfg;
  // a pipeline changes the updates only through its staleness (0: the synchronous loop's updates)
  return { ...rest, ...(engineer !== 'builtin' ? { engineer, hf } : {}), ...(device !== 'auto' ? { device } : {}), ...(pipeline && pipeline.maxStaleness > 0 ? { staleness: pipeline.maxStaleness } : {}) };
}

/**
 * Train the engineer (built-in, or hf:DIR) on `cluster` (in-process or across nodes). With `resume`, a run
 * folder that holds a checkpoint continues after its last checkpointed iteration; every
 * iteration's batch and sampling seed derive from (seed, iteration), so the updates that follow
 * are the ones the uninterrupted run makes (on the CPU).
 */
export async function trainEngineer(cluster: Cluster, cfg: TrainConfig, log: (l: string) => void = (l) => process.stderr.write(`${l}\n`), opts: { resume?: boolean } = {}): Promise<TrainResult> {
  const pairs = trainPairs(cfg);
  const backend = engineerBackend(cfg);
  const splitOf = (env: string) => cfg.split ?? envDescriptor(env).splits.train;
  // the language version too: a checkpoint of another vocabulary cannot be resumed
  const hash = createHash('sha256').update(canonicalJson({ cfg: hashedConfig(cfg), lang: PATCH_LANG_VERSION })).digest('hex').slice(0, 10);
  const out = cfg.out ?? join('runs', `train-${pairs.map((p) => p.env).join('+')}-${hash}`);
  mkdirSync(join(out, 'checkpoints'), { recursive: true });
  // every (task, seed) this run trains on, checked apart (SFT vs GRPO) and kept for evaluations to check against
  const splits = trainSplits(cfg);
  writeFileSync(join(out, 'config.json'), `${JSON.stringify(cfg, null, 2)}\n`);
  writeFileSync(join(out, TRAIN_SPLITS_FILE), `${JSON.stringify(splits)}\n`);
  const logFile = join(out, 'iterations.jsonl');
  const stateFile = join(out, 'state.json');
  let resume: ResumeState | undefined;
  if (opts.resume) {
    if (!existsSync(stateFile)) throw new ConfigError('--resume', `${out} has no checkpoint to resume from (no state.json); start the run without --resume`);
    resume = JSON.parse(readFileSync(stateFile, 'utf8')) as ResumeState;
    if (resume.configHash !== hash) throw new ConfigError('--resume', `the run in ${out} was made with another config (hash ${resume.configHash}, now ${hash}); resume with the same config`);
  }
  const kept = resume && existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as IterationLog).filter((x) => x.phase === 'sft' || x.iteration <= resume!.iteration) : [];
  writeFileSync(logFile, kept.map((x) => `${JSON.stringify(x)}\n`).join(''));
  // GRPO candidates: a resumed run keeps those of the iterations it keeps, a fresh one starts empty
  const candFile = join(out, TRAIN_CANDIDATES_FILE);
  const keptCands = resume && existsSync(candFile) ? readFileSync(candFile, 'utf8').split('\n').filter((l) => l.trim() && (JSON.parse(l) as { iteration: number }).iteration <= resume!.iteration) : [];
  writeFileSync(candFile, keptCands.map((l) => `${l}\n`).join(''));
  const cache = new EpisodeCache(join(out, 'episodes.sqlite'));
  log(`hr1 train: ${pairs.map((p) => `${p.env} on ${p.label}${p.targets.some((t) => t.startsWith('sim/')) ? ' (SIMULATED target)' : ''} (${splitOf(p.env)}${p.targets.length > 1 ? `; SFT batches and GRPO iterations take the ${p.targets.length} targets in turn` : ''})`).join('; ')}; batches of ${cfg.batchSize}; run folder ${out}`);
  const iterations: IterationLog[] = [...kept];
  const write = (it: IterationLog) => {
    iterations.push(it);
    appendFileSync(logFile, `${JSON.stringify(it)}\n`);
    // scalars.csv follows iterations.jsonl, so a reader sees every iteration logged so far
    writeTrainScalars(out, iterations, pairs);
  };
  writeTrainScalars(out, iterations, pairs);
  try {
    // 1. cold-start data: teacher proposals verified on their batch, non-regressive ones kept
    const t0 = performance.now();
    const rows: SftRow[] = [];
    let partsDropped = 0;
    for (const pair of pairs) {
      const { env } = pair;
      const batches = makeBatches(env, { count: cfg.sft.batches, size: cfg.batchSize, split: splitOf(env), seed: cfg.seed });
      const file = pairs.length === 1 ? 'sft.jsonl' : `sft-${env}.jsonl`;
      const envRows: SftRow[] = [];
      // several targets: batch b on sftTargetOf(pair, b), each target's rows in a file of its own, then all in `file`
      for (const [k, target] of pair.targets.entries()) {
        const mine = batches.map((_, b) => b).filter((b) => sftTargetOf(pair, b) === target);
        const many = pair.targets.length > 1;
        const verifyBatches = cfg.reward.on === 'heldout' ? (j: number) => sftVerifyBatches(cfg, env, splitOf(env), mine[j]!, batches[mine[j]!]!) : undefined;
        const partFile = many ? join(out, 'sft-parts', `${env}-${k}.jsonl`) : join(out, file);
        if (many) mkdirSync(join(out, 'sft-parts'), { recursive: true });
        const tag = pairs.length > 1 || many ? ` (${env}${many ? ` on ${target}` : ''})` : '';
        const ds = await buildSftDataset({ cluster, env, target, batches: mine.map((b) => batches[b]!), ...(verifyBatches ? { verifyBatches } : {}), metric: rewardMetric(cfg, env), k: cfg.sft.k, minDelta: cfg.sft.minDelta, verifySeeds: cfg.sft.verifySeeds, verifyRule: cfg.sft.verifyRule, minimize: cfg.sft.minimize, ...(cfg.sft.kinds ? { kinds: cfg.sft.kinds } : {}), teacherSeed: cfg.seed, out: partFile, cache, onProgress: (p) => { if (p.phase === 'done' || p.phase === 'base') log(`  sft data${tag}: batch ${p.batch}/${p.batches}: ${p.kept}/${p.proposals} proposals kept so far`); } });
        envRows.push(...ds.rows);
        if (ds.rows.length === 0 && cfg.sft.abstain) {
          const ab = abstainRows(env, target, ds.packets);
          envRows.push(...ab);
          if (ab.length) log(`  sft data${tag}: no teacher proposal passed verification; the engineer learns the empty patch on the ${ab.length} packet${ab.length === 1 ? '' : 's'} (sft.abstain)`);
        }
        partsDropped += ds.summary.partsDropped;
      }
      rows.push(...envRows);
      // the env's rows, every target's (the best fixed patch and the experiments' summaries read this file)
      if (envRows.length || pair.targets.length > 1) writeFileSync(join(out, file), envRows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    }
    const ds = { rows };
    const sftPairs = ds.rows
      .map((r) => {
        const inp = backend.input(r.packet);
        return { prompt: inp.ids, completion: backend.completion(r.patch, inp) };
      })
      .filter((x): x is { prompt: number[]; completion: number[] } => x.completion !== null);
    log(`  sft data: ${ds.rows.length} rows kept (${sftPairs.length} in the patch grammar), mean Δ ${mean(ds.rows.map((r) => r.delta)).toFixed(3)}${partsDropped ? `, ${partsDropped} parts dropped by minimize` : ''}, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    if (sftPairs.length === 0) log('  warning: no teacher proposal raised success on its batch (Δ > minDelta) and sft.abstain is off, so SFT has no data and GRPO starts from an untrained engineer; use more sft.batches or sft.k, a lower sft.minDelta, or sft.abstain: true');
    // 2. the learner and a sampler
    // on CUDA the learner goes to a node that offers a GPU (an hf: sampler takes the other half)
    const learner = await cluster.spawn(Learner.options({ maxRestarts: 2, ...(cfg.device === 'cuda' ? { resources: { gpu: 0.5 } } : {}) }), {
      ...(resume ? { resume: resume.checkpoint } : {}),
      ...backend.learnerArgs(cfg.sft.lr),
      seed: cfg.seed,
      checkpointDir: join(out, 'checkpoints'),
      objectPrefix: `engineer-${hash}`,
    });
    // where the updates ran (the float paths a rerun elsewhere must share to give the same bits; docs/LEARNER.md, "Across machines")
    const li = await learner.info(null);
    const facts = { torch: li.torch, device: li.device, blas: li.blas ?? null, cpu: cpus()[0]?.model ?? null };
    writeFileSync(join(out, TRAIN_LEARNER_FILE), `${JSON.stringify(facts)}\n`);
    log(`  learner: torch ${facts.torch} on ${facts.device}, BLAS kernels ${facts.blas ?? 'not OpenBLAS'}, CPU ${facts.cpu ?? '?'}`);
    const sampler = await backend.spawnSampler(cluster);
    // one history of chunk answer times for the whole run: the straggler deadline is known from the first chunks on
    const rolloutOpts: Omit<RolloutOptions, 'cache'> = { replicas: cfg.workers.replicas, log, stragglers: { ...cfg.workers.stragglers, history: new ChunkTimes() }, workerWaitMs: cfg.workers.waitMs };
    // pipelined: the iterations in flight share each target's replicas through one gate per target, oldest iteration first
    const gates = new Map<string, ChunkGate>();
    const forIteration = (target: string, it: number): Omit<RolloutOptions, 'cache'> => {
      if (!cfg.pipeline) return rolloutOpts;
      let g = gates.get(target);
      if (!g) gates.set(target, (g = new ChunkGate(cfg.workers.replicas * (target.startsWith('lm/') ? LM_WINDOW : 2))));
      return { ...rolloutOpts, gate: g, priority: it };
    };
    const validator = cfg.validator ? { validation: await ValueModel.fromPath(join(cfg.validator, 'validation.onnx')), reward: await ValueModel.fromPath(join(cfg.validator, 'reward.onnx')) } : undefined;
    if (validator) log(`  validator: ${cfg.validator} (sampling ${2 * cfg.grpo.k}, rerunning the best ${cfg.grpo.k} by predicted Δ)`);
    // 3. SFT epochs
    const rng = new Rng(`sft|${cfg.seed}`);
    let finalLoss: number | null = resume ? (kept.filter((x) => x.phase === 'sft').pop()?.loss ?? null) : null;
    for (let e = 0; !resume && e < cfg.sft.epochs && sftPairs.length > 0; e++) {
      const t = performance.now();
      const order = rng.shuffle(sftPairs);
      const losses: number[] = [];
      for (let i = 0; i < order.length; i += cfg.sft.batchSize) {
        const mb = order.slice(i, i + cfg.sft.batchSize);
        const r = await learner.sftStep({ prompts: mb.map((x) => x.prompt), completions: mb.map((x) => x.completion), lr: cfg.sft.lr }, { timeout: '10m' });
        losses.push(r.loss);
      }
      finalLoss = mean(losses);
      write({ iteration: e + 1, phase: 'sft', loss: finalLoss, ms: { update: performance.now() - t, total: performance.now() - t } });
      if (e % 10 === 0 || e === cfg.sft.epochs - 1) log(`  sft epoch ${e + 1}/${cfg.sft.epochs}: loss ${finalLoss.toFixed(4)}`);
    }
    // the KL term's reference: the engineer as SFT left it (a resumed run's checkpoint holds it)
    if (!resume && cfg.grpo.klCoef > 0) await learner.setReference(null);
    // the policy versions the sampler draws from: v0 is the engineer as SFT left it, v_t the one
    // after GRPO update t; each is an object in the store (pipelined iterations sample older ones)
    const ext = backend.kind === 'hf' ? 'safetensors' : 'onnx';
    const N = cfg.pipeline?.maxStaleness ?? 0;
    const versions = new PolicyVersions(cluster.objects, `engineer-${hash}`, ext);
    const startIt = resume?.iteration ?? 0;
    const first = await learner.export({ name: versions.objectName(startIt) });
    versions.set(startIt, first.name);
    // the SFT-only engineer, kept for comparison with SFT+GRPO
    const sftOnnx = join(out, backend.kind === 'hf' ? 'engineer-sft.safetensors' : 'engineer-sft.onnx');
    if (!resume) {
      writeFileSync(sftOnnx, await cluster.objects.get(first.name));
      if (backend.kind === 'hf') await learner.saveHf({ dir: join(out, 'engineer-sft-hf') });
      const ck0 = await learner.save({ path: join(out, 'checkpoints', 'it-0.pt') });
      if (N > 0) writeFileSync(join(out, 'checkpoints', policyFile(0, ext)), await cluster.objects.get(first.name));
      writeFileSync(stateFile, JSON.stringify({ iteration: 0, checkpoint: ck0.path, configHash: hash, ...(N > 0 ? { policies: { 0: policyFile(0, ext) } } : {}) } satisfies ResumeState));
    } else {
      // a pipelined run resumes with the older versions its next samples draw from (kept beside the checkpoint)
      for (const [v, file] of Object.entries(resume.policies ?? {})) {
        const j = Number(v);
        if (j >= startIt) continue;
        const path = join(out, 'checkpoints', file);
        if (!existsSync(path)) throw new ConfigError('--resume', `${out}: the checkpoint of iteration ${startIt} needs policy version ${j} (${path}), which is missing; start the run again without --resume`);
        const name = versions.objectName(j);
        await cluster.objects.put(name, readFileSync(path));
        versions.set(j, name);
      }
      log(`  resuming after GRPO iteration ${resume.iteration} from ${resume.checkpoint}`);
    }
    // 4. GRPO: per iteration t, R (the base rollouts and the packet: no policy), S (K samples from
    // policy version max(0, t−1−N)), V (the K reruns), U (one learner update → version t). The
    // synchronous loop runs them in turn; --pipeline overlaps them (runTrainPipeline).
    const clock = new StageClock();
    const prepare = async (it: number): Promise<Prepared> => {
      const tIt = performance.now();
      // several envs: the iterations take them in turn; several targets of an env: its iterations take them in turn
      const { env, target } = grpoPairOf(pairs, it);
      const batch = grpoBatch(cfg, env, splitOf(env), it);
      return clock.time('rollout', async () => {
        const tR = performance.now();
        const base = await rollout(cluster, { env, target, episodes: batch }, { cache, ...forIteration(target, it) });
        const baseSuccess = mean(base.records.map((r) => (r.outcome.won ? 1 : 0)));
        const packet = extractPacket(base.records);
        if (packet.episodes.length === 0) return { it, env, target, batch, baseSuccess, packet, scoredOn: batch, scoredBase: base.records, msRollout: performance.now() - tR, tIt };
        // Δ on the packet's batch, or (reward.on heldout) on tasks the packet never showed; its base rollout needs no policy either
        const scoredOn = cfg.reward.on === 'heldout' ? grpoHeldoutBatch(cfg, env, splitOf(env), it, batch) : batch;
        const scoredBase = scoredOn === batch ? base.records : (await rollout(cluster, { env, target, episodes: scoredOn }, { cache, ...forIteration(target, it) })).records;
        return { it, env, target, batch, baseSuccess, packet, scoredOn, scoredBase, msRollout: performance.now() - tR, tIt };
      });
    };
    let loaded = -1;
    const sampleStage = async (p: Prepared, version: number): Promise<Sampled> =>
      clock.time('sampling', async () => {
        const tS = performance.now();
        if (loaded !== version) {
          await sampler.load(versions.get(version));
          loaded = version;
        }
        const input = backend.input(p.packet);
        const sampled = await sampler.sample(input, { k: validator ? 2 * cfg.grpo.k : cfg.grpo.k, temperature: cfg.grpo.temperature, topP: cfg.grpo.topP, seed: cfg.seed * 100_003 + p.it });
        let group = sampled;
        let patches: unknown[] = group.map((c) => {
          try {
            return tokensToPatch(c.grammar, input.names);
          } catch {
            return { rules: [{ hook: 'invalid' }] };
          }
        });
        if (validator) {
          // keep the K the reward model ranks best; only those are rerun (the update sees only them)
          const { order } = await rankCandidates(validator, p.packet, patches);
          const keep = order.slice(0, cfg.grpo.k).sort((a, b) => a - b);
          group = keep.map((i) => group[i]!);
          patches = keep.map((i) => patches[i]!);
        }
        return { version, prompt: input.ids, group, patches, msSampling: performance.now() - tS };
      });
    const scoreStage = async (p: Prepared, s: Sampled): Promise<Scored> =>
      clock.time('validation', async () => {
        const tV = performance.now();
        const rewards = await rewardGroup(cluster, { env: p.env, target: p.target, episodes: p.scoredOn, patches: s.patches, cache, base: p.scoredBase }, { metric: rewardMetric(cfg, p.env), concurrency: cfg.pipeline ? (cfg.pipeline.reruns ?? cfg.grpo.k) : 1, rollout: forIteration(p.target, p.it) });
        return { results: rewards.results, msValidation: performance.now() - tV };
      });
    let lastVersion = startIt;
    const updateStage = async (p: Prepared, s: Sampled | null, sc: Scored | null): Promise<void> => {
      const it = p.it;
      if (s === null || sc === null) {
        // no failures to learn from: version it is version it − 1
        log(`  grpo ${it}/${cfg.grpo.iterations}: no failures in this batch; skipped`);
        versions.alias(it, it - 1);
        lastVersion = it;
        write({ iteration: it, phase: 'grpo', env: p.env, target: p.target, meanDelta: 0, bestDelta: 0, validRate: 1, baseSuccess: p.baseSuccess, ms: { rollout: p.msRollout, total: performance.now() - p.tIt } });
        if (N > 0) writeFileSync(join(out, 'checkpoints', policyFile(it, ext)), await cluster.objects.get(versions.get(it)));
        return;
      }
      const { kept, deltas, valid, dropped } = scoredGroup(it, sc.results);
      // every candidate of the group with its reward, so its episodes can be read later (the dashboard, hr1 episodes export)
      appendFileSync(candFile, candidateLines(it, p.env, sc.results, s.patches));
      if (dropped.length > 0) log(`  grpo ${it}/${cfg.grpo.iterations}: ${dropped.length} of ${s.group.length} candidates dropped, their evaluation is missing (first: ${dropped[0]!.error})`);
      const group = kept.map((i) => s.group[i]!);
      const tU = performance.now();
      const upd = await clock.time('update', async () => {
        const u = await learner.grpoStep(
          {
            prompts: group.map(() => s.prompt),
            completions: group.map((c) => c.ids),
            rewards: deltas,
            groupIds: group.map(() => it),
            // the log-probs of the version that sampled them: the clipped ratio corrects for a stale sample
            oldLogprobs: group.map((c) => c.logprobs),
            config: { epsLow: cfg.grpo.epsLow, epsHigh: cfg.grpo.epsHigh, klCoef: cfg.grpo.klCoef, stdFloor: cfg.grpo.stdFloor, updateIters: cfg.grpo.updateIters, temperature: cfg.grpo.temperature, lr: cfg.grpo.lr },
          },
          { timeout: '10m' },
        );
        const ref = await learner.export({ name: versions.objectName(it) });
        versions.set(it, ref.name);
        return u;
      });
      lastVersion = it;
      if (N > 0) writeFileSync(join(out, 'checkpoints', policyFile(it, ext)), await cluster.objects.get(versions.get(it)));
      const msUpdate = performance.now() - tU;
      const last = upd.iters[upd.iters.length - 1]!;
      const rec: IterationLog = {
        iteration: it,
        phase: 'grpo',
        env: p.env,
        target: p.target,
        meanDelta: mean(deltas),
        bestDelta: Math.max(...deltas),
        validRate: valid / group.length,
        baseSuccess: p.baseSuccess,
        loss: last.loss,
        entropy: last.entropy,
        clipFrac: last.clipFrac,
        kl: last.kl,
        ...(N > 0 ? { policyVersion: s.version } : {}),
        ...(dropped.length > 0 ? { dropped } : {}),
        ms: { rollout: p.msRollout, sampling: s.msSampling, validation: sc.msValidation, update: msUpdate, total: performance.now() - p.tIt },
      };
      write(rec);
      if (it % cfg.checkpointEvery === 0 || it === cfg.grpo.iterations) {
        const ck = await learner.save({ path: join(out, 'checkpoints', `it-${it}.pt`) });
        // a pipelined run's next samples draw from versions it−N … it−1: their files go with the checkpoint
        const policies = N > 0 ? Object.fromEntries(range(Math.max(0, it - N), it).map((v) => [v, policyFile(v, ext)])) : undefined;
        writeFileSync(stateFile, JSON.stringify({ iteration: it, checkpoint: ck.path, configHash: hash, ...(policies ? { policies } : {}) } satisfies ResumeState));
        if (N > 0) pruneFiles(join(out, 'checkpoints'), Math.max(0, it - N), ext);
      }
      log(`  grpo ${it}/${cfg.grpo.iterations}${pairs.length > 1 || pairs[0]!.targets.length > 1 ? ` (${pairs.length > 1 ? p.env : ''}${pairs.length > 1 && pairs.some((q) => q.targets.length > 1) ? ' ' : ''}${pairs.some((q) => q.targets.length > 1) ? `on ${p.target}` : ''})` : ''}: mean Δ ${rec.meanDelta!.toFixed(3)}, best Δ ${rec.bestDelta!.toFixed(3)}, valid ${(rec.validRate! * 100).toFixed(0)}%, entropy ${rec.entropy!.toFixed(3)}, clip ${rec.clipFrac!.toFixed(3)}, KL ${rec.kl!.toFixed(4)}${N > 0 ? `, policy v${s.version}` : ''} | rollout ${(p.msRollout / 1000).toFixed(1)}s sample ${(s.msSampling / 1000).toFixed(1)}s validate ${(sc.msValidation / 1000).toFixed(1)}s update ${(msUpdate / 1000).toFixed(1)}s`);
    };
    const stages: PipelineStages<Prepared, Sampled, Scored> = {
      prepare,
      needsPolicy: (p) => p.packet.episodes.length > 0,
      sample: sampleStage,
      score: scoreStage,
      update: updateStage,
      // a version no later sample draws from leaves the store (the newest stays: it is the result)
      release: (below) => versions.release(below, lastVersion),
    };
    const tG = performance.now();
    clock.start();
    await runTrainPipeline(stages, { from: startIt + 1, to: cfg.grpo.iterations, maxStaleness: N, overlap: cfg.pipeline !== undefined });
    const pipeline = clock.report(performance.now() - tG);
    if (cfg.grpo.iterations > startIt) {
      writeFileSync(join(out, 'pipeline.json'), `${JSON.stringify({ mode: cfg.pipeline ? 'pipelined' : 'synchronous', maxStaleness: N, iterations: cfg.grpo.iterations - startIt, ...pipeline }, null, 2)}\n`);
      log(`  grpo: ${cfg.grpo.iterations - startIt} iterations in ${(pipeline.wallMs / 1000).toFixed(1)} s (${cfg.pipeline ? `pipelined, staleness ≤ ${N}` : 'synchronous'}); busy: ${Object.entries(pipeline.busyShare).map(([k, v]) => `${k} ${(v * 100).toFixed(0)}%`).join(', ')}`);
    }
    const ck = await learner.save({ path: join(out, 'engineer.pt') });
    const onnxPath = join(out, backend.kind === 'hf' ? 'engineer.safetensors' : 'engineer.onnx');
    writeFileSync(onnxPath, await cluster.objects.get(versions.get(lastVersion)));
    if (backend.kind === 'hf') await learner.saveHf({ dir: join(out, 'engineer-hf') });
    await cluster.kill(learner).catch(() => {});
    await sampler.kill();
    writeTrainReport(out, iterations, pairs);
    return { out, sft: { rows: ds.rows.length, representable: sftPairs.length, finalLoss }, iterations, onnx: onnxPath, sftOnnx, checkpoint: ck.path, pipeline };
  } catch (e) {
    throw workersGone(e, out, stateFile) ?? e;
  } finally {
    cache.close();
  }
}

/**
 * Training cannot go on because the workers are gone (no node can host the target's replicas, the
 * learner or the sampler): TRAIN_NO_WORKERS, naming the checkpoint a --resume continues from.
 * Anything else: undefined (the error stands as it is).
 */
export function workersGone(e: unknown, out: string, stateFile: string): Hr1Error | undefined {
  const gone = e instanceof NoWorkersError || e instanceof PlacementError || e instanceof ActorDiedError || (e instanceof Hr1Error && e.code === 'LEARNER_DIED');
  if (!gone) return undefined;
  let where = 'no GRPO checkpoint yet: run the same command again once nodes are back (the episodes played so far are cached in the run folder)';
  if (existsSync(stateFile)) {
    const st = JSON.parse(readFileSync(stateFile, 'utf8')) as ResumeState;
    where = `its last checkpoint, after GRPO iteration ${st.iteration}, is kept (${st.checkpoint}): once nodes are back, run the same command with --resume (run folder ${out})`;
  }
  const what = e instanceof NoWorkersError ? e.summary : (e as Error).message.replace(/\.$/, '');
  return new Hr1Error('TRAIN_NO_WORKERS', `training stopped: ${what}. Nothing was scored from the lost work; ${where}`, { cause: e });
}
