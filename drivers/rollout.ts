/**
 * The driver's rollout: a batch of (task, seed) episodes for one target and one patch, served
 * from the episode cache where it can, the rest spread over TargetActor replicas in chunks. A
 * chunk lost with its node (or its connection, or answered by a reply that does not match it) is
 * sent again; an episode that ended in an infra error (model_error, env_error, sandbox_error) is
 * never cached or returned: it is run again, with backoff, and if it keeps failing the rollout
 * fails with {@link RolloutInfraError}. Episodes are deterministic, so the result is the same.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ActorRef, Cluster, Handle } from '../cluster/client.ts';
import { EnvActor } from '../actors/env.ts';
import { ActorDiedError, BackpressureError, CallTimeoutError, Hr1Error, PlacementError } from '../cluster/errors.ts';
import { shutdownInProgress } from '../cluster/signals.ts';
import { baseHarness, canonicalJson, composeHarness, harnessVersion, isInfraStatus, parsedPatch, type EpisodeRecord, type ParsedPatch } from '../harness/index.ts';
import { episodeKey, type EpisodeCache, type EpisodeKey } from './episode-cache.ts';
import { envDescriptor, type EnvOptions } from '../envs/registry.ts';
import { DEFAULT_EPISODE_CONCURRENCY, TargetActor, wirePatch, type EpisodeRef } from '../actors/target.ts';
import { SIM_VERSION } from '../policies/targets/sim/sim.ts';
import { LM_SERVING_VERSION, decodeTagOf, resolveConfig } from '../policies/targets/lm/zoo.ts';
import { copyTag, targetCopy } from '../policies/targets/lm/vendor.ts';
import type { ClientStatsCollector } from './client-stats.ts';

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

/** How long a rollout's lost chunk waits for a replica by default, ms (see RolloutOptions.workerWaitMs). */
export const DEFAULT_WORKER_WAIT_MS = 60_000;

export interface RolloutOptions {
  /** replicas of the target actor group (spread over nodes). @default 1 */
  replicas?: number;
  /** episodes per message. @default 8 (a learned target: LM_CHUNK, 16) */
  chunk?: number;
  /** chunks in flight per replica. @default 2 (a learned target: LM_WINDOW, 4) */
  window?: number;
  /** worker threads per target actor for the steps of pooled envs (ALFWorld; 0 = inline). @default 0 */
  envThreads?: number;
  /** run the steps of pooled envs in an EnvActor replica group of this many replicas (spread over nodes) instead. @default 0 */
  envActors?: number;
  /** worker threads per EnvActor. @default 2 */
  envActorThreads?: number;
  /** episodes each actor runs at once. @default 16, or the target settings' `concurrency` when larger */
  concurrency?: number;
  /** null = no cache */
  cache?: EpisodeCache | null;
  /**
   * how long a chunk whose actor is lost (its node died, or stalled past the cluster's dead-after
   * limit, and no replica took the chunk yet) keeps being sent again, ms; then the rollout fails
   * with NoWorkersError (NO_WORKERS). 0: only the `retries` quick re-sends (about 3 s of back-off,
   * which a loaded machine can outlast: a node that misses heartbeats is counted as lost).
   * @default DEFAULT_WORKER_WAIT_MS (60 s, as `hr1 train`'s workers.waitMs)
   */
  workerWaitMs?: number;
  /** times a chunk is sent again after its actor died. @default 5 */
  retries?: number;
  /** per-chunk call timeout. @default '10m' */
  timeout?: number | string;
  /** rounds an episode that ended in an infra error is run again before the rollout fails. @default DEFAULT_INFRA_RETRIES (3) */
  infraRetries?: number;
  /** wait before the first such round, ms; doubled each round, at most 30 s. @default DEFAULT_INFRA_BACKOFF_MS (1000) */
  infraBackoffMs?: number;
  onProgress?: (p: { done: number; total: number; cached: number }) => void;
  log?: (line: string) => void;
  /**
   * Stragglers (with 2 or more replicas): a chunk not answered after max(minMs, factor × the
   * median answer time of the chunks so far) is sent again to the least busy other replica; the
   * first answer is kept and the other dropped (episodes are deterministic: either gives the same
   * records). Counted in stats.resentStragglers. false = never. @default {factor: 3, minMs: 10_000, maxResends: 1}
   */
  stragglers?: StragglerOptions | false;
  /**
   * a gate shared by several rollouts (a training run's): a chunk is sent only when the gate
   * lets it, lowest `priority` first, so older work is not stuck behind newer work in the actors'
   * queues. Results do not depend on it. @default none
   */
  gate?: ChunkGate;
  /** this rollout's priority at the gate (lower goes first; a training run passes the iteration). @default 0 */
  priority?: number;
  /** collects the endpoint client counters the replies carry (endpoint targets only; see drivers/client-stats.ts) */
  clientStats?: ClientStatsCollector;
}

