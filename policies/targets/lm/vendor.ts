/**
 * The vendored zoo: built zoo models shipped in the repository in a compact form (the decode
 * graph with fp16 weights, and the build's meta.json), so a fresh clone plays a zoo target
 * without a build.
 *
 * ```
 * policies/targets/lm/vendored/
 *   MANIFEST.json            per model: config hash, sha256 and bytes of each file, fp16 vs fp32 success
 *   README.md
 *   <id>/model.onnx          (fp16 weights, fp32 math; learner export {weights: 'fp16'})
 *   <id>/meta.json           (the build's meta.json, as built)
 * ```
 *
 * Lookup ({@link locateModel}): the build cache (`.hr1/zoo/<hash>/`, zoo.ts) when the model is
 * built there, else the vendored copy when its manifest entry's config hash is the zoo's hash of
 * that name now. A vendored copy of another hash is stale (LM_STALE, naming how to rebuild); a
 * vendored file whose sha256 is not the manifest's is LM_BAD_HASH (checked on first load). Writing
 * and verifying vendored copies: vendor-build.ts (`hr1 zoo vendor`, `hr1 zoo verify`).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LmEnv } from './bc.ts';
import { LmTargetError } from './errors.ts';
import { modelDir, readMeta, resolveConfig, zooDir, type LmMeta, type ResolvedConfig } from './zoo.ts';

/** MANIFEST.json format */
export const VENDORED_FORMAT = 'hr1-vendored/1';
/** the manifest's file name in the vendored folder */
export const MANIFEST_FILE = 'MANIFEST.json';
/** names another vendored folder (tests, a vendoring run kept out of the repository); `none` turns the lookup off */
export const VENDORED_ENV = 'HR1_ZOO_VENDORED';
/** the repository's vendored zoo */
export const DEFAULT_VENDORED_DIR = fileURLToPath(new URL('./vendored', import.meta.url));
/** the files of one vendored model, each hashed in the manifest */
export const VENDORED_FILES = ['model.onnx', 'meta.json'] as const;
export type VendoredFileName = (typeof VENDORED_FILES)[number];
/** success may move by at most this much from fp32 to the compact weights (1 point) */
export const MAX_SUCCESS_DRIFT = 0.01;

export interface VendoredFile {
  sha256: string;
  bytes: number;
}

/** fp32 (the build) against the compact copy, on the first `tasks` tasks of the env's evaluation split × `seeds`. */
export interface VendoredSuccess {
  env: LmEnv;
  tasks: number;
  seeds: number;
  /** success of the build's fp32 model */
  fp32: number;
  /** success of the vendored (fp16) model */
  fp16: number;
  /** episodes whose actions were the same, step for step, on both */
  sameEpisodes: number;
  episodes: number;
}

export interface VendoredEntry {
  /** the zoo name (`name` or `name@tiny`) */
  id: string;
  /** resolveConfig(id).hash when vendored: the copy is used only while the zoo's hash is this */
  hash: string;
  /** LM_TRAIN_VERSION when vendored (for reading only; the hash holds it) */
  trainVersion: number;
  /** the weights shipped: fp16, or the build's fp32 where fp16 moved success by more than a point (vendored with --fp32-on-drift) */
  weights: 'fp16' | 'fp32';
  files: Record<VendoredFileName, VendoredFile>;
  /** bytes of the build's fp32 model.onnx */
  fp32Bytes: number;
  success: VendoredSuccess[];
  /** vendored with --allow-drift although success moved by more than a point */
  driftAllowed?: true;
  /** OpenBLAS threads of the build (meta.json's `blasThreads`); absent: built before the pin, on 2 ({@link LEGACY_BLAS_THREADS}) */
  blasThreads?: number;
}

/**
 * OpenBLAS threads of the builds vendored before `OPENBLAS_NUM_THREADS` was pinned: one per core,
 * and every machine that built them had 2 cores. `hr1 zoo verify` rebuilds them with this count.
 */
