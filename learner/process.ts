/**
 * The learner's torch process: spawns `learner/server.py` under /usr/bin/python3 and
 * speaks length-prefixed msgpack over its stdio (4-byte big-endian length + a msgpack map).
 * Keys are snake_case on the wire and camelCase here; the conversion happens at this seam only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Packr } from 'msgpackr';
import type { GrpoInput } from './grpo.ts';
import { LearnerDependencyError, LearnerDiedError, LearnerOpError, LearnerProtocolError, LearnerTimeoutError } from './errors.ts';

/** Debian's torch lives only under the system python. @default '/usr/bin/python3' */
export const DEFAULT_PYTHON = '/usr/bin/python3';
/** The server script. */
export const SERVER_SCRIPT = fileURLToPath(new URL('./server.py', import.meta.url));
/** Time for python to import torch and say hello. @default 60000 */
export const DEFAULT_START_TIMEOUT_MS = 60_000;
/** Time one op may take before the process is killed. @default 600000 */
export const DEFAULT_OP_TIMEOUT_MS = 600_000;
/** Largest frame accepted from the child. @default 1 GiB */
export const MAX_FRAME_BYTES = 1 << 30;

const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });

export interface LearnerProcessOptions {
  /** @default '/usr/bin/python3' */
  python?: string;
  /** extra interpreter arguments before the script (tests use `-S` to hide site packages) */
  pythonArgs?: string[];
  /** @default learner/server.py */
  script?: string;
  /** added to the child's environment (e.g. `HR1_TORCH_THREADS`) */
  env?: NodeJS.ProcessEnv;
  /** @default 60000 */
  startTimeoutMs?: number;
  /** each stderr line of the child (torch warnings); kept in a tail for error messages either way */
  onStderr?: (line: string) => void;
}

/** The learner's model: a decoder-only transformer over token ids. */
export interface EngineerModelConfig {
  vocabSize: number;
  /** @default 128 */
  dModel?: number;
  /** @default 2 */
  nLayers?: number;
  /** @default 4 */
  nHeads?: number;
  /** @default 512 */
  dFf?: number;
  /** longest prompt + completion. @default 256 */
  maxLen?: number;
  /** @default 0 */
  dropout?: number;
  /** @default 0 */
  padId?: number;
  /** @default 1 */
  bosId?: number;
  /** @default 2 */
  eosId?: number;
  /** @default true */
  tieEmbeddings?: boolean;
  /** rotary positions (RoPE) on queries and keys instead of learned absolute positions. @default false */
  rope?: boolean;
  /** token shift: each position also reads the previous token's embedding (one-layer copying; learner/model.py). @default false */
  tokenShift?: boolean;
}

export interface OptimConfig {
  /** AdamW learning rate. @default 3e-4 */
  lr?: number;
  /** @default 0 */
  weightDecay?: number;
  /** @default 0.9 */
  beta1?: number;
  /** @default 0.999 */
  beta2?: number;
  /** max global grad norm; 0 turns clipping off. @default 1 */
  gradClip?: number;
}

export interface GrpoConfig {
  /** @default 0.2 */
  epsLow?: number;
  /** @default 0.2 */
  epsHigh?: number;
  /** dual-clip constant for A < 0. @default 3 */
  clipC?: number;
  /** weight of the k3 KL to the reference; 0 = off. @default 0 */
  klCoef?: number;
  /** advantages divide by max(group std, stdFloor): reward differences far below it stay small. @default 0 */
  stdFloor?: number;
  /** optimizer steps on the same batch. @default 1 */
  updateIters?: number;
  /** logits are divided by it, as the sampler did. @default 1 */
  temperature?: number;
  /** rows per forward/backward (gradient accumulation); 0 = the whole batch. @default 0 */
  microBatchSize?: number;
  /** overrides the optimizer's learning rate from this step on */
  lr?: number;
}

