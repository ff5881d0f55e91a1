/**
 * The engineer in onnxruntime-node: load an exported model, compute per-token log-probs, and
 * sample K completions per prompt with temperature, top-p, a seeded RNG and an optional
 * grammar constraint. Pure of the cluster; actors/sampler.ts wraps it in an actor.
 */
import { readFile } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import { Rng } from '../cluster/rng.ts';
import { SamplerError } from './errors.ts';

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
}

/**
 * An exported engineer loaded in onnxruntime-node.
 *
 * @example
 * const eng = await OnnxEngineer.fromBytes(bytes, { eosId: 2, maxLen: 256 });
 * const [ks] = await eng.sample([[1, 7, 9]], { k: 4, seed: 3 });
 */
export class OnnxEngineer {
  private constructor(
    private readonly session: ort.InferenceSession,
    readonly meta: EngineerMeta,
  ) {}

  static async fromBytes(bytes: Uint8Array, meta: EngineerMeta): Promise<OnnxEngineer> {
    try {
      // intraOpNumThreads is left out on purpose: setting it to undefined throws in onnxruntime-node
      const session = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'all' });
      if (!session.inputNames.includes('input_ids') || !session.outputNames.includes('logits')) throw new Error(`inputs ${session.inputNames.join(',')} / outputs ${session.outputNames.join(',')}; expected input_ids → logits`);
      return new OnnxEngineer(session, meta);
    } catch (e) {
      if (e instanceof SamplerError) throw e;
      throw new SamplerError('SAMPLER_MODEL', `cannot load the engineer ONNX model (${bytes.byteLength} bytes): ${(e as Error).message}; export it with the learner's export op`, { cause: e });
    }
  }

  static async fromPath(path: string, meta: EngineerMeta): Promise<OnnxEngineer> {
    let bytes: Uint8Array;
    try {
      bytes = await readFile(path);
    } catch (e) {
      throw new SamplerError('SAMPLER_MODEL', `cannot read the engineer ONNX model at ${path}: ${(e as Error).message}`, { cause: e, data: { path } });
    }
    return OnnxEngineer.fromBytes(bytes, meta);
  }

  /** Logits for equal-length rows: [B, T, V] flattened, with V. */
  async logits(rows: readonly (readonly number[])[]): Promise<{ data: Float32Array; t: number; v: number }> {
    const t = rows[0]?.length ?? 0;
    if (t === 0 || rows.some((r) => r.length !== t)) throw new SamplerError('SAMPLER_INPUT', 'logits() needs non-empty rows of equal length');
    if (t > this.meta.maxLen) throw new SamplerError('SAMPLER_INPUT', `a row of ${t} tokens is longer than the model's maxLen ${this.meta.maxLen}`);
    const ids = new BigInt64Array(rows.length * t);
    rows.forEach((r, i) => r.forEach((x, j) => (ids[i * t + j] = BigInt(x))));
    const out = await this.session.run({ input_ids: new ort.Tensor('int64', ids, [rows.length, t]) });
    const logits = out['logits']!;
    const v = logits.dims[2]!;
    return { data: logits.data as Float32Array, t, v };
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
    const k = o.k ?? DEFAULT_K;
    const temperature = o.temperature ?? DEFAULT_TEMPERATURE;
    const topP = o.topP ?? DEFAULT_TOP_P;
    const maxNew = o.maxNewTokens ?? DEFAULT_MAX_NEW_TOKENS;
    const constraint = o.constraint ?? unconstrained;
    if (!Number.isInteger(k) || k < 1) throw new SamplerError('SAMPLER_INPUT', `options.k must be a positive integer, got ${k}`);
    if (!(temperature >= 0)) throw new SamplerError('SAMPLER_INPUT', `options.temperature must be ≥ 0, got ${temperature}`);
    if (!(topP > 0 && topP <= 1)) throw new SamplerError('SAMPLER_INPUT', `options.topP must be in (0, 1], got ${topP}`);
    const root = new Rng(o.seed ?? 0);
    const result: Completion[][] = [];
    for (let pi = 0; pi < prompts.length; pi++) {
      const prompt = prompts[pi]!;
      if (prompt.length === 0) throw new SamplerError('SAMPLER_INPUT', `prompt ${pi} is empty; start it with BOS`);
      if (prompt.length >= this.meta.maxLen) throw new SamplerError('SAMPLER_INPUT', `prompt ${pi} has ${prompt.length} tokens; the model takes at most ${this.meta.maxLen} in all, so nothing can be generated`);
      const rng = root.fork(pi);
      const rows: Completion[] = Array.from({ length: k }, () => ({ ids: [], logprobs: [], finished: false }));
      for (let step = 0; step < maxNew && prompt.length + step < this.meta.maxLen; step++) {
        const active = rows.filter((r) => !r.finished);
        if (active.length === 0) break;
        // rows of one prompt grow together, so the active ones always have equal length
        const { data, t, v } = await this.logits(active.map((r) => [...prompt, ...r.ids]));
        active.forEach((r, ai) => {
          const off = (ai * t + t - 1) * v;
          const allowed = constraint(r.ids, prompt);
          const tok = pick(data, off, v, temperature, topP, allowed, rng);
          r.ids.push(tok);
          r.logprobs.push(logSoftmaxAt(data, off, v, temperature === 0 ? 1 : temperature, tok));
          if (tok === this.meta.eosId) r.finished = true;
        });
      }
      result.push(rows);
    }
    return result;
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

/** log softmax(logits[off..off+v] / temperature)[tok], in float64. */
export function logSoftmaxAt(data: Float32Array, off: number, v: number, temperature: number, tok: number): number {
  let max = -Infinity;
  for (let j = 0; j < v; j++) max = Math.max(max, data[off + j]! / temperature);
  let s = 0;
  for (let j = 0; j < v; j++) s += Math.exp(data[off + j]! / temperature - max);
  return data[off + tok]! / temperature - max - Math.log(s);
}

/** Sample one id: grammar mask, then temperature, then top-p (ties broken by id), then the RNG. */
export function pick(data: Float32Array, off: number, v: number, temperature: number, topP: number, allowed: readonly number[] | null, rng: Rng): number {
  const ids = allowed ? [...new Set(allowed)].filter((x) => Number.isInteger(x) && x >= 0 && x < v) : Array.from({ length: v }, (_, j) => j);
  if (ids.length === 0) throw new SamplerError('SAMPLER_GRAMMAR', `the grammar constraint allowed no valid next id (it returned ${JSON.stringify(allowed)} for a vocabulary of ${v})`);
  if (temperature === 0) {
    let best = ids[0]!;
    for (const j of ids) if (data[off + j]! > data[off + best]!) best = j;
    return best;
  }
  let max = -Infinity;
  for (const j of ids) max = Math.max(max, data[off + j]! / temperature);
  const p = ids.map((j) => Math.exp(data[off + j]! / temperature - max));
  const z = p.reduce((a, b) => a + b, 0);
  const order = ids.map((_, i) => i).sort((a, b) => p[b]! - p[a]! || ids[a]! - ids[b]!);
  const kept: number[] = [];
  let mass = 0;
  for (const i of order) {
    kept.push(i);
    mass += p[i]! / z;
    if (mass >= topP) break;
  }
  let u = rng.next() * kept.reduce((a, i) => a + p[i]!, 0);
  for (const i of kept) {
    u -= p[i]!;
    if (u < 0) return ids[i]!;
  }
  return ids[kept[kept.length - 1]!]!;
}
