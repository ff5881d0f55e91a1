/**
 * Logged candidate outcomes: for each (target, env, batch), the vanilla rollout → packet →
 * candidates (teacher proposals and random walks of the component grammar) → Δ_B of each on
 * paired seeds. One JSONL row per candidate, with its feature vector, so training never reruns.
 * Deterministic given its options (seeded Rng, SIMULATED targets replay their draws).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Cluster } from '../cluster/client.ts';
import { Rng } from '../cluster/rng.ts';
import type { EpisodeCache } from './episode-cache.ts';
import { canonicalJson, parsedPatch, patchHash, type Patch } from '../harness/index.ts';
import { ENGINEER_VOCAB, EOS_ID, PatchGrammar, extractPacket, packetHash, teacherPropose, tokensToPatch, MissingEvaluationError } from '../policies/engineer/index.ts';
import { baseRecords, rewardGroup } from './reward.ts';
import { heldoutBatch, makeBatches } from './sft-dataset.ts';
import { SEED_SPACES } from './splits.ts';
import { envDescriptor } from '../envs/registry.ts';
import { targetEnvs } from '../policies/targets/envs-of.ts';
import { candidateFeatures, FEATURE_VERSION } from '../policies/scorer/features.ts';
import { ValidatorError } from '../policies/scorer/errors.ts';

export const OUTCOME_ROW_KIND = 'hr1-validator-outcome/1';

/** Where datasets and models live by default. @default '.hr1/validator' */
export const DEFAULT_VALIDATOR_DIR = '.hr1/validator';

/** One logged candidate outcome. */
export interface OutcomeRow {
  kind: typeof OUTCOME_ROW_KIND;
  part: 'train' | 'heldout';
  env: string;
  target: string;
  split: string;
  /** index of the batch in its (part, target, env) group; the batch's episode seed is batchSeed */
  batch: number;
  batchSeed: number;
  packetHash: string;
  /** candidate index within the batch's pool */
  index: number;
  source: 'teacher' | 'walk';
  patchHash: string;
  patch: Patch;
  featureVersion: number;
  features: number[];
  delta: number;
  base: number;
  patched: number;
  /** Δ ≥ 0: the label of the validation model */
  nonRegressive: boolean;
}

export interface OutcomeOptions {
  cluster: Cluster;
  cache: EpisodeCache | null;
  /** @default ['sim/llama-3b', 'sim/qwen-3b', 'sim/gemma-8b'] */
  targets?: string[];
  /** @default ['alfworld', 'dbbench']; a learned `lm/` target plays only the envs it was trained on (its other pairs are skipped) */
  envs?: string[];
  /** batches per (target, env) from the training split. @default 6 */
  trainBatches?: number;
  /** batches per (target, env) from the held-out split. @default 4 */
  heldoutBatches?: number;
  /** episodes per batch. @default 10 */
  size?: number;
  /** teacher proposals per batch. @default 4 */
  teacherK?: number;
  /** random grammar walks per batch. @default 8 */
  walks?: number;
  /** @default 0 */
  seed?: number;
  /**
   * where a candidate's Δ is measured: on the packet's own batch ('batch', Δ_B), or on
   * `heldoutTasks` other tasks of the same split that the packet never showed ('heldout', as
   * `hr1 train` with `reward.on: heldout` scores its candidates). @default 'batch'
   */
  reward?: 'batch' | 'heldout';
  /** tasks of a held-out reward batch. @default 20 */
  heldoutTasks?: number;
  /** per env, the splits the train and held-out parts draw from. @default the env's train and held-out splits */
  splits?: Record<string, { train?: string; heldout?: string }>;
  /** JSONL cache: read when it exists and matches the options' hash, else generated and written */
  out?: string;
  onProgress?: (p: { done: number; total: number; target: string; env: string; part: string }) => void;
}

export const DEFAULT_TARGETS = ['sim/llama-3b', 'sim/qwen-3b', 'sim/gemma-8b'];
export const DEFAULT_ENVS = ['alfworld', 'dbbench'];