export interface RolloutResult {
  records: EpisodeRecord[];
  /**
   * resent: chunks sent again (lost, timed out, mismatched replies); rerun: episodes run again
   * after an infra error; stragglers: chunks sent again to another replica because they were slow,
   * of which stragglersWon were answered first by the copy
   */
  stats: { episodes: number; cached: number; ran: number; resent: number; rerun: number; stragglers: number; stragglersWon: number; ms: number; nodes: string[] };
}

export interface StragglerOptions {
  /** a chunk is a straggler after this many times the median answer time. @default 3 */
  factor?: number;
  /** … and never before this many ms. @default 10_000 */
  minMs?: number;
  /** copies sent per chunk at most. @default 1 */
  maxResends?: number;
  /** answer times seen so far: share one across rollouts (a training run's) so the median is known from the first chunk */
  history?: ChunkTimes;
}

/** Answer times of chunks (the last 256), for the straggler deadline. */
export class ChunkTimes {
  private readonly xs: number[] = [];
  add(ms: number): void {
    this.xs.push(ms);
    if (this.xs.length > 256) this.xs.shift();
  }
  /** the median answer time, or undefined before any chunk was answered */
  median(): number | undefined {
    if (this.xs.length === 0) return undefined;
    const s = [...this.xs].sort((a, b) => a - b);
    return s[Math.floor((s.length - 1) / 2)];
  }
}

/**
 * At most `slots` chunks in flight across the rollouts that share it; a freed slot goes to the
 * waiting chunk of lowest priority, then the one that asked first.
 */
export class ChunkGate {
  private used = 0;
  private seq = 0;
  private readonly waiting: { priority: number; seq: number; go: () => void }[] = [];
  constructor(readonly slots: number) {
    if (!(slots >= 1)) throw new Hr1Error('BAD_GATE', `a chunk gate needs at least one slot, got ${slots}`);
  }
  acquire(priority: number): Promise<() => void> {
    return new Promise((resolve) => {
      const go = () => {
        this.used++;
        let done = false;
        resolve(() => {
          if (done) return;
          done = true;
          this.used--;
          this.next();
        });
      };
      this.waiting.push({ priority, seq: this.seq++, go });
      this.next();
    });
  }
  /** chunks waiting for a slot */
  get queued(): number {
    return this.waiting.length;
  }
  private next(): void {
    while (this.used < this.slots && this.waiting.length > 0) {
      let best = 0;
      for (let i = 1; i < this.waiting.length; i++) {
        const a = this.waiting[i]!;
        const b = this.waiting[best]!;
        if (a.priority < b.priority || (a.priority === b.priority && a.seq < b.seq)) best = i;
      }
      this.waiting.splice(best, 1)[0]!.go();
    }
  }
}

/** The straggler deadline in ms (from a chunk's send), or undefined while no answer time is known. */
export function stragglerDeadline(o: Required<Pick<StragglerOptions, 'factor' | 'minMs'>>, times: ChunkTimes): number | undefined {
  const m = times.median();
  return m === undefined ? undefined : Math.max(o.minMs, o.factor * m);
}

/** episodes per message for a learned target (`lm/`). @default 16 */
export const LM_CHUNK = 16;
/** chunks in flight per replica for a learned target: with LM_CHUNK, 64 episodes decoded together. @default 4 */
export const LM_WINDOW = 4;

