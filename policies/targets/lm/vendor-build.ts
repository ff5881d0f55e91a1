/**
 * Writing and checking the vendored zoo (vendor.ts): `hr1 zoo vendor` re-exports built models
 * from their checkpoints with fp16 weights, measures fp16 against the build's fp32 on the
 * evaluation split and writes the copies and the manifest; `hr1 zoo verify` checks the vendored
 * files against the manifest and rebuilds the models in a temporary folder to compare the
 * compact export byte for byte (builds are deterministic).
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EpisodeRecord } from '../../../harness/index.ts';
import { LearnerProcess } from '../../../learner/process.ts';
import { EVAL_SPLIT, taskIds, type LmEnv } from './bc.ts';
import { DEFAULT_TABLE_SEEDS, vanillaEpisodes } from './table.ts';
import { LmTargetError } from './errors.ts';
import { lmTarget } from './model.ts';
import {
  checkVendoredFiles,
  DEFAULT_VENDORED_DIR,
  fileDigest,
  LEGACY_BLAS_THREADS,
  MANIFEST_FILE,
  MANIFEST_NOTE,
  MAX_SUCCESS_DRIFT,
  readManifest,
  sha256File,
  VENDORED_FORMAT,
  vendoredDir,
  vendoredModelDir,
  type VendoredEntry,
  type VendoredManifest,
  type VendoredSuccess,
} from './vendor.ts';
import { buildZoo, knownZoo, LM_TRAIN_VERSION, modelDir, readMeta, resolveConfig, zooDir, type LmMeta, type ResolvedConfig, type ZooConfig } from './zoo.ts';


export const VENDORED_README = `# Vendored zoo models

Built \`lm/<name>\` zoo models, shipped so that a fresh clone plays them without \`hr1 zoo build\`.
Each folder holds a model's decode graph with fp16 weights (\`model.onnx\`, fp32 math in ONNX
Runtime) and its build's \`meta.json\`; \`MANIFEST.json\` holds each model's config hash, the
sha256 and size of its files and its success with fp16 against the build's fp32 weights.

Written by \`hr1 zoo vendor\` (do not edit by hand); \`hr1 zoo verify\` checks the files and
rebuilds the models to compare (docs/LMTARGETS.md, "Shipped models"). The weights were trained by
this repository's code (behaviour cloning on teacher episodes of the vendored ALFWorld and WebShop
data) and are distributed under the repository's terms.
`;

const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;

/** Export `pt`'s model as the decode graph with fp16 weights into `out` (one learner process, or the one given). */
export async function exportCompact(pt: string, out: string, o: { python?: string; learner?: LearnerProcess } = {}): Promise<void> {
  const lp = o.learner ?? (await LearnerProcess.start(o.python ? { python: o.python } : {}));
  try {
    await lp.load({ path: pt, device: 'cpu' });
    await lp.export({ path: out, weights: 'fp16' });
  } finally {
    if (!o.learner) await lp.close();
  }
}

