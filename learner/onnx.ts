/**
 * The engineer in onnxruntime-node: load an exported model, compute per-token log-probs, and
 * sample K completions per prompt with temperature, top-p, a seeded RNG and an optional
 * grammar constraint. Pure of the cluster; actors/sampler.ts wraps it in an actor.
 *
 * A decode graph (the export op's default) samples through the decision batcher
 * (learner/batcher.ts): each prompt is prefilled once and its K rows step together with every
 * other row in flight, one graph call per token for all of them. A full graph (exported before
 * the cache) samples the old way, {@link sampleFull}: one forward over the whole window per token.
 * Both give a prompt's samples from the same RNG draws in the same order.
 */
import { readFile } from 'node:fs/promises';
import { Rng } from '../cluster/rng.ts';
import { DecodeBatcher, type BatcherOptions } from './batcher.ts';
import { SamplerError } from './errors.ts';
import { Graph } from './graph.ts';
import { logSoftmaxAt, pick } from './sampling.ts';

export { logSoftmaxAt, pick } from './sampling.ts';

/**
 * Allowed next ids after `prefix` (the completion so far; `prompt` for context), or null for
 * every id. The patch grammar comes with the tokenizer; by default nothing is constrained.
 */
export type GrammarConstraint = (prefix: readonly number[], prompt: readonly number[]) => readonly number[] | null;

/** The identity constraint: every id allowed. */
export const unconstrained: GrammarConstraint = () => null;

export interface SampleOptions {
  /** completions per prompt. @default 8 */
  k?: number;
  /** logits are divided by it; 0 = greedy (log-probs then at temperature 1). @default 0.7 */
  temperature?: number;
  /** nucleus mass kept. @default 0.95 */
  topP?: number;
  /** @default 64 */
  maxNewTokens?: number;
  /** @default 0 */
  seed?: number;
  /** @default none */
  constraint?: GrammarConstraint;
}

/** @default 8 */
export const DEFAULT_K = 8;
/** @default 0.7 */
export const DEFAULT_TEMPERATURE = 0.7;
/** @default 0.95 */
export const DEFAULT_TOP_P = 0.95;
/** @default 64 */
export const DEFAULT_MAX_NEW_TOKENS = 64;

export interface Completion {
  ids: number[];
  /** log-prob of each sampled id under softmax(logits / temperature), before top-p and the grammar mask — what the learner recomputes */
  logprobs: number[];
  /** ended with EOS (else it hit maxNewTokens or maxLen) */
  finished: boolean;
}

export interface EngineerMeta {
  eosId: number;
  /** longest prompt + completion the model was exported for */
  maxLen: number;
  /** checked against the file when given */
  vocabSize?: number;
}

/** How a decode graph is batched (learner/batcher.ts); a full graph ignores it. */
export type DecodeOptions = Omit<BatcherOptions, 'eosId'>;

/**
 * An exported engineer loaded in onnxruntime-node.
 *
 * @example
 * const eng = await OnnxEngineer.fromBytes(bytes, { eosId: 2, maxLen: 256 });
 * const [ks] = await eng.sample([[1, 7, 9]], { k: 4, seed: 3 });
 */
export class OnnxEngineer {
  private constructor(
    readonly graph: Graph,
    readonly meta: EngineerMeta,
    /** null for a full graph */
    readonly batcher: DecodeBatcher | null,
  ) {}

  static async fromBytes(bytes: Uint8Array, meta: EngineerMeta, o: DecodeOptions = {}): Promise<OnnxEngineer> {
    const graph = await Graph.load(bytes, { maxLen: meta.maxLen, ...(meta.vocabSize !== undefined ? { vocabSize: meta.vocabSize } : {}) }, 'the engineer ONNX model');
    return new OnnxEngineer(graph, meta, graph.kind === 'decode' ? new DecodeBatcher(graph, { ...o, eosId: meta.eosId }) : null);
  }

  static async fromPath(path: string, meta: EngineerMeta, o: DecodeOptions = {}): Promise<OnnxEngineer> {
    let bytes: Uint8Array;
    try {
      bytes = await readFile(path);
    } catch (e) {
      throw new SamplerError('SAMPLER_MODEL', `cannot read the engineer ONNX model at ${path}: ${(e as Error).message}`, { cause: e, data: { path } });
    }
    return OnnxEngineer.fromBytes(bytes, meta, o);
  }

  /** 'decode' (a cache, batched) or 'full' (an old export: one forward per token) */
  get kind(): 'decode' | 'full' {
    return this.graph.kind;
  }

  /** Logits for equal-length rows: [B, T, V] flattened, with V. */
  logits(rows: readonly (readonly number[])[]): Promise<{ data: Float32Array; t: number; v: number }> {
    return this.graph.logits(rows);
  }