export interface LearnerInfo {
  protocol: number;
  torch: string;
  cuda: boolean;
  device: string;
  threads: number;
  pid: number;
  initialized: boolean;
  params: number;
  step: number;
  seed: number;
  config: Required<EngineerModelConfig> | null;
  optim: Required<OptimConfig> | null;
  hasReference: boolean;
  /** OpenBLAS's kernel family in the child (`Haswell` where {@link reproducibleBlasEnv} pinned it), null when torch's BLAS is another */
  blas: string | null;
  /** OpenBLAS's own thread count in the child (`HR1_TORCH_THREADS`, default 1, unless `OPENBLAS_NUM_THREADS` was set), null when torch's BLAS is another */
  blasThreads: number | null;
  /** present while a Hugging Face model is loaded (hfLoad); `config` is then an {@link HfLearnerConfig} */
  hf?: HfState;
}

export interface SequenceBatch {
  /** token ids per sample; each starts with at least one token (BOS) */
  prompts: number[][];
  /** token ids per sample that the loss or the log-probs are about */
  completions: number[][];
}

export interface SftStepResult {
  loss: number;
  tokens: number;
  gradNorm: number;
  step: number;
  ms: number;
}

export interface GrpoIterMetrics {
  loss: number;
  pgLoss: number;
  kl: number;
  clipFrac: number;
  dualClipFrac: number;
  entropy: number;
  ratioMean: number;
  gradNorm: number;
}

export interface GrpoStepArgs extends SequenceBatch {
  rewards: number[];
  groupIds: (string | number)[];
  /** per-token log-probs of the sampling policy; omitted = recomputed by the learner (on-policy) */
  oldLogprobs?: number[][] | null;
  /** per-token log-probs of the reference; omitted = the reference set by setReference (when klCoef > 0) */
  refLogprobs?: number[][] | null;
  config?: GrpoConfig;
}

export interface GrpoStepResult {
  iters: GrpoIterMetrics[];
  advantages: number[];
  tokens: number;
  step: number;
  ms: number;
}

/** How an export stores its weights (learner/server.py export). */
export type ExportWeights = 'fp32' | 'fp16';

export interface FileResult {
  path: string;
  bytes: number;
  step: number;
  ms: number;
}

/** A Hugging Face architecture learner/hf.py implements. */
export type HfArch = 'llama' | 'qwen2' | 'qwen3';
/** A Linear that LoRA can adapt. */
export type HfLoraTarget = 'q_proj' | 'k_proj' | 'v_proj' | 'o_proj' | 'gate_proj' | 'up_proj' | 'down_proj';
/** Weights' dtype of an hf model; 'auto' = bfloat16 on CUDA, float32 on the CPU. */
export type HfDtype = 'auto' | 'float32' | 'bfloat16' | 'float16';

/** config.json's rope_scaling (keys camelCase here, snake_case in the file). */
export interface HfRopeScaling {
  /** the kind ('type' in older configs) */
  ropeType?: 'default' | 'linear' | 'dynamic' | 'llama3' | 'yarn';
  type?: 'default' | 'linear' | 'dynamic' | 'llama3' | 'yarn';
  factor?: number;
  /** llama3 (needed), yarn and dynamic (default max_position_embeddings) */
  originalMaxPositionEmbeddings?: number;
  /** llama3 */
  lowFreqFactor?: number;
  /** llama3 */
  highFreqFactor?: number;
  /** yarn. @default 32 */
  betaFast?: number;
  /** yarn. @default 1 */
  betaSlow?: number;
  /** yarn: overrides 0.1 ln(factor) + 1 */
  attentionFactor?: number;
}

/** A Hugging Face config.json as the learner reads and writes it (keys camelCase here). */
export interface HfModelConfig {
  architectures: string[];
  modelType: HfArch;
  hiddenSize: number;
  intermediateSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  hiddenAct: 'silu';
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: HfRopeScaling | null;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  vocabSize: number;
  /** llama and qwen3 (qwen2's q/k/v biases are unconditional) */
  attentionBias?: boolean;
  /** llama */
  mlpBias?: boolean;
  bosTokenId: number | null;
  eosTokenId: number | number[] | null;
  padTokenId?: number | null;
  torchDtype?: string;
  [field: string]: unknown;
}

