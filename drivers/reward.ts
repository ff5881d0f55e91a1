/**
 * The reward of a patch on a batch: Δ_B = success(B | base ∘ P) − success(B | base), on the same
 * tasks and seeds (paired). The base rollout goes through the episode cache, so a group of K
 * patches runs it once. Invalid patch → Δ = 0 and flagged; an env or target failure → a
 * {@link MissingEvaluationError}, never a silent 0. A candidate is parsed once (readPatch); the
 * parsed value goes on to the checker and the rollout.
 */
import type { Cluster } from '../cluster/client.ts';
import { NoWorkersError, rollout, type RolloutOptions, type RolloutResult } from './rollout.ts';
import type { EpisodeCache } from './episode-cache.ts';
import type { EnvOptions } from '../envs/registry.ts';
import type { EpisodeRef } from '../actors/target.ts';
import { INFRA_STATUSES, readPatch, validatePatch, type EpisodeRecord, type ParsedPatch, type PatchIssue } from '../harness/index.ts';
import { EngineerError, MissingEvaluationError } from '../policies/engineer/errors.ts';

export interface RewardSpec {
  env: string;
  target: string;
  episodes: readonly EpisodeRef[];
  /** the candidate patch (any JSON; it is validated here) */
  patch: unknown;
  /** where base and patched episodes are kept; null = none (the base then runs on every call) */
  cache: EpisodeCache | null;
  envOptions?: EnvOptions;
  /** the target backend's settings (RolloutSpec.targetOptions): base and patched run with them */
  targetOptions?: Record<string, unknown>;
  /** the base rollout, when the caller already has it (must be the same episodes, in order) */
  base?: readonly EpisodeRecord[];
}

export interface RewardOptions {
  /**
   * How a patch is checked before it runs: 'schema' (the patch schema only) or 'full' (schema,
   * compile in the sandbox, a smoke episode, as validatePatch does). @default 'full'
   */
  validate?: 'schema' | 'full';
  rollout?: Omit<RolloutOptions, 'cache'>;
  /**
   * What Δ measures: 'success' (the share of episodes won) or 'score' (the mean final reward: WebShop's
   * partial attribute/option/price score; equal to success on ALFWorld and DBBench). @default 'success'
   */
  metric?: 'success' | 'score';
  /**
   * rewardGroup: candidates evaluated at once (their rollouts share the target's replicas and
   * decision batcher). Results do not depend on it: episodes are deterministic, and candidates
   * whose canonical patch is the same share one evaluation. @default 1
   */
  concurrency?: number;
}

export interface RewardResult {
  /** patched − base success rate (or mean score, with `metric: 'score'`); exactly 0 for an invalid patch */
  delta: number;
  /** success rates (or mean scores); null when the patch was invalid and nothing ran */
  base: number | null;
  patched: number | null;
  valid: boolean;
  /** why the patch is invalid */
  issues?: PatchIssue[];
  /** the canonical patch hash ('' when the patch did not parse) */
  patchHash: string;
  /** episodes won, base and patched, and how many changed outcome each way */
  won?: { base: number; patched: number; gained: number; lost: number };
  episodes: number;
}

const INFRA = new Set<string>(INFRA_STATUSES);

function checkRecords(side: 'base' | 'patched', records: readonly EpisodeRecord[]): void {
  const bad = records.filter((r) => INFRA.has(r.outcome.status));
  if (bad.length > 0) {
    const first = bad[0]!;
    throw new MissingEvaluationError(
      side,
      `${side} rollout: ${bad.length} of ${records.length} episodes ended in ${first.outcome.status} (first: ${first.taskId} seed ${first.seed}: ${first.outcome.error ?? 'no message'}); the reward is missing, not 0 — fix the env or target and run again`,
      bad.map((r) => ({ taskId: r.taskId, seed: r.seed, status: r.outcome.status, error: r.outcome.error })),
    );
  }
}

async function run(side: 'base' | 'patched', cluster: Cluster, spec: RewardSpec, patch: unknown, opts: RewardOptions): Promise<RolloutResult> {
  try {
    return await rollout(cluster, { env: spec.env, target: spec.target, patch, episodes: [...spec.episodes], ...(spec.envOptions ? { envOptions: spec.envOptions } : {}), ...(spec.targetOptions ? { targetOptions: spec.targetOptions } : {}) }, { ...opts.rollout, cache: spec.cache });
  } catch (e) {
    // no node left to run on: the whole run stops (it is not one candidate's missing evaluation)
    if (e instanceof NoWorkersError) throw e;
    throw new MissingEvaluationError(side, `${side} rollout failed: ${(e as Error).message}; the reward is missing, not 0`, [], e);
  }
}

/** Check a candidate: the schema, then (validate 'full') compile and smoke. A valid one comes back parsed. */
export async function checkCandidate(patch: unknown, validate: 'schema' | 'full' = 'full'): Promise<{ ok: true; hash: string; parsed: ParsedPatch } | { ok: false; issues: PatchIssue[]; hash: string }> {
  const read = readPatch(patch);
  if (!read.ok) return { ok: false, issues: read.issues, hash: '' };
  const { parsed } = read;
  if (validate === 'schema') return { ok: true, hash: parsed.hash, parsed };
  const report = await validatePatch(parsed);
  return report.ok ? { ok: true, hash: parsed.hash, parsed } : { ok: false, issues: report.errors, hash: parsed.hash };
}

