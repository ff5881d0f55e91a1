/**
 * The cold-start SFT dataset: teacher proposals verified against the frozen target on the
 * packet's own batch (rerun, paired seeds); the executable ones that improved it (Δ > minDelta,
 * 0 by default, as the paper keeps only verified-improving proposals) are kept as JSONL rows with
 * their provenance.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Cluster } from '../cluster/client.ts';
import { Rng } from '../cluster/rng.ts';
import { listTasks, type EnvOptions } from '../envs/registry.ts';
import type { EpisodeCache } from './episode-cache.ts';
import type { EpisodeRef } from '../actors/target.ts';
import { canonicalJson, patchHash, type Patch } from '../harness/index.ts';
import type { EpisodeRecord } from '../harness/types.ts';
import { EngineerError, MissingEvaluationError } from '../policies/engineer/errors.ts';
import { extractPacket, packetHash, type Packet, type PacketOptions } from '../policies/engineer/packet.ts';
import { baseRecords, rewardOf } from './reward.ts';
import { teacherPropose, DEFAULT_K, FINDING_KINDS, type Finding } from '../policies/engineer/teacher.ts';

/**
 * The parts {@link SftOptions.minimize} drops in turn, as patches without them: all skills;
 * each named rule; the unnamed rules together (a teacher finding writes its per-goal rules
 * unnamed); each code hook. Order: skills, named rules, unnamed rules, code.
 */
export function patchParts(p: Patch): { label: string; without: Patch }[] {
  const out: { label: string; without: Patch }[] = [];
  const rules = p.rules ?? [];
  const code = p.code ?? [];
  const clean = (q: Patch): Patch => {
    const r: Patch = { ...q };
    if (r.skills && r.skills.length === 0) delete r.skills;
    if (r.rules && r.rules.length === 0) delete r.rules;
    if (r.code && r.code.length === 0) delete r.code;
    return r;
  };
  if (p.skills?.length) out.push({ label: 'skills', without: clean({ ...p, skills: [] }) });
  rules.forEach((r, i) => {
    if (r.name) out.push({ label: `rule ${r.name}`, without: clean({ ...p, rules: rules.filter((_, j) => j !== i) }) });
  });
  if (rules.some((r) => !r.name)) out.push({ label: 'unnamed rules', without: clean({ ...p, rules: rules.filter((r) => r.name) }) });
  code.forEach((c, i) => out.push({ label: `code ${c.name ?? i}`, without: clean({ ...p, code: code.filter((_, j) => j !== i) }) }));
  return out;
}

/** Episodes per batch in {@link makeBatches}. @default 20 */
export const DEFAULT_BATCH_SIZE = 20;
/** A kept proposal's Δ is above it: only proposals that improved their batch. @default 0 */
export const DEFAULT_MIN_DELTA = 0;
/** verification j > 0 re-runs the batch's tasks with episode seeds shifted by j × this */
export const VERIFY_SEED_STRIDE = 100_000;
export const SFT_ROW_KIND = 'hr1-sft/1';
export const VERIFY_RULES = ['mean', 'all'] as const;
export type VerifyRule = (typeof VERIFY_RULES)[number];

/**
 * `count` batches of `size` tasks from a split, each task once per batch, drawn by a seeded
 * shuffle; batch i uses episode seed `seed + i`.
 */
export function makeBatches(env: string, o: { count: number; size?: number; split?: string; seed?: number; envOptions?: EnvOptions }): EpisodeRef[][] {
  const size = o.size ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(o.count) || o.count < 1) throw new EngineerError('ENGINEER_BAD_OPTION', `batches.count must be a positive integer, got ${String(o.count)}`, { field: 'count' });
  if (!Number.isInteger(size) || size < 1) throw new EngineerError('ENGINEER_BAD_OPTION', `batches.size must be a positive integer, got ${String(size)}`, { field: 'size' });
  const all = listTasks(env, o.split, o.envOptions ?? {});
  const rng = new Rng(`batches|${env}|${o.split ?? ''}|${o.seed ?? 0}`);
  return Array.from({ length: o.count }, (_, i) => rng.fork(i).shuffle(all).slice(0, size).map((taskId) => ({ taskId, seed: (o.seed ?? 0) + i })));
}