/** The config info() reports for an hf model: config.json's fields plus the learner's batch limits and ids. */
export interface HfLearnerConfig extends HfModelConfig {
  maxLen: number;
  padId: number;
  bosId: number;
  eosId: number;
}

/** LoRA options (PEFT's meaning). */
export interface HfLoraOptions {
  /** rank. @default 16 */
  r?: number;
  /** the update is scaled by alpha / r. @default 32 */
  alpha?: number;
  /** @default 0 */
  dropout?: number;
  /** Linears to adapt, of {@link HfLoraTarget} (others are a LearnerOpError). @default all seven projections */
  targets?: string[];
}

/** What is loaded: the directory, the LoRA options (null when full), the weights' dtype, the batch limit. */
export interface HfState {
  dir: string;
  lora: Required<HfLoraOptions> | null;
  full: boolean;
  dtype: Exclude<HfDtype, 'auto'>;
  maxLen: number;
  arch: HfArch;
  trainableParams: number;
}

export interface HfWriteRandomArgs {
  dir: string;
  arch: HfArch;
  /** tiny: hidden 64, 2 layers, 4 heads, 2 kv heads, head_dim 16; 0.5b: Qwen2.5-0.5B's shape */
  size: 'tiny' | '0.5b';
  vocabSize: number;
  bosTokenId: number;
  eosTokenId: number;
  padTokenId?: number;
  /** @default true (both presets) */
  tieWordEmbeddings?: boolean;
  seed: number;
  /** @default 'float32' */
  dtype?: 'float32' | 'bfloat16';
  /** config.json fields over the preset's (hiddenSize, ropeScaling, attentionBias, ...) */
  overrides?: Partial<Omit<HfModelConfig, 'architectures' | 'modelType' | 'hiddenAct' | 'torchDtype'>>;
}

export interface HfWriteRandomResult {
  params: number;
  files: string[];
  config: HfModelConfig;
  ms: number;
}

export interface HfLoadArgs {
  /** a Hugging Face model directory: config.json + model.safetensors (or a sharded index) */
  dir: string;
  /** LoRA adapters (the default when full is not set); null = the defaults */
  lora?: HfLoraOptions | null;
  /** train every weight instead of adapters. @default false */
  full?: boolean;
  /** @default 'auto' */
  device?: 'auto' | 'cpu' | 'cuda';
  /** @default 'auto' */
  dtype?: HfDtype;
  /** seeds the adapters' init and torch. @default 0 */
  seed?: number;
  optim?: OptimConfig;
  /** longest prompt + completion. @default min(maxPositionEmbeddings, 4096) */
  maxLen?: number;
}

/** info() of a learner holding an hf model. */
export interface HfLearnerInfo extends Omit<LearnerInfo, 'config' | 'hf'> {
  config: HfLearnerConfig;
  hf: HfState;
}

export interface HfLoadResult extends HfLearnerInfo {
  arch: HfArch;
  trainableParams: number;
  lora: Required<HfLoraOptions> | null;
}

export interface HfSaveResult {
  dir: string;
  /** LoRA: adapter_config.json, adapter_model.safetensors (PEFT); full: config.json, model.safetensors (+ the source's tokenizer files) */
  files: string[];
  bytes: number;
  step: number;
  ms: number;
}

export interface HfWeightsResult {
  /** a safetensors file's bytes: the adapter (PEFT keys) or every weight (HF names) */
  bytes: Uint8Array;
  step: number;
}

export interface HfSetWeightsResult {
  tensors: number;
  kind: 'lora' | 'full';
  /** the sender's step, from the bytes' metadata */
  step: number | null;
}

export interface HfLogitsResult {
  /** float32 little-endian, [B, T, V] */
  logits: Uint8Array;
  shape: [number, number, number];
}

/** One of the model's own functions on small inputs (hfProbe). */
export type HfProbeArgs =
  | { fn: 'rmsnorm'; x: number[][]; weight: number[]; eps?: number }
  | { fn: 'rope'; x: number[][][]; positions: number[]; theta?: number; scaling?: HfRopeScaling | null; maxPosition?: number }
  | { fn: 'gqa'; q: number[][][]; k: number[][][]; v: number[][][]; causal?: boolean };

