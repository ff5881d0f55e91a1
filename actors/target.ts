/**
 * TargetActor: a model backend + the harness (+ an installed patch), running many episodes at
 * once. ALFWorld steps can run in a worker pool of env threads (`envThreads`), batched across
 * the episodes in flight.
 */
import { z } from 'zod';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineActor } from '../cluster/actor.ts';
import { WorkerPool } from '../cluster/pool.ts';
import { baseHarness, composeHarness, runEpisode, type EpisodeRecord, type Harness, type Model } from '../harness/index.ts';
import { envFactory, type EnvOptions } from '../envs/registry.ts';
import { EnvActor, type Stepper } from './env.ts';
import { ActorRefSchema, type Cluster } from '../cluster/client.ts';
import { makeModel } from '../policies/targets/make.ts';

export const EpisodeRefSchema = z.object({ taskId: z.string(), seed: z.number().int() });
export type EpisodeRef = z.infer<typeof EpisodeRefSchema>;

export const EnvOptionsSchema = z
  .object({ data: z.string().optional(), protocol: z.enum(['react', 'agentbench']).optional(), db: z.string().optional() })
  .strict();

/** The wire shape of an episode record: the fields every consumer reads are checked; the rest passes. */
export const EpisodeRecordSchema = z.looseObject({
  v: z.literal(1),
  env: z.string(),
  taskId: z.string(),
  seed: z.number(),
  model: z.string(),
  steps: z.array(z.unknown()),
  outcome: z.looseObject({ status: z.string(), won: z.boolean(), reward: z.number(), steps: z.number() }),
  hooks: z.array(z.unknown()),
});

export const RolloutChunkSchema = z.object({
  env: z.string(),
  envOptions: EnvOptionsSchema.default({}),
  /** a patch (JSON) over the base harness, or null for vanilla */
  patch: z.unknown().nullable(),
  episodes: z.array(EpisodeRefSchema).min(1).max(4096),
});
export type RolloutChunk = z.input<typeof RolloutChunkSchema>;

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

export const TargetActor = defineActor({
  name: 'TargetActor',
  args: z.object({
    target: z.string(),
    /** worker threads for ALFWorld env steps; 0 = step in this thread */
    envThreads: z.number().int().min(0).max(64).default(0),
    concurrency: z.number().int().min(1).max(1024).default(DEFAULT_EPISODE_CONCURRENCY),
    /** step ALFWorld through this EnvActor (a replica group, possibly on other nodes) instead */
    envActor: ActorRefSchema.optional(),
  }),
  protocol: {
    rollout: { input: RolloutChunkSchema, output: z.object({ records: z.array(EpisodeRecordSchema), node: z.string() }) },
    info: { input: z.null(), output: z.object({ target: z.string(), model: z.string(), node: z.string(), episodes: z.number(), envThreads: z.number() }) },
  },
  create: async ({ target, envThreads, concurrency, envActor }, ctx) => {
    const model = await makeModel(target);
    if (envActor) {
      const h = (ctx.services as Cluster).handle(EnvActor, envActor);
      const stepper: Stepper = { run: <O>(task: string, input: unknown) => h.run({ task, input }, { timeout: '2m' }) as Promise<O> };
      return { target, model, pool: stepper, ownPool: undefined as WorkerPool | undefined, concurrency, envThreads, episodes: 0 };
    }
    const pool = envThreads > 0 ? new WorkerPool({ module: fileURLToPath(new URL('../envs/alfworld/worker.ts', import.meta.url)), threads: Math.min(envThreads, availableParallelism() * 4) }) : undefined;
    return { target, model, pool: pool as Stepper | undefined, ownPool: pool, concurrency, envThreads, episodes: 0 };
  },
  handlers: {
    rollout: async (s, chunk, ctx) => {
      const harness = chunk.patch === null || chunk.patch === undefined ? baseHarness() : composeHarness(baseHarness(), chunk.patch);
      const records = await runEpisodes(chunk.env, chunk.envOptions, harness, s.model, chunk.episodes, s.concurrency, chunk.env === 'alfworld' ? s.pool : undefined);
      s.episodes += records.length;
      return { records: records as unknown as z.input<typeof EpisodeRecordSchema>[], node: ctx.nodeId };
    },
    info: (s, _i, ctx) => ({ target: s.target, model: s.model.name, node: ctx.nodeId, episodes: s.episodes, envThreads: s.envThreads }),
  },
  destroy: async (s) => {
    await s.ownPool?.destroy();
  },
});
