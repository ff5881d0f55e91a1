/**
 * The exported model graphs in onnxruntime-node.
 *
 * - **decode** (learner/server.py `export`, the default): input_ids [B, T], pos [B], logit_pos
 *   [N] (rows of the flattened [B·T] positions whose logits are wanted), past_k_i [B, H, Dh, M],
 *   past_v_i [B, H, M, Dh] (a cache of M slots per row, the first pos[b] valid) → logits [N, V],
 *   k_i [B, H, Dh, T], v_i [B, H, T, Dh]: the keys and values of the new tokens. A prefill is
 *   pos = 0, a prefill after a cached prefix pos = its length, a decoding step T = 1. Every query
 *   attends over all M slots, its valid positions first and the rest masked after them, so a
 *   prefill after a cached prefix gives the numbers of a prefill from scratch (learner/model.py
 *   Block.decode).
 * - **full** (`export {graph: 'full'}`, and every model exported before the cache): input_ids
 *   [B, T] → logits [B, T, V] at every position, no cache.
 *
 * A row's numbers do not depend on the other rows of its batch, on right-padding, nor on whether
 * its prefix came from a cache (measured bitwise on MLAS, and tested:
 * test/integration/learner/decode.test.ts), which is what lets the batcher decode episodes
 * together, reuse the prefix an episode's last decision left, and give each decision the tokens
 * it would get alone.
 */
import * as ort from 'onnxruntime-node';
import { SamplerError } from './errors.ts';
import { DECODE_GRAPH_VERSION, onnxMetadata } from './onnx-meta.ts';

export { DECODE_GRAPH_VERSION, onnxMetadata } from './onnx-meta.ts';

/** What {@link loadGraph} found in the file. */
export interface GraphInfo {
  kind: 'decode' | 'full';
  vocab: number;
  /** decode graphs only (0 for full) */
  nLayers: number;
  nHeads: number;
  headDim: number;
  /** token shift (learner/model.py): the graph also takes prev_ids [B], the token before each row's first new token */
  shift?: boolean;
  /** the file's metadata_props (hr1_graph, hr1_decode_version, vocab_size, d_model, …) */
  props: Record<string, string>;
}


/** What the caller knows of the model (meta.json, the engineer's config): checked against the file. */
export interface GraphExpect {
  maxLen: number;
  vocabSize?: number;
  nLayers?: number;
  dModel?: number;
  nHeads?: number;
}

const i64 = (xs: readonly number[], dims: number[]): ort.Tensor => {
  const a = new BigInt64Array(xs.length);
  for (let j = 0; j < xs.length; j++) a[j] = BigInt(xs[j]!);
  return new ort.Tensor('int64', a, dims);
};

/** One prefill's outputs: logits of each row's last token, and the rows' keys and values. */
export interface PrefillOut {
  /** [B, V] */
  logits: Float32Array;
  /** per layer [B, H, Dh, T] */
  k: Float32Array[];
  /** per layer [B, H, T, Dh] */
  v: Float32Array[];
  /** the padded length T */
  t: number;
}

/** One step's outputs. */
export interface StepOut {
  /** [n, V] */
  logits: Float32Array;
  /** per layer [n, H, Dh, 1] */
  k: Float32Array[];
  /** per layer [n, H, 1, Dh] */
  v: Float32Array[];
}

/** One slot's keys and values, copied out (KvSlab.save). */
export interface SavedRow {
  k: Float32Array[];
  v: Float32Array[];
}

/**
 * Key/value slots for the rows being decoded: per layer, keys [cap, H, Dh, maxLen] and values
 * [cap, H, maxLen, Dh]. Rows in flight hold slots 0..n-1, so a step's cache is one contiguous view.
 */
export class KvSlab {
  readonly k: Float32Array[] = [];
  readonly v: Float32Array[] = [];
  cap = 0;
  /** floats per slot per layer (H·Dh·maxLen) */
  readonly row: number;
  constructor(
    readonly nLayers: number,
    readonly nHeads: number,
    readonly headDim: number,
    readonly maxLen: number,
  ) {
    this.row = nHeads * headDim * maxLen;
  }

