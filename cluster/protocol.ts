import { z } from 'zod';

/** Internal system messages between clients and nodes. Subjects live under `hr1.<cluster>.`. */
export const subjects = {
  actor: (c: string, actorId: string, method: string) => `hr1.${c}.a.${actorId}.${method}`,
  actorAll: (c: string, actorId: string) => `hr1.${c}.a.${actorId}.*`,
  /** One replica of a group, by its instance id (`<actorId>~<i>`): a call sent here skips the queue group's choice. */
  instance: (c: string, instanceId: string, method: string) => `hr1.${c}.i.${instanceId}.${method}`,
  instanceAll: (c: string, instanceId: string) => `hr1.${c}.i.${instanceId}.*`,
  heartbeat: (c: string) => `hr1.${c}.sys.hb`,
  ping: (c: string) => `hr1.${c}.sys.ping`,
  /** Actors' warnings and errors, published by their nodes ({@link LogRecordSchema}). */
  log: (c: string) => `hr1.${c}.sys.log`,
  nodeSpawn: (c: string, nodeId: string) => `hr1.${c}.node.${nodeId}.spawn`,
  nodeKill: (c: string, nodeId: string) => `hr1.${c}.node.${nodeId}.kill`,
  nodeStop: (c: string, nodeId: string) => `hr1.${c}.node.${nodeId}.stop`,
};

/** Method name reserved for liveness pings of an actor subject. */
export const PING_METHOD = '__ping';

export const HostedActorSchema = z.object({
  actorId: z.string(),
  instanceId: z.string(),
  cls: z.string(),
  name: z.string().optional(),
  owner: z.string(),
  restartCount: z.number().int(),
  pending: z.number().int(),
  resources: z.record(z.string(), z.number()),
  /** Calls this replica's handlers finished since it started (older nodes omit it); two heartbeats give a rate. */
  calls: z.number().int().min(0).optional(),
  /** Of those, the ones that failed (handler threw, or its output did not match the schema). */
  errors: z.number().int().min(0).optional(),
  /** Log records this replica's rate limit dropped (see {@link LogRecordSchema}). */
  logsDropped: z.number().int().min(0).optional(),
});
export type HostedActor = z.infer<typeof HostedActorSchema>;

export const HeartbeatSchema = z.object({
  nodeId: z.string(),
  host: z.string(),
  pid: z.number().int(),
  labels: z.record(z.string(), z.string()),
  total: z.record(z.string(), z.number()),
  available: z.record(z.string(), z.number()),
  classes: z.array(z.string()),
  actors: z.array(HostedActorSchema),
  startedAt: z.number(),
  seq: z.number().int(),
  stopping: z.boolean().optional(),
});
export type Heartbeat = z.infer<typeof HeartbeatSchema>;

/** Levels of a log record, least severe first. */
export const LOG_LEVELS = ['info', 'warn', 'error'] as const;
export const LogLevelSchema = z.enum(LOG_LEVELS);
export type LogLevel = z.infer<typeof LogLevelSchema>;

/**
 * One line of an actor's log, as its node publishes it on `hr1.<cluster>.sys.log`. `source` says
 * what produced it: the actor itself (`ctx.log`), a call whose handler failed, a constructor that
 * threw, or a restart. Unknown fields are stripped, so newer nodes may add some.
 */
export const LogRecordSchema = z.object({
  nodeId: z.string(),
  actorId: z.string(),
  instanceId: z.string(),
  cls: z.string(),
  name: z.string().optional(),
  level: LogLevelSchema,
  source: z.enum(['actor', 'call', 'init', 'restart']),
  /** the method, for a failed call */
  method: z.string().optional(),
  /** the error's code, for a failed call or constructor */
  code: z.string().optional(),
  message: z.string(),
  /** when the node saw it, ms since the epoch */
  time: z.number(),
  /** records of this replica the rate limit dropped just before this one */
  dropped: z.number().int().min(0).optional(),
});
export type LogRecord = z.infer<typeof LogRecordSchema>;

export const SpawnRequestSchema = z.object({
  actorId: z.string().regex(/^[^\s.*>]+$/),
  instanceId: z.string().regex(/^[^\s.*>]+$/),
  cls: z.string(),
  args: z.unknown(),
  name: z.string().optional(),
  owner: z.string(),
  resources: z.record(z.string(), z.number()),
  labels: z.record(z.string(), z.string()),
  maxPending: z.number().int().min(1),
  maxConcurrency: z.number().int().min(1),
  restartCount: z.number().int().min(0),
});
export type SpawnRequest = z.infer<typeof SpawnRequestSchema>;

export const KillRequestSchema = z.object({ actorId: z.string(), instanceId: z.string().optional(), reason: z.string() });
export type KillRequest = z.infer<typeof KillRequestSchema>;

/** An actor's answer to a ping: which instance, on which node (and, from newer nodes, its owner client). */
export const PongSchema = z.object({ instanceId: z.string(), cls: z.string(), nodeId: z.string(), restartCount: z.number().int(), owner: z.string().optional() });
export type Pong = z.infer<typeof PongSchema>;

/** Reply envelope: `[0, value]` on success, `[1, WireError]` on failure. */
export const WireErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  actor: z.string().optional().nullable(),
  method: z.string().optional().nullable(),
  node: z.string().optional().nullable(),
  remoteStack: z.string().optional().nullable(),
  retryable: z.boolean().optional().nullable(),
  data: z.record(z.string(), z.unknown()).optional().nullable(),
});
