/**
 * TargetActor: a model backend + the harness (+ an installed patch), running many episodes at
 * once. Steps of envs whose sessions can be pooled (ALFWorld) can run in a worker pool of env
 * threads (`envThreads`, one pool per env, made on first use) or an EnvActor, batched across
 * the episodes in flight.
 */
import { z } from 'zod';
import { availableParallelism } from 'node:os';
import { defineActor } from '../cluster/actor.ts';
import { WorkerPool } from '../cluster/pool.ts';
import { EpisodeRecordSchema, baseHarness, composeHarness, patchFromCanonical, runEpisode, type EpisodeRecord, type Harness, type Model, type ParsedPatch } from '../harness/index.ts';
import { envDescriptor, envFactory, type EnvOptions } from '../envs/registry.ts';
import { EnvActor, type Stepper } from './env.ts';
import { ActorRefSchema, type Cluster } from '../cluster/client.ts';
import { clientStatsOf, makeModel } from '../policies/targets/make.ts';
import { LATENCY_MAX_BUCKET } from '../policies/targets/latency.ts';

export const EpisodeRefSchema = z.object({ taskId: z.string(), seed: z.number().int() });
export type EpisodeRef = z.infer<typeof EpisodeRefSchema>;

export const EnvOptionsSchema = z
  .object({ data: z.string().optional(), protocol: z.enum(['react', 'agentbench']).optional(), db: z.string().optional() })
  .strict();

/** An episode record on the wire: the strict record schema (harness/record.ts). */
export { EpisodeRecordSchema };

/** A patch on the wire: its canonical JSON and that text's hash (from parsedPatch()), checked on receipt. */
export const WirePatchSchema = z.strictObject({ canonical: z.string().min(1), hash: z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 hex digest') });
export type WirePatch = z.infer<typeof WirePatchSchema>;

/** The wire form of a parsed patch. */
export function wirePatch(p: ParsedPatch): WirePatch {
  return { canonical: p.canonical, hash: p.hash };
}

export const RolloutChunkSchema = z.object({
  env: z.string(),
  envOptions: EnvOptionsSchema.default({}),
  /** a patch over the base harness, or null for vanilla */
  patch: WirePatchSchema.nullable(),
  episodes: z.array(EpisodeRefSchema).min(1).max(4096),
  /** the driver's id of this chunk (random per send), echoed in the reply so a reply can be matched to its request */
  chunkId: z.string().max(64).optional(),
});
export type RolloutChunk = z.input<typeof RolloutChunkSchema>;

const count = z.number().int().min(0);
/** An endpoint client's counters on the wire (OpenAIClientStats, policies/targets/openai.ts). */
export const ClientStatsSchema = z.object({
  calls: count,
  requests: count,
  retries: count,
  failures: count,
  timeouts: count,
  promptTokens: z.number().min(0),
  completionTokens: z.number().min(0),
  totalTokens: z.number().min(0),
  inFlight: count,
  maxInFlight: count,
  latency: z.object({ buckets: z.array(z.tuple([count.max(LATENCY_MAX_BUCKET), count])).max(LATENCY_MAX_BUCKET + 1), count, sumMs: z.number().min(0), minMs: z.number().min(0), maxMs: z.number().min(0) }),
});
export type ClientStats = z.infer<typeof ClientStatsSchema>;

/**
 * One replica's endpoint counters since it started: `replica` names the instance and its restart
 * (a restarted replica counts from 0 again), `seq` orders its snapshots (replies can overtake
 * each other). The driver keeps the latest per replica and adds them up (drivers/client-stats.ts).
 */
export const ReplicaClientStatsSchema = z.object({ replica: z.string().max(200), seq: count, stats: ClientStatsSchema });
export type ReplicaClientStats = z.infer<typeof ReplicaClientStatsSchema>;

/** `clientStats`: the replica's endpoint counters when its target calls an endpoint (openai:), absent otherwise. */
export const RolloutReplySchema = z.object({ records: z.array(EpisodeRecordSchema), node: z.string(), chunkId: z.string().max(64).optional(), clientStats: ReplicaClientStatsSchema.optional() });
export type RolloutReply = z.infer<typeof RolloutReplySchema>;

/** `clientStats`: the answering replica's endpoint counters (openai: targets only). */
export const TargetInfoSchema = z.object({ target: z.string(), model: z.string(), node: z.string(), episodes: z.number(), envThreads: z.number(), clientStats: ClientStatsSchema.optional() });
export type TargetInfo = z.infer<typeof TargetInfoSchema>;

/** Harnesses (base ∘ patch) one actor keeps, by patch hash, so a patch is checked and parsed once. @default 64 */
export const DEFAULT_HARNESS_CACHE = 64;

/** The harness for a chunk's patch: from the cache by hash, or checked, parsed and cached. */
export function harnessFor(cache: Map<string, { canonical: string; harness: Harness }>, patch: WirePatch | null, limit = DEFAULT_HARNESS_CACHE): Harness {
  const key = patch?.hash ?? '';
  const hit = cache.get(key);
  if (hit && hit.canonical === (patch?.canonical ?? '')) return hit.harness;
  const harness = patch === null ? baseHarness() : composeHarness(baseHarness(), patchFromCanonical(patch.canonical, patch.hash));
  if (cache.size >= limit) cache.delete(cache.keys().next().value!);
  cache.set(key, { canonical: patch?.canonical ?? '', harness });
  return harness;
}

/** Episodes one actor runs at once. @default 16 */
export const DEFAULT_EPISODE_CONCURRENCY = 16;

/** Run episodes with at most `limit` in flight; results in input order. */
export async function runEpisodes(env: string, envOptions: EnvOptions, harness: Harness, model: Model, episodes: readonly EpisodeRef[], limit: number, pool?: Stepper, onDone?: () => void): Promise<EpisodeRecord[]> {
  const out = new Array<EpisodeRecord>(episodes.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, episodes.length) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= episodes.length) return;
        const ep = episodes[i]!;
        out[i] = await runEpisode(envFactory(env, ep.taskId, envOptions, pool), { model, seed: ep.seed, harness });
        onDone?.();
      }
    }),
  );
  return out;
}