function resolve(o: OutcomeOptions) {
  const r = {
    targets: o.targets ?? DEFAULT_TARGETS,
    envs: o.envs ?? DEFAULT_ENVS,
    trainBatches: o.trainBatches ?? 6,
    heldoutBatches: o.heldoutBatches ?? 4,
    size: o.size ?? 10,
    teacherK: o.teacherK ?? 4,
    walks: o.walks ?? 8,
    seed: o.seed ?? 0,
    // only what changes rows enters the key: the defaults keep the keys of datasets written before these options
    ...(o.reward === 'heldout' ? { reward: 'heldout' as const, heldoutTasks: o.heldoutTasks ?? 20 } : {}),
    ...(o.splits && Object.keys(o.splits).length ? { splits: o.splits } : {}),
  };
  if (o.reward !== undefined && o.reward !== 'batch' && o.reward !== 'heldout') throw new ValidatorError('VALIDATOR_BAD_OPTION', `outcomes.reward must be "batch" or "heldout", got ${String(o.reward)}`, { field: 'reward' });
  if (r.heldoutTasks !== undefined && (!Number.isInteger(r.heldoutTasks) || r.heldoutTasks < 2)) throw new ValidatorError('VALIDATOR_BAD_OPTION', `outcomes.heldoutTasks must be an integer ≥ 2, got ${String(r.heldoutTasks)}`, { field: 'heldoutTasks' });
  for (const [env, sp] of Object.entries(r.splits ?? {})) {
    for (const role of ['train', 'heldout'] as const) {
      const name = sp[role];
      if (name !== undefined && !envDescriptor(env).splits.names.includes(name)) throw new ValidatorError('VALIDATOR_BAD_OPTION', `outcomes.splits.${env}.${role}: ${env} has no split "${name}"; choose one of ${envDescriptor(env).splits.names.join(', ')}`, { field: `splits.${env}.${role}` });
    }
  }
  for (const f of ['trainBatches', 'heldoutBatches', 'teacherK', 'walks'] as const) {
    if (!Number.isInteger(r[f]) || r[f] < 0) throw new ValidatorError('VALIDATOR_BAD_OPTION', `outcomes.${f} must be a non-negative integer, got ${String(r[f])}`, { field: f });
  }
  if (!Number.isInteger(r.size) || r.size < 1) throw new ValidatorError('VALIDATOR_BAD_OPTION', `outcomes.size must be a positive integer, got ${String(r.size)}`, { field: 'size' });
  if (r.targets.length === 0 || r.envs.length === 0) throw new ValidatorError('VALIDATOR_BAD_OPTION', 'outcomes.targets and outcomes.envs must each name at least one', { field: r.targets.length ? 'envs' : 'targets' });
  if (!r.envs.some((e) => r.targets.some((t) => plays(t, e)))) throw new ValidatorError('VALIDATOR_BAD_OPTION', `outcomes: no target plays any of ${r.envs.join(', ')} (a learned target plays only its own env: ${r.targets.map((t) => `${t} ${targetEnvs(t)?.join('/') ?? 'any'}`).join(', ')})`, { field: 'envs' });
  return r;
}

function plays(target: string, env: string): boolean {
  return targetEnvs(target)?.includes(env) ?? true;
}

/** The hash of the resolved options: the dataset's cache key. */
export function outcomesKey(o: OutcomeOptions): string {
  const r = resolve(o);
  return createHash('sha256').update(canonicalJson({ ...r, featureVersion: FEATURE_VERSION, kind: OUTCOME_ROW_KIND })).digest('hex').slice(0, 16);
}

/**
 * A random walk of the patch grammar (no packet names): `<patch>`, then items whose tokens are
 * drawn uniformly from what the grammar admits, except that a text ends with probability 1/4 where
 * it may; after each finished item the walk stops with probability 1/3, and after `maxItems` items.
 */
export function randomWalkPatch(rng: Rng, maxItems = 5): Patch {
  const g = new PatchGrammar(0);
  const starts = new Set(['<skill>', '<rule>', '<code>'].map((t) => ENGINEER_VOCAB.indexOf(t)));
  const END = ENGINEER_VOCAB.indexOf('<end>');
  const ids: number[] = [];
  let items = 0;
  for (;;) {
    const allowed = g.allowed(ids);
    let id: number;
    if (allowed.includes(EOS_ID) && allowed.length > 1) id = items >= maxItems || (items > 0 && rng.chance(1 / 3)) ? EOS_ID : rng.pick(allowed.filter((x) => x !== EOS_ID));
    // a text or a block list ends with probability 1/4 where it may (uniform tokens would run every text to its 40 atoms)
    else if (allowed.includes(END) && allowed.length > 1 && rng.chance(1 / 4)) id = END;
    else id = rng.pick(allowed);
    ids.push(id);
    if (starts.has(id)) items++;
    if (id === EOS_ID) break;
  }
  return tokensToPatch(ids);
}

/**
 * The candidate pool of a packet: up to `teacherK` teacher proposals, then random walks until
 * `teacherK + walks` distinct patches (by hash) or the draws run out.
 */
export function candidatePool(packet: ReturnType<typeof extractPacket>, o: { teacherK: number; walks: number; seed: number }): { patch: Patch; source: 'teacher' | 'walk' }[] {
  const out: { patch: Patch; source: 'teacher' | 'walk' }[] = [];
  const seen = new Set<string>();
  for (const p of o.teacherK > 0 ? teacherPropose(packet, { k: o.teacherK, seed: o.seed }) : []) {
    const { patch, hash } = parsedPatch(p.patch);
    seen.add(hash);
    out.push({ patch, source: 'teacher' });
  }
  const rng = new Rng(`walks|${packetHash(packet)}|${o.seed}`);
  const want = out.length + o.walks;
  for (let tries = 0; out.length < want && tries < o.walks * 10; tries++) {
    const patch = randomWalkPatch(rng);
    const h = patchHash(patch);
    if (seen.has(h)) continue;
    seen.add(h);
    out.push({ patch, source: 'walk' });
  }
  return out;
}