/**
 * A batch of `size` tasks of a split that are not in `exclude` (the packet's own batch), drawn by
 * a seeded shuffle, every one under episode seed `seed`: what a patch is scored on when the reward
 * measures transfer to tasks its packet never showed (train config `reward.on: heldout`).
 */
export function heldoutBatch(env: string, o: { exclude: readonly EpisodeRef[]; size: number; split?: string; seed: number; envOptions?: EnvOptions }): EpisodeRef[] {
  if (!Number.isInteger(o.size) || o.size < 1) throw new EngineerError('ENGINEER_BAD_OPTION', `the held-out batch size must be a positive integer, got ${String(o.size)}`, { field: 'size' });
  const skip = new Set(o.exclude.map((e) => e.taskId));
  const rest = listTasks(env, o.split, o.envOptions ?? {}).filter((t) => !skip.has(t));
  if (rest.length < o.size) throw new EngineerError('ENGINEER_BAD_OPTION', `${env}${o.split ? ` (${o.split})` : ''} has ${rest.length} tasks outside the packet's batch, fewer than the ${o.size} a held-out batch asks for; lower reward.heldoutTasks or the batch size`, { field: 'size' });
  return new Rng(`heldout|${env}|${o.split ?? ''}|${o.seed}`).shuffle(rest).slice(0, o.size).map((taskId) => ({ taskId, seed: o.seed }));
}

/** One JSONL row: input (the packet), output (the patch) and where they came from. */
export interface SftRow {
  kind: typeof SFT_ROW_KIND;
  env: string;
  target: string;
  /** the batch: task ids and seeds, in order */
  batch: EpisodeRef[];
  packetHash: string;
  /** the packet (render it with formatPacket / packetTokens) */
  packet: Packet;
  patchHash: string;
  patch: Patch;
  /** the target text: the canonical JSON of the patch */
  completion: string;
  /** Δ on the batch; with several verification seeds, their mean */
  delta: number;
  base: number;
  patched: number;
  /** with `verifySeeds` > 1: Δ on each verification (the batch's seeds first) */
  deltas?: number[];
  /**
   * where the patch came from: a teacher proposal, or (`abstain`, {@link abstainRows}) the empty
   * patch written for a packet of an env where no teacher proposal passed verification
   */
  teacher: { name: 'prompted-editor' | 'abstain'; seed: number; index: number; addresses: string[] };
}

/** A batch's packet, as {@link buildSftDataset} extracted it (whether or not a row was kept). */
export interface SftPacket {
  batch: EpisodeRef[];
  packet: Packet;
  packetHash: string;
  /** success (or score) of the unpatched target on the batch */
  base: number;
}

/**
 * The rows of an env where no teacher proposal passed verification: each packet → the empty patch
 * (the harness left as it is), Δ 0. Without them the engineer of such an env is untrained, and its
 * grammar-sampled patches cost the target the few tasks it wins (DBBench, docs/EXPERIMENTS.md).
 */
export function abstainRows(env: string, target: string, packets: readonly SftPacket[]): SftRow[] {
  return packets
    .filter((p) => p.packet.episodes.length > 0)
    .map((p, i) => ({
      kind: SFT_ROW_KIND,
      env,
      target,
      batch: p.batch,
      packetHash: p.packetHash,
      packet: p.packet,
      patchHash: patchHash({}),
      patch: {},
      completion: canonicalJson({}),
      delta: 0,
      base: p.base,
      patched: p.base,
      teacher: { name: 'abstain', seed: 0, index: i, addresses: [] },
    }));
}

export interface SftProgress {
  batch: number;
  batches: number;
  phase: 'base' | 'propose' | 'verify' | 'done';
  proposals: number;
  valid: number;
  kept: number;
}