  /** Per-token log-probs of each completion after its prompt (as the learner's logprobs op). */
  async tokenLogprobs(prompts: readonly (readonly number[])[], completions: readonly (readonly number[])[], temperature = 1): Promise<number[][]> {
    const out: number[][] = [];
    for (let i = 0; i < prompts.length; i++) {
      const p = prompts[i]!;
      const c = completions[i]!;
      if (p.length === 0) throw new SamplerError('SAMPLER_INPUT', `prompt ${i} is empty; start it with BOS`);
      if (c.length === 0) {
        out.push([]);
        continue;
      }
      const { data, v } = await this.logits([[...p, ...c]]);
      out.push(c.map((tok, k) => logSoftmaxAt(data, (p.length - 1 + k) * v, v, temperature, tok)));
    }
    return out;
  }

  /** K completions per prompt; results per prompt in input order, deterministic for a seed. */
  async sample(prompts: readonly (readonly number[])[], o: SampleOptions = {}): Promise<Completion[][]> {
    const r = resolveSample(o);
    prompts.forEach((prompt, pi) => {
      if (prompt.length === 0) throw new SamplerError('SAMPLER_INPUT', `prompt ${pi} is empty; start it with BOS`);
      if (prompt.length >= this.meta.maxLen) throw new SamplerError('SAMPLER_INPUT', `prompt ${pi} has ${prompt.length} tokens; the model takes at most ${this.meta.maxLen} in all, so nothing can be generated`);
    });
    const root = new Rng(o.seed ?? 0);
    if (!this.batcher) return sampleFull(this.graph, this.meta, prompts, r, root);
    const b = this.batcher;
    return Promise.all(prompts.map((prompt, pi) => b.decode({ prompt, k: r.k, rng: root.fork(pi), temperature: r.temperature, topP: r.topP, maxNewTokens: r.maxNew, constraint: r.constraint })));
  }

  async release(): Promise<void> {
    this.batcher?.close();
    await this.graph.release();
  }
}

interface Resolved {
  k: number;
  temperature: number;
  topP: number;
  maxNew: number;
  constraint: GrammarConstraint;
}

function resolveSample(o: SampleOptions): Resolved {
  const k = o.k ?? DEFAULT_K;
  const temperature = o.temperature ?? DEFAULT_TEMPERATURE;
  const topP = o.topP ?? DEFAULT_TOP_P;
  const maxNew = o.maxNewTokens ?? DEFAULT_MAX_NEW_TOKENS;
  if (!Number.isInteger(k) || k < 1) throw new SamplerError('SAMPLER_INPUT', `options.k must be a positive integer, got ${k}`);
  if (!(temperature >= 0)) throw new SamplerError('SAMPLER_INPUT', `options.temperature must be ≥ 0, got ${temperature}`);
  if (!(topP > 0 && topP <= 1)) throw new SamplerError('SAMPLER_INPUT', `options.topP must be in (0, 1], got ${topP}`);
  if (!Number.isInteger(maxNew) || maxNew < 1) throw new SamplerError('SAMPLER_INPUT', `options.maxNewTokens must be a positive integer, got ${maxNew}`);
  return { k, temperature, topP, maxNew, constraint: o.constraint ?? unconstrained };
}

/**
 * The path before the cache: one forward over the whole window per token, a prompt's active rows
 * as one batch. What a full graph samples with, and the baseline `hr1 bench lm` measures against.
 */
export async function sampleFull(graph: Graph, meta: EngineerMeta, prompts: readonly (readonly number[])[], r: Resolved, root: Rng): Promise<Completion[][]> {
  const result: Completion[][] = [];
  for (let pi = 0; pi < prompts.length; pi++) {
    const prompt = prompts[pi]!;
    const rng = root.fork(pi);
    const rows: Completion[] = Array.from({ length: r.k }, () => ({ ids: [], logprobs: [], finished: false }));
    for (let step = 0; step < r.maxNew && prompt.length + step < meta.maxLen; step++) {
      const active = rows.filter((x) => !x.finished);
      if (active.length === 0) break;
      // rows of one prompt grow together, so the active ones always have equal length
      const { data, t, v } = await graph.logits(active.map((x) => [...prompt, ...x.ids]));
      active.forEach((x, ai) => {
        const off = (ai * t + t - 1) * v;
        const allowed = r.constraint(x.ids, prompt);
        const tok = pick(data, off, v, r.temperature, r.topP, allowed, rng);
        x.ids.push(tok);
        x.logprobs.push(logSoftmaxAt(data, off, v, r.temperature === 0 ? 1 : r.temperature, tok));
        if (tok === meta.eosId) x.finished = true;
      });
    }
    result.push(rows);
  }
  return result;
}

/** {@link sampleFull} with SampleOptions (the benchmark's baseline and the parity tests). */
export function sampleFullPath(graph: Graph, meta: EngineerMeta, prompts: readonly (readonly number[])[], o: SampleOptions = {}): Promise<Completion[][]> {
  return sampleFull(graph, meta, prompts, resolveSample(o), new Rng(o.seed ?? 0));
}
