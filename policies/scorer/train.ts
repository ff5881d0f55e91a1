/**
 * Train the validation and reward models in torch (learner/valuenet.py under
 * /usr/bin/python3, one JSON request on stdin, one reply on stdout) and export both to ONNX.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DEFAULT_PYTHON, reproducibleBlasEnv } from '../../learner/index.ts';
import { ValidatorError } from './errors.ts';
import { FEATURE_DIM } from './features.ts';

export const VALUENET_SCRIPT = fileURLToPath(new URL('../../learner/valuenet.py', import.meta.url));
/** Hidden width of both MLPs (F → h → h → 1). @default 32 */
export const DEFAULT_HIDDEN = 32;
/** Full-batch Adam steps. @default 400 */
export const DEFAULT_EPOCHS = 400;
/** @default 0.01 */
export const DEFAULT_LR = 0.01;
/** @default 1e-2 (1e-4 overfitted the grammar's candidates: held-out MSE 0.108 against 0.082) */
export const DEFAULT_WEIGHT_DECAY = 1e-2;

export interface TrainOptions {
  /** training rows: features and outcomes */
  rows: readonly { features: number[]; delta: number }[];
  /** where validation.onnx and reward.onnx are written */
  outDir: string;
  /** @default 0 */
  seed?: number;
  /** @default DEFAULT_HIDDEN (32) */
  hidden?: number;
  /** @default DEFAULT_EPOCHS (400) */
  epochs?: number;
  /** @default DEFAULT_LR (0.01) */
  lr?: number;
  /** @default DEFAULT_WEIGHT_DECAY (1e-2) */
  weightDecay?: number;
  /** rows to predict with the torch models after training (the parity test uses them) */
  evalFeatures?: readonly number[][];
  /** @default '/usr/bin/python3' */
  python?: string;
}

export interface TrainedModel {
  path: string;
  params: number;
  bytes: number;
  /** final training loss (weighted BCE for validation, MSE for reward) */
  loss: number;
}

export interface TrainResult {
  validation: TrainedModel;
  reward: TrainedModel;
  /** torch's predictions of evalFeatures: P(Δ ≥ 0) and Δ̂ */
  eval: { validation: number[]; reward: number[] };
  torch: string;
  ms: number;
}

/**
 * Train both models; deterministic given rows and seed (one torch thread, seeded init).
 *
 * @example
 * const r = await trainValueModels({ rows: train, outDir: '.hr1/validator/models' });
 * r.validation.path; // .hr1/validator/models/validation.onnx
 */
export async function trainValueModels(o: TrainOptions): Promise<TrainResult> {
  if (o.rows.length < 2) throw new ValidatorError('VALIDATOR_BAD_OPTION', `train.rows needs at least 2 rows, got ${o.rows.length}; generate outcomes first`, { field: 'rows' });
  const bad = o.rows.findIndex((r) => r.features.length !== FEATURE_DIM);
  if (bad >= 0) throw new ValidatorError('VALIDATOR_MODEL_MISMATCH', `train.rows[${bad}] has ${o.rows[bad]!.features.length} features, this code makes ${FEATURE_DIM}; regenerate the outcomes`, { field: `rows[${bad}].features` });
  for (const [f, v] of [['hidden', o.hidden], ['epochs', o.epochs]] as const) {
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) throw new ValidatorError('VALIDATOR_BAD_OPTION', `train.${f} must be a positive integer, got ${String(v)}`, { field: f });
  }
  const req = {
    seed: o.seed ?? 0,
    hidden: o.hidden ?? DEFAULT_HIDDEN,
    epochs: o.epochs ?? DEFAULT_EPOCHS,
    lr: o.lr ?? DEFAULT_LR,
    weight_decay: o.weightDecay ?? DEFAULT_WEIGHT_DECAY,
    opset: 17,
    out_dir: o.outDir,
    x: o.rows.map((r) => r.features),
    y_cls: o.rows.map((r) => (r.delta >= 0 ? 1 : 0)),
    y_reg: o.rows.map((r) => r.delta),
    eval_x: o.evalFeatures ?? [],
  };
  const python = o.python ?? DEFAULT_PYTHON;
  const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number | null }>((res, rej) => {
    const child = spawn(python, [VALUENET_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...reproducibleBlasEnv(), OMP_NUM_THREADS: '1' } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e) => rej(new ValidatorError('VALIDATOR_TRAIN_FAILED', `cannot start ${python}: ${e.message}; install Debian's python3-torch and python3-onnx (see docs/LEARNER.md)`, { cause: e })));
    child.on('close', (c) => res({ stdout: out, stderr: err, code: c }));
    child.stdin.end(JSON.stringify(req));
  });
  if (code === 3) throw new ValidatorError('VALIDATOR_TRAIN_FAILED', `the trainer is missing python modules: ${stderr.trim().split('\n').pop()}; apt-get install -y python3-torch python3-onnx`);
  let reply: { ok: true; result: Record<string, unknown> } | { ok: false; error: { type: string; message: string; traceback: string } };
  try {
    reply = JSON.parse(stdout);
  } catch (e) {
    throw new ValidatorError('VALIDATOR_TRAIN_FAILED', `the trainer exited ${String(code)} without a reply; stderr: ${stderr.slice(-800)}`, { cause: e });
  }
  if (!reply.ok) throw new ValidatorError('VALIDATOR_TRAIN_FAILED', `the trainer failed: ${reply.error.type}: ${reply.error.message}`, { data: { traceback: reply.error.traceback } });
  return reply.result as unknown as TrainResult;
}
