/**
 * The units experiments are made of: train batches and their failure packets (from the vanilla
 * rollout), proposals (a method maps a packet to a patch), and evaluations (a patch on an env's
 * held-out test episodes). Each evaluation is one row in the run folder; a row already there is
 * not run again.
 */
import type { Cluster } from '../../cluster/client.ts';
import { Rng } from '../../cluster/rng.ts';
import { envDescriptor, envNames, isEnvName, listTasks, type EnvMetric, type EnvOptions, type EnvSplits } from '../../envs/registry.ts';
import { ClientStatsCollector, SEED_SPACES, makeBatches, rollout } from '../../drivers/index.ts';
import type { EpisodeRef } from '../../actors/index.ts';
import { HarnessError, isInfraStatus, parsedPatch, type EpisodeRecord } from '../../harness/index.ts';
import { extractPacket, packetHash, type Packet } from '../../policies/engineer/index.ts';
import { ExpError } from './errors.ts';
import { configHash } from './config.ts';
import type { TargetOptions } from '../../policies/targets/options.ts';
import type { Method, MethodOptions } from './methods.ts';
import { MethodProposal, type CandidatesRecord } from './best-of-k.ts';
import type { Progress } from './progress.ts';
import type { ResultRow, RunDir } from './run-dir.ts';

const EMPTY_PACKET: Packet = extractPacket([]);

/** The metrics reported for an env (the registry's); the first is its primary metric (used in averages). */
export function envMetrics(env: string): readonly EnvMetric[] {
  return envDescriptor(env).metrics;
}

/** The env's primary metric. */
export function primaryMetric(env: string): EnvMetric {
  return envDescriptor(env).metrics[0];
}

function splitsOf(env: string): EnvSplits {
  if (!isEnvName(env)) throw new ExpError('EXP_CONFIG', `envs: unknown env "${env}"; choose ${envNames().join(', ')}`, { path: 'envs' });
  return envDescriptor(env).splits;
}

/**
 * One episode's result: [taskId, seed, won (0/1), reward, intervention rate] — the rate is the
 * share of its executed actions the patch forced or rewritten (harness `interventions.rate`);
 * rows written before it was recorded have four elements. The sixth is the hint text the patch
 * added per model decision, in tokens (harness `interventions.hintTokensPerDecision`; absent in
 * older rows).
 */
export type Outcome = [string, number, 0 | 1, number, number?, number?];

/** An evaluation row: a patch on one env's test episodes for one target. */
export interface EvalRow extends ResultRow {
  kind: 'eval';
  env: string;
  target: string;
  method: string;
  /** packet index, or null for a fixed patch */
  packet: number | null;
  /** the experiment's variant (ablation: `-init`; coevolve: the packets' target), '' if none */
  variant: string;
  patchHash: string;
  patch: unknown;
  packetHash: string | null;
  /** episodes that ended in an infra error; always 0, since rollout() re-runs them or fails (kept in the record format) */
  errors: number;
  outcomes: Outcome[];
  /** the method's patch was not a valid patch, or the method had none: why (its episodes ran unpatched, as an invalid patch changes nothing) */
  invalid?: string;
  /** a best-of-K method's candidates for this unit (e.g. llm-editor): counts, Δ and issues of each */
  candidates?: CandidatesRecord;
}

/**
 * Which split plays which role for an env in one experiment: the env's own (`EnvSplits.train`,
 * `.test`), or an experiment's override (`splits:` in its config, e.g. ALFWorld packets from
 * `seen_dev` and tests on `seen_test` for targets that were trained on `valid_train`).
 */
export interface SplitRoles {
  train: string;
  test: readonly string[];
}

/** The env's roles, with `override` (an experiment's `splits.<env>`) over them. */
export function rolesOf(env: string, override?: Partial<SplitRoles>): SplitRoles {
  const s = splitsOf(env);
  return { train: override?.train ?? s.train, test: override?.test ?? s.test };
}

/** Test tasks of an env: its test splits (or `roles.test`), `tasks` of them (or all) in a seeded shuffle. */
export function testTasks(env: string, tasks: number | 'all', seed: number, envOptions: EnvOptions = {}, roles?: Partial<SplitRoles>): string[] {
  const s = rolesOf(env, roles);
  const all = s.test.flatMap((sp) => listTasks(env, sp, envOptions));
  if (tasks === 'all' || tasks >= all.length) return all;
  return new Rng(`test|${env}|${seed}`).shuffle(all).slice(0, tasks);
}

/** (task, seed) pairs, seed-major, for evaluation. */
export function episodesOf(tasks: readonly string[], seeds: readonly number[]): EpisodeRef[] {
  return seeds.flatMap((seed) => tasks.map((taskId) => ({ taskId, seed })));
}