export const LEGACY_BLAS_THREADS = 2;

export interface VendoredManifest {
  format: typeof VENDORED_FORMAT;
  note: string;
  /** by id, sorted */
  models: Record<string, VendoredEntry>;
}

export const MANIFEST_NOTE = 'written by `hr1 zoo vendor`, checked by `hr1 zoo verify`; do not edit by hand (docs/LMTARGETS.md, Shipped models)';

/** Where vendored models are looked up in: `dir`, else HR1_ZOO_VENDORED, else the repository's; null when turned off (`false`, or `none`). */
export function vendoredDir(dir?: string | false): string | null {
  if (dir === false) return null;
  const d = dir ?? process.env[VENDORED_ENV];
  if (d === 'none') return null;
  return resolve(d || DEFAULT_VENDORED_DIR);
}

/** The folder of a vendored model (`@` kept: `alf-xs-192-a@tiny`). */
export function vendoredModelDir(id: string, dir: string): string {
  return join(dir, id);
}

const manifests = new Map<string, { mtimeMs: number; size: number; m: VendoredManifest }>();

/** The manifest of a vendored folder (an empty one when it has none). LM_BAD_META when it cannot be read. */
export function readManifest(dir: string): VendoredManifest {
  const file = join(dir, MANIFEST_FILE);
  let st;
  try {
    st = statSync(file);
  } catch {
    return { format: VENDORED_FORMAT, note: MANIFEST_NOTE, models: {} };
  }
  const hit = manifests.get(file);
  if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.m;
  let m: VendoredManifest;
  try {
    m = JSON.parse(readFileSync(file, 'utf8')) as VendoredManifest;
  } catch (e) {
    throw new LmTargetError('LM_BAD_META', `the vendored zoo's manifest ${file} is not JSON (${(e as Error).message}); restore it from git, or write it again with \`hr1 zoo vendor\``, { cause: e, data: { file } });
  }
  if (m?.format !== VENDORED_FORMAT || typeof m.models !== 'object' || m.models === null) {
    throw new LmTargetError('LM_BAD_META', `${file} is not a vendored-zoo manifest (format ${JSON.stringify(m?.format)}, expected ${VENDORED_FORMAT}); restore it from git, or write it again with \`hr1 zoo vendor\``, { data: { file } });
  }
  manifests.set(file, { mtimeMs: st.mtimeMs, size: st.size, m });
  return m;
}