function writeManifest(dir: string, m: VendoredManifest): void {
  const models: Record<string, VendoredEntry> = {};
  for (const k of Object.keys(m.models).sort()) models[k] = m.models[k]!;
  const file = join(dir, MANIFEST_FILE);
  writeFileSync(`${file}.tmp`, `${JSON.stringify({ format: VENDORED_FORMAT, note: MANIFEST_NOTE, models }, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

export interface VendorOptions {
  /** names (`name` or `name@tiny`); default: every entry built in the zoo folder */
  only?: readonly string[];
  /** the `@tiny` builds of the chosen entries */
  tiny?: boolean;
  /** the build cache (see zooDir) */
  dir?: string;
  /** the vendored folder written. @default vendoredDir() (HR1_ZOO_VENDORED, else the repository's) */
  vendored?: string;
  zoo?: readonly ZooConfig[];
  python?: string;
  log?: (line: string) => void;
  /** evaluation tasks fp16 is measured on against fp32. @default the whole evaluation split */
  tasks?: number;
  /** @default 3 (as the zoo table) */
  seeds?: number;
  /** vendor a model even when fp16 moves its success by more than a point (recorded in the manifest) */
  allowDrift?: boolean;
  /** where fp16 moves success by more than a point, vendor the build's fp32 weights instead (twice the bytes; `weights: 'fp32'` in the manifest) */
  fp32OnDrift?: boolean;
  /** how far fp16 may move success (a share) and still be vendored. @default MAX_SUCCESS_DRIFT (1 point) */
  maxDrift?: number;
}

/**
 * Vendor built models: each is exported again from its checkpoint with fp16 weights, played
 * vanilla through the vendored lookup against the build's fp32 model (`tasks` × `seeds` of each
 * env's evaluation split), and, when its success stays within a point (or `allowDrift`), copied
 * into the vendored folder with its meta.json and entered in the manifest. Throws LM_NOT_BUILT for
 * a model that is not built (with its checkpoint), LM_VENDOR_DRIFT naming those refused.
 */
export async function vendorModels(o: VendorOptions = {}): Promise<VendoredEntry[]> {
  const zoo = o.zoo ?? knownZoo();
  const vdir = o.vendored ?? vendoredDir() ?? DEFAULT_VENDORED_DIR;
  // as the zoo table: the whole evaluation split × 3 seeds (one episode of 39 WebShop goals alone is 2.6 points)
  const tasksOf = (env: LmEnv): number => Math.min(o.tasks ?? Infinity, taskIds(env, EVAL_SPLIT[env]).length);
  const seeds = o.seeds ?? DEFAULT_TABLE_SEEDS;
  const hasBuild = (c: ResolvedConfig): boolean => readMeta(c, o.dir) !== null && existsSync(join(modelDir(c, o.dir), 'model.pt'));
  const ids = o.only
    ? o.only.map((n) => (o.tiny && !n.endsWith('@tiny') ? `${n}@tiny` : n))
    : zoo.map((z) => (o.tiny ? `${z.name}@tiny` : z.name)).filter((id) => hasBuild(resolveConfig(id, zoo)));
  if (!ids.length) throw new LmTargetError('LM_NOT_BUILT', `no ${o.tiny ? '@tiny ' : ''}zoo model is built in ${zooDir(o.dir)} to vendor; build one first (\`hr1 zoo build --only NAME${o.tiny ? ' --tiny' : ''}\`)`, { data: {} });
  const configs = ids.map((id) => resolveConfig(id, zoo));
  for (const c of configs) {
    if (!hasBuild(c)) throw new LmTargetError('LM_NOT_BUILT', `lm/${c.id} is not built with its checkpoint under ${modelDir(c, o.dir)}; vendoring exports it again from model.pt: run \`hr1 zoo build --only ${c.id}\` first`, { data: { name: c.id, command: `hr1 zoo build --only ${c.id}` } });
    const meta = readMeta(c, o.dir)!;
    if (meta.hash !== c.hash) throw new LmTargetError('LM_BAD_META', `${join(modelDir(c, o.dir), 'meta.json')} says it is the build of config hash ${meta.hash}, not ${c.hash} (lm/${c.id}); rebuild it with \`hr1 zoo build --only ${c.id} --force\``, { data: { name: c.id, hash: meta.hash } });
  }
  const stage = mkdtempSync(join(tmpdir(), 'hr1-vendor-'));
  const done: VendoredEntry[] = [];
  const refused: string[] = [];
  const lp = await LearnerProcess.start(o.python ? { python: o.python } : {});
  try {
    for (const c of configs) {
      const built = modelDir(c, o.dir);
      const folder = vendoredModelDir(c.id, stage);
      mkdirSync(folder, { recursive: true });
      // a sketch parser's build wrote its fp16 copy itself (learner/sketch.py); a decoder's is exported again from its checkpoint
      if (c.kind === 'sketch') copyFileSync(join(built, 'model.fp16.onnx'), join(folder, 'model.onnx'));
      else await exportCompact(join(built, 'model.pt'), join(folder, 'model.onnx'), { learner: lp });
      copyFileSync(join(built, 'meta.json'), join(folder, 'meta.json'));
      const blasThreads = readMeta(c, o.dir)?.blasThreads;
      const entry: VendoredEntry = {
        id: c.id,
        hash: c.hash,
        trainVersion: LM_TRAIN_VERSION,
        weights: 'fp16',
        files: { 'model.onnx': fileDigest(join(folder, 'model.onnx')), 'meta.json': fileDigest(join(folder, 'meta.json')) },
        fp32Bytes: fileDigest(join(built, 'model.onnx')).bytes,
        success: [],
        // a build from before the pin has none (verify then assumes LEGACY_BLAS_THREADS)
        ...(blasThreads !== undefined ? { blasThreads } : {}),
      };
      // the staged copy plays through the vendored lookup itself (a folder with no build)
      writeManifest(stage, { format: VENDORED_FORMAT, note: MANIFEST_NOTE, models: { [c.id]: entry } });
      const fp32 = await lmTarget(c.id, { ...(o.dir ? { dir: o.dir } : {}), vendored: false, zoo });
      const fp16 = await lmTarget(c.id, { dir: join(stage, 'no-build'), vendored: stage, zoo });
      try {
        for (const env of c.envs) {
          const tasks = tasksOf(env);
          const [a, b] = await Promise.all([vanillaEpisodes(fp32, env, tasks, seeds), vanillaEpisodes(fp16, env, tasks, seeds)]);
          const won = (rs: EpisodeRecord[]): number => rs.filter((r) => r.outcome.won).length / Math.max(1, rs.length);
          const same = a.filter((r, i) => JSON.stringify(r.steps.map((s) => s.action)) === JSON.stringify(b[i]!.steps.map((s) => s.action))).length;
          entry.success.push({ env, tasks, seeds, fp32: won(a), fp16: won(b), sameEpisodes: same, episodes: a.length } satisfies VendoredSuccess);
        }
      } finally {
        await fp32.release();
        await fp16.release();
      }
      const drift = entry.success.filter((s) => Math.abs(s.fp16 - s.fp32) > (o.maxDrift ?? MAX_SUCCESS_DRIFT) + 1e-9);
      const figures = entry.success.map((s) => `${s.env} fp16 ${pct(s.fp16)} vs fp32 ${pct(s.fp32)} (${s.sameEpisodes}/${s.episodes} episodes the same)`).join('; ');
      const kb = (n: number): string => `${(n / 1024).toFixed(0)} KiB`;
      if (drift.length && o.fp32OnDrift) {
        // the build's own fp32 graph: it plays what the build plays (the figures above say why)
        copyFileSync(join(built, 'model.onnx'), join(folder, 'model.onnx'));
        entry.weights = 'fp32';
        entry.files['model.onnx'] = fileDigest(join(folder, 'model.onnx'));
      } else if (drift.length && !o.allowDrift) {
        refused.push(`lm/${c.id}: ${figures}`);
        o.log?.(`lm/${c.id}: NOT vendored: fp16 moves success by more than 1 point: ${figures}`);
        continue;
      } else if (drift.length) entry.driftAllowed = true;
      const dest = vendoredModelDir(c.id, vdir);
      rmSync(dest, { recursive: true, force: true });
      mkdirSync(dest, { recursive: true });
      for (const f of ['model.onnx', 'meta.json']) copyFileSync(join(folder, f), join(dest, f));
      const manifest = readManifest(vdir);
      writeManifest(vdir, { ...manifest, models: { ...manifest.models, [c.id]: entry } });
      if (!existsSync(join(vdir, 'README.md'))) writeFileSync(join(vdir, 'README.md'), VENDORED_README);
      done.push(entry);
      const what = entry.weights === 'fp32' ? `${kb(entry.files['model.onnx'].bytes)} fp32, fp16 moved success by more than a point` : `${kb(entry.files['model.onnx'].bytes)} fp16, ${kb(entry.fp32Bytes)} fp32`;
      o.log?.(`lm/${c.id}: vendored (${what}; ${figures}${entry.driftAllowed ? '; drift allowed' : ''}) → ${dest}`);
    }
  } finally {
    await lp.close();
    rmSync(stage, { recursive: true, force: true });
  }
  if (refused.length) {
    throw new LmTargetError('LM_VENDOR_DRIFT', `fp16 weights move success by more than 1 point, so ${refused.length === 1 ? 'this model was' : 'these models were'} not vendored (the others were): ${refused.join('; ')}; vendor its fp32 weights with --fp32-on-drift (twice the bytes), vendor fp16 anyway with --allow-drift (recorded in the manifest), or keep playing the build`, { data: { refused } });
  }
  return done;
}

/** One model's verification. */
export interface VerifyLine {
  id: string;
  /** `match`: the rebuild's compact export is the vendored file; `files ok`: the files are the manifest's (no rebuild) */
  status: 'match' | 'close' | 'files ok' | 'MISMATCH' | 'STALE' | 'BAD FILE' | 'BUILD FAILED';
  detail: string;
  /** model.onnx sha256: the manifest's and the rebuild's */
  vendored?: string;
  rebuilt?: string;
}

export interface VerifyOptions {
  /** names (`name` or `name@tiny`); default: every vendored entry (with `tiny`, the `@tiny` ones) */
  only?: readonly string[];
  tiny?: boolean;
  /** rebuild and compare; false: check the files against the manifest only. @default true */
  rebuild?: boolean;
  vendored?: string;
  zoo?: readonly ZooConfig[];
  python?: string;
  log?: (line: string) => void;
  /** builds at once. @default 1 */
  jobs?: number;
  /**
   * the zoo folder to rebuild into; builds already there are compared as they are (a test that
   * has just built the models). @default a fresh temporary folder, removed afterwards
   */
  dir?: string;
}

/**
 * A meta.json without what a rebuild need not repeat: the timings, and the names (not part of the
 * config hash: an entry renamed since its build, e.g. kept as a control, is the same build).
 */
/**
 * How far a rebuilt weight (or a loss in meta.json) may be from the vendored one, relative to its
 * size (at least 1), and still be the same training: two fp16 rounding steps. Torch's CPU sums
 * differ in their last bits across instruction sets (a tiny model rebuilt on an AVX-512 machine:
 * 212 of 77,376 fp16 weights one rounding step apart, at most 2.7e-4).
 */
export const FLOAT_CLOSE = 2 ** -9;

const stableMeta = (m: LmMeta): Omit<LmMeta, 'ms' | 'id' | 'config'> & { config: Omit<LmMeta['config'], 'name' | 'id' | 'note'> } => {
  const { ms: _ms, id: _id, config, ...rest } = m;
  const { name: _n, id: _i, note: _note, ...c } = config;
  // a build from before the pin has no blasThreads: it ran LEGACY_BLAS_THREADS
  return { ...rest, blasThreads: m.blasThreads ?? LEGACY_BLAS_THREADS, config: c };
};

/**
 * Check vendored models: each file against the manifest's sha256, the manifest's config hash
 * against the zoo's; then (unless `rebuild: false`) rebuild them in a temporary folder (buildZoo,
 * bases of -ft variants too), export the compact form and compare its sha256 with the manifest's,
 * and the rebuilt meta.json (timings aside) with the vendored one. One line per model.
 */
export async function verifyVendored(o: VerifyOptions = {}): Promise<VerifyLine[]> {
  const zoo = o.zoo ?? knownZoo();
  const vdir = o.vendored ?? vendoredDir() ?? DEFAULT_VENDORED_DIR;
  const manifest = readManifest(vdir);
  const all = Object.keys(manifest.models).sort();
  let ids: string[];
  if (o.only) {
    ids = o.only.map((n) => (o.tiny && !n.endsWith('@tiny') ? `${n}@tiny` : n));
    const missing = ids.filter((id) => !manifest.models[id]);
    if (missing.length) throw new LmTargetError('LM_UNKNOWN', `not vendored: ${missing.map((m) => `lm/${m}`).join(', ')} (${join(vdir, MANIFEST_FILE)} has ${all.map((m) => `lm/${m}`).join(', ') || 'none'}); vendor a built model with \`hr1 zoo vendor --only NAME\``, { data: { missing } });
  } else ids = all.filter((id) => !o.tiny || id.endsWith('@tiny'));
  const lines = new Map<string, VerifyLine>();
  const configs = new Map<string, ResolvedConfig>();
  for (const id of ids) {
    const entry = manifest.models[id]!;
    let c: ResolvedConfig;
    try {
      c = resolveConfig(id, zoo);
    } catch (e) {
      lines.set(id, { id, status: 'STALE', detail: (e as Error).message });
      continue;
    }
    if (c.hash !== entry.hash) {
      lines.set(id, { id, status: 'STALE', detail: `vendored from config hash ${entry.hash}, the zoo's is ${c.hash} now; rebuild (\`hr1 zoo build --only ${id}\`) and vendor it again (\`hr1 zoo vendor --only ${id}\`)` });
      continue;
    }
    const bad = checkVendoredFiles(entry, vdir);
    if (bad) {
      lines.set(id, { id, status: 'BAD FILE', detail: `${bad.file}: ${bad.actual === null ? 'missing' : `sha256 ${bad.actual}, the manifest says ${bad.expected}`}` });
      continue;
    }
    configs.set(id, c);
    if (o.rebuild === false) lines.set(id, { id, status: 'files ok', detail: `model.onnx ${entry.files['model.onnx'].sha256.slice(0, 16)}…, meta.json ${entry.files['meta.json'].sha256.slice(0, 16)}…`, vendored: entry.files['model.onnx'].sha256 });
  }
  if (o.rebuild !== false && configs.size) {
    const tmp = o.dir ?? mkdtempSync(join(tmpdir(), 'hr1-verify-'));
    try {
      // each model rebuilt with the OpenBLAS thread count that built it (it splits the products, so it decides the bits)
      const byThreads = new Map<number, string[]>();
      for (const id of configs.keys()) {
        const n = manifest.models[id]!.blasThreads ?? LEGACY_BLAS_THREADS;
        byThreads.set(n, [...(byThreads.get(n) ?? []), id]);
      }
      for (const [blasThreads, only] of byThreads) {
        try {
          await buildZoo({ only, dir: tmp, zoo, jobs: o.jobs ?? 1, blasThreads, ...(o.log ? { log: o.log } : {}), ...(o.python ? { python: o.python } : {}) });
        } catch (e) {
          // the builds that failed are named below; the others are compared
          o.log?.(`verify: ${(e as Error).message}`);
        }
      }
      const lp = await LearnerProcess.start(o.python ? { python: o.python } : {});
      try {
        for (const [id, c] of configs) {
          const entry = manifest.models[id]!;
          const dir = modelDir(c, tmp);
          if (!existsSync(join(dir, 'model.pt'))) {
            lines.set(id, { id, status: 'BUILD FAILED', detail: 'the rebuild failed (see the log above)' });
            continue;
          }
          // fp32 weights: the rebuild's own graph; fp16: a sketch parser's build wrote its fp16 copy,
          // a decoder's is exported from its checkpoint
          const out = join(dir, entry.weights === 'fp32' ? 'model.onnx' : 'model.fp16.onnx');
          if (entry.weights !== 'fp32' && c.kind !== 'sketch') await exportCompact(join(dir, 'model.pt'), out, { learner: lp });
          const rebuilt = sha256File(out);
          const vendored = entry.files['model.onnx'].sha256;
          // other bytes: the same graph with weights a float rounding apart is the same training on
          // another CPU's kernels (torch's sums differ in the last bits across instruction sets)
          let close: Awaited<ReturnType<LearnerProcess['compareOnnx']>> | null = null;
          if (rebuilt !== vendored) {
            const cmp = await lp.compareOnnx({ a: join(vendoredModelDir(id, vdir), 'model.onnx'), b: out });
            if (!cmp.sameGraph || cmp.maxRel > FLOAT_CLOSE) {
              lines.set(id, { id, status: 'MISMATCH', detail: `model.onnx: vendored ${vendored}, rebuilt ${rebuilt}${cmp.sameGraph ? `; weights up to ${cmp.maxAbs.toExponential(2)} apart (more than float rounding)` : '; another graph'}`, vendored, rebuilt });
              continue;
            }
            close = cmp;
          }
          const a = stableMeta(JSON.parse(readFileSync(join(vendoredModelDir(id, vdir), 'meta.json'), 'utf8')) as LmMeta);
          const b = stableMeta(JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as LmMeta);
          const same = (x: unknown, y: unknown): boolean => (close && typeof x === 'number' && typeof y === 'number' ? Math.abs(x - y) <= FLOAT_CLOSE * Math.max(1, Math.abs(x), Math.abs(y)) : JSON.stringify(x) === JSON.stringify(y));
          const fields = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => !same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
          if (fields.length) lines.set(id, { id, status: 'MISMATCH', detail: `meta.json: ${fields.join(', ')} differ from the rebuild's (model.onnx ${close ? 'close' : 'matches'}, ${vendored})`, vendored, rebuilt });
          else if (close) lines.set(id, { id, status: 'close', detail: `model.onnx: the same graph; ${close.differing} of ${close.total} weights differ, by at most ${close.maxAbs.toExponential(2)} (float rounding of another CPU's kernels; vendored ${vendored.slice(0, 16)}…, rebuilt ${rebuilt.slice(0, 16)}…)`, vendored, rebuilt });
          else lines.set(id, { id, status: 'match', detail: `model.onnx ${vendored}`, vendored, rebuilt });
        }
      } finally {
        await lp.close();
      }
    } finally {
      if (!o.dir) rmSync(tmp, { recursive: true, force: true });
    }
  }
  return ids.map((id) => lines.get(id)!);
}

/** Whether every line is good (`match`, or `files ok` without a rebuild). */
export function verifyPassed(lines: readonly VerifyLine[]): boolean {
  return lines.every((l) => l.status === 'match' || l.status === 'close' || l.status === 'files ok');
}
