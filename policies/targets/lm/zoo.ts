/**
 * The zoo of learned targets: configs as data, built deterministically by `hr1 zoo build`
 * (behaviour cloning through the torch learner, ONNX export), cached by config hash under
 * `.hr1/zoo/<hash>/` (model.onnx, model.pt, meta.json).
 *
 * `name@tiny` is the same config on a tiny budget (few episodes and steps): what CI builds.
 * `<name>-ft` configs are the base model trained further on fresh data (the co-evolution targets).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import cliProgress from 'cli-progress';
import { Rng } from '../../../cluster/rng.ts';
import { LearnerProcess } from '../../../learner/process.ts';
import { bcRows, collectDecisions, type AlfTeacher, type BcDecision, type LmEnv } from './bc.ts';
import { DEFAULT_MAX_NEW_TOKENS, type ContextBudget } from './context.ts';
import { LmTargetError } from './errors.ts';
import type { HintRates } from './hints.ts';
import { BOS_ID, EOS_ID, LmTokenizer, PAD_ID } from './tokenizer.ts';
import { harvestWords } from './vocab.ts';
import { slotWords } from './slotting.ts';
import { isDecodeGraph } from '../../../learner/onnx-meta.ts';
import { loadZooConfig, ZOO_CONFIG_ENV } from './user-zoo.ts';

/** bumped when training changes what a config builds (so old caches are not reused) */
export const LM_TRAIN_VERSION = 5;
/**
 * Serving version of learned targets: bumped when decoding can change a sampled token (it is
 * part of the episode cache key). 2: the key/value-cache decode graph and the batcher (1 was one
 * full forward per token; the float sums differ in the last bits, so a few tokens can differ).
 */
export const LM_SERVING_VERSION = 2;
/**
 * Decoding version of the DBBench sketch parsers (kind 'sketch'): bumped when the SQL read from a
 * sketch parser's outputs changes. 2: a quoted value is decoded whole. Part of their episode cache
 * key and of their cached zoo-table figures, so figures of an older decoder are not reused.
 */
export const SKETCH_DECODE_VERSION = 2;

/** A sketch parser's decoding tag, `-d2`; '' for other kinds (whose keys stay as they were). */
export function decodeTag(c: { kind?: string }): string {
  return c.kind === 'sketch' ? `-d${SKETCH_DECODE_VERSION}` : '';
}

/** The serving tag of a resolved config in cache keys and figure files: `s2`, `s2-d2` for a sketch parser. */
export function servingTag(c: { kind?: string }): string {
  return `s${LM_SERVING_VERSION}${decodeTag(c)}`;
}

/** decodeTag of a zoo name ('' for a name the zoo does not know: keys of other targets stay as they were) */
export function decodeTagOf(name: string): string {
  try {
    return decodeTag(resolveConfig(name));
  } catch {
    return '';
  }
}
/** meta.json format */
export const LM_META_FORMAT = 'hr1-lm/1';
/** where built models live. @default '.hr1/zoo' under the working directory (HR1_ZOO_DIR overrides) */
export const DEFAULT_ZOO_DIR = '.hr1/zoo';
/** the tiny budget `name@tiny` trains with */
export const TINY_BUDGET = { episodes: 30, steps: 120 } as const;

/** One zoo entry. Everything but `name` and `note` goes into the hash. */
export interface ZooConfig {
  name: string;
  envs: LmEnv[];
  dModel: number;
  nLayers: number;
  nHeads: number;
  dFf: number;
  /** context length (prompt + action tokens) */
  maxLen: number;
  /** expert episodes per env */
  episodes: number;
  /** optimizer steps */
  steps: number;
  /** rows per step. @default 24 */
  batch?: number;
  /** peak learning rate (warm-up, then cosine to a tenth). @default 3e-3 */
  lr?: number;
  /** chance of a random action in the expert episodes. @default 0.15 */
  noise?: number;
  /** chance of each hint segment in a training context (skills, hint turn, injected). @default 0.3 */
  hintRate?: number;
  /** names as slots in the context and actions: WebShop's product ids (slots.ts), DBBench's table and columns (dbbench/slots.ts); `'values'` (DBBench) adds value slots. @default false */
  slots?: boolean | 'values';
  /**
   * who the model clones: 'explorer', each env's honest teacher (ALFWorld's searching explorer,
   * WebShop's shopper), or 'oracle', the env's all-knowing expert (see bc.ts). @default 'explorer'
   */
  teacher?: AlfTeacher;
  seed: number;
  /** sampling temperature of the served model. @default 0.5 */
  temperature?: number;
  /** tokens kept free for the action in each window, and the most a decision decodes. @default 20 */
  maxNewTokens?: number;
  /** WebShop: synthetic training goals added to the 91 (ws-goals.ts). @default 0 */
  synthGoals?: number;
  /** DBBench: the share of synthetic tasks with renamed tables, columns and values (dbbench/synth.ts). @default 0 */
  rename?: number;
  /** DBBench: the synthetic tasks' question templates, 'wide' adding the training split's request styles (dbbench/synth.ts). @default 'base' */
  phrasing?: 'base' | 'wide' | 'mined';
  /** DBBench: 'mention', the synthetic INSERTs name their columns, in the order the request mentions the values (dbbench/synth.ts SynthOptions.insertColumns). @default none (`INSERT INTO t VALUES (…)`) */
  insertColumns?: 'mention';
  /** ALFWorld: the share of teacher episodes recorded with renumbered instances (renumber.ts). @default 0 */
  renumber?: number;
  /** ALFWorld: 'down', the explorer visits a kind's receptacles from the highest number to 1 (explorer.ts SearchOrder). @default 'up' */
  searchOrder?: 'up' | 'down';
  /**
   * With a base: DAgger episodes (bc.ts `studentEpisodes`) added to the teacher's
   * `episodes`: the base model plays training games and the teacher labels every state it
   * reaches, so the variant learns the way back from the base's own mistakes. @default 0
   */
  dagger?: number;
  /**
   * observation masking: observations and hints older than the newest `elide` keep their first
   * 4 tokens (context.ts), so the window keeps the episode's actions. @default 0 (turns dropped whole)
   */
  elide?: number;
  /**
   * ALFWorld: the room listing written compactly and losslessly in the window (`drawer 1-11`;
   * context.ts compactRoom), so the whole room fits a small window. @default false
   */
  compactRoom?: boolean;
  /** WebShop: the shopper's search, 'content' words or a 'span' of the instruction (shopper.ts). @default 'content' */
  query?: 'content' | 'span';
  /** rotary positions (RoPE) instead of learned absolute ones (learner/model.py). @default false */
  rope?: boolean;
  /** token shift: each position also reads the previous token's embedding, so one layer can copy "the token after X" (learner/model.py). @default false */
  tokenShift?: boolean;
  /**
   * train further from this zoo entry (a fine-tuned variant); its size and context are the base's,
   * and so, unless the entry sets them, is what it reads: slots, elide, compactRoom, query and
   * maxNewTokens
   */
  base?: string;
  /**
   * DBBench: 'sketch', a sketch parser (dbbench/sketch.ts: an encoder with column-wise heads and
   * value-span pointers, trained on `episodes` synthetic tasks for `steps` steps of `batch`; size
   * fields as for a decoder, `maxLen` and `maxNewTokens` unused) instead of a decoder cloned from
   * the teacher's episodes. @default the decoder
   */
  kind?: 'sketch';
  note?: string;
}