export interface HfDecodeStartArgs {
  prompts: number[][];
  /** rows per prompt: row r samples after prompt floor(r / k). @default 1 */
  k?: number;
  /** row r draws from a generator seeded from (seed, r). @default 0 */
  seed?: number;
  /** @default 1 */
  temperature?: number;
  /** @default 1 */
  topP?: number;
}

export interface HfDecodeStepArgs {
  session: number;
  /** the rows that take a token this step */
  rows: number[];
  /** per row of `rows`: the token ids allowed (one id is taken without a draw), or null for any */
  allowed: (number[] | null)[];
}

export interface HfDecodeStepResult {
  tokens: number[];
  /** log-softmax of the unmasked logits / temperature at the token (what logprobs() computes) */
  logprobs: number[];
  /** log-prob under the masked, top-p-truncated distribution actually sampled from */
  maskedLogprobs: number[];
}

const snake = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (k: string): string => k.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

function mapKeys(x: unknown, f: (k: string) => string): unknown {
  if (Array.isArray(x)) return typeof x[0] === 'number' ? x : x.map((v) => mapKeys(v, f));
  if (x === null || typeof x !== 'object' || x instanceof Uint8Array) return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) if (v !== undefined) out[f(k)] = mapKeys(v, f);
  return out;
}

interface Pending {
  op: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * The environment that makes a torch child's float results the same on every x86-64 machine, and
 * its BLAS as single-threaded as its torch.
 *
 * Kernels: OpenBLAS (Debian's torch does its matrix products through it) picks its kernels by CPU,
 * an AVX-512 machine others than an AVX2 one, and the kernels sum in other orders: the same
 * training then gives other bits on another machine, and GRPO, sampling from those weights,
 * follows another path (measured: a product of two random matrices differs in its bytes between
 * the SkylakeX and the Haswell kernels on one AVX-512 machine). On an x86-64 CPU with AVX2 this
 * pins the Haswell kernels, which every such CPU runs; nothing where the user set
 * `OPENBLAS_CORETYPE`, on other CPUs, or where /proc/cpuinfo cannot be read.
 *
 * Threads: OpenBLAS keeps its own thread pool, one thread per core, whatever
 * `torch.set_num_threads` says; its threads wait for each other by spinning on sched_yield, and
 * how it splits a product depends on the count, so the bits depended on the machine's core count
 * and a learner took every core (measured on a 2-core machine: a tiny zoo build made 700,000
 * sched_yield calls; an xs training step took 102 ms on one thread against 739 ms on two beside a
 * loaded machine, and gave other weights). `OPENBLAS_NUM_THREADS` is set to `HR1_TORCH_THREADS`
 * (default 1) on every platform, unless the user set `OPENBLAS_NUM_THREADS`.
 */
export function reproducibleBlasEnv(env: NodeJS.ProcessEnv = process.env, arch: string = process.arch, cpuinfo: () => string = procCpuinfo): Record<string, string> {
  const out: Record<string, string> = {};
  if (env.OPENBLAS_NUM_THREADS === undefined) out.OPENBLAS_NUM_THREADS = env.HR1_TORCH_THREADS ?? '1';
  if (env.OPENBLAS_CORETYPE !== undefined || arch !== 'x64') return out;
  let info = '';
  try {
    info = cpuinfo();
  } catch {
    return out;
  }
  if (/^flags\s*:.*\bavx2\b/m.test(info)) out.OPENBLAS_CORETYPE = 'Haswell';
  return out;
}

// the CPU does not change while the process runs: read once (zoo builds start many learners)
let cpuinfoText: string | undefined;
function procCpuinfo(): string {
  return (cpuinfoText ??= readFileSync('/proc/cpuinfo', 'utf8'));
}

/**
 * One learner child process.
 *
 * @example
 * const lp = await LearnerProcess.start();
 * await lp.init({ config: { vocabSize: 64 }, seed: 1 });
 * await lp.sftStep({ prompts: [[1, 5]], completions: [[5, 2]] });
 * await lp.close();
 */
export class LearnerProcess {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private buf: Buffer = Buffer.alloc(0);
  private stderrTail = '';
  private exitListeners: ((e: LearnerDiedError) => void)[] = [];
  private closing = false;
  private exited = false;
  private hello: ((v: LearnerInfo) => void) | undefined;
  readonly exitedPromise: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly python: string,
    private readonly opts: LearnerProcessOptions,
  ) {
    this.exitedPromise = new Promise((r) => child.once('exit', () => r()));
  }

  /** Spawn the server and wait for its hello. Rejects with {@link LearnerDependencyError} when python, torch, numpy, msgpack or onnx is missing. */
  static async start(opts: LearnerProcessOptions = {}): Promise<LearnerProcess> {
    const python = opts.python ?? DEFAULT_PYTHON;
    const child = spawn(python, [...(opts.pythonArgs ?? []), opts.script ?? SERVER_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...reproducibleBlasEnv({ ...process.env, ...opts.env }), PYTHONUNBUFFERED: '1', ...opts.env } });
    const lp = new LearnerProcess(child, python, opts);
    return lp.handshake(opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
  }

  private handshake(timeoutMs: number): Promise<LearnerProcess> {
    const child = this.child;
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (e: Error | undefined, info?: LearnerInfo): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (e) {
          this.closing = true;
          child.kill('SIGKILL');
          reject(e);
        } else {
          this.info0 = info;
          resolve(this);
        }
      };
      const timer = setTimeout(() => finish(new LearnerTimeoutError('start', timeoutMs)), timeoutMs);
      this.hello = (info) => finish(undefined, info);
      child.once('error', (e: NodeJS.ErrnoException) => finish(new LearnerDependencyError(this.python, [], e.code === 'ENOENT' ? `${this.python} not found` : e.message, { cause: e })));
      child.stdout!.on('data', (d: Buffer) => this.onData(d));
      child.stderr!.on('data', (d: Buffer) => this.onStderr(d));
      child.stdin!.on('error', () => {}); // EPIPE after a death is reported through 'exit'
      child.once('exit', (code, signal) => {
        this.exited = true;
        const m = /HR1_LEARNER_MISSING ([^|]*)\|(.*)/.exec(this.stderrTail);
        if (!done) {
          if (code === 3 && m) finish(new LearnerDependencyError(this.python, m[1]!.trim().split(/\s+/), m[2]!.trim()));
          else finish(new LearnerDiedError('start', code, signal, this.stderrTail));
          return;
        }
        this.onExit(code, signal);
      });
    });
  }

  private info0: LearnerInfo | undefined;

  /** What the server said on start (torch version, device, pid). */
  get helloInfo(): LearnerInfo {
    return this.info0!;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return !this.exited;
  }

  /** Called once if the process dies other than by {@link close}; pending calls reject with the same error naming their op. */
  onDeath(cb: (e: LearnerDiedError) => void): void {
    this.exitListeners.push(cb);
  }

  private onStderr(d: Buffer): void {
    const s = d.toString();
    this.stderrTail = (this.stderrTail + s).slice(-4000);
    if (this.opts.onStderr) for (const line of s.split('\n')) if (line.trim()) this.opts.onStderr(line);
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    const ops = [...this.pending.values()];
    this.pending.clear();
    for (const p of ops) {
      clearTimeout(p.timer);
      p.reject(new LearnerDiedError(p.op, code, signal, this.stderrTail));
    }
    if (!this.closing) {
      const e = new LearnerDiedError(ops[0]?.op ?? 'idle', code, signal, this.stderrTail);
      for (const cb of this.exitListeners) cb(e);
    }
  }

  private onData(d: Buffer): void {
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    while (this.buf.length >= 4) {
      const n = this.buf.readUInt32BE(0);
      if (n > MAX_FRAME_BYTES) return this.fail(new LearnerProtocolError(`the learner sent a frame of ${n} bytes (limit ${MAX_FRAME_BYTES}); its stdout is out of sync — is something printing to it?`));
      if (this.buf.length < 4 + n) return;
      const body = this.buf.subarray(4, 4 + n);
      this.buf = this.buf.subarray(4 + n);
      let msg: { id?: number; ok?: boolean; result?: unknown; error?: { type?: string; message?: string; traceback?: string } };
      try {
        msg = packr.unpack(body) as typeof msg;
      } catch (e) {
        return this.fail(new LearnerProtocolError(`a frame from the learner does not decode as msgpack: ${(e as Error).message}`, { cause: e }));
      }
      if (msg.id === 0 && this.hello) {
        const h = this.hello;
        this.hello = undefined;
        h(mapKeys(msg.result, camel) as LearnerInfo);
        continue;
      }
      const p = this.pending.get(msg.id ?? -1);
      if (!p) {
        // a reply without a live request (e.g. an error about an undecodable request) is reported, never dropped silently
        if (!msg.ok) this.opts.onStderr?.(`learner error without a request: ${msg.error?.type}: ${msg.error?.message}`);
        continue;
      }
      this.pending.delete(msg.id!);
      clearTimeout(p.timer);
      if (msg.ok) p.resolve(mapKeys(msg.result, camel));
      else p.reject(new LearnerOpError(p.op, msg.error?.type ?? 'Error', msg.error?.message ?? 'no message', msg.error?.traceback ?? ''));
    }
  }

  private fail(e: Error): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(e);
    }
    this.pending.clear();
    this.child.kill('SIGKILL');
  }

  /** Send one op; args keys are converted to snake_case, result keys to camelCase. */
  call<T = unknown>(op: string, args: object = {}, opts: { timeoutMs?: number } = {}): Promise<T> {
    if (this.exited) return Promise.reject(new LearnerDiedError(op, this.child.exitCode, this.child.signalCode, this.stderrTail));
    const id = this.nextId++;
    const body = packr.pack({ id, op, args: mapKeys(args, snake) });
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length, 0);
    return new Promise<T>((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? DEFAULT_OP_TIMEOUT_MS;
      const timer = setTimeout(() => {
        if (!this.pending.delete(id)) return;
        reject(new LearnerTimeoutError(op, timeoutMs));
        this.child.kill('SIGKILL');
      }, timeoutMs);
      this.pending.set(id, { op, resolve: resolve as (v: unknown) => void, reject, timer });
      this.child.stdin!.write(Buffer.concat([head, body]));
    });
  }

  init(a: { config: EngineerModelConfig; optim?: OptimConfig; seed?: number; device?: 'auto' | 'cpu' | 'cuda' }): Promise<LearnerInfo> {
    return this.call('init', a);
  }
  info(): Promise<LearnerInfo> {
    return this.call('info');
  }
  /**
   * One SFT step. `promptTargets[i]` lists positions inside prompt i whose tokens are labels too
   * (each predicted from the position before it), e.g. the earlier actions of a behaviour-cloning window.
   */
  sftStep(a: SequenceBatch & { lr?: number; microBatchSize?: number; promptTargets?: number[][] }): Promise<SftStepResult> {
    return this.call('sft_step', a);
  }
  grpoStep(a: GrpoStepArgs): Promise<GrpoStepResult> {
    return this.call('grpo_step', a);
  }
  logprobs(a: SequenceBatch & { temperature?: number }): Promise<{ logprobs: number[][]; entropy: number[][] }> {
    return this.call('logprobs', a);
  }
  /** Snapshot the current weights as the KL reference. */
  setReference(): Promise<{ step: number }> {
    return this.call('set_reference');
  }
  /** The pure GRPO math of grpo.py on the given per-token values (float64), for cross-checks. */
  grpoMath(a: GrpoInput): Promise<{ advantages: number[]; ratio: number[][]; perTokenLoss: number[][]; pgLoss: number; clipFrac: number; dualClipFrac: number; kl: number; loss: number }> {
    return this.call('grpo_math', a);
  }
  /**
   * ONNX (opset 17). graph 'decode' (the default): the key/value-cache graph learner/graph.ts
   * runs (input_ids, pos, logit_pos, past_k_i, past_v_i → logits, k_i, v_i); 'full': input_ids
   * [B, T] int64 → logits [B, T, V] float32 at every position (the path before the cache).
   * weights 'fp16': the weights stored as float16 in the file, each Cast back to float (the math
   * stays fp32, on fp16-rounded weights; a tied transposed copy stored once), metadata
   * `hr1_weights: fp16`; about half the bytes (the vendored zoo, docs/LMTARGETS.md). @default 'fp32'
   */
  export(a: { path: string; opset?: number; graph?: 'decode' | 'full'; weights?: ExportWeights }): Promise<FileResult & { opset: number; graph: 'decode' | 'full'; weights: ExportWeights }> {
    return this.call('export', a);
  }
  save(a: { path: string }): Promise<FileResult> {
    return this.call('save', a);
  }
  /** Two ONNX files' graphs and weights compared (hr1 zoo verify): the same graph, and how far apart the float weights are. */
  compareOnnx(a: { a: string; b: string }): Promise<{ sameGraph: boolean; maxAbs: number; maxRel: number; differing: number; total: number }> {
    return this.call('compare_onnx', a);
  }
  load(a: { path: string; device?: 'auto' | 'cpu' | 'cuda' }): Promise<LearnerInfo> {
    return this.call('load', a);
  }
  /** Write a seeded random Hugging Face checkpoint (config.json + model.safetensors) of a preset shape. */
  hfWriteRandom(a: HfWriteRandomArgs): Promise<HfWriteRandomResult> {
    return this.call('hf_write_random', a);
  }
  /** Replace the model by a Hugging Face llama/qwen2/qwen3 checkpoint (LoRA unless `full`); sftStep, grpoStep, logprobs then train and score it. */
  hfLoad(a: HfLoadArgs): Promise<HfLoadResult> {
    return this.call('hf_load', a);
  }
  /** Save the hf model: the LoRA adapter in PEFT's layout, or (full) config.json + model.safetensors. */
  hfSave(a: { dir: string }): Promise<HfSaveResult> {
    return this.call('hf_save', a);
  }
  /** The trainable weights (adapter, or all when full) as safetensors bytes, for a sampler's hfSetWeights. */
  hfWeights(): Promise<HfWeightsResult> {
    return this.call('hf_weights');
  }
  /** Load hfWeights' bytes into this process's hf model (the same base and LoRA shape); exact. */
  hfSetWeights(a: { bytes: Uint8Array }): Promise<HfSetWeightsResult> {
    return this.call('hf_set_weights', a);
  }
  /** Logits of equal-length id rows (adapter false = the base model); float32 bytes [B, T, V]. */
  hfLogits(a: { ids: number[][]; adapter?: boolean }): Promise<HfLogitsResult> {
    return this.call('hf_logits', a);
  }
  /** Run the hf model's own rmsnorm, rope or gqa attention on small inputs (for hand-computed checks). */
  hfProbe(a: HfProbeArgs): Promise<{ out: number[][] | number[][][] }> {
    return this.call('hf_probe', a);
  }
  /** Open a key/value-cached sampling session: each prompt prefilled once, shared by its k rows. */
  hfDecodeStart(a: HfDecodeStartArgs): Promise<{ session: number; rows: number }> {
    return this.call('hf_decode_start', a);
  }
  /** One token for each listed row, sampled under its allowed ids (deterministic per (seed, row)). */
  hfDecodeStep(a: HfDecodeStepArgs): Promise<HfDecodeStepResult> {
    return this.call('hf_decode_step', a);
  }
  /** Free a sampling session's cache. */
  hfDecodeEnd(a: { session: number }): Promise<{ session: number; open: number }> {
    return this.call('hf_decode_end', a);
  }

  /** Ask the server to exit; kill it if it does not within `graceMs`. */
  async close(graceMs = 2000): Promise<void> {
    if (this.exited) return;
    this.closing = true;
    const t = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      await this.call('shutdown', {}, { timeoutMs: graceMs }).catch(() => {});
      await this.exitedPromise;
    } finally {
      clearTimeout(t);
    }
  }

  /** Kill the process at once (no death is reported). */
  async kill(): Promise<void> {
    this.closing = true;
    if (!this.exited) this.child.kill('SIGKILL');
    await this.exitedPromise;
  }
}
