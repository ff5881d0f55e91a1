/**
 * `lm/<name>`: a zoo model served by onnxruntime-node behind the harness's Model interface.
 * The context builder turns the messages into a window, the model samples the action text
 * (seeded by the episode seed, the step and the context length), and the harness parses it.
 *
 * Decisions go through the decision batcher (learner/batcher.ts): the decisions of every
 * episode in flight on this model (a TargetActor runs 16 at once) are prefilled together and
 * decode one token per graph call for all of them, from a key/value cache. A decision's tokens
 * are the ones it gets decoded alone, so batching changes speed, never an episode.
 */
import { readFileSync } from 'node:fs';
import { Rng, hashString } from '../../../cluster/rng.ts';
import type { DecisionContext, Model } from '../../../harness/index.ts';
import { DecodeBatcher, DEFAULT_GATHER_MS, DEFAULT_MAX_BATCH, type BatcherStats } from '../../../learner/batcher.ts';
import { SamplerError } from '../../../learner/errors.ts';
import { Graph } from '../../../learner/graph.ts';
import { isDecodeGraph } from '../../../learner/onnx-meta.ts';
import { buildContext } from './context.ts';
import { slottingFor } from './slotting.ts';
import { LmNotBuiltError, LmTargetError } from './errors.ts';
import { LmTokenizer } from './tokenizer.ts';
import { renderDbbench } from './dbbench/render.ts';
import { LM_SERVING_VERSION, contextBudget, modelDir, resolveConfig, type LmMeta, type ResolvedConfig, type ZooConfig } from './zoo.ts';
import { locateModel } from './vendor.ts';

export interface LmModelOptions {
  /** zoo folder (see zooDir) */
  dir?: string;
  /** the vendored zoo played when a model is not built (see vendor.ts vendoredDir); false: the build cache only */
  vendored?: string | false;
  /** overrides the config's sampling temperature; 0 = greedy */
  temperature?: number;
  /** @default 0.95 */
  topP?: number;
  /** the config table. @default knownZoo() (ZOO and HR1_ZOO_CONFIG's entries) */
  zoo?: readonly ZooConfig[];
  /** decisions decoded at once. @default HR1_LM_BATCH, else DEFAULT_MAX_BATCH (32; docs/LMTARGETS.md: how it was chosen) */
  maxBatch?: number;
  /** how long an idle model waits for more decisions before it starts. @default HR1_LM_GATHER_MS, else 1 (ms) */
  gatherMs?: number;
  /** finished decisions whose prompt caches are kept for the next decisions of their episodes. @default HR1_LM_PREFIX_CACHE, else 128 */
  prefixCache?: number;
}


const envNumber = (name: string): number | undefined => {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new LmTargetError('LM_BAD_OPTION', `${name}=${v} is not a number ≥ 0`, { data: { name, value: v } });
  return n;
};

/** Finished decisions whose prompt caches an lm target keeps. @default 128 */
export const DEFAULT_LM_PREFIX_CACHE = 128;

/**
 * A decision's RNG: from the episode seed, the step and the context length (so a decision does
 * not depend on what else is decoded), fork 0 (what one-prompt sampling always drew from).
 */
export function decisionRng(ctx: Pick<DecisionContext, 'seed' | 'step' | 'messages'>): Rng {
  return new Rng(decisionSeed(ctx)).fork(0);
}

/** The seed of a decision's RNG (see {@link decisionRng}). */
export function decisionSeed(ctx: Pick<DecisionContext, 'seed' | 'step' | 'messages'>): number {
  return hashString(`${ctx.seed}:${ctx.step}:${ctx.messages.length}`);
}

/** The batcher settings an lm target serves with: those given, else HR1_LM_BATCH / HR1_LM_GATHER_MS / HR1_LM_PREFIX_CACHE, else the defaults. */
export function lmBatchOptions(o: Pick<LmModelOptions, 'maxBatch' | 'gatherMs' | 'prefixCache'> = {}): { maxBatch: number; gatherMs: number; prefixCache: number } {
  return {
    maxBatch: o.maxBatch ?? envNumber('HR1_LM_BATCH') ?? DEFAULT_MAX_BATCH,
    gatherMs: o.gatherMs ?? envNumber('HR1_LM_GATHER_MS') ?? DEFAULT_GATHER_MS,
    prefixCache: o.prefixCache ?? envNumber('HR1_LM_PREFIX_CACHE') ?? DEFAULT_LM_PREFIX_CACHE,
  };
}

/** A loaded zoo model. */
export interface LmModel extends Model {
  readonly meta: LmMeta;
  readonly tokenizer: LmTokenizer;
  /** the prompt window the model would see for these messages */
  window(ctx: Pick<DecisionContext, 'messages'>): number[];
  /** the decision batcher's counters (graph calls, rows per step, tokens) */
  readonly stats: BatcherStats;
  /** the decision batcher itself (windows decoded without an episode: benchmarks) */
  readonly batcher: DecodeBatcher;
  /** key/value cache bytes one decision in flight takes */
  readonly bytesPerDecision: number;
  /** the sampling settings decisions use */
  readonly sampling: { temperature: number; topP: number; maxNewTokens: number };
  /** the model file */
  readonly file: string;
  release(): Promise<void>;
}

/**
 * Load `lm/<name>` (name or `name@tiny`) from the zoo cache, else from the vendored zoo (a copy
 * whose config hash is the zoo's; vendor.ts). Throws {@link LmNotBuiltError} (`LM_NOT_BUILT`,
 * naming `hr1 zoo build --only NAME`) when it is neither built nor vendored, LM_UNKNOWN when the
 * name is not in the zoo, LM_STALE / LM_BAD_HASH for a vendored copy of another config or a
 * vendored file that is not the manifest's.
 *
 * @example
 * const m = await lmModel('alf-s-256-a');
 * await runEpisode(alfworldEnv(game), { model: m, seed: 1 });
 */