/**
 * The packet batches of an evaluation (its env's train split, or `roles.train`), batch i with episode seed
 * `SEED_SPACES.packets + seed + i`: apart from the seeds an engineer trains on (drivers/splits.ts).
 */
export function trainBatches(env: string, o: { packets: number; batchSize: number; seed: number; envOptions?: EnvOptions; roles?: Partial<SplitRoles> | undefined }): EpisodeRef[][] {
  const s = rolesOf(env, o.roles);
  return makeBatches(env, { count: o.packets, size: o.batchSize, split: s.train, seed: SEED_SPACES.packets + o.seed, ...(o.envOptions ? { envOptions: o.envOptions } : {}) });
}

export function outcomesOf(records: readonly EpisodeRecord[]): { outcomes: Outcome[]; errors: number } {
  let errors = 0;
  const outcomes = records.map((r): Outcome => {
    if (isInfraStatus(r.outcome.status)) errors++;
    return [r.taskId, r.seed, r.outcome.won ? 1 : 0, Math.round(r.outcome.reward * 1e6) / 1e6, Math.round((r.interventions?.rate ?? 0) * 1e6) / 1e6, Math.round((r.interventions?.hintTokensPerDecision ?? 0) * 1e3) / 1e3];
  });
  return { outcomes, errors };
}

export interface RolloutSettings {
  /** target actor replicas (spread over nodes) */
  replicas: number;
  /** episodes per message */
  chunk: number;
}

/** A failure packet and the vanilla train episodes it was extracted from. */
export interface PacketSource {
  packet: Packet;
  records: EpisodeRecord[];
  episodes: EpisodeRef[];
}

/** The env options a rollout of these episodes travels with (the env's `rolloutOptions`, if it has one). */
export function envOptionsFor(env: string, episodes: readonly EpisodeRef[], base: EnvOptions): EnvOptions {
  const d = envDescriptor(env);
  return d.rolloutOptions && episodes.length > 0 ? d.rolloutOptions(episodes.map((e) => e.taskId), base) : base;
}

/** What the units of one experiment run share. */
export class ExpRun {
  private packets = new Map<string, Promise<PacketSource>>();
  ran = 0;
  skipped = 0;
  /** the endpoint client counters of this run's rollouts, per target (endpoint targets only) */
  readonly clientStats = new ClientStatsCollector();

  constructor(
    readonly cluster: Cluster,
    readonly run: RunDir,
    readonly progress: Progress,
    readonly rolloutSettings: RolloutSettings,
    readonly envOptions: EnvOptions = {},
    /** a hook the resumability test uses to stop a run part way */
    readonly onUnitDone?: (key: string) => void,
    /** each target's settings (canonical, policies/targets/options.ts); a target not in it runs with its defaults */
    readonly targetOptions: ReadonlyMap<string, TargetOptions> = new Map(),
  ) {}

  /** A unit's key in the run folder: its own key, plus the run's target settings when there are any (a changed setting runs the unit again). */
  unitKeyOf(key: string): string {
    if (this.targetOptions.size === 0) return key;
    return `${key}|to=${configHash(Object.fromEntries([...this.targetOptions].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), 12)}`;
  }

  /** Vanilla rollout of a train batch (cached) and its failure packet. */
  packet(env: string, target: string, batch: readonly EpisodeRef[]): Promise<PacketSource> {
    const k = `${env}|${target}|${JSON.stringify(batch)}`;
    let p = this.packets.get(k);
    if (!p) {
      p = this.roll(env, target, null, batch).then((records) => ({ packet: extractPacket(records), records, episodes: [...batch] }));
      this.packets.set(k, p);
    }
    return p;
  }

  /** Roll `patch` (a ParsedPatch, used as it is; any patch-shaped value, validated in the rollout; or null) out on `episodes`. */
  /** Roll `patch` out on `episodes`; lost chunks are re-sent and infra errors re-run inside rollout(), what still fails stops the run. */
  async roll(env: string, target: string, patch: unknown, episodes: readonly EpisodeRef[]): Promise<EpisodeRecord[]> {
    const to = this.targetOptions.get(target);
    const r = await rollout(this.cluster, { env, target, patch, episodes: [...episodes], envOptions: envOptionsFor(env, episodes, this.envOptions), ...(to ? { targetOptions: { ...to } } : {}) }, {
      cache: this.run.cache,
      replicas: this.rolloutSettings.replicas,
      chunk: this.rolloutSettings.chunk,
      onProgress: (p) => this.progress.episodes(p.done, p.total, p.cached),
      log: (l) => this.progress.log(l),
      clientStats: this.clientStats,
    });
    return r.records;
  }

