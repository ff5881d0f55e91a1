/**
 * Build a DBBench sketch parser (a zoo entry with `kind: 'sketch'`): synthetic tasks (synth.ts,
 * the entry's seed, rename and phrasing) → sketch examples (sketch.ts; a share `hintRate` of them
 * with a harness text beside the question, from hints.ts's banks) → learner/sketch.py (torch, one
 * thread, seeded) → model.onnx, its fp16 copy (model.fp16.onnx, what is vendored), model.pt and
 * meta.json in `dir`.
 */
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../../../cluster/rng.ts';
import { DEFAULT_PYTHON, reproducibleBlasEnv } from '../../../../learner/index.ts';
import { LmTargetError } from '../errors.ts';
import { SKILL_BANK, WARNING_BANK } from '../hints.ts';
import { LM_META_FORMAT, type LmMeta, type ResolvedConfig } from '../zoo.ts';
import { SKETCH_WORD_BUCKETS, sketchExample } from './sketch.ts';
import { synthTasks } from './synth.ts';
import { turnEventLoop } from '../../../../cluster/turn.ts';

export const SKETCH_SCRIPT = fileURLToPath(new URL('../../../../learner/sketch.py', import.meta.url));

/** the harness-like texts a training example may read beside its question */
const HARNESS_TEXTS: readonly string[] = [...SKILL_BANK, ...WARNING_BANK];

/** One example as learner/sketch.py reads it. */
interface Row {
  f: number[];
  p: number[];
  q: number[];
  c: number[];
  k: number;
  s: number;
  n: number;
  w: number[];
  t: number[];
  ss: number[];
  se: number[];
}

/** The training rows of a sketch config (deterministic for the config). */
export async function sketchRows(c: Pick<ResolvedConfig, 'episodes' | 'seed' | 'rename' | 'phrasing' | 'hintRate'>): Promise<{ rows: Row[]; tasks: number }> {
  const tasks = await synthTasks(new Rng(`lm-dbsynth:${c.seed}`), c.episodes, { rename: c.rename ?? 0, ...(c.phrasing ? { phrasing: c.phrasing } : {}) });
  const rng = new Rng(`lm-sketch-hints:${c.seed}`);
  const rows: Row[] = [];
  for (const [i, t] of tasks.entries()) {
    if (i % 2048 === 2047) await turnEventLoop();
    const extra = rng.chance(c.hintRate) ? rng.pick(HARNESS_TEXTS) : undefined;
    const e = sketchExample(t, extra);
    if (!e) continue;
    rows.push({ f: e.enc.feats, p: e.enc.pos, q: e.enc.qmask, c: e.enc.col, k: e.kind, s: e.sel, n: e.num, w: e.where, t: e.set, ss: e.spanStart, se: e.spanEnd });
  }
  return { rows, tasks: tasks.length };
}

/** Train a sketch config into `dir` (a fresh folder) and return its meta. */
export async function buildSketch(c: ResolvedConfig, dir: string, o: { python?: string; blasThreads?: number; tick?: (n: number) => void; log?: (line: string) => void }): Promise<LmMeta> {
  const t0 = performance.now();
  o.log?.(`lm/${c.id}: drawing ${c.episodes} synthetic tasks from the training split's tables, then their sketches`);
  const { rows, tasks } = await sketchRows(c);
  if (rows.length === 0) throw new LmTargetError('LM_BAD_OPTION', `lm/${c.id}: none of its ${tasks} synthetic tasks gave a sketch example; raise episodes`, { data: { name: c.id } });
  const data = join(dir, 'data.json');
  writeFileSync(data, JSON.stringify(rows));
  const t1 = performance.now();
  o.log?.(`lm/${c.id}: ${tasks} synthetic tasks → ${rows.length} sketch examples; training ${c.steps} steps`);
  const req = {
    data,
    seed: c.seed,
    steps: c.steps,
    batch: c.batch,
    lr: c.lr,
    d_model: c.dModel,
    n_layers: c.nLayers,
    n_heads: c.nHeads,
    d_ff: c.dFf,
    out: join(dir, 'model.onnx'),
    fp16_out: join(dir, 'model.fp16.onnx'),
    checkpoint: join(dir, 'model.pt'),
    opset: 17,
  };
  const python = o.python ?? DEFAULT_PYTHON;
  const blas = o.blasThreads !== undefined ? { OPENBLAS_NUM_THREADS: String(o.blasThreads) } : reproducibleBlasEnv();
  const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number | null }>((res, rej) => {
    const child = spawn(python, [SKETCH_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...blas, OMP_NUM_THREADS: '1' } });
    let out = '';
    let err = '';
    let done = 0;
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      // progress: `HR1_PROGRESS <step> <total> <loss>`
      for (const m of d.toString().matchAll(/HR1_PROGRESS (\d+) \d+/g)) {
        const s = Number(m[1]);
        o.tick?.(s - done);
        done = s;
      }
      if (err.length > 200_000) err = err.slice(-100_000);
    });
    child.on('error', (e) => rej(new LmTargetError('LM_BUILD_FAILED', `cannot start ${python}: ${e.message}; install Debian's python3-torch and python3-onnx (bin/setup.sh)`, { cause: e, data: { name: c.id } })));
    child.on('close', (code) => res({ stdout: out, stderr: err, code }));
    child.stdin.end(JSON.stringify(req));
  });
  rmSync(data, { force: true });
  if (code === 3) throw new LmTargetError('LM_BUILD_FAILED', `the sketch trainer is missing python modules: ${stderr.trim().split('\n').pop()}; apt-get install -y python3-torch python3-onnx`, { data: { name: c.id } });
  let reply: { ok: true; result: { params: number; loss_first: number; loss_last: number; steps: number; torch: string; ms: { train: number; export: number } } } | { ok: false; error: { type: string; message: string } };
  try {
    reply = JSON.parse(stdout);
  } catch (e) {
    throw new LmTargetError('LM_BUILD_FAILED', `lm/${c.id}: the sketch trainer exited ${String(code)} without a reply; stderr: ${stderr.slice(-800)}`, { cause: e, data: { name: c.id } });
  }
  if (!reply.ok) throw new LmTargetError('LM_BUILD_FAILED', `lm/${c.id}: the sketch trainer failed: ${reply.error.type}: ${reply.error.message}`, { data: { name: c.id } });
  const r = reply.result;
  const { base: _base, ...rest } = c;
  return {
    format: LM_META_FORMAT,
    id: c.id,
    hash: c.hash,
    config: { ...rest, base: null },
    words: [],
    vocabSize: SKETCH_WORD_BUCKETS,
    maxLen: c.maxLen,
    maxNewTokens: c.maxNewTokens,
    eosId: 0,
    params: r.params,
    rows: rows.length,
    decisions: tasks,
    lossFirst: r.loss_first,
    lossLast: r.loss_last,
    ms: { data: Math.round(t1 - t0), train: r.ms.train, export: r.ms.export, total: Math.round(performance.now() - t0) },
    torch: r.torch,
    blasThreads: Number(blas.OPENBLAS_NUM_THREADS ?? process.env.OPENBLAS_NUM_THREADS ?? 1),
  };
}
