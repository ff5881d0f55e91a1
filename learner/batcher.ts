/**
 * The decision batcher: continuous batching over a decode graph (learner/graph.ts), in the style
 * of vLLM's scheduler. A request (a prompt and K samples with their RNG) joins the running batch
 * at the next iteration: its prompt is prefilled (with the other newcomers, right-padded), then
 * its rows step with every other row in flight, one token per row per graph call; a row leaves
 * when it ends (EOS, its token budget, the context), and its slot goes to the next request.
 *
 * A row's tokens depend only on its prompt and its RNG: the graph's numbers for a row do not
 * depend on the batch around it (see graph.ts), and each request draws from its own RNG in its
 * own row order. So a request decoded with 63 others gives the tokens it gets alone (tested on
 * ALFWorld and WebShop targets), and the batch size and gathering window change speed only.
 *
 * A failed graph call is retried row by row, so a row that fails fails alone (its request gets
 * the error); the other rows go on.
 */
import type { Rng } from '../cluster/rng.ts';
import { SamplerError } from './errors.ts';
import { KvSlab, type Graph, type PrefillOut, type StepOut } from './graph.ts';
import { logSoftmaxAt, pick } from './sampling.ts';

/** Allowed next ids after `prefix` (null: every id). */
export type Constraint = (prefix: readonly number[], prompt: readonly number[]) => readonly number[] | null;

/** One request: K samples after one prompt, drawn from `rng` in row order at every step. */
export interface DecodeRequest {
  prompt: readonly number[];
  k: number;
  rng: Rng;
  temperature: number;
  topP: number;
  maxNewTokens: number;
  constraint?: Constraint | undefined;
}

export interface Sample {
  ids: number[];
  /** log-prob of each id under softmax(logits / temperature) (temperature 1 when greedy) */
  logprobs: number[];
  /** ended with EOS */
  finished: boolean;
}

export interface BatcherOptions {
  /** rows decoded at once (slots in the cache); a request of more samples still runs whole. @default 32 */
  maxBatch?: number;
  /** how long an idle batcher waits for more requests before it starts. @default 1 (ms) */
  gatherMs?: number;
  /** prompts prefilled in one graph call. @default 16 */
  prefillRows?: number;
  eosId: number;
}

/** @default 32 */
export const DEFAULT_MAX_BATCH = 32;
/** @default 1 */
export const DEFAULT_GATHER_MS = 1;
/** @default 16 */
export const DEFAULT_PREFILL_ROWS = 16;

export interface BatcherStats {
  requests: number;
  prefillCalls: number;
  stepCalls: number;
  /** rows summed over step calls (÷ stepCalls: the mean batch) */
  stepRows: number;
  tokens: number;
  /** graph calls that failed and were retried row by row */
  isolated: number;
  /** the most rows in flight at once */
  peakRows: number;
}

interface Pending {
  /** admission order: rows are sampled request by request, each request's rows in row order */
  seq: number;
  req: DecodeRequest;
  samples: Sample[];
  open: number;
  resolve: (s: Sample[]) => void;
  reject: (e: unknown) => void;
  failed: boolean;
}

interface Row {
  p: Pending;
  /** the row's index in its request */
  j: number;
  s: Sample;
  /** tokens in the cache (the next step's position) */
  pos: number;
}

const runError = (what: string, e: unknown): SamplerError => (e instanceof SamplerError ? e : new SamplerError('SAMPLER_RUN', `the model failed on ${what}: ${(e as Error)?.message ?? String(e)}`, { cause: e, retryable: true }));

export class DecodeBatcher {
  private readonly queue: Pending[] = [];
  private readonly rows: Row[] = [];
  private readonly slab: KvSlab;
  private running = false;
  private closed = false;
  private seq = 0;
  readonly maxBatch: number;
  readonly gatherMs: number;
  readonly prefillRows: number;
  readonly stats: BatcherStats = { requests: 0, prefillCalls: 0, stepCalls: 0, stepRows: 0, tokens: 0, isolated: 0, peakRows: 0 };

  constructor(
    private readonly graph: Graph,
    private readonly o: BatcherOptions,
  ) {
    if (graph.kind !== 'decode') throw new SamplerError('SAMPLER_MODEL', 'the batcher needs a decode graph (this model is a full graph, exported before the cache)');
    this.maxBatch = o.maxBatch ?? DEFAULT_MAX_BATCH;
    this.gatherMs = o.gatherMs ?? DEFAULT_GATHER_MS;
    this.prefillRows = o.prefillRows ?? DEFAULT_PREFILL_ROWS;
    if (!Number.isInteger(this.maxBatch) || this.maxBatch < 1) throw new SamplerError('SAMPLER_INPUT', `maxBatch must be a positive integer, got ${this.maxBatch}`);
    if (!(this.gatherMs >= 0)) throw new SamplerError('SAMPLER_INPUT', `gatherMs must be ≥ 0, got ${this.gatherMs}`);
    const { nLayers, nHeads, headDim } = graph.info;
    this.slab = new KvSlab(nLayers, nHeads, headDim, graph.maxLen);
  }