/** Where a chunk's env steps run: the EnvActor given, else this actor's pool for the env (made on first use), else inline. */
function stepperFor(s: { envActor: Stepper | undefined; pools: Map<string, WorkerPool>; envThreads: number }, env: string): Stepper | undefined {
  const d = envDescriptor(env);
  if (!d.pooled || !d.worker) return undefined;
  if (s.envActor) return s.envActor;
  if (s.envThreads <= 0) return undefined;
  let pool = s.pools.get(env);
  if (!pool) s.pools.set(env, (pool = new WorkerPool({ module: d.worker, threads: Math.min(s.envThreads, availableParallelism() * 4) })));
  return pool;
}

export const TargetActor = defineActor({
  name: 'TargetActor',
  args: z.object({
    target: z.string(),
    /** worker threads for env steps of pooled envs (ALFWorld); 0 = step in this thread */
    envThreads: z.number().int().min(0).max(64).default(0),
    concurrency: z.number().int().min(1).max(1024).default(DEFAULT_EPISODE_CONCURRENCY),
    /** step pooled envs through this EnvActor (a replica group, possibly on other nodes; it serves the chunks' env) instead */
    envActor: ActorRefSchema.optional(),
    /** settings of the model backend (policies/targets/make.ts: makeModel's second argument), JSON */
    targetOptions: z.record(z.string(), z.unknown()).optional(),
  }),
  protocol: {
    rollout: { input: RolloutChunkSchema, output: RolloutReplySchema },
    info: { input: z.null(), output: TargetInfoSchema },
  },
  create: async ({ target, envThreads, concurrency, envActor, targetOptions }, ctx) => {
    const model = await makeModel(target, targetOptions ?? {});
    let stepper: Stepper | undefined;
    if (envActor) {
      const h = (ctx.services as Cluster).handle(EnvActor, envActor);
      stepper = { run: <O>(task: string, input: unknown) => h.run({ task, input }, { timeout: '2m' }) as Promise<O> };
    }
    return { target, model, envActor: stepper, pools: new Map<string, WorkerPool>(), concurrency, envThreads, episodes: 0, statsSeq: 0, harnesses: new Map<string, { canonical: string; harness: Harness }>() };
  },
  handlers: {
    rollout: async (s, chunk, ctx) => {
      const harness = harnessFor(s.harnesses, chunk.patch);
      const records = await runEpisodes(chunk.env, chunk.envOptions, harness, s.model, chunk.episodes, s.concurrency, stepperFor(s, chunk.env));
      s.episodes += records.length;
      const cs = clientStatsOf(s.model);
      return { records, node: ctx.nodeId, ...(chunk.chunkId !== undefined ? { chunkId: chunk.chunkId } : {}), ...(cs ? { clientStats: { replica: `${ctx.instanceId}#${ctx.restartCount}`, seq: ++s.statsSeq, stats: cs } } : {}) };
    },
    info: (s, _i, ctx) => {
      const cs = clientStatsOf(s.model);
      return { target: s.target, model: s.model.name, node: ctx.nodeId, episodes: s.episodes, envThreads: s.envThreads, ...(cs ? { clientStats: cs } : {}) };
    },
  },
  destroy: async (s) => {
    await Promise.all([...s.pools.values()].map((p) => p.destroy()));
  },
});