  /** bytes the slots take now */
  get bytes(): number {
    return this.cap * this.row * 4 * 2 * this.nLayers;
  }

  /** bytes one slot (one sequence in flight) takes */
  get bytesPerRow(): number {
    return this.row * 4 * 2 * this.nLayers;
  }

  /** make room for n slots (grows by doubling, keeping what is there) */
  ensure(n: number): void {
    if (n <= this.cap) return;
    let cap = Math.max(1, this.cap);
    while (cap < n) cap *= 2;
    for (let l = 0; l < this.nLayers; l++) {
      const k = new Float32Array(cap * this.row);
      const v = new Float32Array(cap * this.row);
      if (this.cap) {
        k.set(this.k[l]!);
        v.set(this.v[l]!);
      }
      this.k[l] = k;
      this.v[l] = v;
    }
    this.cap = cap;
  }

  /** write row b's first `len` new keys and values of an extend() at positions at..at+len-1 of `slot` */
  fromPrefill(slot: number, pre: PrefillOut, b: number, len: number, at = 0): void {
    const { nHeads: H, headDim: Dh, maxLen: M } = this;
    const t = pre.t;
    for (let l = 0; l < this.nLayers; l++) {
      const k = this.k[l]!;
      const v = this.v[l]!;
      const pk = pre.k[l]!;
      const pv = pre.v[l]!;
      const base = slot * this.row;
      for (let h = 0; h < H; h++) {
        for (let d = 0; d < Dh; d++) {
          const src = ((b * H + h) * Dh + d) * t;
          k.set(pk.subarray(src, src + len), base + (h * Dh + d) * M + at);
        }
        const src = (b * H + h) * t * Dh;
        v.set(pv.subarray(src, src + len * Dh), base + (h * M + at) * Dh);
      }
    }
  }

  /** a copy of `slot` (every layer's keys and values), into `into`'s buffers when given (no allocation) */
  save(slot: number, into?: SavedRow): SavedRow {
    const out = into ?? { k: Array.from({ length: this.nLayers }, () => new Float32Array(this.row)), v: Array.from({ length: this.nLayers }, () => new Float32Array(this.row)) };
    const base = slot * this.row;
    for (let l = 0; l < this.nLayers; l++) {
      out.k[l]!.set(this.k[l]!.subarray(base, base + this.row));
      out.v[l]!.set(this.v[l]!.subarray(base, base + this.row));
    }
    return out;
  }

  /** a saved row back into `slot` (its positions past the ones that count are masked or written over) */
  restore(slot: number, saved: SavedRow): void {
    const base = slot * this.row;
    for (let l = 0; l < this.nLayers; l++) {
      this.k[l]!.set(saved.k[l]!, base);
      this.v[l]!.set(saved.v[l]!, base);
    }
  }

  /** write row i of a step's new key/value at position `pos` of `slot` */
  fromStep(slot: number, pos: number, out: StepOut, i: number): void {
    const { nHeads: H, headDim: Dh, maxLen: M } = this;
    for (let l = 0; l < this.nLayers; l++) {
      const k = this.k[l]!;
      const v = this.v[l]!;
      const sk = out.k[l]!;
      const sv = out.v[l]!;
      const base = slot * this.row;
      for (let h = 0; h < H; h++) {
        const src = (i * H + h) * Dh;
        for (let d = 0; d < Dh; d++) k[base + (h * Dh + d) * M + pos] = sk[src + d]!;
        v.set(sv.subarray(src, src + Dh), base + (h * M + pos) * Dh);
      }
    }
  }

  /** copy slot `from` over slot `to` (a row leaving, or a shared prefill fanned out to K rows) */
  move(from: number, to: number): void {
    if (from === to) return;
    for (let l = 0; l < this.nLayers; l++) {
      this.k[l]!.copyWithin(to * this.row, from * this.row, (from + 1) * this.row);
      this.v[l]!.copyWithin(to * this.row, from * this.row, (from + 1) * this.row);
    }
  }

}