/** @default 3 rounds of re-running episodes that ended in an infra error */
export const DEFAULT_INFRA_RETRIES = 3;
/** @default 1000 ms before the first re-run round (doubled each round) */
export const DEFAULT_INFRA_BACKOFF_MS = 1000;

/** One kind of infra failure in a rollout: its status, its first message and how many episodes had it. */
export interface InfraFailure {
  status: string;
  count: number;
  first: { taskId: string; seed: number; error: string };
}

/**
 * Episodes kept ending in an infra error (an endpoint down, a database unreachable, an
 * overloaded host) after every re-run: nothing of them was cached, counted or scored.
 */
export class RolloutInfraError extends Hr1Error<'ROLLOUT_INFRA'> {
  readonly failures: InfraFailure[];
  constructor(failures: InfraFailure[], episodes: number, total: number, attempts: number) {
    const what = failures.map((f) => `${f.status} ×${f.count} (first: ${f.first.taskId} seed ${f.first.seed}: ${f.first.error})`).join('; ');
    super('ROLLOUT_INFRA', `${episodes} of ${total} episodes ended in an infra error in each of ${attempts} attempts: ${what}. Nothing of them was cached or scored; fix the target endpoint or the env (database, data) and run again`, { data: { failures } });
    this.failures = failures;
  }
}

/**
 * No replica could serve the target's chunks for longer than the rollout's worker wait: every node
 * that could host it is gone. Not a task result: nothing was cached or scored.
 */
export class NoWorkersError extends Hr1Error<'NO_WORKERS'> {
  /** what happened, without the advice */
  readonly summary: string;
  constructor(target: string, waitedMs: number, cause: Error) {
    const summary = `no replica of ${target} could run episodes for ${Math.round(waitedMs / 1000)} s (${cause.message}); every node that could host it is gone`;
    super('NO_WORKERS', `${summary}. Nothing of those episodes was cached or scored: start nodes (hr1 node --address …) and run again`, { cause });
    this.summary = summary;
  }
}

/** Get the actor group once a node can host it, or NO_WORKERS after `waitMs`. */
async function waitForWorkers<T>(acquire: () => Promise<T>, waitMs: number, target: string, first: Error, log?: (l: string) => void): Promise<T> {
  const t0 = performance.now();
  let last = first;
  log?.(`no node can host ${target} now (${first.message}); waiting for one at most ${Math.round(waitMs / 1000)} s`);
  while (performance.now() - t0 < waitMs) {
    await new Promise((res) => setTimeout(res, 1000));
    try {
      return await acquire();
    } catch (e) {
      if (!(e instanceof PlacementError)) throw e;
      last = e;
    }
  }
  throw new NoWorkersError(target, performance.now() - t0, last);
}

/** A reply that does not answer its chunk (other episodes, fewer records, another chunk's id): a typed error; the chunk is sent again. */
export class ReplyMismatchError extends Hr1Error<'REPLY_MISMATCH'> {
  constructor(message: string) {
    super('REPLY_MISMATCH', `${message}; the chunk is sent again. If this repeats, something other than the TargetActor answers on the bus: lock it down with per-subject permissions (docs/ARCHITECTURE.md, "Locking the bus down")`, { retryable: true });
  }
}

/** The records of a reply, checked against the chunk they answer. */
export function checkReply(reply: { records: readonly EpisodeRecord[]; chunkId?: string | undefined }, chunk: { env: string; chunkId: string; episodes: readonly EpisodeRef[] }, harness: string): EpisodeRecord[] {
  if (reply.chunkId !== chunk.chunkId) throw new ReplyMismatchError(`a reply for chunk ${reply.chunkId ?? '(none)'} came for chunk ${chunk.chunkId}`);
  if (reply.records.length !== chunk.episodes.length) throw new ReplyMismatchError(`a reply has ${reply.records.length} records for a chunk of ${chunk.episodes.length} episodes`);
  chunk.episodes.forEach((e, j) => {
    const r = reply.records[j]!;
    if (r.env !== chunk.env || r.taskId !== e.taskId || r.seed !== e.seed) throw new ReplyMismatchError(`record ${j} of a reply is ${r.env} ${r.taskId} seed ${r.seed}, the chunk asked for ${chunk.env} ${e.taskId} seed ${e.seed}`);
    if (r.harness.version !== harness) throw new ReplyMismatchError(`record ${j} of a reply ran harness ${r.harness.version.slice(0, 16)}, the chunk asked for ${harness.slice(0, 16)}`);
  });
  return [...reply.records];
}