  /**
   * One evaluation unit: skipped when its key is in the run folder; otherwise the patch (from
   * `patch()`, which may propose from a packet) is rolled out on the test episodes and appended.
   */
  async evalUnit(u: { key: string; label: string; env: string; target: string; method: string; packet: number | null; variant?: string; episodes: readonly EpisodeRef[]; patch: () => Promise<{ patch: unknown; packetHash: string | null; invalid?: string; candidates?: CandidatesRecord }> }): Promise<EvalRow> {
    const key = this.unitKeyOf(u.key);
    const have = this.run.get(key);
    if (have) {
      this.skipped++;
      this.progress.done(u.label, { skipped: true, ran: 0, cached: 0, ms: 0 });
      return have as EvalRow;
    }
    const t0 = performance.now();
    this.progress.start(u.label, u.episodes.length);
    const hits0 = this.run.cache.hits;
    const { patch, packetHash: ph, invalid: noPatch, candidates } = await u.patch();
    // the unit's patch is validated and canonicalised here, once; the rollout and its actors get the parsed value.
    // An invalid one is scored as what it changes, nothing (the unpatched harness), and counted against the method's valid-patch rate
    let parsed: ReturnType<typeof parsedPatch> | null = null;
    let invalid: string | undefined;
    if (noPatch !== undefined) {
      // the method found no valid patch (e.g. every llm-editor candidate was invalid): scored and counted as an invalid patch is
      invalid = noPatch.slice(0, 500);
      this.progress.log(`${u.label}: no valid patch, scored unpatched (${invalid})`);
    } else {
      try {
        parsed = patch === null || patch === undefined ? null : parsedPatch(patch);
      } catch (e) {
        if (!(e instanceof HarnessError) || e.code !== 'HARNESS_BAD_PATCH') throw e;
        invalid = e.message.slice(0, 500);
        this.progress.log(`${u.label}: the patch is not valid, scored unpatched (${e.message.split('\n')[1]?.trim() ?? e.message})`);
      }
    }
    const records = await this.roll(u.env, u.target, parsed, u.episodes);
    const { outcomes, errors } = outcomesOf(records);
    const row: EvalRow = {
      key,
      kind: 'eval',
      env: u.env,
      target: u.target,
      method: u.method,
      packet: u.packet,
      variant: u.variant ?? '',
      patchHash: parsed ? parsed.hash : '',
      patch: parsed ? parsed.patch : null,
      packetHash: ph,
      errors,
      outcomes,
      ...(invalid !== undefined ? { invalid } : {}),
      ...(candidates ? { candidates } : {}),
    };
    this.run.append(row);
    this.ran++;
    const cached = this.run.cache.hits - hits0;
    this.progress.done(u.label, { skipped: false, ran: u.episodes.length - Math.min(cached, u.episodes.length), cached: Math.min(cached, u.episodes.length), ms: performance.now() - t0 });
    this.onUnitDone?.(key);
    return row;
  }

  /**
   * A method's patch from a packet source (the vanilla train records it came from); fixed
   * methods, or a null source, get the empty packet, which they never read.
   */
  async propose(m: Method, o: { env: string; target: string; source: PacketSource | null; seed: number; options: MethodOptions }): Promise<{ patch: unknown; packetHash: string | null; invalid?: string; candidates?: CandidatesRecord }> {
    const src = m.fixed ? null : o.source;
    try {
      const out = await m.propose({
        env: o.env,
        target: o.target,
        packet: src?.packet ?? EMPTY_PACKET,
        trainRecords: src?.records ?? [],
        trainEpisodes: src?.episodes ?? [],
        seed: o.seed,
        cluster: this.cluster,
        cache: this.run.cache,
        envOptions: this.envOptions,
        ...(this.targetOptions.get(o.target) ? { targetOptions: { ...this.targetOptions.get(o.target)! } } : {}),
        options: o.options,
      });
      const ph = src ? packetHash(src.packet) : null;
      if (!(out instanceof MethodProposal)) return { patch: out, packetHash: ph };
      return { patch: out.patch, packetHash: ph, ...(out.info.invalid !== undefined ? { invalid: out.info.invalid } : {}), ...(out.info.candidates ? { candidates: out.info.candidates } : {}) };
    } catch (e) {
      if (e instanceof ExpError) throw e;
      throw new ExpError('EXP_METHOD_FAILED', `${m.name} failed to propose a patch for ${o.env} (${o.target}): ${(e as Error).message}`, { cause: e, data: { method: m.name, env: o.env } });
    }
  }
}
