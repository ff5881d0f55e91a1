/**
 * The driver's rollout: a batch of (task, seed) episodes for one target and one patch, served
 * from the episode cache where it can, the rest spread over TargetActor replicas in chunks. A
 * chunk lost with its node is sent again; episodes are deterministic, so the result is the same.
 */
import { createHash } from 'node:crypto';
import type { ActorRef, Cluster, Handle } from '../cluster/client.ts';
import { EnvActor } from '../actors/env.ts';
import { ActorDiedError, BackpressureError, CallTimeoutError, Hr1Error } from '../cluster/errors.ts';
import { baseHarness, canonicalJson, composeHarness, harnessVersion, parsedPatch, type EpisodeRecord, type ParsedPatch } from '../harness/index.ts';
import { episodeKey, type EpisodeCache, type EpisodeKey } from './episode-cache.ts';
import { envDescriptor, type EnvOptions } from '../envs/registry.ts';
import { TargetActor, wirePatch, type EpisodeRef } from '../actors/target.ts';
import { SIM_VERSION } from '../policies/targets/sim/sim.ts';
import { resolveConfig } from '../policies/targets/lm/zoo.ts';

export interface RolloutSpec {
  env: string;
  target: string;
  /**
   * a patch over the base harness: a ParsedPatch (from parsedPatch(); used as it is) or any
   * patch-shaped value (validated once here); null or absent = vanilla
   */
  patch?: ParsedPatch | unknown;
  episodes: EpisodeRef[];
  envOptions?: EnvOptions;
  /**
   * settings of the target's model backend (an endpoint target's sampling, timeout, retries, …;
   * policies/targets/make.ts), JSON; part of the episode's cache key and of the actor group's name
   */
  targetOptions?: Record<string, unknown>;
}

export interface RolloutOptions {
  /** replicas of the target actor group (spread over nodes). @default 1 */
  replicas?: number;
  /** episodes per message. @default 8 */
  chunk?: number;
  /** chunks in flight per replica. @default 2 */
  window?: number;
  /** worker threads per target actor for the steps of pooled envs (ALFWorld; 0 = inline). @default 0 */
  envThreads?: number;
  /** run the steps of pooled envs in an EnvActor replica group of this many replicas (spread over nodes) instead. @default 0 */
  envActors?: number;
  /** worker threads per EnvActor. @default 2 */
  envActorThreads?: number;
  /** episodes each actor runs at once. @default 16 */
  concurrency?: number;
  /** null = no cache */
  cache?: EpisodeCache | null;
  /** times a chunk is sent again after its actor died. @default 5 */
  retries?: number;
  /** per-chunk call timeout. @default '10m' */
  timeout?: number | string;
  onProgress?: (p: { done: number; total: number; cached: number }) => void;
  log?: (line: string) => void;
}

export interface RolloutResult {
  records: EpisodeRecord[];
  stats: { episodes: number; cached: number; ran: number; resent: number; ms: number; nodes: string[] };
}

function shortHash(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 10);
}

/** The named replica group serving one target (get-or-create, restarted on node loss). */
export async function targetGroup(cluster: Cluster, target: string, opts: { replicas?: number; envThreads?: number; concurrency?: number; envActor?: ActorRef; targetOptions?: Record<string, unknown> } = {}): Promise<Handle<typeof TargetActor.def.protocol>> {
  const envThreads = opts.envThreads ?? 0;
  const to = opts.targetOptions && Object.keys(opts.targetOptions).length > 0 ? opts.targetOptions : undefined;
  const name = `tgt-${shortHash(`${target}|${opts.envActor?.actorId ?? ''}|${to ? canonicalJson(to) : ''}`)}-t${envThreads}-c${opts.concurrency ?? 16}-r${opts.replicas ?? 1}`;
  return cluster.spawn(TargetActor.options({ name, replicas: opts.replicas ?? 1, maxRestarts: -1, maxConcurrency: 4, maxPending: 4096 }), { target, envThreads, concurrency: opts.concurrency ?? 16, ...(opts.envActor ? { envActor: opts.envActor } : {}), ...(to ? { targetOptions: to } : {}) });
}

/** The named EnvActor replica group for an env (get-or-create, restarted on node loss). */
export async function envGroup(cluster: Cluster, env: string, replicas: number, threads: number): Promise<Handle<typeof EnvActor.def.protocol>> {
  return cluster.spawn(EnvActor.options({ name: `env-${env}-r${replicas}-t${threads}`, replicas, maxRestarts: -1, maxConcurrency: 4096, maxPending: 65_536 }), { env, threads });
}

/** Keys of a rollout's episodes (for the cache and for reports). */
export function rolloutKeys(spec: RolloutSpec): { keys: EpisodeKey[]; hashes: string[]; patchHash: string } {
  return keysOf(spec, specPatch(spec));
}

/** The spec's patch, parsed once (a ParsedPatch passes as it is), or null for vanilla; HARNESS_BAD_PATCH with field paths otherwise. */
function specPatch(spec: RolloutSpec): ParsedPatch | null {
  return spec.patch === null || spec.patch === undefined ? null : parsedPatch(spec.patch);
}