/** The base rollout of a batch (vanilla harness), through the cache. */
export async function baseRecords(cluster: Cluster, spec: Omit<RewardSpec, 'patch' | 'base'>, opts: RewardOptions = {}): Promise<EpisodeRecord[]> {
  const r = await run('base', cluster, { ...spec, patch: null }, null, opts);
  checkRecords('base', r.records);
  return r.records;
}

/**
 * Δ_B of one patch on one batch.
 *
 * @example
 * const cache = new EpisodeCache(':memory:');
 * const r = await rewardOf(rt.cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes, patch, cache });
 * r.delta; // e.g. 0.1
 */
export async function rewardOf(cluster: Cluster, spec: RewardSpec, opts: RewardOptions = {}): Promise<RewardResult> {
  if (spec.episodes.length === 0) throw new EngineerError('ENGINEER_BAD_OPTION', 'reward.episodes must list at least one (taskId, seed)', { field: 'episodes' });
  const n = spec.episodes.length;
  const check = await checkCandidate(spec.patch, opts.validate ?? 'full');
  if (!check.ok) return { delta: 0, base: null, patched: null, valid: false, issues: check.issues, patchHash: check.hash, episodes: n };
  const base = spec.base ? [...spec.base] : await baseRecords(cluster, spec, opts);
  if (base.length !== n || base.some((r, i) => r.taskId !== spec.episodes[i]!.taskId || r.seed !== spec.episodes[i]!.seed)) {
    throw new EngineerError('ENGINEER_BAD_OPTION', 'reward.base must be the base records of reward.episodes, in the same order', { field: 'base' });
  }
  const patched = (await run('patched', cluster, spec, check.parsed, opts)).records;
  checkRecords('patched', patched);
  let wb = 0;
  let wp = 0;
  let gained = 0;
  let lost = 0;
  for (let i = 0; i < n; i++) {
    const b = base[i]!.outcome.won;
    const p = patched[i]!.outcome.won;
    if (b) wb++;
    if (p) wp++;
    if (p && !b) gained++;
    if (b && !p) lost++;
  }
  const won = { base: wb, patched: wp, gained, lost };
  if (opts.metric === 'score') {
    // summed in the same order on both sides, so equal outcomes give exactly 0
    let sb = 0;
    let sp = 0;
    for (let i = 0; i < n; i++) {
      sb += base[i]!.outcome.reward;
      sp += patched[i]!.outcome.reward;
    }
    return { delta: sp === sb ? 0 : (sp - sb) / n, base: sb / n, patched: sp / n, valid: true, patchHash: check.hash, won, episodes: n };
  }
  // from integer counts, so equal outcomes give exactly 0
  return { delta: (wp - wb) / n, base: wb / n, patched: wp / n, valid: true, patchHash: check.hash, won, episodes: n };
}

/**
 * Δ_B of a group of patches on one batch: the base runs once. An evaluation that fails for one
 * candidate is reported in its slot (`error`), and the rest go on.
 */
export async function rewardGroup(
  cluster: Cluster,
  spec: Omit<RewardSpec, 'patch'> & { patches: readonly unknown[] },
  opts: RewardOptions = {},
): Promise<{ base: EpisodeRecord[]; results: ({ ok: true; reward: RewardResult } | { ok: false; error: MissingEvaluationError })[] }> {
  const base = spec.base ? [...spec.base] : await baseRecords(cluster, spec, opts);
  type Slot = { ok: true; reward: RewardResult } | { ok: false; error: MissingEvaluationError };
  const evaluate = async (patch: unknown): Promise<Slot> => {
    try {
      return { ok: true, reward: await rewardOf(cluster, { ...spec, patch, base }, opts) };
    } catch (e) {
      if (e instanceof MissingEvaluationError) return { ok: false, error: e };
      throw e;
    }
  };
  const width = Math.max(1, Math.floor(opts.concurrency ?? 1));
  if (width === 1) {
    // one after the other: a repeated patch is served from the episode cache
    const results: Slot[] = [];
    for (const patch of spec.patches) results.push(await evaluate(patch));
    return { base, results };
  }
  // several at once: a repeated patch (same canonical hash) waits for the first one's evaluation
  const shared = new Map<string, Promise<Slot>>();
  const results = new Array<Slot>(spec.patches.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, spec.patches.length) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= spec.patches.length) return;
        const patch = spec.patches[i];
        const read = readPatch(patch);
        const key = read.ok ? read.parsed.hash : undefined;
        let p = key !== undefined ? shared.get(key) : undefined;
        if (!p) {
          p = evaluate(patch);
          if (key !== undefined) shared.set(key, p);
        }
        results[i] = await p;
      }
    }),
  );
  return { base, results };
}