/**
 * ONNX Runtime's threads. Its intra-op pool spins while it waits for work by default, which takes
 * CPU from whatever shares the cores: a learner's update beside the reruns of a pipelined run,
 * other node processes on the same machine. Seen in one `hr1 bench train` run on 2 cores: the
 * learner's update took 7–26 s beside spinning reruns instead of 2–3 s (docs/LEARNER.md). So
 * hr1 turns spinning off; `HR1_ORT_SPINNING=1` turns it back on, `HR1_ORT_THREADS=N` sets the pool's size.
 */
export function ortThreadOptions(env: NodeJS.ProcessEnv = process.env): { intraOpNumThreads?: number; extra?: Record<string, unknown> } {
  const out: { intraOpNumThreads?: number; extra?: Record<string, unknown> } = {};
  const n = Number(env.HR1_ORT_THREADS);
  if (env.HR1_ORT_THREADS !== undefined && Number.isInteger(n) && n >= 1) out.intraOpNumThreads = n;
  if (env.HR1_ORT_SPINNING !== '1') out.extra = { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } };
  return out;
}

/** A loaded graph: decode (with a cache) or full (logits everywhere). */
export class Graph {
  private constructor(
    private readonly session: ort.InferenceSession,
    readonly info: GraphInfo,
    readonly maxLen: number,
  ) {}