const size = {
  xs: { dModel: 64, nLayers: 1, nHeads: 2, dFf: 128 },
  s: { dModel: 96, nLayers: 2, nHeads: 4, dFf: 256 },
  m: { dModel: 128, nLayers: 2, nHeads: 4, dFf: 512 },
  l: { dModel: 192, nLayers: 3, nHeads: 6, dFf: 768 },
  /** the DBBench sketch parser's encoder */
  sk: { dModel: 128, nLayers: 3, nHeads: 4, dFf: 256 },
} as const;
const alf: LmEnv[] = ['alfworld'];
const ws: LmEnv[] = ['webshop'];
const db: LmEnv[] = ['dbbench'];

/**
 * The zoo: sizes xs/s/m/l, contexts 192–384, 40–1,000 episodes, 400–1,500 steps, seeds 1–3, a
 * hint-blind, a noise-free and an oracle-taught variant, two WebShop models, three fine-tuned variants.
 */
export const ZOO: readonly ZooConfig[] = Object.freeze([
  { name: 'alf-xs-192-a', envs: alf, ...size.xs, maxLen: 192, episodes: 200, steps: 400, seed: 1 },
  { name: 'alf-xs-192-b', envs: alf, ...size.xs, maxLen: 192, episodes: 200, steps: 400, seed: 2 },
  { name: 'alf-xs-256-a', envs: alf, ...size.xs, maxLen: 256, episodes: 300, steps: 600, seed: 1 },
  { name: 'alf-s-192-a', envs: alf, ...size.s, maxLen: 192, episodes: 300, steps: 600, seed: 1 },
  { name: 'alf-s-256-a', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 1 },
  { name: 'alf-s-256-b', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 2 },
  { name: 'alf-s-256-c', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 3 },
  { name: 'alf-s-256-lo', envs: alf, ...size.s, maxLen: 256, episodes: 40, steps: 400, seed: 1, note: 'little data' },
  { name: 'alf-s-256-hi', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1200, seed: 1, note: 'more data and steps' },
  { name: 'alf-s-384-a', envs: alf, ...size.s, maxLen: 384, episodes: 400, steps: 800, seed: 1 },
  { name: 'alf-m-256-a', envs: alf, ...size.m, maxLen: 256, episodes: 500, steps: 1000, seed: 1 },
  { name: 'alf-m-256-b', envs: alf, ...size.m, maxLen: 256, episodes: 500, steps: 1000, seed: 2 },
  { name: 'alf-m-256-lo', envs: alf, ...size.m, maxLen: 256, episodes: 60, steps: 600, seed: 1, note: 'little data' },
  { name: 'alf-m-256-nohint', envs: alf, ...size.m, maxLen: 256, episodes: 500, steps: 1000, seed: 1, hintRate: 0, note: 'never saw a hint' },
  { name: 'alf-m-256-nonoise', envs: alf, ...size.m, maxLen: 256, episodes: 500, steps: 1000, seed: 1, noise: 0, note: 'teacher paths only' },
  { name: 'alf-m-256-oracle', envs: alf, ...size.m, maxLen: 256, episodes: 500, steps: 1000, seed: 1, teacher: 'oracle', note: 'cloned from the all-knowing oracle' },
  { name: 'alf-m-384-a', envs: alf, ...size.m, maxLen: 384, episodes: 500, steps: 800, seed: 1 },
  { name: 'alf-l-256-a', envs: alf, ...size.l, maxLen: 256, episodes: 600, steps: 1500, lr: 2e-3, seed: 1 },
  { name: 'alf-s-512-a', envs: alf, ...size.s, maxLen: 512, episodes: 400, steps: 800, seed: 1, note: 'a whole teacher episode fits' },
  { name: 'alf-m-512-a', envs: alf, ...size.m, maxLen: 512, episodes: 500, steps: 1000, seed: 1, note: 'a whole teacher episode fits' },
  { name: 'alf-s-256-e', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 1, elide: 2, note: 'observation masking: old observations keep 4 tokens' },
  { name: 'alf-m-384-e', envs: alf, ...size.m, maxLen: 384, episodes: 500, steps: 1000, seed: 1, elide: 2, note: 'observation masking: old observations keep 4 tokens' },
  { name: 'alf-s-256-r', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 1, renumber: 0.7, note: 'renumbered instances in 70 % of its episodes' },
  { name: 'alf-s-256-ec', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 1, elide: 2, compactRoom: true, note: 'masking and the compact room listing (control: alf-s-256-e)' },
  { name: 'alf-s-256-ecr', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 1, elide: 2, compactRoom: true, rope: true, note: 'as alf-s-256-ec with rotary positions' },
  { name: 'alf-s-256-ecrt', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 1, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'as alf-s-256-ecr with token shift' },
  { name: 'alf-s-256-ecrt-b', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 2, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt with seed 2' },
  { name: 'alf-xs-256-ecrt', envs: alf, ...size.xs, maxLen: 256, episodes: 300, steps: 600, seed: 1, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'one layer with token shift' },
  { name: 'alf-m-256-ecrt', envs: alf, ...size.m, maxLen: 256, episodes: 1000, steps: 2400, seed: 1, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'masking, compact room, RoPE, token shift; 2× the data, 2.4× the steps' },
  { name: 'alf-s-384-ecrt', envs: alf, ...size.s, maxLen: 384, episodes: 400, steps: 800, seed: 1, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt with a 384-token window' },
  { name: 'alf-s-256-ecrt-hi', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1600, seed: 1, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt with 2.5× the data and 2× the steps' },
  { name: 'alf-s-256-ecrt-c', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 3, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt with seed 3' },
  { name: 'alf-s-256-ecrt-nohint', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 1, hintRate: 0, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt that never saw a hint' },
  { name: 'alf-s-256-ecrt-xl', envs: alf, ...size.s, maxLen: 256, episodes: 2000, steps: 2000, seed: 1, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt with 5× the data and 2.5× the steps' },
  { name: 'alf-s-256-ecrt-xl-b', envs: alf, ...size.s, maxLen: 256, episodes: 2000, steps: 2000, seed: 2, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt-xl with seed 2' },
  { name: 'alf-s-256-ecrt-xl-c', envs: alf, ...size.s, maxLen: 256, episodes: 2000, steps: 2000, seed: 3, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt-xl with seed 3' },
  { name: 'alf-s-256-ecrt-xl-down', envs: alf, ...size.s, maxLen: 256, episodes: 2000, steps: 2000, seed: 1, elide: 2, compactRoom: true, rope: true, tokenShift: true, searchOrder: 'down', note: 'alf-s-256-ecrt-xl whose explorer visits a kind from its highest number down to 1 (drawer 3, 2, 1: the last is always 1)' },
  { name: 'alf-s-256-ecrt-xl-down-b', envs: alf, ...size.s, maxLen: 256, episodes: 2000, steps: 2000, seed: 2, elide: 2, compactRoom: true, rope: true, tokenShift: true, searchOrder: 'down', note: 'alf-s-256-ecrt-xl-down with seed 2 (control: alf-s-256-ecrt-xl-b)' },
  { name: 'alf-s-256-ecrt-xl-nohint', envs: alf, ...size.s, maxLen: 256, episodes: 2000, steps: 2000, seed: 1, hintRate: 0, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt-xl that never saw a hint (control: alf-s-256-ecrt-xl)' },
  { name: 'alf-s-256-ecrt-xl-r', envs: alf, ...size.s, maxLen: 256, episodes: 2000, steps: 2000, seed: 1, renumber: 0.7, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt-xl with renumbered instances in 70 % of its episodes (control: alf-s-256-ecrt-xl)' },
  { name: 'alf-s-256-ecrt-xl-r-b', envs: alf, ...size.s, maxLen: 256, episodes: 2000, steps: 2000, seed: 2, renumber: 0.7, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt-xl-r with seed 2 (control: alf-s-256-ecrt-xl-b)' },
  { name: 'alf-l-256-ecrt-xl', envs: alf, ...size.l, maxLen: 256, episodes: 2000, steps: 2000, seed: 1, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt-xl at l size (3 layers of 192)' },
  { name: 'alf-s-256-ecrt-xxl', envs: alf, ...size.s, maxLen: 256, episodes: 4000, steps: 3000, seed: 1, elide: 2, compactRoom: true, rope: true, tokenShift: true, note: 'alf-s-256-ecrt-xl with 2× the data and 1.5× the steps' },
  { name: 'alf-m-256-r', envs: alf, ...size.m, maxLen: 256, episodes: 500, steps: 1000, seed: 1, renumber: 0.7, note: 'renumbered instances in 70 % of its episodes' },
  { name: 'ws-s-256-a', envs: ws, ...size.s, maxLen: 256, episodes: 1500, steps: 800, seed: 1, slots: true, maxNewTokens: 32, synthGoals: 2000 },
  { name: 'ws-s-256-b', envs: ws, ...size.s, maxLen: 256, episodes: 1500, steps: 800, seed: 2, slots: true, maxNewTokens: 32, synthGoals: 2000 },
  { name: 'ws-s-256-real', envs: ws, ...size.s, maxLen: 256, episodes: 400, steps: 800, seed: 1, slots: true, maxNewTokens: 32, note: 'the 91 training goals only (memorises their searches)' },
  { name: 'ws-s-256-srt', envs: ws, ...size.s, maxLen: 256, episodes: 1500, steps: 800, seed: 1, slots: true, maxNewTokens: 32, synthGoals: 2000, query: 'span', rope: true, tokenShift: true, note: 'span queries, RoPE, token shift (control: ws-s-256-a)' },
  { name: 'ws-s-256-srt-b', envs: ws, ...size.s, maxLen: 256, episodes: 1500, steps: 800, seed: 2, slots: true, maxNewTokens: 32, synthGoals: 2000, query: 'span', rope: true, tokenShift: true, note: 'ws-s-256-srt with seed 2' },
  { name: 'ws-s-256-srt-hi', envs: ws, ...size.s, maxLen: 256, episodes: 1500, steps: 1600, seed: 1, slots: true, maxNewTokens: 32, synthGoals: 2000, query: 'span', rope: true, tokenShift: true, note: 'ws-s-256-srt with 2× the steps' },
  { name: 'ws-s-256-srt-hi-b', envs: ws, ...size.s, maxLen: 256, episodes: 1500, steps: 1600, seed: 2, slots: true, maxNewTokens: 32, synthGoals: 2000, query: 'span', rope: true, tokenShift: true, note: 'ws-s-256-srt-hi with seed 2' },
  { name: 'ws-s-256-srt-hi-c', envs: ws, ...size.s, maxLen: 256, episodes: 1500, steps: 1600, seed: 3, slots: true, maxNewTokens: 32, synthGoals: 2000, query: 'span', rope: true, tokenShift: true, note: 'ws-s-256-srt-hi with seed 3' },
  { name: 'ws-s-256-srt-da', envs: ws, ...size.s, maxLen: 256, episodes: 500, steps: 600, seed: 11, base: 'ws-s-256-srt', dagger: 1000, slots: true, maxNewTokens: 32, synthGoals: 2000, query: 'span', note: 'ws-s-256-srt trained further on 1,000 DAgger episodes and 500 teacher episodes' },
  { name: 'ws-m-384-a', envs: ws, ...size.m, maxLen: 384, episodes: 1500, steps: 1000, seed: 1, slots: true, maxNewTokens: 32, synthGoals: 2000 },
  { name: 'ws-m-384-lo', envs: ws, ...size.m, maxLen: 384, episodes: 60, steps: 400, seed: 1, slots: true, maxNewTokens: 32, note: 'little data' },
  { name: 'ws-m-384-oracle', envs: ws, ...size.m, maxLen: 384, episodes: 1500, steps: 1000, seed: 1, slots: true, maxNewTokens: 32, synthGoals: 2000, teacher: 'oracle', note: "cloned from WebShop's expert, which knows the target product" },
  { name: 'alf-xs-192-a-ft', envs: alf, ...size.xs, maxLen: 192, episodes: 200, steps: 200, seed: 11, base: 'alf-xs-192-a', note: 'alf-xs-192-a trained further' },
  { name: 'alf-s-256-a-ft', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 400, seed: 11, base: 'alf-s-256-a', note: 'alf-s-256-a trained further' },
  { name: 'alf-s-256-ecrt-da', envs: alf, ...size.s, maxLen: 256, episodes: 200, steps: 600, seed: 11, base: 'alf-s-256-ecrt', dagger: 400, elide: 0, compactRoom: false, note: 'alf-s-256-ecrt trained further on 400 DAgger episodes (its own states, the teacher\'s labels) and 200 teacher episodes; as built, without its base\'s masking and compact room (an entry of its time did not inherit them)' },
  { name: 'alf-m-256-ecrt-da', envs: alf, ...size.m, maxLen: 256, episodes: 300, steps: 1000, seed: 11, base: 'alf-m-256-ecrt', dagger: 600, elide: 0, compactRoom: false, note: 'alf-m-256-ecrt trained further on 600 DAgger episodes and 300 teacher episodes' },
  { name: 'alf-s-256-ecrt-dal', envs: alf, ...size.s, maxLen: 256, episodes: 400, steps: 600, lr: 1e-3, seed: 11, base: 'alf-s-256-ecrt', dagger: 400, elide: 0, compactRoom: false, note: 'as alf-s-256-ecrt-da (without its base\'s masking and compact room) with a third of the learning rate and as many teacher as DAgger episodes' },
  { name: 'alf-s-256-ecrt-xl-da', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1000, lr: 1e-3, seed: 11, base: 'alf-s-256-ecrt-xl', dagger: 1000, note: 'alf-s-256-ecrt-xl trained further on 1,000 DAgger episodes and 1,000 teacher episodes, reading its base\'s masked, compact windows' },
  { name: 'alf-s-256-ecrt-xl-da2', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1000, lr: 1e-3, seed: 12, base: 'alf-s-256-ecrt-xl-da', dagger: 1000, note: 'a second DAgger round: alf-s-256-ecrt-xl-da trained further on 1,000 episodes of its own (the teacher\'s labels) and 1,000 teacher episodes' },
  { name: 'alf-s-256-ecrt-xl-da3', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1000, lr: 1e-3, seed: 13, base: 'alf-s-256-ecrt-xl-da2', dagger: 1000, note: 'a third DAgger round: alf-s-256-ecrt-xl-da2 trained further on 1,000 episodes of its own and 1,000 teacher episodes' },
  { name: 'alf-s-256-ecrt-xl-da4', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1000, lr: 1e-3, seed: 14, base: 'alf-s-256-ecrt-xl-da3', dagger: 1000, note: 'a fourth DAgger round: alf-s-256-ecrt-xl-da3 trained further on 1,000 episodes of its own and 1,000 teacher episodes' },
  // the same three rounds drawn again (seeds 21–23): does the climb of -da…-da3 hold for another draw of the rounds' episodes?
  { name: 'alf-s-256-ecrt-xl-da-s2', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1000, lr: 1e-3, seed: 21, base: 'alf-s-256-ecrt-xl', dagger: 1000, note: 'alf-s-256-ecrt-xl-da drawn again (seed 21): a second sequence of DAgger rounds' },
  { name: 'alf-s-256-ecrt-xl-da2-s2', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1000, lr: 1e-3, seed: 22, base: 'alf-s-256-ecrt-xl-da-s2', dagger: 1000, note: 'the second round of the second DAgger sequence (seed 22)' },
  { name: 'alf-s-256-ecrt-xl-da3-s2', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1000, lr: 1e-3, seed: 23, base: 'alf-s-256-ecrt-xl-da2-s2', dagger: 1000, note: 'the third round of the second DAgger sequence (seed 23)' },
  { name: 'alf-s-256-ecrt-xl-nohint-da', envs: alf, ...size.s, maxLen: 256, episodes: 1000, steps: 1000, lr: 1e-3, seed: 11, hintRate: 0, base: 'alf-s-256-ecrt-xl-nohint', dagger: 1000, note: 'alf-s-256-ecrt-xl-nohint trained further on 1,000 DAgger episodes and 1,000 teacher episodes (no hints), reading its base\'s masked, compact windows' },
  { name: 'alf-m-256-a-ft', envs: alf, ...size.m, maxLen: 256, episodes: 500, steps: 500, seed: 11, base: 'alf-m-256-a', note: 'alf-m-256-a trained further' },
  // DBBench: synthetic tasks over the training split's tables (dbbench/synth.ts), SQL actions need more new tokens
  { name: 'db-xs-384-a', envs: db, ...size.xs, maxLen: 384, episodes: 3000, steps: 600, seed: 1, maxNewTokens: 96, rename: 0.7 },
  { name: 'db-s-384-a', envs: db, ...size.s, maxLen: 384, episodes: 3000, steps: 800, seed: 1, maxNewTokens: 96, rename: 0.7 },
  { name: 'db-s-384-b', envs: db, ...size.s, maxLen: 384, episodes: 3000, steps: 800, seed: 2, maxNewTokens: 96, rename: 0.7 },
  { name: 'db-s-384-real', envs: db, ...size.s, maxLen: 384, episodes: 3000, steps: 800, seed: 1, maxNewTokens: 96, note: 'the training tables as they are (memorises their names)' },
  { name: 'db-s-384-srt', envs: db, ...size.s, maxLen: 384, episodes: 3000, steps: 1600, seed: 1, maxNewTokens: 96, rename: 0.7, slots: true, rope: true, tokenShift: true, note: 'name slots, RoPE, token shift, 2× the steps (control: db-s-384-a)' },
  { name: 'db-s-384-vrt', envs: db, ...size.s, maxLen: 384, episodes: 3000, steps: 1600, seed: 1, maxNewTokens: 96, rename: 0.7, slots: 'values', rope: true, tokenShift: true, note: 'name and value slots, RoPE, token shift (control: db-s-384-srt)' },
  { name: 'db-s-384-vrt-b', envs: db, ...size.s, maxLen: 384, episodes: 3000, steps: 1600, seed: 2, maxNewTokens: 96, rename: 0.7, slots: 'values', rope: true, tokenShift: true, note: 'db-s-384-vrt with seed 2' },
  { name: 'db-s-384-vrt-da', envs: db, ...size.s, maxLen: 384, episodes: 1000, steps: 800, seed: 11, base: 'db-s-384-vrt', dagger: 1500, maxNewTokens: 96, rename: 0.7, slots: 'values', note: 'db-s-384-vrt trained further on 1,500 DAgger episodes (synthetic tasks) and 1,000 teacher episodes' },
  { name: 'db-s-384-vwrt', envs: db, ...size.s, maxLen: 384, episodes: 6000, steps: 1600, seed: 1, maxNewTokens: 96, rename: 0.7, phrasing: 'wide', slots: 'values', rope: true, tokenShift: true, note: 'db-s-384-vrt with the wide phrasings and 2× the episodes' },
  { name: 'db-s-384-vwrt-b', envs: db, ...size.s, maxLen: 384, episodes: 6000, steps: 1600, seed: 2, maxNewTokens: 96, rename: 0.7, phrasing: 'wide', slots: 'values', rope: true, tokenShift: true, note: 'db-s-384-vwrt with seed 2' },
  { name: 'db-s-384-vwrt-c', envs: db, ...size.s, maxLen: 384, episodes: 6000, steps: 1600, seed: 3, maxNewTokens: 96, rename: 0.7, phrasing: 'wide', slots: 'values', rope: true, tokenShift: true, note: 'db-s-384-vwrt with seed 3' },
  { name: 'db-m-384-vwrt', envs: db, ...size.m, maxLen: 384, episodes: 6000, steps: 2000, seed: 1, maxNewTokens: 96, rename: 0.7, phrasing: 'wide', slots: 'values', rope: true, tokenShift: true, note: 'db-s-384-vwrt at m size with 2,000 steps' },
  { name: 'db-s-384-vwrt-x', envs: db, ...size.s, maxLen: 384, episodes: 24000, steps: 2400, seed: 1, maxNewTokens: 96, rename: 0.7, phrasing: 'wide', slots: 'values', rope: true, tokenShift: true, note: 'db-s-384-vwrt with 4× the episodes (each decision seen about once: held-out synthetic success 5.8 → 22.5 %, `hr1 zoo probe`) and 1.5× the steps' },
  { name: 'db-s-384-vwrt-x-b', envs: db, ...size.s, maxLen: 384, episodes: 24000, steps: 2400, seed: 2, maxNewTokens: 96, rename: 0.7, phrasing: 'wide', slots: 'values', rope: true, tokenShift: true, note: 'db-s-384-vwrt-x with seed 2' },
  { name: 'db-s-384-vwrtm-x', envs: db, ...size.s, maxLen: 384, episodes: 24000, steps: 2400, seed: 1, maxNewTokens: 112, rename: 0.7, phrasing: 'wide', insertColumns: 'mention', slots: 'values', rope: true, tokenShift: true, note: "db-s-384-vwrt-x whose synthetic INSERTs name their columns in the order the request mentions the values (16 more action tokens for the longer statements)" },
  { name: 'db-s-384-vwrtm-x-b', envs: db, ...size.s, maxLen: 384, episodes: 24000, steps: 2400, seed: 2, maxNewTokens: 112, rename: 0.7, phrasing: 'wide', insertColumns: 'mention', slots: 'values', rope: true, tokenShift: true, note: 'db-s-384-vwrtm-x with seed 2' },
  { name: 'db-m-384-vwrt-x', envs: db, ...size.m, maxLen: 384, episodes: 24000, steps: 2000, seed: 1, maxNewTokens: 96, rename: 0.7, phrasing: 'wide', slots: 'values', rope: true, tokenShift: true, note: 'db-s-384-vwrt-x at m size with 2,000 steps (probe 11.7 %, dev 0 %: not vendored)' },
  // DBBench sketch parsers (dbbench/sketch.ts): the same synthetic tasks, learned as a sketch (kind, columns, value spans), not cloned token by token
  { name: 'db-sketch-a', envs: db, ...size.sk, maxLen: 256, episodes: 40000, steps: 6250, batch: 32, lr: 1e-3, hintRate: 0.2, seed: 1, rename: 0.7, phrasing: 'mined', kind: 'sketch', note: 'a sketch parser (encoder, column heads, value-span pointers) on synthetic tasks with mined write and read phrasings, each seen 5 times' },
  { name: 'db-sketch-b', envs: db, ...size.sk, maxLen: 256, episodes: 40000, steps: 6250, batch: 32, lr: 1e-3, hintRate: 0.2, seed: 2, rename: 0.7, phrasing: 'mined', kind: 'sketch', note: 'db-sketch-a with seed 2' },
  { name: 'db-sketch-c', envs: db, ...size.sk, maxLen: 256, episodes: 40000, steps: 6250, batch: 32, lr: 1e-3, hintRate: 0.2, seed: 3, rename: 0.7, phrasing: 'mined', kind: 'sketch', note: 'db-sketch-a with seed 3' },
  { name: 'db-sketch-x', envs: db, ...size.sk, maxLen: 256, episodes: 80000, steps: 12500, batch: 32, lr: 1e-3, hintRate: 0.2, seed: 1, rename: 0.7, phrasing: 'mined', kind: 'sketch', note: 'db-sketch-a with 2× the tasks and 2× the steps' },
  { name: 'db-sketch-x-b', envs: db, ...size.sk, maxLen: 256, episodes: 80000, steps: 12500, batch: 32, lr: 1e-3, hintRate: 0.2, seed: 2, rename: 0.7, phrasing: 'mined', kind: 'sketch', note: 'db-sketch-x with seed 2: the seed spread at the larger budget' },
  { name: 'db-sketch-x-c', envs: db, ...size.sk, maxLen: 256, episodes: 80000, steps: 12500, batch: 32, lr: 1e-3, hintRate: 0.2, seed: 3, rename: 0.7, phrasing: 'mined', kind: 'sketch', note: 'db-sketch-x with seed 3: three seeds at each of two budgets (a/b/c, x/x-b/x-c)' },
  { name: 'db-sketch-xx', envs: db, ...size.sk, maxLen: 256, episodes: 120000, steps: 18750, batch: 32, lr: 1e-3, hintRate: 0.2, seed: 1, rename: 0.7, phrasing: 'mined', kind: 'sketch', note: 'db-sketch-a with 3× the tasks and 3× the steps: the third point of the budget curve at seed 1 (a, x, xx)' },
  { name: 'db-sketch-b-lr', envs: db, ...size.sk, maxLen: 256, episodes: 40000, steps: 6250, batch: 32, lr: 5e-4, hintRate: 0.2, seed: 2, rename: 0.7, phrasing: 'mined', kind: 'sketch', note: 'db-sketch-b at half the learning rate (its loss ended at 1.71 against seed 1\'s 0.84)' },
  { name: 'db-s-384-lo', envs: db, ...size.s, maxLen: 384, episodes: 200, steps: 800, seed: 1, maxNewTokens: 96, rename: 0.7, note: 'little data' },
  { name: 'db-m-384-a', envs: db, ...size.m, maxLen: 384, episodes: 3000, steps: 1000, seed: 1, maxNewTokens: 96, rename: 0.7 },
] satisfies ZooConfig[]);

let userZoo: { path: string; mtimeMs: number; entries: readonly ZooConfig[] } | null = null;

/**
 * The zoo a name resolves in: the built-in ZOO, and the entries of the file HR1_ZOO_CONFIG names
 * (a user's own targets, policies/targets/lm/user-zoo.ts), read again when the file changes.
 */
export function knownZoo(): readonly ZooConfig[] {
  const path = process.env[ZOO_CONFIG_ENV];
  if (!path) return ZOO;
  const full = resolve(path);
  let mtimeMs = -1;
  try {
    mtimeMs = statSync(full).mtimeMs;
  } catch {
    // loadZooConfig names the missing file
  }
  if (!userZoo || userZoo.path !== full || userZoo.mtimeMs !== mtimeMs) userZoo = { path: full, mtimeMs, entries: Object.freeze([...ZOO, ...loadZooConfig(full, ZOO)]) };
  return userZoo.entries;
}

/** A config with defaults filled, the tiny budget applied, and its hash. */
export interface ResolvedConfig extends Required<Omit<ZooConfig, 'base' | 'note' | 'kind' | 'slots' | 'elide' | 'synthGoals' | 'rename' | 'renumber' | 'compactRoom' | 'rope' | 'query' | 'tokenShift' | 'dagger' | 'phrasing' | 'insertColumns' | 'searchOrder'>> {
  /** set only when on (as slots) */
  dagger?: number;
  /** set only for a sketch parser (as slots) */
  kind?: 'sketch';
  /** set only when on (as slots) */
  renumber?: number;
  /** set only when on (as slots) */
  rename?: number;
  /** set only when on (as slots) */
  synthGoals?: number;
  /** set only when on, so the hashes of configs without slots are what they were */
  slots?: true | 'values';
  /** set only when on (as slots) */
  elide?: number;
  /** set only when on (as slots) */
  compactRoom?: true;
  /** set only when 'span' (as slots) */
  query?: 'span';
  /** set only when 'wide' or 'mined' (as slots) */
  phrasing?: 'wide' | 'mined';
  /** set only when on (as slots) */
  insertColumns?: 'mention';
  /** set only when 'down' (as slots) */
  searchOrder?: 'down';
  /** set only when on (as slots); a variant keeps its base's */
  rope?: true;
  /** set only when on (as slots); a variant keeps its base's */
  tokenShift?: true;
  /** the name as asked for (with `@tiny` when tiny) */
  id: string;
  tiny: boolean;
  base: ResolvedConfig | null;
  hash: string;
  note: string;
}

/** Resolve `name` or `name@tiny` against the zoo. Throws LM_UNKNOWN naming the zoo's entries. */
export function resolveConfig(id: string, zoo: readonly ZooConfig[] = knownZoo()): ResolvedConfig {
  const tiny = id.endsWith('@tiny');
  const name = tiny ? id.slice(0, -5) : id;
  const c = zoo.find((z) => z.name === name);
  if (!c) throw new LmTargetError('LM_UNKNOWN', `lm/${id} is not in the zoo; known: ${zoo.map((z) => z.name).join(', ')} (add @tiny for the tiny build)`, { data: { name: id } });
  const base = c.base ? resolveConfig(tiny ? `${c.base}@tiny` : c.base, zoo) : null;
  const r = {
    envs: [...c.envs].sort(),
    dModel: base?.dModel ?? c.dModel,
    nLayers: base?.nLayers ?? c.nLayers,
    nHeads: base?.nHeads ?? c.nHeads,
    dFf: base?.dFf ?? c.dFf,
    maxLen: base?.maxLen ?? c.maxLen,
    episodes: tiny ? Math.min(c.episodes, TINY_BUDGET.episodes) : c.episodes,
    steps: tiny ? Math.min(c.steps, TINY_BUDGET.steps) : c.steps,
    batch: c.batch ?? 24,
    lr: c.lr ?? 3e-3,
    noise: c.noise ?? 0.15,
    hintRate: c.hintRate ?? 0.3,
    teacher: c.teacher ?? 'explorer',
    // what the model reads (slots, masking, the room's form, queries) is the base's unless the entry says otherwise
    ...((c.slots ?? base?.slots) ? { slots: (c.slots ?? base?.slots) === 'values' ? ('values' as const) : (true as const) } : {}),
    ...((c.elide ?? base?.elide) ? { elide: (c.elide ?? base?.elide)! } : {}),
    ...((c.compactRoom ?? base?.compactRoom) ? { compactRoom: true as const } : {}),
    ...((c.query ?? base?.query) === 'span' ? { query: 'span' as const } : {}),
    ...(c.phrasing === 'wide' || c.phrasing === 'mined' ? { phrasing: c.phrasing } : {}),
    ...(c.insertColumns === 'mention' ? { insertColumns: 'mention' as const } : {}),
    ...(c.searchOrder === 'down' ? { searchOrder: 'down' as const } : {}),
    ...(c.kind === 'sketch' ? { kind: 'sketch' as const } : {}),
    ...((base ? base.rope : c.rope) ? { rope: true as const } : {}),
    ...((base ? base.tokenShift : c.tokenShift) ? { tokenShift: true as const } : {}),
    ...(c.synthGoals ? { synthGoals: c.synthGoals } : {}),
    ...(c.rename ? { rename: c.rename } : {}),
    ...(c.renumber ? { renumber: c.renumber } : {}),
    ...(c.dagger && base ? { dagger: tiny ? Math.min(c.dagger, TINY_BUDGET.episodes) : c.dagger } : {}),
    seed: c.seed,
    temperature: c.temperature ?? 0.5,
    maxNewTokens: c.maxNewTokens ?? base?.maxNewTokens ?? DEFAULT_MAX_NEW_TOKENS,
  };
  const hash = createHash('sha256')
    .update(JSON.stringify({ v: LM_TRAIN_VERSION, ...r, base: base?.hash ?? null }))
    .digest('hex')
    .slice(0, 16);
  return { ...r, name, id, tiny, base, hash, note: c.note ?? '' };
}

/** The context budget a config's windows are built with (training and serving alike). */
export function contextBudget(c: Pick<ResolvedConfig, 'maxLen' | 'maxNewTokens' | 'elide' | 'compactRoom'>): ContextBudget {
  return { maxLen: c.maxLen, maxNewTokens: c.maxNewTokens, ...(c.elide ? { elide: c.elide } : {}), ...(c.compactRoom ? { compactRoom: true } : {}) };
}

/** What meta.json holds. */
export interface LmMeta {
  format: typeof LM_META_FORMAT;
  id: string;
  hash: string;
  config: Omit<ResolvedConfig, 'base'> & { base: string | null };
  words: string[];
  vocabSize: number;
  maxLen: number;
  maxNewTokens: number;
  eosId: number;
  params: number;
  rows: number;
  decisions: number;
  /** mean loss of the first and the last tenth of the steps */
  lossFirst: number;
  lossLast: number;
  ms: { data: number; train: number; export: number; total: number };
  torch: string;
  /** OpenBLAS's thread count in the build's learner (it decides how products are split, so the bits); absent in builds before it was pinned, which ran one per core (2 on the machines that built the zoo) */
  blasThreads?: number;
}

/** The zoo folder: `dir`, else HR1_ZOO_DIR, else `.hr1/zoo` under the working directory. */
export function zooDir(dir?: string): string {
  return resolve(dir ?? process.env['HR1_ZOO_DIR'] ?? DEFAULT_ZOO_DIR);
}

/** The folder of a built config (it may not exist). */
export function modelDir(c: ResolvedConfig, dir?: string): string {
  return join(zooDir(dir), c.hash);
}

/**
 * Whether the build of `c` in the zoo folder is a decoder exported before the decode graph (so it
 * must be exported again from its checkpoint). A sketch parser has no decode graph to be older than.
 */
export function staleBuild(c: ResolvedConfig, dir?: string): boolean {
  const onnx = join(modelDir(c, dir), 'model.onnx');
  return c.kind !== 'sketch' && existsSync(onnx) && !isDecodeGraph(readFileSync(onnx));
}

/** meta.json of a built config, or null. */
export function readMeta(c: ResolvedConfig, dir?: string): LmMeta | null {
  const p = join(modelDir(c, dir), 'meta.json');
  if (!existsSync(p)) return null;
  return JSON.parse(readFileSync(p, 'utf8')) as LmMeta;
}

export interface BuildOptions {
  /** zoo names (`name` or `name@tiny`); default: every entry */
  only?: readonly string[];
  /** build the tiny variants (`name@tiny`) of the chosen entries */
  tiny?: boolean;
  /** zoo folder (see {@link zooDir}) */
  dir?: string;
  /** one line per event (start, done, cached) */
  log?: (line: string) => void;
  /** a progress bar on stderr over all steps. @default false */
  progress?: boolean;
  /** rebuild even when cached */
  force?: boolean;
  /** builds at once, each its own torch process on one thread. @default 1 */
  jobs?: number;
  /** the learner's python (tests) */
  python?: string;
  /**
   * OpenBLAS threads in each build's learner (`OPENBLAS_NUM_THREADS`); they split the matrix
   * products, so they decide the weights' bits. @default the learner's: `HR1_TORCH_THREADS` or 1
   * (`hr1 zoo verify` rebuilds a model vendored before the pin with 2, what built it)
   */
  blasThreads?: number;
  /** the config table. @default knownZoo(): ZOO and the entries of HR1_ZOO_CONFIG */
  zoo?: readonly ZooConfig[];
}

export interface BuildResult {
  id: string;
  hash: string;
  dir: string;
  cached: boolean;
  params: number;
  lossFirst: number;
  lossLast: number;
  ms: number;
}

function lrAt(c: ResolvedConfig, step: number): number {
  const warm = Math.max(1, Math.floor(c.steps * 0.05));
  if (step < warm) return (c.lr * (step + 1)) / warm;
  const t = (step - warm) / Math.max(1, c.steps - warm);
  return c.lr * (0.1 + 0.45 * (1 + Math.cos(Math.PI * t)));
}

/** A build's learner: its python, and OpenBLAS's thread count when the build names one. */
function learnerOptions(o: BuildOptions): { python?: string; env?: Record<string, string> } {
  return { ...(o.python ? { python: o.python } : {}), ...(o.blasThreads !== undefined ? { env: { OPENBLAS_NUM_THREADS: String(o.blasThreads) } } : {}) };
}

/** Export a built model's decode graph again from its checkpoint (a build from before the cache). */
async function reexport(dir: string, o: BuildOptions): Promise<void> {
  const lp = await LearnerProcess.start(learnerOptions(o));
  try {
    await lp.load({ path: join(dir, 'model.pt'), device: 'cpu' });
    const tmp = join(dir, 'model.onnx.new');
    await lp.export({ path: tmp });
    renameSync(tmp, join(dir, 'model.onnx'));
  } finally {
    await lp.close();
  }
}

/** Build a sketch parser (dbbench/sketch-build.ts), or find it cached. */
async function buildSketchOne(c: ResolvedConfig, o: BuildOptions, tick: (n: number) => void): Promise<BuildResult> {
  const dir = modelDir(c, o.dir);
  const cached = o.force ? null : readMeta(c, o.dir);
  if (cached && existsSync(join(dir, 'model.onnx'))) {
    tick(c.steps);
    o.log?.(`lm/${c.id}: cached (${dir})`);
    return { id: c.id, hash: c.hash, dir, cached: true, params: cached.params, lossFirst: cached.lossFirst, lossLast: cached.lossLast, ms: 0 };
  }
  const tmp = join(zooDir(o.dir), `${c.hash}.tmp`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    const { buildSketch } = await import('./dbbench/sketch-build.ts');
    const meta = await buildSketch(c, tmp, { ...(o.python ? { python: o.python } : {}), ...(o.blasThreads !== undefined ? { blasThreads: o.blasThreads } : {}), tick, ...(o.log ? { log: o.log } : {}) });
    writeFileSync(join(tmp, 'meta.json'), `${JSON.stringify(meta, null, 1)}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    o.log?.(`lm/${c.id}: built in ${(meta.ms.total / 1000).toFixed(1)} s (sketch parser, ${meta.params} params, loss ${meta.lossFirst.toFixed(3)} → ${meta.lossLast.toFixed(3)}) → ${dir}`);
    return { id: c.id, hash: c.hash, dir, cached: false, params: meta.params, lossFirst: meta.lossFirst, lossLast: meta.lossLast, ms: meta.ms.total };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Build one resolved config (its base first when it has one). */
async function buildOne(c: ResolvedConfig, o: BuildOptions, tick: (n: number) => void): Promise<BuildResult> {
  if (c.kind === 'sketch') return buildSketchOne(c, o, tick);
  const root = zooDir(o.dir);
  const dir = modelDir(c, o.dir);
  const cachedMeta = o.force ? null : readMeta(c, o.dir);
  if (cachedMeta) {
    const onnx = join(dir, 'model.onnx');
    const current = existsSync(onnx) && isDecodeGraph(readFileSync(onnx));
    if (current || existsSync(join(dir, 'model.pt'))) {
      tick(c.steps);
      if (current) o.log?.(`lm/${c.id}: cached (${dir})`);
      else {
        // built before the decode graph: the same weights, exported again from the checkpoint
        await reexport(dir, o);
        o.log?.(`lm/${c.id}: cached; re-exported its decode graph (serving version ${LM_SERVING_VERSION}) from model.pt (${dir})`);
      }
      return { id: c.id, hash: c.hash, dir, cached: true, params: cachedMeta.params, lossFirst: cachedMeta.lossFirst, lossLast: cachedMeta.lossLast, ms: 0 };
    }
    o.log?.(`lm/${c.id}: its model is missing or older than the decode graph and it has no checkpoint to export from; building it again`);
  }
  const baseMeta = c.base ? readMeta(c.base, o.dir) : null;
  if (c.base && !baseMeta) throw new LmTargetError('LM_NOT_BUILT', `lm/${c.id} trains further from lm/${c.base.id}, which is not built; build it first`, { data: { base: c.base.id } });
  const t0 = performance.now();
  const words = baseMeta ? baseMeta.words : c.slots ? [...(await harvestWords(c.envs)), ...slotWords(c.envs, c.slots)] : await harvestWords(c.envs);
  const tok = new LmTokenizer(words);
  const decisions: BcDecision[] = [];
  // DAgger: the base model plays, the teacher labels (served from the base's build)
  const student = c.dagger && c.base ? await (await import('./model.ts')).lmModel(c.base.id, { ...(o.dir ? { dir: o.dir } : {}), ...(o.zoo ? { zoo: o.zoo } : {}) }) : null;
  try {
    for (const env of c.envs) decisions.push(...(await collectDecisions({ env, episodes: c.episodes, seed: c.seed, noise: c.noise, teacher: c.teacher, ...(c.synthGoals ? { synthGoals: c.synthGoals } : {}), ...(c.rename ? { rename: c.rename } : {}), ...(c.renumber ? { renumber: c.renumber } : {}), ...(c.query ? { query: c.query } : {}), ...(c.phrasing ? { phrasing: c.phrasing } : {}), ...(c.insertColumns ? { insertColumns: c.insertColumns } : {}), ...(c.searchOrder ? { searchOrder: c.searchOrder } : {}), ...(student ? { student, studentEpisodes: c.dagger } : {}) })));
  } finally {
    await student?.release();
  }
  const rates: HintRates = { skills: c.hintRate, hint: c.hintRate, injected: c.hintRate * 0.5 };
  const rows = bcRows(decisions, tok, contextBudget(c), rates, c.seed, { slots: c.slots ?? false });
  const t1 = performance.now();
  o.log?.(`lm/${c.id}: ${decisions.length} decisions → ${rows.length} rows, vocab ${tok.size}; training ${c.steps} steps`);
  const tmp = join(root, `${c.hash}.tmp`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const lp = await LearnerProcess.start(learnerOptions(o));
  try {
    let info;
    if (c.base) info = await lp.load({ path: join(modelDir(c.base, o.dir), 'model.pt'), device: 'cpu' });
    else
      info = await lp.init({
        config: { vocabSize: tok.size, dModel: c.dModel, nLayers: c.nLayers, nHeads: c.nHeads, dFf: c.dFf, maxLen: c.maxLen, padId: PAD_ID, bosId: BOS_ID, eosId: EOS_ID, ...(c.rope ? { rope: true } : {}), ...(c.tokenShift ? { tokenShift: true } : {}) },
        optim: { lr: c.lr, weightDecay: 0.01 },
        seed: c.seed,
        device: 'cpu',
      });
    const rng = new Rng(`lm-train:${c.seed}`);
    let order: number[] = [];
    const losses: number[] = [];
    for (let s = 0; s < c.steps; s++) {
      const idx: number[] = [];
      while (idx.length < c.batch) {
        if (order.length === 0) order = rng.shuffle(rows.map((_, i) => i));
        idx.push(order.pop()!);
      }
      const r = await lp.sftStep({ prompts: idx.map((i) => rows[i]!.prompt), completions: idx.map((i) => rows[i]!.completion), promptTargets: idx.map((i) => rows[i]!.targets), lr: lrAt(c, s) });
      losses.push(r.loss);
      tick(1);
    }
    const t2 = performance.now();
    await lp.export({ path: join(tmp, 'model.onnx') });
    await lp.save({ path: join(tmp, 'model.pt') });
    const t3 = performance.now();
    const tenth = Math.max(1, Math.floor(losses.length / 10));
    const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    const { base, ...rest } = c;
    const meta: LmMeta = {
      format: LM_META_FORMAT,
      id: c.id,
      hash: c.hash,
      config: { ...rest, base: base?.id ?? null },
      words: [...words],
      vocabSize: tok.size,
      maxLen: c.maxLen,
      maxNewTokens: c.maxNewTokens,
      eosId: EOS_ID,
      params: info.params,
      rows: rows.length,
      decisions: decisions.length,
      lossFirst: mean(losses.slice(0, tenth)),
      lossLast: mean(losses.slice(-tenth)),
      ms: { data: Math.round(t1 - t0), train: Math.round(t2 - t1), export: Math.round(t3 - t2), total: Math.round(t3 - t0) },
      torch: info.torch,
      ...(info.blasThreads !== null ? { blasThreads: info.blasThreads } : {}),
    };
    writeFileSync(join(tmp, 'meta.json'), `${JSON.stringify(meta, null, 1)}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    o.log?.(`lm/${c.id}: built in ${(meta.ms.total / 1000).toFixed(1)} s (${meta.params} params, loss ${meta.lossFirst.toFixed(3)} → ${meta.lossLast.toFixed(3)}) → ${dir}`);
    return { id: c.id, hash: c.hash, dir, cached: false, params: meta.params, lossFirst: meta.lossFirst, lossLast: meta.lossLast, ms: meta.ms.total };
  } finally {
    await lp.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Build zoo entries (bases before their fine-tuned variants), skipping what is cached.
 *
 * @example
 * await buildZoo({ only: ['alf-xs-192-a'], tiny: true, log: console.log });
 */
export async function buildZoo(o: BuildOptions = {}): Promise<BuildResult[]> {
  const ids = (o.only ?? (o.zoo ?? knownZoo()).map((z) => z.name)).map((n) => (o.tiny && !n.endsWith('@tiny') ? `${n}@tiny` : n));
  const wanted: ResolvedConfig[] = [];
  const add = (c: ResolvedConfig): void => {
    if (c.base) add(c.base);
    if (!wanted.some((w) => w.hash === c.hash)) wanted.push(c);
  };
  for (const id of ids) add(resolveConfig(id, o.zoo));
  const total = wanted.reduce((a, c) => a + c.steps, 0);
  const bar = o.progress ? new cliProgress.SingleBar({ format: 'zoo [{bar}] {percentage}% | {value}/{total} steps | {eta_formatted} left | {model}', stream: process.stderr, noTTYOutput: true, notTTYSchedule: 30_000 }, cliProgress.Presets.shades_classic) : null;
  bar?.start(total, 0, { model: '' });
  const jobs = Math.max(1, Math.floor(o.jobs ?? 1));
  const results = new Map<string, BuildResult>();
  // one settled-when-built promise per config, made up front so a variant can wait on its base
  const done = new Map<string, { p: Promise<void>; ok: () => void; fail: (e: unknown) => void }>();
  for (const c of wanted) {
    let ok!: () => void;
    let fail!: (e: unknown) => void;
    const p = new Promise<void>((a, b) => {
      ok = a;
      fail = b;
    });
    p.catch(() => undefined);
    done.set(c.hash, { p, ok, fail });
  }
  const running = new Set<string>();
  // the costliest builds first (fewer idle workers at the end); a variant still waits for its base
  const cost = (c: ResolvedConfig): number => c.steps * c.batch * c.maxLen * c.dModel * c.dModel * c.nLayers;
  const queue = [...wanted.filter((c) => !c.base).sort((a, b) => cost(b) - cost(a)), ...wanted.filter((c) => c.base)];
  const failed: { id: string; error: unknown }[] = [];
  try {
    // up to `jobs` builds at once (each its own learner process); a fine-tuned variant waits for its base
    const worker = async (): Promise<void> => {
      for (;;) {
        const c = queue.shift();
        if (!c) return;
        const slot = done.get(c.hash)!;
        try {
          if (c.base) await done.get(c.base.hash)?.p;
          running.add(`lm/${c.id}`);
          bar?.update({ model: [...running].join(', ') });
          results.set(c.hash, await buildOne(c, o, (n) => bar?.increment(n)));
          slot.ok();
        } catch (e) {
          // one failed build does not stop the others; they are reported together at the end
          slot.fail(e);
          failed.push({ id: c.id, error: e });
          o.log?.(`lm/${c.id}: FAILED: ${e instanceof Error ? e.message : String(e)}`);
        } finally {
          running.delete(`lm/${c.id}`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(jobs, wanted.length) }, worker));
  } finally {
    bar?.stop();
  }
  if (failed.length) {
    const first = failed[0]!.error;
    if (failed.length === 1 && first instanceof LmTargetError) throw first;
    throw new LmTargetError('LM_BUILD_FAILED', `${failed.length} zoo build(s) failed (the others are built and cached): ${failed.map((f) => `lm/${f.id}: ${f.error instanceof Error ? f.error.message : String(f.error)}`).join('; ')}`, { data: { failed: failed.map((f) => f.id) }, cause: first });
  }
  const out = wanted.map((c) => results.get(c.hash)!);
  return out;
}