  /** bytes of cache one row in flight takes */
  get bytesPerRow(): number {
    return this.slab.bytesPerRow;
  }

  /** bytes the cache holds now (it grows with the most rows in flight) */
  get cacheBytes(): number {
    return this.slab.bytes;
  }

  /** Decode one request; its samples in row order. Bad input is a SAMPLER_INPUT error for this request only. */
  decode(req: DecodeRequest): Promise<Sample[]> {
    if (this.closed) return Promise.reject(new SamplerError('SAMPLER_CLOSED', 'the model was released; load it again'));
    const bad = this.check(req);
    if (bad) return Promise.reject(new SamplerError('SAMPLER_INPUT', bad, { data: { length: req.prompt.length, maxLen: this.graph.maxLen } }));
    return new Promise<Sample[]>((resolve, reject) => {
      const samples = Array.from({ length: req.k }, () => ({ ids: [] as number[], logprobs: [] as number[], finished: false }));
      this.queue.push({ seq: this.seq++, req, samples, open: req.k, resolve, reject, failed: false });
      this.stats.requests++;
      if (!this.running) void this.loop();
    });
  }

  private check(r: DecodeRequest): string | null {
    const V = this.graph.vocab;
    if (!Number.isInteger(r.k) || r.k < 1) return `k must be a positive integer, got ${r.k}`;
    if (r.prompt.length === 0) return 'the prompt is empty; start it with BOS';
    if (r.prompt.length >= this.graph.maxLen) return `the prompt has ${r.prompt.length} tokens; the model's context is ${this.graph.maxLen} in all, so nothing can be generated (shorten the context)`;
    for (let j = 0; j < r.prompt.length; j++) {
      const x = r.prompt[j]!;
      if (!Number.isInteger(x) || x < 0 || x >= V) return `prompt token ${j} is ${x}, not an id of the model's vocabulary [0, ${V})`;
    }
    if (!(r.temperature >= 0)) return `temperature must be ≥ 0, got ${r.temperature}`;
    if (!(r.topP > 0 && r.topP <= 1)) return `topP must be in (0, 1], got ${r.topP}`;
    if (!Number.isInteger(r.maxNewTokens) || r.maxNewTokens < 1) return `maxNewTokens must be a positive integer, got ${r.maxNewTokens}`;
    return null;
  }

  /** Reject what is waiting or in flight and stop; later calls are SAMPLER_CLOSED. */
  close(): void {
    this.closed = true;
    const e = new SamplerError('SAMPLER_CLOSED', 'the model was released while this decision was being decoded');
    for (const p of this.queue.splice(0)) this.fail(p, e);
    for (const r of this.rows.splice(0)) this.fail(r.p, e);
  }

  private fail(p: Pending, e: unknown): void {
    if (p.failed) return;
    p.failed = true;
    p.reject(e);
  }

  /** Sample a row's next token from logits at `off`; false when the row ends. */
  private next(p: Pending, s: Sample, data: Float32Array, off: number): boolean {
    const { req } = p;
    const V = this.graph.vocab;
    const allowed = req.constraint ? req.constraint(s.ids, req.prompt) : null;
    const tok = pick(data, off, V, req.temperature, req.topP, allowed, req.rng);
    s.ids.push(tok);
    s.logprobs.push(logSoftmaxAt(data, off, V, req.temperature === 0 ? 1 : req.temperature, tok));
    this.stats.tokens++;
    if (tok === this.o.eosId) s.finished = true;
    return !s.finished && s.ids.length < req.maxNewTokens && req.prompt.length + s.ids.length < this.graph.maxLen;
  }

