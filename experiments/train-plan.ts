/**
 * What a training run will train on, derivable from its config alone: the (env, target) pairs,
 * every (task, episode seed) of its SFT batches, their verification seeds and its GRPO batches
 * (kept apart: drivers/splits.ts), and the names of the files a run folder lists them in. Light on
 * purpose: experiments and run-folder readers import it without the learner and the sampler.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EpisodeRef } from '../actors/target.ts';
import { SEED_SPACES, VERIFY_SEED_STRIDE, assertDisjoint, heldoutBatch, makeBatches, type EpisodeSet } from '../drivers/index.ts';
import { envDescriptor } from '../envs/registry.ts';
import type { TrainConfig } from './train.ts';

/** What separates the targets one env trains on in `target` (`lm/a+lm/b`; envs are separated by commas). */
export const TARGET_JOIN = '+';

/** One env of a training run: its targets, the first of which (`target`) is the engineer's own. */
export interface TrainPair {
  env: string;
  /** the env's first target: the one the engineer is said to be trained on (engineer-grpo-transfer, best-fixed-transfer) */
  target: string;
  /** every target the env trains on (`target: lm/a+lm/b`): SFT batch b on targets[b mod n], the env's j-th GRPO iteration on targets[j mod n] */
  targets: string[];
  /** how logs and charts name them: `lm/a`, or `lm/a + lm/b` */
  label: string;
}

/** The (env, targets) pairs a config trains on, in order. */
export function trainPairs(cfg: Pick<TrainConfig, 'env' | 'target'>): TrainPair[] {
  const envs = cfg.env.split(',').map((e) => e.trim());
  const specs = cfg.target.split(',').map((x) => x.trim());
  return envs.map((env, i) => {
    const targets = (specs.length === 1 ? specs[0]! : specs[i]!).split(TARGET_JOIN).map((t) => t.trim());
    return { env, target: targets[0]!, targets, label: targets.join(` ${TARGET_JOIN} `) };
  });
}

/** The target SFT batch `b` of `pair` is played on (round robin over the env's targets). */
export function sftTargetOf(pair: TrainPair, b: number): string {
  return pair.targets[b % pair.targets.length]!;
}

/** The env and target GRPO iteration `it` (from 1) plays: envs in turn, and within an env its targets in turn. */
export function grpoPairOf(pairs: readonly TrainPair[], it: number): { env: string; target: string } {
  const p = pairs[(it - 1) % pairs.length]!;
  const j = Math.floor((it - 1) / pairs.length);
  return { env: p.env, target: p.targets[j % p.targets.length]! };
}

/** GRPO's candidates, one JSON line each: iteration, env, index, valid, Δ, patch hash and canonical patch. */
export const TRAIN_CANDIDATES_FILE = 'candidates.jsonl';

/** The file of a train run folder that says where its updates ran: torch, device, OpenBLAS kernels, CPU model. */
export const TRAIN_LEARNER_FILE = 'learner.json';

/** The file of a train run folder that lists every (task, seed) the run trains on. */
export const TRAIN_SPLITS_FILE = 'splits.json';

export interface TrainSplits {
  kind: 'hr1-train-splits/1';
  /**
   * per env: its target (the first of several) and split, and the episodes of each purpose (with
   * `reward.on: heldout`, verify and grpo hold the held-out batches too); `targets`: every target
   * it trains on, when there are several (SFT batch b on targets[b mod n], the env's j-th GRPO
   * iteration on targets[j mod n])
   */
  envs: Record<string, { target: string; targets?: string[]; split: string; sft: EpisodeRef[]; verify: EpisodeRef[]; grpo: EpisodeRef[] }>;
}

/**
 * The `splits.json` an engineer folder holds for `env` (a one-env run's `DIR/<env>/` or `DIR/`,
 * as `--engineer DIR` is looked up), with its path; null when there is none.
 */