/** target settings when there are any (none and `{}` are the same: no key, no name part) */
function givenOptions(o: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  return o && Object.keys(o).length > 0 ? o : undefined;
}

function shortHash(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 10);
}

/**
 * The replica group serving one target for this driver (get-or-create within this client,
 * restarted on node loss). The name carries the client's id: every driver owns its actors, so
 * concurrent drivers on the same nodes never share one and none is killed by another's exit.
 */
export async function targetGroup(cluster: Cluster, target: string, opts: { replicas?: number; envThreads?: number; concurrency?: number; envActor?: ActorRef; targetOptions?: Record<string, unknown> } = {}): Promise<Handle<typeof TargetActor.def.protocol>> {
  const envThreads = opts.envThreads ?? 0;
  const to = givenOptions(opts.targetOptions);
  const name = `tgt-${shortHash(`${target}|${opts.envActor?.actorId ?? ''}|${to ? canonicalJson(to) : ''}`)}-t${envThreads}-c${opts.concurrency ?? 16}-r${opts.replicas ?? 1}-${cluster.clientId}`;
  return cluster.spawn(TargetActor.options({ name, replicas: opts.replicas ?? 1, maxRestarts: -1, maxConcurrency: 4, maxPending: 4096 }), { target, envThreads, concurrency: opts.concurrency ?? 16, ...(opts.envActor ? { envActor: opts.envActor } : {}), ...(to ? { targetOptions: to } : {}) });
}

/** This driver's EnvActor replica group for an env (get-or-create within this client, restarted on node loss). */
export async function envGroup(cluster: Cluster, env: string, replicas: number, threads: number): Promise<Handle<typeof EnvActor.def.protocol>> {
  return cluster.spawn(EnvActor.options({ name: `env-${env}-r${replicas}-t${threads}-${cluster.clientId}`, replicas, maxRestarts: -1, maxConcurrency: 4096, maxPending: 65_536 }), { env, threads });
}

/** Keys of a rollout's episodes (for the cache and for reports). */
export function rolloutKeys(spec: RolloutSpec): { keys: EpisodeKey[]; hashes: string[]; patchHash: string } {
  const { keys, hashes, patchHash } = keysOf(spec, specPatch(spec));
  return { keys, hashes, patchHash };
}

/** The spec's patch, parsed once (a ParsedPatch passes as it is), or null for vanilla; HARNESS_BAD_PATCH with field paths otherwise. */
function specPatch(spec: RolloutSpec): ParsedPatch | null {
  return spec.patch === null || spec.patch === undefined ? null : parsedPatch(spec.patch);
}

function keysOf(spec: RolloutSpec, patch: ParsedPatch | null): { keys: EpisodeKey[]; hashes: string[]; patchHash: string; harness: string } {
  const harness = patch === null ? baseHarness() : composeHarness(baseHarness(), patch);
  const ph = patch === null ? '' : patch.hash;
  const hv = harnessVersion(harness);
  const envOptions = Object.fromEntries(Object.entries(spec.envOptions ?? {}).filter(([, v]) => v !== undefined));
  // a SIMULATED target's behaviour is code: its version is part of what decides the episode
  const target = spec.target.startsWith('sim/') ? `${spec.target}@${SIM_VERSION}` : spec.target.startsWith('lm/') ? `${spec.target}@${lmHash(spec.target.slice(3))}/s${LM_SERVING_VERSION}${decodeTagOf(spec.target.slice(3))}${lmCopy(spec.target.slice(3))}` : spec.target;
  const to = givenOptions(spec.targetOptions);
  // the backend's settings decide the episode too; absent when none (so older keys stay valid)
  const keys = spec.episodes.map((e) => ({ env: spec.env, taskId: e.taskId, seed: e.seed, target, patch: ph, harness: hv, envOptions, ...(to ? { targetOptions: to } : {}) }));
  return { keys, hashes: keys.map(episodeKey), patchHash: ph, harness: hv };
}