  private done(p: Pending): void {
    if (--p.open === 0 && !p.failed) p.resolve(p.samples);
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (!this.closed && (this.queue.length || this.rows.length)) {
        // idle: a short window for the other episodes' decisions to arrive
        if (!this.rows.length && this.queue.length < this.maxBatch && this.gatherMs > 0) await new Promise((r) => setTimeout(r, this.gatherMs));
        if (this.closed) return;
        await this.admit();
        if (this.rows.length) await this.step();
      }
    } catch (e) {
      // a fault of the batcher itself: nothing waits forever
      const err = runError('the batch', e);
      for (const p of this.queue.splice(0)) this.fail(p, err);
      for (const r of this.rows.splice(0)) this.fail(r.p, err);
    } finally {
      this.running = false;
    }
    // a request that arrived while the loop was finishing
    if (!this.closed && this.queue.length && !this.running) void this.loop();
  }

  /** Prefill what fits (whole requests, first come first served), sample their first tokens, give their rows slots. */
  private async admit(): Promise<void> {
    const take: Pending[] = [];
    let rows = this.rows.length;
    while (this.queue.length) {
      const p = this.queue[0]!;
      if (rows > 0 && rows + p.req.k > this.maxBatch) break;
      take.push(this.queue.shift()!);
      rows += p.req.k;
    }
    if (!take.length) return;
    // similar lengths together: less padding (padding never changes a row's numbers)
    const order = [...take].sort((a, b) => a.req.prompt.length - b.req.prompt.length);
    for (let i = 0; i < order.length; i += this.prefillRows) {
      const chunk = order.slice(i, i + this.prefillRows).filter((p) => !p.failed);
      if (!chunk.length) continue;
      let pre: PrefillOut | null = null;
      try {
        this.stats.prefillCalls++;
        pre = await this.graph.prefill(chunk.map((p) => p.req.prompt));
      } catch (e) {
        if (chunk.length === 1) {
          this.fail(chunk[0]!, runError('a prompt', e));
          continue;
        }
        // one prompt at a time, so only the one that fails fails
        this.stats.isolated++;
        for (const p of chunk) {
          try {
            this.stats.prefillCalls++;
            this.place([p], await this.graph.prefill([p.req.prompt]));
          } catch (e2) {
            this.fail(p, runError('a prompt', e2));
          }
        }
        continue;
      }
      if (this.closed) return;
      this.place(chunk, pre);
    }
  }

  private place(chunk: Pending[], pre: PrefillOut): void {
    const V = this.graph.vocab;
    chunk.forEach((p, b) => {
      if (p.failed) return;
      const keep: Sample[] = [];
      try {
        for (const s of p.samples) if (this.next(p, s, pre.logits, b * V)) keep.push(s);
        else this.done(p);
      } catch (e) {
        this.fail(p, e);
        return;
      }
      if (!keep.length) return;
      const first = this.rows.length;
      this.slab.ensure(first + keep.length);
      this.slab.fromPrefill(first, pre, b, p.req.prompt.length);
      for (let j = 1; j < keep.length; j++) this.slab.copy(first, first + j);
      for (const s of keep) this.rows.push({ p, j: p.samples.indexOf(s), s, pos: p.req.prompt.length });
      this.stats.peakRows = Math.max(this.stats.peakRows, this.rows.length);
    });
  }

  /** One token for every row in flight; rows that end leave. */
  private async step(): Promise<void> {
    const n = this.rows.length;
    const tokens = this.rows.map((r) => r.s.ids[r.s.ids.length - 1]!);
    const pos = this.rows.map((r) => r.pos);
    this.stats.stepCalls++;
    this.stats.stepRows += n;
    // each row's outputs: the batch's, or (after a failed batch) its own call's
    const got: { i: number; out: StepOut; at: number }[] = [];
    try {
      const out = await this.graph.step(tokens, pos, this.slab, 0);
      for (let i = 0; i < n; i++) got.push({ i, out, at: i });
    } catch (e) {
      if (this.closed) return;
      // row by row: a row that fails fails alone
      this.stats.isolated++;
      for (let i = 0; i < n; i++) {
        const r = this.rows[i]!;
        if (r.p.failed) continue;
        try {
          this.stats.stepCalls++;
          this.stats.stepRows++;
          got.push({ i, out: await this.graph.step([tokens[i]!], [pos[i]!], this.slab, i), at: 0 });
        } catch (e2) {
          this.fail(r.p, runError(`row ${i} of a batch of ${n}`, n === 1 ? e : e2));
        }
      }
    }
    if (this.closed) return;
    // a request's RNG is drawn in its row order, whatever slots its rows hold
    got.sort((a, b) => this.rows[a.i]!.p.seq - this.rows[b.i]!.p.seq || this.rows[a.i]!.j - this.rows[b.i]!.j);
    const ends = new Set<Row>();
    for (const g of got) this.after(this.rows[g.i]!, g.i, g.out, g.at, ends);
    // rows that ended, and every row of a failed request, leave; the last rows fill their slots
    for (let i = this.rows.length - 1; i >= 0; i--) {
      const r = this.rows[i]!;
      if (!ends.has(r) && !r.p.failed) continue;
      const last = this.rows.length - 1;
      if (i !== last) {
        this.slab.move(last, i);
        this.rows[i] = this.rows[last]!;
      }
      this.rows.pop();
    }
  }

  private after(r: Row, slot: number, out: StepOut, at: number, ends: Set<Row>): void {
    if (r.p.failed) return;
    this.slab.fromStep(slot, r.pos, out, at);
    r.pos++;
    let more: boolean;
    try {
      more = this.next(r.p, r.s, out.logits, at * this.graph.vocab);
    } catch (e) {
      this.fail(r.p, e);
      return;
    }
    if (!more) {
      ends.add(r);
      this.done(r.p);
    }
  }
}