function keysOf(spec: RolloutSpec, patch: ParsedPatch | null): { keys: EpisodeKey[]; hashes: string[]; patchHash: string } {
  const harness = patch === null ? baseHarness() : composeHarness(baseHarness(), patch);
  const ph = patch === null ? '' : patch.hash;
  const hv = harnessVersion(harness);
  const envOptions = Object.fromEntries(Object.entries(spec.envOptions ?? {}).filter(([, v]) => v !== undefined));
  // a SIMULATED target's behaviour is code: its version is part of what decides the episode
  const target = spec.target.startsWith('sim/') ? `${spec.target}@${SIM_VERSION}` : spec.target.startsWith('lm/') ? `${spec.target}@${lmHash(spec.target.slice(3))}` : spec.target;
  const to = spec.targetOptions && Object.keys(spec.targetOptions).length > 0 ? spec.targetOptions : undefined;
  // the backend's settings decide the episode too; absent when none (so older keys stay valid)
  const keys = spec.episodes.map((e) => ({ env: spec.env, taskId: e.taskId, seed: e.seed, target, patch: ph, harness: hv, envOptions, ...(to ? { targetOptions: to } : {}) }));
  return { keys, hashes: keys.map(episodeKey), patchHash: ph };
}

// a learned target's weights are decided by its config and training code version
function lmHash(name: string): string {
  try {
    return resolveConfig(name).hash;
  } catch {
    return 'unknown';
  }
}

export async function rollout(cluster: Cluster, spec: RolloutSpec, opts: RolloutOptions = {}): Promise<RolloutResult> {
  const t0 = performance.now();
  if (spec.episodes.length === 0) throw new Hr1Error('EMPTY_ROLLOUT', 'a rollout needs at least one (task, seed) episode');
  // the patch is validated and canonicalised here, once (not at all when it is a ParsedPatch), with field paths in the error
  const patch = specPatch(spec);
  const { keys, hashes } = keysOf(spec, patch);
  const wire = patch === null ? null : wirePatch(patch);
  const records = new Array<EpisodeRecord | undefined>(spec.episodes.length);
  let cached = 0;
  if (opts.cache) {
    hashes.forEach((h, i) => {
      const r = opts.cache!.get(h);
      if (r) {
        records[i] = r;
        cached++;
      }
    });
  }
  const todo = spec.episodes.map((e, i) => ({ e, i })).filter((x) => records[x.i] === undefined);
  const total = spec.episodes.length;
  let done = cached;
  opts.onProgress?.({ done, total, cached });
  const nodes = new Set<string>();
  let resent = 0;
  if (todo.length > 0) {
    const replicas = opts.replicas ?? 1;
    const envActor = (opts.envActors ?? 0) > 0 && envDescriptor(spec.env).pooled ? (await envGroup(cluster, spec.env, opts.envActors!, opts.envActorThreads ?? 2)).ref : undefined;
    const group = await targetGroup(cluster, spec.target, { replicas, envThreads: opts.envThreads ?? 0, concurrency: opts.concurrency ?? 16, ...(envActor ? { envActor } : {}), ...(spec.targetOptions ? { targetOptions: spec.targetOptions } : {}) });
    const size = opts.chunk ?? 8;
    const chunks: { e: EpisodeRef; i: number }[][] = [];
    for (let k = 0; k < todo.length; k += size) chunks.push(todo.slice(k, k + size));
    let next = 0;
    const window = Math.max(1, replicas * (opts.window ?? 2));
    const retries = opts.retries ?? 5;
    await Promise.all(
      Array.from({ length: Math.min(window, chunks.length) }, async () => {
        for (;;) {
          const c = chunks[next++];
          if (!c) return;
          for (let attempt = 0; ; attempt++) {
            try {
              const r = await group.rollout({ env: spec.env, envOptions: spec.envOptions ?? {}, patch: wire, episodes: c.map((x) => x.e) }, { timeout: opts.timeout ?? '10m' });
              nodes.add(r.node);
              r.records.forEach((rec, j) => {
                const i = c[j]!.i;
                records[i] = rec;
                opts.cache?.put(hashes[i]!, keys[i]!, rec);
              });
              done += c.length;
              opts.onProgress?.({ done, total, cached });
              break;
            } catch (e) {
              const again = e instanceof ActorDiedError || e instanceof CallTimeoutError || e instanceof BackpressureError;
              if (!again || attempt >= retries) throw e;
              resent++;
              opts.log?.(`chunk of ${c.length} episodes lost (${(e as Error).message}); sending it again (${attempt + 1}/${retries})`);
              await new Promise((res) => setTimeout(res, 200 * (attempt + 1)));
            }
          }
        }
      }),
    );
  }
  return {
    records: records as EpisodeRecord[],
    stats: { episodes: total, cached, ran: total - cached, resent, ms: performance.now() - t0, nodes: [...nodes].sort() },
  };
}

/** Success, score and steps of a set of records. */
export function summarizeRecords(records: readonly EpisodeRecord[]): { episodes: number; success: number; score: number; steps: number; statuses: Record<string, number> } {
  const n = records.length;
  const statuses: Record<string, number> = {};
  let won = 0;
  let reward = 0;
  let steps = 0;
  for (const r of records) {
    if (r.outcome.won) won++;
    reward += r.outcome.reward;
    steps += r.outcome.steps;
    statuses[r.outcome.status] = (statuses[r.outcome.status] ?? 0) + 1;
  }
  return { episodes: n, success: n ? won / n : 0, score: n ? reward / n : 0, steps: n ? steps / n : 0, statuses };
}