/**
 * Which copy of a learned target plays here (`/built:…` or `/vendored:…`, the sha256 of its
 * model.onnx): a vendored fp16 copy and an fp32 build of one config play other episodes, so they
 * never share cache entries. '' when this machine has neither (its nodes may): then the config
 * hash alone keys it, as before.
 */
function lmCopy(name: string): string {
  const id = targetCopy(name);
  return id ? `/${copyTag(id)}` : '';
}

// a learned target's weights are decided by its config and training code version, and by which copy plays (lmCopy)
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
  const { keys, hashes, harness } = keysOf(spec, patch);
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
  let todo = spec.episodes.map((e, i) => ({ e, i })).filter((x) => records[x.i] === undefined);
  const total = spec.episodes.length;
  let done = cached;
  opts.onProgress?.({ done, total, cached });
  const nodes = new Set<string>();
  let resent = 0;
  let rerun = 0;
  // sends stragglers to another replica, and counts them (2+ replicas)
  let hedge: Hedger | undefined;
  if (todo.length > 0) {
    const replicas = opts.replicas ?? 1;
    const envActor = (opts.envActors ?? 0) > 0 && envDescriptor(spec.env).pooled ? (await envGroup(cluster, spec.env, opts.envActors!, opts.envActorThreads ?? 2)).ref : undefined;
    // an endpoint with more request slots than the default gets enough episodes in flight to fill them
    const slots = spec.targetOptions?.concurrency;
    const concurrency = opts.concurrency ?? (typeof slots === 'number' && slots > DEFAULT_EPISODE_CONCURRENCY ? slots : DEFAULT_EPISODE_CONCURRENCY);
    const acquire = () => targetGroup(cluster, spec.target, { replicas, envThreads: opts.envThreads ?? 0, concurrency, ...(envActor ? { envActor } : {}), ...(spec.targetOptions ? { targetOptions: spec.targetOptions } : {}) });
    const workerWait = opts.workerWaitMs ?? DEFAULT_WORKER_WAIT_MS;
    let group: Awaited<ReturnType<typeof acquire>>;
    try {
      group = await acquire();
    } catch (e) {
      if (!(e instanceof PlacementError) || workerWait === 0) throw e;
      group = await waitForWorkers(acquire, workerWait, spec.target, e, opts.log);
    }
    // a learned target decodes the episodes in flight on its actor together (the decision batcher): 16 × 4 = 64 at once
    const lm = spec.target.startsWith('lm/');
    const size = opts.chunk ?? (lm ? LM_CHUNK : 8);
    const window = Math.max(1, replicas * (opts.window ?? (lm ? LM_WINDOW : 2)));
    const retries = opts.retries ?? 5;
    const infraRetries = opts.infraRetries ?? DEFAULT_INFRA_RETRIES;
    hedge = replicas > 1 && opts.stragglers !== false ? new Hedger(replicas, opts.stragglers ?? {}, (l) => opts.log?.(l)) : undefined;
    for (let round = 0; ; round++) {
      const chunks: { e: EpisodeRef; i: number }[][] = [];
      for (let k = 0; k < todo.length; k += size) chunks.push(todo.slice(k, k + size));
      // episodes of this round that ended in an infra error: not results, run again next round
      const failed: { e: EpisodeRef; i: number; rec: EpisodeRecord }[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(window, chunks.length) }, async () => {
          for (;;) {
            const c = chunks[next++];
            if (!c) return;
            const episodes = c.map((x) => x.e);
            // when this chunk's actor was first lost (every replica dead, no node to restart it on)
            let lostSince: number | undefined;
            for (let attempt = 0; ; attempt++) {
              try {
                const send = (replica?: number) => {
                  const chunkId = randomUUID();
                  return group.rollout({ env: spec.env, envOptions: spec.envOptions ?? {}, patch: wire, episodes, chunkId }, { timeout: opts.timeout ?? '10m', ...(replica !== undefined ? { replica } : {}) }).then((r) => ({ r, chunkId }));
                };
                // a first attempt picks its replica when stragglers may be sent elsewhere; a re-send after a loss goes to the group
                // a shared gate bounds the chunks in flight across rollouts and lets older work go first
                const release = opts.gate ? await opts.gate.acquire(opts.priority ?? 0) : undefined;
                let answer: { r: Awaited<ReturnType<typeof group.rollout>>; chunkId: string };
                try {
                  answer = hedge && attempt === 0 ? await hedge.call(send) : await send();
                } finally {
                  release?.();
                }
                const { r, chunkId } = answer;
                const got = checkReply(r, { env: spec.env, chunkId, episodes }, harness);
                nodes.add(r.node);
                if (r.clientStats) opts.clientStats?.add(spec.target, r.clientStats);
                got.forEach((rec, j) => {
                  const x = c[j]!;
                  if (isInfraStatus(rec.outcome.status)) {
                    failed.push({ ...x, rec });
                    return;
                  }
                  records[x.i] = rec;
                  opts.cache?.put(hashes[x.i]!, keys[x.i]!, rec);
                  done++;
                });
                opts.onProgress?.({ done, total, cached });
                break;
              } catch (e) {
                const lost = e instanceof ActorDiedError || e instanceof PlacementError;
                const again = lost || e instanceof CallTimeoutError || e instanceof BackpressureError || (e instanceof Hr1Error && e.retryable);
                // the command is stopping (a signal): its own shutdown lost the chunk, nothing to re-send
                if (!again || shutdownInProgress()) throw e;
                if (lost) lostSince ??= performance.now();
                const waited = lostSince === undefined ? 0 : performance.now() - lostSince;
                if (attempt >= retries) {
                  // with a worker wait, a lost actor is waited for until the bound, then NO_WORKERS
                  if (!lost || workerWait === 0) throw e;
                  if (waited >= workerWait) throw new NoWorkersError(spec.target, waited, e as Error);
                }
                resent++;
                opts.log?.(`chunk of ${c.length} episodes lost (${(e as Error).message}); sending it again (${attempt + 1}/${retries}${workerWait > 0 && lost ? `; waiting for a replica at most ${Math.round((workerWait - waited) / 1000)} s more` : ''})`);
                await new Promise((res) => setTimeout(res, Math.min(5000, 200 * (attempt + 1))));
                // every replica dead for good: get the group again (restarted where a node is)
                if (lost && workerWait > 0) {
                  try {
                    group = await acquire();
                  } catch (e2) {
                    if (!(e2 instanceof PlacementError)) throw e2;
                  }
                }
              }
            }
          }
        }),
      );
      if (failed.length === 0) break;
      const kinds = infraKinds(failed.map((f) => f.rec));
      if (round >= infraRetries) throw new RolloutInfraError(kinds, failed.length, total, round + 1);
      const wait = Math.min(30_000, (opts.infraBackoffMs ?? DEFAULT_INFRA_BACKOFF_MS) * 2 ** round);
      opts.log?.(`${failed.length} episodes ended in an infra error (${kinds.map((k) => `${k.status} ×${k.count}: ${k.first.error}`).join('; ')}); not results: running them again in ${wait} ms (${round + 1}/${infraRetries})`);
      await new Promise((res) => setTimeout(res, wait));
      rerun += failed.length;
      todo = failed.map(({ e, i }) => ({ e, i }));
    }
  }
  return {
    records: records as EpisodeRecord[],
    stats: { episodes: total, cached, ran: total - cached, resent, rerun, stragglers: hedge?.sent ?? 0, stragglersWon: hedge?.won ?? 0, ms: performance.now() - t0, nodes: [...nodes].sort() },
  };
}