export async function lmModel(name: string, o: LmModelOptions = {}): Promise<LmModel> {
  const c: ResolvedConfig = resolveConfig(name, o.zoo);
  if (c.kind === 'sketch') throw new LmTargetError('LM_BAD_OPTION', `lm/${name} is a sketch parser (dbbench/sketch.ts), not a decoder: it has no tokenizer, window or decode batcher; play it with lmTarget('${name}') (what \`--target lm/${name}\` does)`, { data: { name } });
  // the build cache, else the vendored copy (vendor.ts; LM_STALE / LM_BAD_HASH for an unusable one)
  const found = locateModel(c, o);
  if (!found) throw new LmNotBuiltError(name, modelDir(c, o.dir));
  const { dir, meta, file } = found;
  const tok = new LmTokenizer(meta.words);
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    throw new LmTargetError('LM_BAD_META', `cannot read lm/${name}'s model at ${file}: ${(e as Error).message}; rebuild it with \`hr1 zoo build --only ${name} --force\``, { cause: e, data: { name, file } });
  }
  if (!isDecodeGraph(bytes)) {
    throw new LmTargetError('LM_STALE', `lm/${name} was exported before this decode graph (serving version ${LM_SERVING_VERSION}); run \`hr1 zoo build --only ${name}\` to re-export it from its checkpoint (seconds; the weights stay as they are)`, { data: { name, dir, command: `hr1 zoo build --only ${name}` } });
  }
  let graph: Graph;
  try {
    graph = await Graph.load(bytes, { maxLen: meta.maxLen, vocabSize: meta.vocabSize, nLayers: meta.config.nLayers, dModel: meta.config.dModel, nHeads: meta.config.nHeads }, `lm/${name}'s model (${file})`, `rebuild or re-export it (\`hr1 zoo build --only ${name} --force\`)`);
  } catch (e) {
    if (e instanceof SamplerError) throw new LmTargetError('LM_BAD_META', e.message, { cause: e, data: { name, file } });
    throw e;
  }
  const batcher = new DecodeBatcher(graph, { eosId: meta.eosId, ...lmBatchOptions(o) });
  const temperature = o.temperature ?? meta.config.temperature;
  const topP = o.topP ?? 0.95;
  const budget = contextBudget({ ...meta.config, maxLen: meta.maxLen, maxNewTokens: meta.maxNewTokens });
  // product ids (WebShop) or table and column names (DBBench) as slots, as the model was trained
  const sl = meta.config.slots === true || meta.config.slots === 'values' ? slottingFor(meta.config.envs[0] ?? '', meta.config.slots) : null;
  const windowWith = (ctx: Pick<DecisionContext, 'messages'>, map: unknown): number[] => buildContext(sl ? sl.messages(ctx.messages, map) : ctx.messages, tok, budget);
  const isToken = (w: string): boolean => tok.has(w);
  const window = (ctx: Pick<DecisionContext, 'messages'>): number[] => windowWith(ctx, sl?.map(ctx.messages, isToken) ?? null);
  return {
    name: `lm/${name}`,
    meta,
    tokenizer: tok,
    window,
    stats: batcher.stats,
    batcher,
    bytesPerDecision: batcher.bytesPerRow,
    sampling: { temperature, topP, maxNewTokens: meta.maxNewTokens },
    file,
    async decide(ctx) {
      const map = sl?.map(ctx.messages, isToken) ?? null;
      const prompt = windowWith(ctx, map);
      const [out] = await batcher.decode({ prompt, k: 1, rng: decisionRng(ctx), temperature, topP, maxNewTokens: meta.maxNewTokens });
      const ids = (out?.ids ?? []).filter((i) => i !== meta.eosId);
      // DBBench's protocol needs case and newlines the word tokenizer drops (dbbench/render.ts)
      const expand = sl?.pieces ? (ps: readonly string[]): string[] => sl.pieces!(ps, map) : undefined;
      const text = ctx.env === 'dbbench' ? renderDbbench(ids, tok, ctx.messages, expand) : tok.decode(ids);
      // a slot the model wrote is the id or name it stands for in this context
      return sl ? sl.from(text, map) : text;
    },
    release: async () => {
      batcher.close();
      await graph.release();
    },
  };
}

/** A zoo target of either kind (a decoder, or a DBBench sketch parser) behind the harness's Model interface. */
export interface LmTarget extends Model {
  readonly meta: LmMeta;
  /** the model file */
  readonly file: string;
  release(): Promise<void>;
}

/**
 * Load `lm/<name>` whatever its kind: a decoder ({@link lmModel}), or a sketch parser
 * (`kind: 'sketch'`, dbbench/sketch-model.ts) from the build cache or the vendored zoo, with
 * the same errors. What plays a zoo target everywhere a target goes (`--target lm/NAME`, the zoo
 * table, vendoring).
 */
export async function lmTarget(name: string, o: LmModelOptions = {}): Promise<LmTarget> {
  const c: ResolvedConfig = resolveConfig(name, o.zoo);
  if (c.kind !== 'sketch') return lmModel(name, o);
  const found = locateModel(c, o);
  if (!found) throw new LmNotBuiltError(name, modelDir(c, o.dir));
  const { loadSketch, sketchPolicy } = await import('./dbbench/sketch-model.ts');
  const runner = await loadSketch(found.file, `lm/${name}'s model (${found.file})`);
  const policy = sketchPolicy(`lm/${name}`, runner, { temperature: o.temperature ?? found.meta.config.temperature });
  return { ...policy, meta: found.meta, file: found.file, release: () => runner.release() };
}
