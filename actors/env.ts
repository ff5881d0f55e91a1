/**
 * EnvActor: a pool of env worker threads behind an actor, so env steps can run on other nodes
 * than the targets. Steps of many episodes (from any TargetActor) batch into pool messages;
 * the state travels with each step, so any replica and any thread serves any episode.
 */
import { z } from 'zod';
import { defineActor } from '../cluster/actor.ts';
import { WorkerPool } from '../cluster/pool.ts';
import { envDescriptor, envNames, isEnvName } from '../envs/registry.ts';

export type { Stepper } from '../envs/contract.ts';


export const EnvActor = defineActor({
  name: 'EnvActor',
  args: z.object({
    /** an env with a pool worker (envs/registry.ts: `worker`) */
    env: z.string().refine((e) => isEnvName(e) && envDescriptor(e).worker !== undefined, { error: () => `must be an env with a pool worker: ${envNames().filter((e) => envDescriptor(e).worker).join(', ')}` }),
    threads: z.number().int().min(1).max(256).default(2),
    batchSize: z.number().int().min(1).default(64),
  }),
  protocol: {
    run: { input: z.object({ task: z.string(), input: z.unknown() }), output: z.unknown() },
    runBatch: { input: z.object({ task: z.string(), inputs: z.array(z.unknown()).max(65_536) }), output: z.array(z.unknown()) },
    info: { input: z.null(), output: z.object({ env: z.string(), threads: z.number(), node: z.string(), steps: z.number() }) },
  },
  create: ({ env, threads, batchSize }) => ({ env, threads, steps: 0, pool: new WorkerPool({ module: envDescriptor(env).worker!, threads, batchSize }) }),
  handlers: {
    run: (s, { task, input }) => {
      s.steps++;
      return s.pool.run(task, input);
    },
    runBatch: (s, { task, inputs }) => {
      s.steps += inputs.length;
      return s.pool.runMany(task, inputs);
    },
    info: (s, _i, ctx) => ({ env: s.env, threads: s.threads, node: ctx.nodeId, steps: s.steps }),
  },
  destroy: async (s) => {
    await s.pool.destroy();
  },
});
