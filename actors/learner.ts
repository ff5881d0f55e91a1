/**
 * Learner actor: owns the torch process (learner/server.py under /usr/bin/python3),
 * runs SFT and GRPO steps, checkpoints after each update, and exports the engineer to ONNX into
 * the object store so samplers can load it by name. If the process dies, the op in flight fails
 * with LEARNER_DIED naming it, and the process restarts from the last checkpoint.
 */
import { mkdtempSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { defineActor, type ActorContext } from '../cluster/actor.ts';
import type { Cluster } from '../cluster/client.ts';
import { Hr1Error } from '../cluster/errors.ts';
import { LearnerDiedError, LearnerProcess, type LearnerErrorCode, type LearnerInfo, type LearnerProcessOptions } from '../learner/index.ts';

/** Process restarts the actor tries before it gives up. @default 5 */
export const DEFAULT_MAX_CHILD_RESTARTS = 5;
/** Exported ONNX objects kept in the store per learner (older ones are deleted). @default 3 */
export const DEFAULT_KEEP_EXPORTS = 3;
/** @default 'engineer' */
export const DEFAULT_OBJECT_PREFIX = 'engineer';

const ModelConfigSchema = z
  .object({
    vocabSize: z.number().int().min(3),
    dModel: z.number().int().positive().optional(),
    nLayers: z.number().int().positive().optional(),
    nHeads: z.number().int().positive().optional(),
    dFf: z.number().int().positive().optional(),
    maxLen: z.number().int().min(2).optional(),
    dropout: z.number().min(0).max(1).optional(),
    padId: z.number().int().min(0).optional(),
    bosId: z.number().int().min(0).optional(),
    eosId: z.number().int().min(0).optional(),
    tieEmbeddings: z.boolean().optional(),
  })
  .strict();

const OptimSchema = z.object({ lr: z.number().positive().optional(), weightDecay: z.number().min(0).optional(), beta1: z.number().optional(), beta2: z.number().optional(), gradClip: z.number().min(0).optional() }).strict();

const GrpoConfigSchema = z
  .object({
    epsLow: z.number().min(0).max(1).optional(),
    epsHigh: z.number().min(0).optional(),
    clipC: z.number().gt(1, 'clipC must be > 1 (dual clip bounds the loss at −A·c)').optional(),
    klCoef: z.number().min(0).optional(),
    stdFloor: z.number().min(0).optional(),
    updateIters: z.number().int().min(1).max(64).optional(),
    temperature: z.number().positive().optional(),
    microBatchSize: z.number().int().min(0).optional(),
    lr: z.number().positive().optional(),
  })
  .strict();

const Ids = z.array(z.array(z.number().int().min(0)));
const Batch = z.object({ prompts: Ids, completions: Ids });

const OnnxRef = z.object({ name: z.string(), bytes: z.number(), step: z.number(), exportMs: z.number() });
export type OnnxRef = z.infer<typeof OnnxRef>;

const InfoSchema = z.looseObject({ device: z.string(), torch: z.string(), cuda: z.boolean(), pid: z.number(), step: z.number(), params: z.number(), restarts: z.number(), checkpoint: z.string().nullable(), lastOnnx: OnnxRef.nullable(), lastDeath: z.string().nullable(), blas: z.string().nullable().optional() });

/** An engineer in the Hugging Face layout (learner/hf.py): LoRA adapters by default, full weights with `full`. */
const HfArgsSchema = z
  .object({
    /** the checkpoint folder: config.json, *.safetensors, tokenizer.json */
    dir: z.string().min(1),
    lora: z.object({ r: z.number().int().min(1).default(16), alpha: z.number().positive().default(32), dropout: z.number().min(0).max(1).default(0), targets: z.array(z.string()).min(1).optional() }).strict().nullable().default({ r: 16, alpha: 32, dropout: 0 }),
    /** train every weight instead of adapters (then `lora` is ignored) */
    full: z.boolean().default(false),
    dtype: z.enum(['auto', 'float32', 'bfloat16']).default('auto'),
    maxLen: z.number().int().min(2).optional(),
  })
  .strict();
export type HfLearnerArgs = z.input<typeof HfArgsSchema>;

const ArgsSchema = z.object({
  /** the built-in engineer's config; ignored when `hf` is given */
  model: ModelConfigSchema.optional(),
  /** an hf: engineer instead of the built-in one; updates are published as weights (safetensors) rather than ONNX */
  hf: HfArgsSchema.optional(),
  optim: OptimSchema.optional(),
  seed: z.number().int().default(0),
  device: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
  /** where `last.pt` lives; a fresh temp dir by default */
  checkpointDir: z.string().optional(),
  /** start from this checkpoint instead of a fresh init */
  resume: z.string().optional(),
  objectPrefix: z.string().regex(/^[A-Za-z0-9_.\/=-]{1,120}$/).default(DEFAULT_OBJECT_PREFIX),
  /** export to ONNX into the object store after each update (and once at start) */
  exportOnUpdate: z.boolean().default(true),
  keepExports: z.number().int().min(1).default(DEFAULT_KEEP_EXPORTS),
  maxChildRestarts: z.number().int().min(-1).default(DEFAULT_MAX_CHILD_RESTARTS),
  python: z.string().optional(),
  pythonArgs: z.array(z.string()).optional(),
});
export type LearnerArgs = z.input<typeof ArgsSchema>;

interface State {
  args: z.output<typeof ArgsSchema>;
  proc: LearnerProcess;
  /** set while the process is being restarted; every op waits for it */
  restarting: Promise<void> | undefined;
  restarts: number;
  lastDeath: string | null;
  checkpoint: string | null;
  dir: string;
  exports: string[];
  lastOnnx: OnnxRef | null;
  ctx: ActorContext;
  closed: boolean;
}

function procOptions(a: State['args'], ctx: ActorContext): LearnerProcessOptions {
  const onStderr = (l: string) => {
    process.stderr.write(`[learner] ${l}\n`);
    // the python side's stderr reaches `hr1 logs --level info` too (rate-limited on the node)
    ctx.log.info(l);
  };
  return { ...(a.python ? { python: a.python } : {}), ...(a.pythonArgs ? { pythonArgs: a.pythonArgs } : {}), onStderr };
}

function watch(s: State): void {
  const proc = s.proc;
  proc.onDeath((e) => {
    if (s.closed || s.proc !== proc) return;
    s.lastDeath = e.message;
    // prints here as before and reaches every observer of the cluster
    s.ctx.log.warn(`learner process: ${e.message}; restarting from ${s.checkpoint ?? 'a fresh init'}`);
    s.restarting = restart(s).finally(() => (s.restarting = undefined));
    s.restarting.catch(() => {});
  });
}

async function restart(s: State): Promise<void> {
  const max = s.args.maxChildRestarts;
  if (max !== -1 && s.restarts >= max) throw new Hr1Error<LearnerErrorCode>('LEARNER_GAVE_UP', `the learner process died ${s.restarts + 1} times (maxChildRestarts ${max}); last: ${s.lastDeath}`, { data: { restarts: s.restarts } });
  s.restarts++;
  const proc = await LearnerProcess.start(procOptions(s.args, s.ctx));
  if (s.checkpoint) await proc.load({ path: s.checkpoint, device: s.args.device });
  else await initModel(proc, s.args);
  s.proc = proc;
  watch(s);
}

/** A fresh model in a started process: the built-in engineer's init, or an hf: checkpoint's load. */
async function initModel(proc: LearnerProcess, a: State['args']): Promise<void> {
  if (a.hf) {
    const h = a.hf;
    await proc.hfLoad({ dir: h.dir, lora: h.full ? null : h.lora, full: h.full, device: a.device, dtype: h.dtype, seed: a.seed, optim: a.optim ?? {}, ...(h.maxLen ? { maxLen: h.maxLen } : {}) });
    return;
  }
  if (!a.model) throw new Hr1Error<LearnerErrorCode>('LEARNER_BAD_ARGS', 'the learner needs a model: args.model (the built-in engineer) or args.hf (a Hugging Face-layout checkpoint)');
  await proc.init({ config: a.model, optim: a.optim ?? {}, seed: a.seed, device: a.device });
}

/** Run one op on the live process: waits for a restart in progress; a death during the op rejects with LEARNER_DIED naming it. */
async function op<T>(s: State, f: (p: LearnerProcess) => Promise<T>): Promise<T> {
  if (s.restarting) await s.restarting;
  return f(s.proc);
}

async function checkpoint(s: State): Promise<void> {
  const path = join(s.dir, 'last.pt');
  await s.proc.save({ path });
  s.checkpoint = path;
}

/**
 * Publish the policy into the object store: the built-in engineer as ONNX (what EngineerSampler
 * loads), an hf: engineer as the safetensors of its trainable weights (what HfSampler loads).
 */
async function exportOnnx(s: State, name?: string): Promise<OnnxRef> {
  const objects = (s.ctx.services as Cluster | undefined)?.objects;
  if (!objects) throw new Hr1Error<LearnerErrorCode>('NO_OBJECT_STORE', 'the learner has no object store: spawn it through a cluster node (ctx.services is the cluster client)');
  let r: { step: number; bytes: number; ms: number };
  let objName: string;
  if (s.args.hf) {
    const t0 = performance.now();
    const w = await s.proc.hfWeights();
    r = { step: w.step, bytes: w.bytes.byteLength, ms: performance.now() - t0 };
    objName = name ?? `${s.args.objectPrefix}/step-${r.step}.safetensors`;
    await objects.put(objName, w.bytes);
  } else {
    const path = join(s.dir, 'export.onnx');
    r = await s.proc.export({ path });
    objName = name ?? `${s.args.objectPrefix}/step-${r.step}.onnx`;
    await objects.put(objName, await readFile(path));
  }
  if (!name) {
    s.exports = s.exports.filter((n) => n !== objName);
    s.exports.push(objName);
    while (s.exports.length > s.args.keepExports) await objects.delete(s.exports.shift()!).catch(() => false);
  }
  const ref = { name: objName, bytes: r.bytes, step: r.step, exportMs: r.ms };
  if (!name) s.lastOnnx = ref;
  return ref;
}

async function afterUpdate(s: State): Promise<OnnxRef | null> {
  await checkpoint(s);
  return s.args.exportOnUpdate ? exportOnnx(s) : null;
}

const IterSchema = z.object({ loss: z.number(), pgLoss: z.number(), kl: z.number(), clipFrac: z.number(), dualClipFrac: z.number(), entropy: z.number(), ratioMean: z.number(), gradNorm: z.number() });

export const Learner = defineActor({
  name: 'Learner',
  args: ArgsSchema,
  protocol: {
    sftStep: { input: Batch.extend({ lr: z.number().positive().optional(), microBatchSize: z.number().int().min(0).optional() }), output: z.object({ loss: z.number(), tokens: z.number(), gradNorm: z.number(), step: z.number(), ms: z.number(), onnx: OnnxRef.nullable() }) },
    grpoStep: {
      input: Batch.extend({
        rewards: z.array(z.number()),
        groupIds: z.array(z.union([z.string(), z.number()])),
        oldLogprobs: z.array(z.array(z.number())).nullable().optional(),
        refLogprobs: z.array(z.array(z.number())).nullable().optional(),
        config: GrpoConfigSchema.optional(),
      }),
      output: z.object({ iters: z.array(IterSchema), advantages: z.array(z.number()), tokens: z.number(), step: z.number(), ms: z.number(), onnx: OnnxRef.nullable() }),
    },
    logprobs: { input: Batch.extend({ temperature: z.number().positive().optional() }), output: z.object({ logprobs: z.array(z.array(z.number())), entropy: z.array(z.array(z.number())) }) },
    setReference: { input: z.null(), output: z.object({ step: z.number() }) },
    /** export now; `name` puts it under that object name instead of `<prefix>/step-N.onnx` */
    export: { input: z.object({ name: z.string().optional() }), output: OnnxRef },
    save: { input: z.object({ path: z.string() }), output: z.object({ path: z.string(), bytes: z.number(), step: z.number(), ms: z.number() }) },
    /** an hf: engineer in the Hugging Face layout: the PEFT adapter folder (LoRA) or config.json + model.safetensors (full) */
    saveHf: { input: z.object({ dir: z.string() }), output: z.object({ files: z.array(z.string()), bytes: z.number() }) },
    load: { input: z.object({ path: z.string() }), output: z.object({ step: z.number(), onnx: OnnxRef.nullable() }) },
    info: { input: z.null(), output: InfoSchema },
  },
  create: async (args, ctx) => {
    const dir = args.checkpointDir ?? mkdtempSync(join(tmpdir(), 'hr1-learner-'));
    const proc = await LearnerProcess.start(procOptions(args, ctx));
    try {
      if (args.resume) await proc.load({ path: args.resume, device: args.device });
      else await initModel(proc, args);
    } catch (e) {
      await proc.kill();
      throw e;
    }
    const s: State = { args, proc, restarting: undefined, restarts: 0, lastDeath: null, checkpoint: null, dir, exports: [], lastOnnx: null, ctx, closed: false };
    watch(s);
    await op(s, () => afterUpdate(s));
    return s;
  },
  handlers: {
    sftStep: async (s, a) => {
      const r = await op(s, (p) => p.sftStep(a));
      return { ...r, onnx: await afterUpdate(s) };
    },
    grpoStep: async (s, a) => {
      const r = await op(s, (p) => p.grpoStep(a));
      return { ...r, onnx: await afterUpdate(s) };
    },
    logprobs: (s, a) => op(s, (p) => p.logprobs(a)),
    setReference: async (s) => {
      const r = await op(s, (p) => p.setReference());
      await checkpoint(s);
      return r;
    },
    export: (s, a) => op(s, () => exportOnnx(s, a.name)),
    save: (s, a) => op(s, (p) => p.save(a)),
    saveHf: (s, a) => {
      if (!s.args.hf) throw new Hr1Error<LearnerErrorCode>('LEARNER_BAD_ARGS', 'saveHf: this learner trains the built-in engineer; save it with save({path}) or export()');
      return op(s, (p) => p.hfSave({ dir: a.dir }));
    },
    load: async (s, a) => {
      const info = await op(s, (p) => p.load({ path: a.path, device: s.args.device }));
      return { step: info.step, onnx: await afterUpdate(s) };
    },
    info: async (s) => {
      const i: LearnerInfo = await op(s, (p) => p.info());
      return { ...i, restarts: s.restarts, checkpoint: s.checkpoint, lastOnnx: s.lastOnnx, lastDeath: s.lastDeath };
    },
  },
  destroy: async (s) => {
    s.closed = true;
    await s.restarting?.catch(() => {});
    await s.proc.close();
    if (!s.args.checkpointDir) await rm(s.dir, { recursive: true, force: true });
  },
});

export { LearnerDiedError };