/**
 * Sends a chunk to the least busy replica and, when it is not answered by the straggler deadline,
 * a copy to the least busy other one; the first answer wins, the other is dropped.
 */
class Hedger {
  private readonly busy: number[];
  private readonly o: { factor: number; minMs: number; maxResends: number };
  private readonly times: ChunkTimes;
  sent = 0;
  won = 0;
  constructor(
    replicas: number,
    o: StragglerOptions,
    private readonly log: (l: string) => void,
  ) {
    this.busy = new Array<number>(replicas).fill(0);
    this.o = { factor: o.factor ?? 3, minMs: o.minMs ?? 10_000, maxResends: o.maxResends ?? 1 };
    this.times = o.history ?? new ChunkTimes();
  }

  private pick(except: ReadonlySet<number>): number | undefined {
    let best: number | undefined;
    this.busy.forEach((b, i) => {
      if (!except.has(i) && (best === undefined || b < this.busy[best]!)) best = i;
    });
    return best;
  }

  async call<T>(send: (replica: number) => Promise<T>): Promise<T> {
    const t0 = performance.now();
    const used = new Set<number>();
    const attempts: Promise<{ v: T; copy: boolean }>[] = [];
    const start = (copy: boolean) => {
      const i = this.pick(used)!;
      used.add(i);
      this.busy[i]!++;
      const p = send(i).finally(() => this.busy[i]!--);
      attempts.push(p.then((v) => ({ v, copy })));
    };
    start(false);
    for (let h = 0; ; ) {
      const more = h < this.o.maxResends && used.size < this.busy.length;
      // the first answer of any copy; when every copy failed, the first copy's error
      const first = Promise.any(attempts).catch((e: AggregateError) => {
        throw e.errors[0];
      });
      if (!more) return this.done(await first, t0);
      // no chunk answered yet: no median, look again in a while
      const deadline = stragglerDeadline(this.o, this.times);
      const wait = deadline === undefined ? Math.max(250, this.o.minMs / 4) : Math.max(0, t0 + deadline - performance.now());
      let timer: NodeJS.Timeout | undefined;
      const r = await Promise.race([first, new Promise<null>((res) => (timer = setTimeout(() => res(null), wait)))]).finally(() => clearTimeout(timer));
      if (r !== null) return this.done(r, t0);
      if (deadline === undefined || performance.now() - t0 < deadline) continue;
      h++;
      this.sent++;
      this.log(`a chunk has not been answered after ${(deadline / 1000).toFixed(1)} s (${this.o.factor} × the median ${((this.times.median() ?? 0) / 1000).toFixed(1)} s, at least ${(this.o.minMs / 1000).toFixed(0)} s): a straggler; sending it to another replica too (the first answer is kept)`);
      start(true);
    }
  }