/** Read a JSONL outcome file; a bad line is a VALIDATOR_BAD_ROW naming the line. */
export function readOutcomes(path: string): OutcomeRow[] {
  const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '');
  return lines.map((l, i) => {
    let r: OutcomeRow;
    try {
      r = JSON.parse(l) as OutcomeRow;
    } catch (e) {
      throw new ValidatorError('VALIDATOR_BAD_ROW', `${path}:${i + 1} is not JSON; delete the file to regenerate it`, { cause: e });
    }
    if (r.kind !== OUTCOME_ROW_KIND || !Array.isArray(r.features)) throw new ValidatorError('VALIDATOR_BAD_ROW', `${path}:${i + 1} is not a ${OUTCOME_ROW_KIND} row; delete the file to regenerate it`);
    return r;
  });
}

function writeOutcomes(path: string, rows: readonly OutcomeRow[]): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
  renameSync(`${path}.tmp`, path);
}

/**
 * Generate (or read from `out`) the logged outcomes. Missing evaluations (env/target errors) are
 * left out and counted, never scored 0.
 *
 * @example
 * const { rows } = await generateOutcomes({ cluster: rt.cluster, cache: new EpisodeCache(':memory:'), out: '.hr1/validator/outcomes.jsonl' });
 */
export async function generateOutcomes(o: OutcomeOptions): Promise<{ rows: OutcomeRow[]; missing: number; cached: boolean; ms: number; key: string }> {
  const t0 = performance.now();
  const r = resolve(o);
  const key = outcomesKey(o);
  const meta = o.out ? `${o.out}.key` : null;
  if (o.out && meta && existsSync(o.out) && existsSync(meta) && readFileSync(meta, 'utf8').trim() === key) {
    return { rows: readOutcomes(o.out), missing: 0, cached: true, ms: performance.now() - t0, key };
  }
  const rows: OutcomeRow[] = [];
  let missing = 0;
  const parts: ['train' | 'heldout', number, number][] = [
    ['train', r.trainBatches, r.seed],
    ['heldout', r.heldoutBatches, r.seed + 1000],
  ];
  const pairsIn = (env: string) => r.targets.filter((t) => plays(t, env));
  const total = r.envs.reduce((n, e) => n + pairsIn(e).length, 0) * (r.trainBatches + r.heldoutBatches);
  let done = 0;
  for (const [part, count, bseed] of parts) {
    if (count === 0) continue;
    for (const env of r.envs) {
      const s = envDescriptor(env).splits;
      const split = (part === 'train' ? r.splits?.[env]?.train : r.splits?.[env]?.heldout) ?? (part === 'train' ? s.train : s.heldout);
      const batches = makeBatches(env, { count, size: r.size, seed: bseed, split });
      for (const target of pairsIn(env)) {
        for (let b = 0; b < batches.length; b++) {
          const episodes = batches[b]!;
          const spec = { env, target, episodes, cache: o.cache };
          o.onProgress?.({ done, total, target, env, part });
          done++;
          let base;
          try {
            base = await baseRecords(o.cluster, spec, { validate: 'schema' });
          } catch (e) {
            if (e instanceof MissingEvaluationError) {
              missing++;
              continue;
            }
            throw e;
          }
          const packet = extractPacket(base);
          const ph = packetHash(packet);
          const pool = candidatePool(packet, { teacherK: r.teacherK, walks: r.walks, seed: r.seed * 7919 + b });
          // Δ on the packet's batch, or on tasks of the split it never showed (their own vanilla base)
          let scored = { ...spec, base };
          if (r.reward === 'heldout') {
            const evalEps = heldoutBatch(env, { exclude: episodes, size: r.heldoutTasks!, split, seed: SEED_SPACES.heldout + 90_000 + (part === 'train' ? 0 : 5_000) + 100 * r.seed + b });
            try {
              scored = { ...spec, episodes: evalEps, base: await baseRecords(o.cluster, { ...spec, episodes: evalEps }, { validate: 'schema' }) };
            } catch (e) {
              if (e instanceof MissingEvaluationError) {
                missing++;
                continue;
              }
              throw e;
            }
          }
          const g = await rewardGroup(o.cluster, { ...scored, patches: pool.map((c) => c.patch) }, { validate: 'schema' });
          g.results.forEach((res, i) => {
            if (!res.ok || !res.reward.valid) {
              missing++;
              return;
            }
            const c = pool[i]!;
            rows.push({
              kind: OUTCOME_ROW_KIND,
              part,
              env,
              target,
              split,
              batch: b,
              batchSeed: episodes[0]?.seed ?? bseed + b,
              packetHash: ph,
              index: i,
              source: c.source,
              patchHash: res.reward.patchHash,
              patch: c.patch,
              featureVersion: FEATURE_VERSION,
              features: candidateFeatures(packet, c.patch),
              delta: res.reward.delta,
              base: res.reward.base!,
              patched: res.reward.patched!,
              nonRegressive: res.reward.delta >= 0,
            });
          });
        }
      }
    }
  }
  o.onProgress?.({ done, total, target: '', env: '', part: 'done' });
  if (o.out && meta) {
    writeOutcomes(o.out, rows);
    writeFileSync(meta, `${key}\n`);
  }
  return { rows, missing, cached: false, ms: performance.now() - t0, key };
}