export function findTrainSplits(engineerDir: string, env: string): { file: string; splits: TrainSplits } | null {
  const file = [join(engineerDir, env, TRAIN_SPLITS_FILE), join(engineerDir, TRAIN_SPLITS_FILE)].find((f) => existsSync(f));
  return file ? { file, splits: JSON.parse(readFileSync(file, 'utf8')) as TrainSplits } : null;
}

/** GRPO iteration `it`'s batch: its own seed range (SEED_SPACES.grpo), apart from the SFT batches. */
export function grpoBatch(cfg: Pick<TrainConfig, 'seed' | 'batchSize'>, env: string, split: string, it: number): EpisodeRef[] {
  return makeBatches(env, { count: 1, size: cfg.batchSize, split, seed: SEED_SPACES.grpo + cfg.seed * 1000 + it })[0]!;
}

/** How many tasks a held-out reward batch has (`reward.heldoutTasks`, else the batch size). */
export function heldoutSize(cfg: Pick<TrainConfig, 'batchSize' | 'reward'>): number {
  return cfg.reward.heldoutTasks ?? cfg.batchSize;
}

/**
 * With `reward.on: heldout`, SFT batch b's verifications 2..verifySeeds: each a batch of other
 * tasks of the split (none of batch b's), under its own seed (SEED_SPACES.heldout); else none.
 */
export function sftVerifyBatches(cfg: Pick<TrainConfig, 'seed' | 'batchSize' | 'reward' | 'sft'>, env: string, split: string, b: number, batch: readonly EpisodeRef[]): EpisodeRef[][] {
  if (cfg.reward.on !== 'heldout') return [];
  return Array.from({ length: cfg.sft.verifySeeds - 1 }, (_, i) => heldoutBatch(env, { exclude: batch, size: heldoutSize(cfg), split, seed: SEED_SPACES.heldout + 10_000 * cfg.seed + 8 * b + i + 1 }));
}

/** With `reward.on: heldout`, the tasks GRPO iteration `it` scores its candidates on: none of its packet's batch. */
export function grpoHeldoutBatch(cfg: Pick<TrainConfig, 'seed' | 'batchSize' | 'reward'>, env: string, split: string, it: number, batch: readonly EpisodeRef[]): EpisodeRef[] {
  return heldoutBatch(env, { exclude: batch, size: heldoutSize(cfg), split, seed: SEED_SPACES.heldout + 50_000 + 1000 * cfg.seed + it });
}

/**
 * Every (task, seed) a train config uses, per env: the SFT batches, their verification seeds and
 * the GRPO batches; refused (SplitOverlapError) when two of them share a pair.
 */
export function trainSplits(cfg: TrainConfig): TrainSplits {
  const envs: TrainSplits['envs'] = {};
  const pairs = trainPairs(cfg);
  const sets: EpisodeSet[] = [];
  pairs.forEach(({ env, target, targets }) => {
    const split = cfg.split ?? envDescriptor(env).splits.train;
    const batches = makeBatches(env, { count: cfg.sft.batches, size: cfg.batchSize, split, seed: cfg.seed });
    const sft = batches.flat();
    const heldout = cfg.reward.on === 'heldout';
    const verify = heldout
      ? batches.flatMap((b, i) => sftVerifyBatches(cfg, env, split, i, b).flat())
      : Array.from({ length: cfg.sft.verifySeeds - 1 }, (_, j) => sft.map((e) => ({ ...e, seed: e.seed + (j + 1) * VERIFY_SEED_STRIDE }))).flat();
    const grpo: EpisodeRef[] = [];
    for (let it = 1; it <= cfg.grpo.iterations; it++)
      if (pairs[(it - 1) % pairs.length]!.env === env) {
        const b = grpoBatch(cfg, env, split, it);
        grpo.push(...b, ...(heldout ? grpoHeldoutBatch(cfg, env, split, it, b) : []));
      }
    envs[env] = { target, ...(targets.length > 1 ? { targets } : {}), split, sft, verify, grpo };
    sets.push({ name: 'SFT', env, episodes: [...sft, ...verify] }, { name: 'GRPO', env, episodes: grpo });
  });
  assertDisjoint(sets);
  return { kind: 'hr1-train-splits/1', envs };
}