export interface SftOptions {
  cluster: Cluster;
  env: string;
  target: string;
  /** the batches (see {@link makeBatches}) */
  batches: readonly (readonly EpisodeRef[])[];
  /** proposals per packet. @default DEFAULT_K (4) */
  k?: number;
  /** the JSONL file to write (written whole at the end, through a temp file); omit to only return rows */
  out?: string;
  /** teacher seed; batch i uses `teacherSeed + i`. @default 0 */
  teacherSeed?: number;
  /** @default DEFAULT_MIN_DELTA (0) */
  minDelta?: number;
  /**
   * verifications per proposal: a proposal with Δ > minDelta on the batch is re-run on the same
   * tasks with other episode seeds (shifted by VERIFY_SEED_STRIDE each), and kept only if the mean
   * Δ over all of them is still > minDelta (a proposal that was lucky once is left out). @default 1
   */
  verifySeeds?: number;
  /**
   * how the verifications decide: 'mean' keeps a proposal whose mean Δ is > minDelta; 'all' only one
   * with Δ > minDelta on every verification (stricter: a hook whose effect is noise around 0 rarely
   * passes several seeds in a row, one that reads the packet's episodes does more often). @default 'mean'
   */
  verifyRule?: VerifyRule;
  /**
   * the episodes of batch b's verifications 2..verifySeeds (verifySeeds − 1 of them) in place of
   * the batch's own tasks under other seeds: e.g. held-out tasks ({@link heldoutBatch}), so a kept
   * proposal is one that also raised success on tasks its packet never showed.
   */
  verifyBatches?: (b: number) => readonly (readonly EpisodeRef[])[];
  /**
   * keep the smallest verified edit: a kept proposal's parts (its skills; each named rule; its
   * unnamed rules together; each code hook) are dropped in turn, and a drop stays when the smaller
   * patch still passes the same verification (every seed under rule 'all', the mean otherwise)
   * with a mean Δ at least the current one's. What a proposal carried that did not help its batch
   * leaves the SFT row. @default false
   */
  minimize?: boolean;
  /**
   * the finding kinds the teacher answers (all when omitted): e.g. `['seen_target']` for a teacher
   * whose every proposal copies what the packet's excerpts showed, with no packet-blind part
   */
  kinds?: readonly Finding['kind'][];
  cache?: EpisodeCache | null;
  envOptions?: EnvOptions;
  packet?: PacketOptions;
  /** 'schema' or 'full' (compile + smoke). @default 'full' */
  validate?: 'schema' | 'full';
  /** what a proposal's Δ measures (RewardOptions.metric). @default 'success' */
  metric?: 'success' | 'score';
  onProgress?: (p: SftProgress) => void;
}

export interface SftSummary {
  batches: number;
  /** batches whose packet had no failed episode (nothing to propose) */
  emptyBatches: number;
  proposals: number;
  valid: number;
  kept: number;
  /** parts {@link SftOptions.minimize} dropped from kept proposals */
  partsDropped: number;
  /** evaluations that failed (env/target errors): reported, neither kept nor scored */
  missing: number;
  keptRate: number;
  meanDeltaKept: number;
  meanDeltaValid: number;
  ms: number;
  out: string | null;
}

/**
 * Build the dataset. Deterministic given its inputs (the target, batches, k and seeds).
 *
 * @example
 * const batches = makeBatches('alfworld', { count: 8, size: 20 });
 * const { summary } = await buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target: 'sim/llama-3b', batches, k: 4, out: 'sft.jsonl' });
 */