/** sha256 of a file, hex. */
export function sha256File(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** sha256 and size of a file. */
export function fileDigest(file: string): VendoredFile {
  const bytes = readFileSync(file);
  return { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.byteLength };
}

// files whose sha256 matched, by path, size and mtime: each is hashed once per process
const verified = new Map<string, string>();

/** What is wrong with a vendored model's files against its manifest entry, or null when nothing is. */
export function checkVendoredFiles(entry: VendoredEntry, dir: string): { file: VendoredFileName; path: string; expected: string; actual: string | null } | null {
  const folder = vendoredModelDir(entry.id, dir);
  for (const f of VENDORED_FILES) {
    const path = join(folder, f);
    const expected = entry.files?.[f]?.sha256 ?? '(none)';
    let st;
    try {
      st = statSync(path);
    } catch {
      return { file: f, path, expected, actual: null };
    }
    const key = `${path}:${st.size}:${st.mtimeMs}`;
    if (verified.get(key) === expected) continue;
    const actual = sha256File(path);
    if (actual !== expected) return { file: f, path, expected, actual };
    verified.set(key, actual);
  }
  return null;
}

/** LM_BAD_HASH for a vendored file that is not what the manifest says. */
export function badHashError(entry: VendoredEntry, dir: string, bad: NonNullable<ReturnType<typeof checkVendoredFiles>>): LmTargetError {
  const rel = relative(process.cwd(), bad.path) || bad.path;
  const what = bad.actual === null ? 'is missing' : `has sha256 ${bad.actual}, the manifest says ${bad.expected}`;
  return new LmTargetError(
    'LM_BAD_HASH',
    `the vendored lm/${entry.id}'s ${bad.file} (${rel}) ${what} (${join(dir, MANIFEST_FILE)}): the file was changed or damaged; restore it from git, or build the model (\`hr1 zoo build --only ${entry.id}\`, then it plays from the build) and vendor it again (\`hr1 zoo vendor --only ${entry.id}\`)`,
    { data: { name: entry.id, file: bad.file, path: bad.path, expected: bad.expected, actual: bad.actual } },
  );
}

/** LM_STALE for a vendored copy built from another config hash than the zoo's now. */
export function staleVendoredError(c: ResolvedConfig, entry: VendoredEntry, dir: string): LmTargetError {
  const command = `hr1 zoo build --only ${c.id}`;
  return new LmTargetError(
    'LM_STALE',
    `the vendored copy of lm/${c.id} (${vendoredModelDir(c.id, dir)}) is stale: it was built from config hash ${entry.hash} (LM_TRAIN_VERSION ${entry.trainVersion}), the zoo's config now hashes to ${c.hash}, so it is not used; build the model with \`${command}\`, and refresh the vendored copy with \`hr1 zoo vendor --only ${c.id}\``,
    { data: { name: c.id, vendoredHash: entry.hash, hash: c.hash, command } },
  );
}

/** Where a model plays from. */
export interface ModelSource {
  kind: 'built' | 'vendored';
  /** the folder holding model.onnx and meta.json */
  dir: string;
  /** model.onnx */
  file: string;
  meta: LmMeta;
  /** the manifest entry (vendored only) */
  entry?: VendoredEntry;
}

export interface LocateOptions {
  /** the build cache (see zooDir) */
  dir?: string;
  /** the vendored folder (see {@link vendoredDir}); false: the build cache only */
  vendored?: string | false;
}

/**
 * Where `c` plays from: the build cache when it is built there (meta.json and model.onnx), else
 * its vendored copy (files checked against the manifest's sha256 on first load), else null.
 * Throws LM_STALE for a vendored copy of another config hash, LM_BAD_HASH for a vendored file
 * that is not the manifest's.
 */
export function locateModel(c: ResolvedConfig, o: LocateOptions = {}): ModelSource | null {
  const found = findCopy(c, o);
  if (!found) return null;
  return { ...found, meta: JSON.parse(readFileSync(join(found.dir, 'meta.json'), 'utf8')) as LmMeta };
}

/** {@link locateModel} without reading meta.json: which copy plays, its folder and file. */
function findCopy(c: ResolvedConfig, o: LocateOptions): Omit<ModelSource, 'meta'> | null {
  const built = modelDir(c, o.dir);
  if (existsSync(join(built, 'meta.json')) && existsSync(join(built, 'model.onnx'))) return { kind: 'built', dir: built, file: join(built, 'model.onnx') };
  const vdir = vendoredDir(o.vendored);
  if (!vdir) return null;
  const entry = readManifest(vdir).models[c.id];
  if (!entry) return null;
  if (entry.hash !== c.hash) throw staleVendoredError(c, entry, vdir);
  const bad = checkVendoredFiles(entry, vdir);
  if (bad) throw badHashError(entry, vdir, bad);
  const folder = vendoredModelDir(c.id, vdir);
  return { kind: 'vendored', dir: folder, file: join(folder, 'model.onnx'), entry };
}

/** Which copy of a model plays on this machine, and its weights' identity. */
export interface ModelIdentity {
  source: 'built' | 'vendored';
  /** sha256 of the model.onnx that plays (the vendored manifest's for a vendored copy) */
  sha256: string;
  file: string;
}

const builtShas = new Map<string, string>();

/**
 * The copy of `c` this machine plays (its build cache before the vendored zoo, as lmModel) and
 * the sha256 of its model.onnx, or null when neither is here or usable. The config hash alone does
 * not decide the weights: a vendored copy is fp16 where a build is fp32, and a rebuild on another
 * BLAS setup can differ in the last bits, so episode cache keys, engineer folders and run.json
 * carry this. Called for every rollout's keys, so it reads no meta.json, and a built file is
 * hashed once per path, size and mtime (a vendored one's sha256 is the manifest's).
 */
export function modelIdentity(c: ResolvedConfig, o: LocateOptions = {}): ModelIdentity | null {
  let found: Omit<ModelSource, 'meta'> | null;
  try {
    found = findCopy(c, o);
  } catch {
    return null;
  }
  if (!found) return null;
  if (found.kind === 'vendored') return { source: 'vendored', sha256: found.entry!.files['model.onnx'].sha256, file: found.file };
  const st = statSync(found.file);
  const key = `${found.file}|${st.size}|${st.mtimeMs}`;
  let sha = builtShas.get(key);
  if (!sha) {
    sha = sha256File(found.file);
    builtShas.set(key, sha);
  }
  return { source: 'built', sha256: sha, file: found.file };
}

/**
 * {@link modelIdentity} of a target name (`lm/` optional, `@tiny` allowed): null for a name the
 * zoo does not know, as for a model this machine does not have.
 */
export function targetCopy(name: string): ModelIdentity | null {
  try {
    return modelIdentity(resolveConfig(name.replace(/^lm\//, '')));
  } catch {
    return null;
  }
}

/** `built:<sha256, 16>` or `vendored:<sha256, 16>`: a copy as the cache keys and engineer folders name it. */
export function copyTag(id: ModelIdentity): string {
  return `${id.source}:${id.sha256.slice(0, 16)}`;
}

/**
 * The meta.json a model plays with (build cache, else a usable vendored copy), or null: readMeta
 * for everything that plays a model. Never throws for a stale or damaged vendored copy (null; the
 * model's load names the problem).
 */
export function playableMeta(c: ResolvedConfig, dir?: string, vendored?: string | false): LmMeta | null {
  try {
    return locateModel(c, { ...(dir !== undefined ? { dir } : {}), ...(vendored !== undefined ? { vendored } : {}) })?.meta ?? null;
  } catch {
    return null;
  }
}

/**
 * Where a model's measured figures are cached (table.ts measureVanilla): its build folder when
 * built; for a vendored copy `<zoo dir>/vendored/<hash>-<sha256 of its model.onnx, 12>/` (made
 * here; never the repository's folder), so fp32 and fp16 figures are never mixed up.
 */
export function figuresDir(c: ResolvedConfig, dir?: string, vendored?: string | false): string {
  let found: ModelSource | null = null;
  try {
    found = locateModel(c, { ...(dir !== undefined ? { dir } : {}), ...(vendored !== undefined ? { vendored } : {}) });
  } catch {
    // a stale or damaged copy: its load names the problem
  }
  if (found?.kind !== 'vendored') return modelDir(c, dir);
  const out = join(zooDir(dir), 'vendored', `${c.hash}-${found.entry!.files['model.onnx'].sha256.slice(0, 12)}`);
  mkdirSync(out, { recursive: true });
  return out;
}

/** The state of a model's vendored copy: `yes` (usable), `stale` (another config hash), `bad hash` (a file is not the manifest's), `no`. */
export function vendoredState(c: ResolvedConfig, vendored?: string | false): 'yes' | 'stale' | 'bad hash' | 'no' {
  const vdir = vendoredDir(vendored);
  if (!vdir) return 'no';
  const entry = readManifest(vdir).models[c.id];
  if (!entry) return 'no';
  if (entry.hash !== c.hash) return 'stale';
  return checkVendoredFiles(entry, vdir) ? 'bad hash' : 'yes';
}