  /**
   * Load a graph and check it against what the caller expects; SAMPLER_MODEL names the mismatch
   * (a vocabulary, depth, width or context that does not match the metadata) and the fix.
   */
  static async load(bytes: Uint8Array, expect: GraphExpect, what = 'the model', fix = 'rebuild or re-export it with the learner\'s export op'): Promise<Graph> {
    let session: ort.InferenceSession;
    try {
      // intraOpNumThreads is left out on purpose: setting it to undefined throws in onnxruntime-node
      session = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'all', ...ortThreadOptions() });
    } catch (e) {
      throw new SamplerError('SAMPLER_MODEL', `cannot load ${what} as ONNX (${bytes.byteLength} bytes): ${(e as Error).message}; export it with the learner's export op`, { cause: e });
    }
    const props = onnxMetadata(bytes);
    const ins = session.inputNames;
    const outs = session.outputNames;
    const mismatch = (m: string): never => {
      void session.release();
      throw new SamplerError('SAMPLER_MODEL', `${what} does not match its metadata: ${m}; ${fix}`, { data: { props } });
    };
    let info: GraphInfo;
    if (ins.length === 1 && ins[0] === 'input_ids' && outs.length === 1 && outs[0] === 'logits') {
      info = { kind: 'full', vocab: 0, nLayers: 0, nHeads: 0, headDim: 0, props };
    } else {
      const n = ins.filter((x) => x.startsWith('past_k_')).length;
      const want = ['input_ids', 'pos', 'logit_pos', ...Array.from({ length: n }, (_, i) => `past_k_${i}`), ...Array.from({ length: n }, (_, i) => `past_v_${i}`)];
      const wantOut = ['logits', ...Array.from({ length: n }, (_, i) => `k_${i}`), ...Array.from({ length: n }, (_, i) => `v_${i}`)];
      if (n === 0 || want.some((x) => !ins.includes(x)) || wantOut.some((x) => !outs.includes(x))) {
        void session.release();
        throw new SamplerError('SAMPLER_MODEL', `${what} is neither a decode graph nor a full graph (inputs ${ins.join(',')}; outputs ${outs.join(',')}); export it with the learner's export op`, { data: { inputs: [...ins], outputs: [...outs] } });
      }
      const version = props['hr1_decode_version'];
      if (version !== undefined && Number(version) !== DECODE_GRAPH_VERSION) mismatch(`its decode graph is version ${version}, this code runs version ${DECODE_GRAPH_VERSION}`);
      const meta = session.inputMetadata.find((m) => m.name === 'past_k_0');
      const shape = meta && meta.isTensor ? meta.shape : [];
      const nHeads = typeof shape[1] === 'number' ? shape[1] : 0;
      const headDim = typeof shape[2] === 'number' ? shape[2] : 0;
      if (!nHeads || !headDim) mismatch(`past_k_0 has shape [${shape.join(', ')}], expected [batch, heads, head_dim, past]`);
      info = { kind: 'decode', vocab: 0, nLayers: n, nHeads, headDim, props, shift: ins.includes('prev_ids') };
    }
    const g = new Graph(session, info, expect.maxLen);
    // a one-token probe: the vocabulary, and that the graph runs at all
    let vocab = 0;
    try {
      vocab = info.kind === 'decode' ? (await g.prefill([[1]])).logits.length : ((await session.run({ input_ids: i64([1], [1, 1]) }))['logits']!.dims[2] ?? 0);
    } catch (e) {
      await session.release();
      if (e instanceof SamplerError) throw e;
      throw new SamplerError('SAMPLER_MODEL', `${what} loads but does not run: ${(e as Error).message}`, { cause: e });
    }
    info.vocab = vocab;
    const d = info.nHeads * info.headDim;
    if (expect.vocabSize !== undefined && vocab !== expect.vocabSize) mismatch(`its vocabulary has ${vocab} ids, the metadata says ${expect.vocabSize}`);
    if (info.kind === 'decode') {
      if (expect.nLayers !== undefined && info.nLayers !== expect.nLayers) mismatch(`it has ${info.nLayers} layers, the metadata says ${expect.nLayers}`);
      if (expect.dModel !== undefined && d !== expect.dModel) mismatch(`its width is ${d}, the metadata says ${expect.dModel}`);
      if (expect.nHeads !== undefined && info.nHeads !== expect.nHeads) mismatch(`it has ${info.nHeads} heads, the metadata says ${expect.nHeads}`);
      const ml = props['max_len'];
      if (ml !== undefined && Number(ml) !== expect.maxLen) mismatch(`it was exported for a context of ${ml}, the metadata says ${expect.maxLen}`);
    }
    return g;
  }

  get kind(): 'decode' | 'full' {
    return this.info.kind;
  }

  get vocab(): number {
    return this.info.vocab;
  }

  private feeds(ids: ort.Tensor, pos: readonly number[], logitPos: readonly number[], past: (l: number, kind: 'k' | 'v') => ort.Tensor, prev?: readonly number[]): Record<string, ort.Tensor> {
    const f: Record<string, ort.Tensor> = { input_ids: ids, pos: i64(pos, [pos.length]), logit_pos: i64(logitPos, [logitPos.length]) };
    if (this.info.shift) {
      // a row that does not start at position 0 needs the token before it (a graph with token shift reads it)
      if (!prev && pos.some((p) => p > 0)) throw new SamplerError('SAMPLER_INPUT', 'this model reads the token before each row (token shift): pass prev to extend()/step() for rows that do not start at position 0');
      f['prev_ids'] = i64(prev ?? pos.map(() => 0), [pos.length]);
    }
    for (let l = 0; l < this.info.nLayers; l++) {
      f[`past_k_${l}`] = past(l, 'k');
      f[`past_v_${l}`] = past(l, 'v');
    }
    return f;
  }

  private outs(o: ort.InferenceSession.ReturnType): { logits: Float32Array; k: Float32Array[]; v: Float32Array[] } {
    const n = this.info.nLayers;
    return {
      logits: o['logits']!.data as Float32Array,
      k: Array.from({ length: n }, (_, l) => o[`k_${l}`]!.data as Float32Array),
      v: Array.from({ length: n }, (_, l) => o[`v_${l}`]!.data as Float32Array),
    };
  }

  /**
   * New tokens for slab slots first..first+B-1: row b's tokens (right-padded to the longest) go
   * at positions pos[b]…, after the pos[b] positions its slot holds. Returns the logits of each
   * row's last token and the new tokens' keys and values (the slab is not written: see KvSlab).
   *
   * A prefill is padded to at least two tokens: one query row takes another kernel path in the
   * attention products (its last bits differ), so a one-token prefill would not match the same
   * prompt prefilled beside longer ones. Steps (always one token) match each other.
   */
  async extend(rows: readonly (readonly number[])[], pos: readonly number[], slab: KvSlab, first: number, minT = 2, prev?: readonly number[]): Promise<PrefillOut> {
    if (this.info.kind !== 'decode') throw new SamplerError('SAMPLER_MODEL', 'extend() needs a decode graph');
    const b = rows.length;
    const t = Math.max(minT, ...rows.map((r) => r.length));
    const ids = new BigInt64Array(b * t);
    rows.forEach((r, i) => r.forEach((x, j) => (ids[i * t + j] = BigInt(x))));
    const { nHeads: H, headDim: Dh } = this.info;
    const M = slab.maxLen;
    const o = await this.session.run(
      this.feeds(
        new ort.Tensor('int64', ids, [b, t]),
        pos,
        rows.map((r, i) => i * t + r.length - 1),
        (l, kind) => new ort.Tensor('float32', (kind === 'k' ? slab.k[l]! : slab.v[l]!).subarray(first * slab.row, (first + b) * slab.row), kind === 'k' ? [b, H, Dh, M] : [b, H, M, Dh]),
        prev,
      ),
    );
    return { ...this.outs(o), t };
  }

  /** Prefill rows from position 0 (a slab of their own; padding never changes a row's numbers). */
  async prefill(rows: readonly (readonly number[])[]): Promise<PrefillOut> {
    const slab = new KvSlab(this.info.nLayers, this.info.nHeads, this.info.headDim, this.maxLen);
    slab.ensure(rows.length);
    return this.extend(rows, rows.map(() => 0), slab, 0);
  }

  /**
   * One token per row for slab slots first..first+n-1, at positions pos (each row's length so
   * far); `prev`: the token before each (needed by a token-shift graph, `info.shift`).
   */
  async step(tokens: readonly number[], pos: readonly number[], slab: KvSlab, first: number, prev?: readonly number[]): Promise<StepOut> {
    return this.extend(tokens.map((x) => [x]), pos, slab, first, 1, prev);
  }

  /** Logits [B, T, V] at every position of equal-length rows (a full graph, or a decode graph asked for every position). */
  async logits(rows: readonly (readonly number[])[]): Promise<{ data: Float32Array; t: number; v: number }> {
    const t = rows[0]?.length ?? 0;
    if (t === 0 || rows.some((r) => r.length !== t)) throw new SamplerError('SAMPLER_INPUT', 'logits() needs non-empty rows of equal length');
    if (t > this.maxLen) throw new SamplerError('SAMPLER_INPUT', `a row of ${t} tokens is longer than the model's maxLen ${this.maxLen}`);
    const ids = new BigInt64Array(rows.length * t);
    rows.forEach((r, i) => r.forEach((x, j) => (ids[i * t + j] = BigInt(x))));
    const input = new ort.Tensor('int64', ids, [rows.length, t]);
    if (this.info.kind === 'full') {
      const out = await this.session.run({ input_ids: input });
      const logits = out['logits']!;
      return { data: logits.data as Float32Array, t, v: logits.dims[2]! };
    }
    const { nHeads: H, headDim: Dh } = this.info;
    const b = rows.length;
    // a cache of exactly t slots, all written by these tokens
    const empty = new Float32Array(b * H * Dh * t);
    const o = await this.session.run(
      this.feeds(
        input,
        rows.map(() => 0),
        Array.from({ length: b * t }, (_, i) => i),
        (_l, kind) => new ort.Tensor('float32', empty, kind === 'k' ? [b, H, Dh, t] : [b, H, t, Dh]),
      ),
    );
    return { data: o['logits']!.data as Float32Array, t, v: this.info.vocab };
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