export async function buildSftDataset(o: SftOptions): Promise<{ rows: SftRow[]; packets: SftPacket[]; summary: SftSummary; missing: MissingEvaluationError[] }> {
  const t0 = performance.now();
  const k = o.k ?? DEFAULT_K;
  const minDelta = o.minDelta ?? DEFAULT_MIN_DELTA;
  if (!Number.isInteger(k) || k < 1) throw new EngineerError('ENGINEER_BAD_OPTION', `sft.k must be a positive integer, got ${String(k)}`, { field: 'k' });
  const verifySeeds = o.verifySeeds ?? 1;
  if (!Number.isInteger(verifySeeds) || verifySeeds < 1 || verifySeeds > 8) throw new EngineerError('ENGINEER_BAD_OPTION', `sft.verifySeeds must be an integer in [1, 8], got ${String(verifySeeds)}`, { field: 'verifySeeds' });
  const verifyRule = o.verifyRule ?? 'mean';
  if (!(VERIFY_RULES as readonly string[]).includes(verifyRule)) throw new EngineerError('ENGINEER_BAD_OPTION', `sft.verifyRule must be one of ${VERIFY_RULES.join(', ')}, got ${String(verifyRule)}`, { field: 'verifyRule' });
  for (const kind of o.kinds ?? []) if (!(FINDING_KINDS as readonly string[]).includes(kind)) throw new EngineerError('ENGINEER_BAD_OPTION', `sft.kinds: ${String(kind)} is not a finding kind; use some of ${FINDING_KINDS.join(', ')}`, { field: 'kinds' });
  if (o.kinds && o.kinds.length === 0) throw new EngineerError('ENGINEER_BAD_OPTION', 'sft.kinds is empty: the teacher would propose nothing; omit it to answer every finding', { field: 'kinds' });
  const rows: SftRow[] = [];
  const packets: SftPacket[] = [];
  const missing: MissingEvaluationError[] = [];
  let proposals = 0;
  let valid = 0;
  let empty = 0;
  let sumValid = 0;
  /** parts dropped by minimize */
  let minimized = 0;
  const cache = o.cache ?? null;
  const batches = o.batches.length;
  const progress = (batch: number, phase: SftProgress['phase']): void => o.onProgress?.({ batch, batches, phase, proposals, valid, kept: rows.length });
  for (let b = 0; b < batches; b++) {
    const episodes = [...o.batches[b]!];
    progress(b, 'base');
    const spec = { env: o.env, target: o.target, episodes, cache, ...(o.envOptions ? { envOptions: o.envOptions } : {}) };
    let base;
    try {
      base = await baseRecords(o.cluster, spec, { validate: o.validate ?? 'full' });
    } catch (e) {
      // no base, no packet: the batch is reported and skipped
      if (e instanceof MissingEvaluationError) {
        missing.push(e);
        continue;
      }
      throw e;
    }
    const packet = extractPacket(base, o.packet);
    const ph = packetHash(packet);
    packets.push({ batch: episodes, packet, packetHash: ph, base: base.reduce((n, r) => n + (o.metric === 'score' ? r.outcome.reward : r.outcome.won ? 1 : 0), 0) / Math.max(1, base.length) });
    progress(b, 'propose');
    const seed = (o.teacherSeed ?? 0) + b;
    const props = teacherPropose(packet, { k, seed, ...(o.kinds ? { kinds: o.kinds } : {}) });
    if (props.length === 0) empty++;
    // the batch's tasks under other episode seeds, and their vanilla records (once per batch)
    const more: { spec: typeof spec; base: EpisodeRecord[] }[] = [];
    // null: invalid on a verification, or (rule 'all') one verification did not pass, so the rest are skipped
    const verifyMore = async (patch: unknown): Promise<number[] | null> => {
      const out: number[] = [];
      for (let j = 1; j < verifySeeds; j++) {
        if (!more[j - 1]) {
          const other = o.verifyBatches?.(b)[j - 1];
          if (o.verifyBatches && !other) throw new EngineerError('ENGINEER_BAD_OPTION', `verifyBatches(${b}) gave fewer than the ${verifySeeds - 1} verification batches verifySeeds asks for`, { field: 'verifyBatches' });
          const sj = { ...spec, episodes: other ? [...other] : episodes.map((e) => ({ ...e, seed: e.seed + j * VERIFY_SEED_STRIDE })) };
          more[j - 1] = { spec: sj, base: await baseRecords(o.cluster, sj, { validate: o.validate ?? 'full' }) };
        }
        const m = more[j - 1]!;
        const r = await rewardOf(o.cluster, { ...m.spec, patch, base: m.base }, { validate: o.validate ?? 'full', ...(o.metric ? { metric: o.metric } : {}) });
        if (!r.valid) return null;
        if (verifyRule === 'all' && !(r.delta > minDelta)) return null;
        out.push(r.delta);
      }
      return out;
    };
    // Δ on the batch and, with verifySeeds > 1, on the other seeds; null when it does not pass.
    // A proposal counts toward the valid total once (its smaller versions under minimize do not)
    const verify = async (patch: unknown, counted = true): Promise<{ deltas: number[]; delta: number; r: Awaited<ReturnType<typeof rewardOf>> } | null> => {
      const r = await rewardOf(o.cluster, { ...spec, patch, base }, { validate: o.validate ?? 'full', ...(o.metric ? { metric: o.metric } : {}) });
      if (!r.valid) return null;
      if (counted) {
        valid++;
        sumValid += r.delta;
      }
      if (!(r.delta > minDelta)) return null;
      let deltas = [r.delta];
      if (verifySeeds > 1) {
        const rest = await verifyMore(patch);
        if (rest === null) return null;
        deltas = [r.delta, ...rest];
      }
      const delta = deltas.reduce((x, y) => x + y, 0) / deltas.length;
      if (!(delta > minDelta)) return null;
      return { deltas, delta, r };
    };
    for (let i = 0; i < props.length; i++) {
      const p = props[i]!;
      proposals++;
      progress(b, 'verify');
      let v;
      let patch: Patch = p.patch;
      try {
        v = await verify(patch);
        // the smallest verified edit: drop each part while the rest still passes and does no worse
        if (v && o.minimize) {
          for (let changed = true; changed; ) {
            changed = false;
            for (const part of patchParts(patch)) {
              const w = await verify(part.without, false);
              if (w && w.delta >= v.delta) {
                patch = part.without;
                v = w;
                minimized++;
                changed = true;
                break;
              }
            }
          }
        }
      } catch (e) {
        if (e instanceof MissingEvaluationError) {
          missing.push(e);
          continue;
        }
        throw e;
      }
      if (!v) continue;
      const { r, delta } = v;
      const deltas = verifySeeds > 1 ? v.deltas : null;
      rows.push({
        kind: SFT_ROW_KIND,
        env: o.env,
        target: o.target,
        batch: episodes,
        packetHash: ph,
        packet,
        patchHash: r.patchHash,
        patch,
        completion: canonicalJson(patch),
        delta,
        base: r.base!,
        patched: r.patched!,
        ...(deltas ? { deltas } : {}),
        teacher: { name: 'prompted-editor', seed, index: i, addresses: p.addresses },
      });
    }
  }
  progress(batches, 'done');
  if (o.out) {
    mkdirSync(dirname(o.out), { recursive: true });
    const tmp = `${o.out}.tmp`;
    writeFileSync(tmp, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    renameSync(tmp, o.out);
  }
  const keptDelta = rows.reduce((n, r) => n + r.delta, 0);
  return {
    rows,
    packets,
    missing,
    summary: {
      batches,
      emptyBatches: empty,
      proposals,
      valid,
      kept: rows.length,
      partsDropped: minimized,
      missing: missing.length,
      keptRate: proposals ? rows.length / proposals : 0,
      meanDeltaKept: rows.length ? keptDelta / rows.length : 0,
      meanDeltaValid: valid ? sumValid / valid : 0,
      ms: performance.now() - t0,
      out: o.out ?? null,
    },
  };
}

/** One line of summary, for the CLI. */
export function formatSftSummary(s: SftSummary): string {
  return `${s.batches} batches (${s.emptyBatches} without failures): ${s.proposals} proposals, ${s.valid} valid, ${s.kept} kept (${(100 * s.keptRate).toFixed(1)}%), mean Δ of kept ${s.meanDeltaKept.toFixed(3)}, mean Δ of valid ${s.meanDeltaValid.toFixed(3)}${s.partsDropped ? `, ${s.partsDropped} parts dropped by minimize` : ''}${s.missing ? `, ${s.missing} evaluations missing (env/target errors)` : ''}; ${(s.ms / 1000).toFixed(1)} s${s.out ? ` → ${s.out}` : ''}`;
}
