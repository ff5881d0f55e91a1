import { z } from 'zod';
import { ConfigError } from './errors.ts';

/** One method of a protocol: its input and output schemas. */
export interface MethodSpec<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  input: I;
  output: O;
}

/** A protocol maps method names to their schemas. The protocol is data. */
export type Protocol = Record<string, MethodSpec>;

/**
 * An actor's own log. `warn` and `error` print on its node and travel to every observer of the
 * cluster (`Cluster.onLog`, `hr1 logs`) with the actor's id, class and node; `info` only travels.
 * Each replica may send DEFAULT_LOG_RATE (20) warnings and errors a second, and as many info
 * lines; the rest are counted and dropped.
 */
export interface ActorLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** What an actor's constructor and handlers see. */
export interface ActorContext {
  /** The id shared by the actor's replicas (its subject). */
  readonly actorId: string;
  /** This replica's instance id. */
  readonly instanceId: string;
  readonly name: string | undefined;
  readonly nodeId: string;
  /** 0 on the first start, then 1, 2, … after each restart. */
  readonly restartCount: number;
  /** Cluster services for calling other actors and the object store (set by the node). */
  readonly services: unknown;
  /** Warnings and errors for whoever watches the cluster: `ctx.log.warn('cache miss rate 90%')`. */
  readonly log: ActorLog;
}

export type HandlerFn<S, I, O> = (self: S, input: I, ctx: ActorContext) => O | Promise<O>;

export type Handlers<P extends Protocol, S> = {
  [K in keyof P]: HandlerFn<S, z.output<P[K]['input']>, z.input<P[K]['output']>>;
};

export interface ActorDefinition<P extends Protocol, A extends z.ZodType, S> {
  /** Cluster-wide class name; nodes look classes up by it. */
  name: string;
  /** Schema of the constructor arguments. @default z.undefined().optional() */
  args?: A;
  protocol: P;
  /** The constructor: builds the actor's state. Re-runs on every restart. */
  create: (args: z.output<A>, ctx: ActorContext) => S | Promise<S>;
  handlers: Handlers<P, S>;
  /** Runs when the actor is stopped or killed (not when its process dies). */
  destroy?: (self: S, ctx: ActorContext) => void | Promise<void>;
}

/** Per-spawn options, like Ray's `.options(...)`. */
export interface ActorOptions {
  /** Resources reserved on the node, e.g. `{cpu: 1, gpu: 0}`. @default {cpu: 0} */
  resources?: Record<string, number>;
  /** Labels a node must carry, e.g. `{zone: 'a'}`. */
  labels?: Record<string, string>;
  /** Named actors are get-or-create: a second spawn with the same name returns the same actor. */
  name?: string;
  /** Restarts after a death (node loss or kill with restart). -1 = unlimited. @default 0 */
  maxRestarts?: number;
  /** Automatic re-sends of a call that failed because the actor died; 0 = at most once. -1 = unlimited. @default 0 */
  maxTaskRetries?: number;
  /** Replicas sharing the actor's subject; NATS load-balances calls over them. @default 1 */
  replicas?: number;
  /** Calls waiting in one replica's mailbox before new ones are refused with BackpressureError. @default 1024 */
  maxPending?: number;
  /** Calls one replica runs at once; 1 keeps Ray's one-at-a-time actor semantics. @default 1 */
  maxConcurrency?: number;
}

export const DEFAULT_MAX_PENDING = 1024;
export const DEFAULT_MAX_CONCURRENCY = 1;

export const ActorOptionsSchema = z
  .object({
    resources: z
      .record(z.string(), z.number().min(0, 'resource amounts are non-negative numbers'))
      .superRefine((r, ctx) => {
        for (const k of Object.keys(r)) if (!/^[a-z][a-z0-9_]*$/.test(k)) ctx.addIssue({ code: 'custom', path: [k], message: `resource name "${k}" is not allowed; use lowercase words like cpu, gpu, memory` });
      })
      .optional(),
    labels: z.record(z.string(), z.string()).optional(),
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'names use letters, digits, _ and - (at most 64)').optional(),
    maxRestarts: z.number().int().min(-1).optional(),
    maxTaskRetries: z.number().int().min(-1).optional(),
    replicas: z.number().int().min(1).max(1024).optional(),
    maxPending: z.number().int().min(1).optional(),
    maxConcurrency: z.number().int().min(1).optional(),
  })
  .strict();

/** An actor class: a definition plus spawn options. */
export interface ActorClass<P extends Protocol = Protocol, A extends z.ZodType = z.ZodType, S = unknown> {
  readonly def: ActorDefinition<P, A, S>;
  readonly opts: ActorOptions;
  readonly argsSchema: z.ZodType;
  /** A copy of this class with options merged in: `Counter.options({maxRestarts: 2})`. */
  options(o: ActorOptions): ActorClass<P, A, S>;
}

const RESERVED = new Set(['ref', 'then', 'constructor', 'prototype', 'toJSON']);

const registry = new Map<string, ActorClass<any, any, any>>();

/**
 * Define an actor class with a zod protocol. The class registers itself by name so that any node
 * that imported its module can host it.
 *
 * @example
 * const Counter = defineActor({
 *   name: 'Counter',
 *   args: z.object({ start: z.number() }),
 *   protocol: { add: { input: z.number(), output: z.number() } },
 *   create: ({ start }) => ({ n: start }),
 *   handlers: { add: (s, x) => (s.n += x) },
 * });
 */
export function defineActor<P extends Protocol, A extends z.ZodType = z.ZodOptional<z.ZodUndefined>, S = unknown>(def: ActorDefinition<P, A, S>): ActorClass<P, A, S> {
  if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(def.name)) throw new ConfigError('defineActor.name', `"${def.name}" is not a valid actor class name; use letters, digits and _ starting with a letter`);
  for (const m of Object.keys(def.protocol)) {
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(m) || RESERVED.has(m)) throw new ConfigError(`defineActor.protocol.${m}`, `method name "${m}" is not allowed; use letters, digits and _ and avoid ${[...RESERVED].join(', ')}`);
    if (typeof (def.handlers as Record<string, unknown>)[m] !== 'function') throw new ConfigError(`defineActor.handlers.${m}`, `actor ${def.name} declares method "${m}" but has no handler for it`);
  }
  const cls = makeClass(def, {});
  const prev = registry.get(def.name);
  if (prev && prev.def !== def) {
    // re-definition (e.g. a module loaded twice through different paths) keeps the latest
  }
  registry.set(def.name, cls);
  return cls;
}

function makeClass<P extends Protocol, A extends z.ZodType, S>(def: ActorDefinition<P, A, S>, opts: ActorOptions): ActorClass<P, A, S> {
  const argsSchema: z.ZodType = def.args ?? z.undefined().optional();
  return {
    def,
    opts,
    argsSchema,
    options(o: ActorOptions) {
      const r = ActorOptionsSchema.safeParse(o);
      if (!r.success) {
        const i = r.error.issues[0]!;
        throw new ConfigError(`${def.name}.options.${i.path.join('.')}`, i.message);
      }
      return makeClass(def, { ...opts, ...r.data });
    },
  };
}

/** Look up an actor class by name (nodes do this when asked to host one). */
export function lookupActorClass(name: string): ActorClass<any, any, any> | undefined {
  return registry.get(name);
}

/** Names of every actor class this process can host. */
export function registeredActorClasses(): string[] {
  return [...registry.keys()].sort();
}
