import { Piscina } from 'piscina';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { pack, unpack } from './codec.ts';
import { BackpressureError, ConfigError, PoolTaskError } from './errors.ts';

export const DEFAULT_BATCH_SIZE = 64;
export const DEFAULT_MAX_QUEUED = 100_000;

export interface PoolOptions {
  /** Absolute path (or file URL) of a module exporting `tasks: {name: (input) => output}` and optionally `setup()`. */
  module: string;
  /** Worker threads. @default availableParallelism() */
  threads?: number;
  /** Tasks sent per message when many are queued in the same tick. @default 64 */
  batchSize?: number;
  /** Tasks waiting in this process before run() refuses with BackpressureError. @default 100_000 */
  maxQueued?: number;
}

const PoolOptionsSchema = z
  .object({
    module: z.string().min(1, 'options.module must name the worker module (an absolute path or file URL)'),
    threads: z.number().int().min(1, 'options.threads must be a positive integer').max(256).optional(),
    batchSize: z.number().int().min(1, 'options.batchSize must be a positive integer').max(65_536).optional(),
    maxQueued: z.number().int().min(1, 'options.maxQueued must be a positive integer').optional(),
  })
  .strict();

interface Waiting {
  input: unknown;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

/**
 * A piscina pool for CPU work with the cluster's codec at the thread boundary. `run()` calls made
 * in the same tick are batched into messages of up to `batchSize` tasks, so small tasks (one env
 * step) do not pay one thread hop each.
 */
export class WorkerPool {
  readonly module: string;
  readonly threads: number;
  readonly batchSize: number;
  private readonly maxQueued: number;
  private readonly piscina: Piscina;
  private queues = new Map<string, Waiting[]>();
  private scheduled = false;
  private queued = 0;

  constructor(opts: PoolOptions) {
    const r = PoolOptionsSchema.safeParse(opts);
    if (!r.success) {
      const i = r.error.issues[0]!;
      throw new ConfigError(`options.${i.path.join('.')}`, i.message);
    }
    this.module = opts.module.startsWith('file:') ? fileURLToPath(opts.module) : opts.module;
    this.threads = opts.threads ?? availableParallelism();
    this.batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
    this.maxQueued = opts.maxQueued ?? DEFAULT_MAX_QUEUED;
    this.piscina = new Piscina({
      filename: new URL('./pool-worker.mjs', import.meta.url).href,
      minThreads: this.threads,
      maxThreads: this.threads,
      // workers get no loader flags: pool-worker.mjs registers tsx itself when needed
      execArgv: [],
    });
  }

  /** Run one task; batched with the others queued in the same tick. */
  run<O = unknown>(task: string, input: unknown): Promise<O> {
    if (this.queued >= this.maxQueued) return Promise.reject(new BackpressureError(`worker pool has ${this.queued} tasks queued (maxQueued ${this.maxQueued}); await some before adding more`));
    return new Promise<O>((resolve, reject) => {
      let q = this.queues.get(task);
      if (!q) this.queues.set(task, (q = []));
      q.push({ input, resolve: resolve as (v: unknown) => void, reject });
      this.queued++;
      if (!this.scheduled) {
        this.scheduled = true;
        queueMicrotask(() => this.flush());
      }
    });
  }

  /** Run many inputs of one task; one message per `batchSize`. Results keep the input order. */
  async runMany<O = unknown>(task: string, inputs: readonly unknown[]): Promise<O[]> {
    return Promise.all(inputs.map((i) => this.run<O>(task, i)));
  }

  private flush(): void {
    this.scheduled = false;
    for (const [task, q] of this.queues) {
      this.queues.delete(task);
      // split evenly over threads so one message does not hold all the work
      const per = Math.max(1, Math.min(this.batchSize, Math.ceil(q.length / this.threads)));
      for (let i = 0; i < q.length; i += per) void this.send(task, q.slice(i, i + per));
    }
  }

  private async send(task: string, batch: Waiting[]): Promise<void> {
    let results: [number, unknown][];
    try {
      // a copy: msgpackr packs into a shared buffer that must not be transferred away
      const data = new Uint8Array(pack(batch.map((w) => w.input)));
      const out = (await this.piscina.run({ module: this.module, task, data }, { transferList: [data.buffer as ArrayBuffer] })) as Uint8Array;
      results = unpack(out) as [number, unknown][];
    } catch (e) {
      this.queued -= batch.length;
      const err = new PoolTaskError(`worker pool (${this.module}) failed running "${task}": ${(e as Error).message}`, { cause: e, remoteStack: (e as Error).stack });
      for (const w of batch) w.reject(err);
      return;
    }
    this.queued -= batch.length;
    for (let i = 0; i < batch.length; i++) {
      const [tag, val] = results[i] as [number, unknown];
      const w = batch[i] as Waiting;
      if (tag === 0) w.resolve(val);
      else {
        const e = val as { code: string; message: string; remoteStack?: string; data?: Record<string, unknown> };
        w.reject(new PoolTaskError(`task "${task}" threw in a worker thread: ${e.message}`, { remoteStack: e.remoteStack, data: { ...(e.data ?? {}), taskCode: e.code } }));
      }
    }
  }

  /** Stop the threads. */
  async destroy(): Promise<void> {
    await this.piscina.destroy();
  }
}