  private done<T>(r: { v: T; copy: boolean }, t0: number): T {
    if (r.copy) this.won++;
    else this.times.add(performance.now() - t0);
    return r.v;
  }
}

function infraKinds(recs: readonly EpisodeRecord[]): InfraFailure[] {
  const by = new Map<string, InfraFailure>();
  for (const r of recs) {
    const k = by.get(r.outcome.status);
    if (k) k.count++;
    else by.set(r.outcome.status, { status: r.outcome.status, count: 1, first: { taskId: r.taskId, seed: r.seed, error: r.outcome.error ?? 'no message' } });
  }
  return [...by.values()];
}

/**
 * Success, score and steps of a set of records, and their interventions: the mean share of
 * executed actions the patch forced or rewritten, and hint words per model decision.
 */
export function summarizeRecords(records: readonly EpisodeRecord[]): { episodes: number; success: number; score: number; steps: number; interventionRate: number; hintTokensPerDecision: number; statuses: Record<string, number> } {
  const n = records.length;
  const statuses: Record<string, number> = {};
  let won = 0;
  let reward = 0;
  let steps = 0;
  let iv = 0;
  let ht = 0;
  for (const r of records) {
    if (r.outcome.won) won++;
    reward += r.outcome.reward;
    steps += r.outcome.steps;
    iv += r.interventions?.rate ?? 0;
    ht += r.interventions?.hintTokensPerDecision ?? 0;
    statuses[r.outcome.status] = (statuses[r.outcome.status] ?? 0) + 1;
  }
  return { episodes: n, success: n ? won / n : 0, score: n ? reward / n : 0, steps: n ? steps / n : 0, interventionRate: n ? iv / n : 0, hintTokensPerDecision: n ? ht / n : 0, statuses };
}
