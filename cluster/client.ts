import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type ActorClass, type ActorOptions, type Protocol, DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_PENDING, lookupActorClass } from './actor.ts';
import { BusDisconnectedError, BusNoRespondersError, BusTimeoutError, type Bus, type BusSubscription } from './bus.ts';
import { NatsBus } from './bus-nats.ts';
import { decode, encode, pack, unpack, validate } from './codec.ts';
import { parseDuration, zDuration, zPositiveDuration, type Duration } from './duration.ts';
import { ActorDiedError, BackpressureError, CallLostError, CallTimeoutError, ConfigError, Hr1Error, PlacementError, UnknownActorError, fromWire, type WireError } from './errors.ts';
import { JetStreamObjectStore, MemoryObjectStore, type ObjectStore } from './objects.ts';
import { LOCAL_NODES } from './node.ts';
import { atLeast, formatLogRecord } from './logs.ts';
import { HeartbeatSchema, LogLevelSchema, LogRecordSchema, PING_METHOD, PongSchema, WireErrorSchema, subjects, type Heartbeat, type LogLevel, type LogRecord, type Pong, type SpawnRequest } from './protocol.ts';

/** A reference to an actor as plain data: it can travel in messages and be turned back into a handle. */
export const ActorRefSchema = z.object({
  cluster: z.string(),
  actorId: z.string(),
  cls: z.string(),
  name: z.string().optional(),
  maxTaskRetries: z.number().int().min(-1),
});
export type ActorRef = z.infer<typeof ActorRefSchema>;

export interface CallOptions {
  /** ms or a string like "30s". @default the cluster's callTimeout (DEFAULT_CALL_TIMEOUT_MS, 30_000) */
  timeout?: Duration;
  /**
   * send the call to this replica of the group (0 … replicas − 1) instead of letting the queue
   * group choose; a re-send after the replica died goes to the group
   */
  replica?: number;
}

export interface MethodHandle<I, O> {
  (input: I, opts?: CallOptions): Promise<O>;
  /** Fire-and-forget: no reply, no error, no ordering guarantee with calls. */
  tell(input: I): void;
}

/** A typed handle: one function per protocol method, plus the plain-data `ref`. */
export type Handle<P extends Protocol> = { readonly ref: ActorRef } & {
  readonly [K in keyof P]: MethodHandle<z.input<P[K]['input']>, z.output<P[K]['output']>>;
};

/** A node is dead when no heartbeat came for this long, in ms. @default 6000 */
export const DEFAULT_DEAD_AFTER_MS = 6000;
/** Call timeout when a call gives none, in ms. @default 30_000 */
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;
/** Spawn (constructor) timeout, in ms. @default 60_000 */
export const DEFAULT_SPAWN_TIMEOUT_MS = 60_000;
/** Calls one client may have in flight before new ones get BackpressureError. @default 100_000 */
export const DEFAULT_MAX_INFLIGHT = 100_000;
/** How long a new actor waits for a node that fits, in ms. @default 3000 */
export const DEFAULT_PLACEMENT_WAIT_MS = 3000;
/** The subject namespace. @default 'default' */
export const DEFAULT_CLUSTER_NAME = 'default';
/** The least severe forwarded actor log record that reaches the `log` option. @default 'warn' */
export const DEFAULT_LOG_LEVEL = 'warn';

/** What {@link Cluster.onLog} delivers. */
export interface OnLogOptions {
  /** The least severe level delivered. @default 'info' (everything) */
  level?: LogLevel;
  /** Skip records of nodes hosted by this process: they printed here already. @default false */
  remoteOnly?: boolean;
}

const isFunction = (v: unknown): boolean => typeof v === 'function';

/**
 * The client's options as a schema (the type is inferred from it). Durations are ms or a string
 * like "30s", as call options' `timeout`; each has a name without a unit and its older `…Ms`
 * name, which keeps working (give one of the two).
 */
export const ClusterOptionsShape = {
  /** Namespace of subjects: letters, digits, _ and -. @default DEFAULT_CLUSTER_NAME ('default') */
  cluster: z
    .string()
    .superRefine((v, ctx) => {
      if (!/^[A-Za-z0-9_-]+$/.test(v)) ctx.addIssue({ code: 'custom', message: `"${v}" is not a valid cluster name; use letters, digits, _ and -` });
    })
    .optional(),
  /** A node is dead when no heartbeat came for this long (ms or "6s"). @default DEFAULT_DEAD_AFTER_MS (6000) */
  deadAfter: zPositiveDuration.optional(),
  /** The same as `deadAfter`. */
  deadAfterMs: zPositiveDuration.optional(),
  /** Default call timeout (ms or "30s"); a call's own `{timeout}` wins. @default DEFAULT_CALL_TIMEOUT_MS (30_000) */
  callTimeout: zPositiveDuration.optional(),
  /** The same as `callTimeout`. */
  callTimeoutMs: zPositiveDuration.optional(),
  /** Spawn (constructor) timeout (ms or "1m"). @default DEFAULT_SPAWN_TIMEOUT_MS (60_000) */
  spawnTimeout: zPositiveDuration.optional(),
  /** The same as `spawnTimeout`. */
  spawnTimeoutMs: zPositiveDuration.optional(),
  /** How long a new actor waits for a node that fits before PlacementError (restarts wait up to spawnTimeout); ms or "3s", 0 = do not wait. @default DEFAULT_PLACEMENT_WAIT_MS (3000) */
  placementWait: zDuration.optional(),
  /** The same as `placementWait`. */
  placementWaitMs: zDuration.optional(),
  /** Calls this client may have in flight before new ones get BackpressureError. @default DEFAULT_MAX_INFLIGHT (100_000) */
  maxInflight: z.number().int().min(1).optional(),
  /** Object store; by default JetStream over NATS, a shared map in-process. */
  objects: z.custom<ObjectStore>((v) => typeof v === 'object' && v !== null, { message: 'objects must be an ObjectStore' }).optional(),
  /** Progress and fault notes (restarts, lost nodes). @default nothing */
  log: z.custom<(line: string) => void>(isFunction, { message: 'log must be a function (line: string) => void' }).optional(),
  /** With `log`: actors' log records from nodes in other processes at this level or above reach it too, as `[node n1] <actor> warn: …`; 'off' = none. @default DEFAULT_LOG_LEVEL ('warn') */
  logLevel: z.union([LogLevelSchema, z.literal('off')]).optional(),
};
export const ClusterOptionsSchema = z.strictObject(ClusterOptionsShape);
export type ClusterOptions = z.input<typeof ClusterOptionsSchema>;

/** Cluster options resolved once: defaults filled in, durations in ms. */
export interface ResolvedClusterOptions {
  readonly cluster: string;
  readonly deadAfterMs: number;
  readonly callTimeoutMs: number;
  readonly spawnTimeoutMs: number;
  readonly placementWaitMs: number;
  readonly maxInflight: number;
  readonly objects: ObjectStore | undefined;
  readonly log: ((line: string) => void) | undefined;
  readonly logLevel: LogLevel | 'off';
}

const resolvedHere = new WeakSet<object>();

/** Turn a schema failure into one ConfigError naming the first option's path (and listing the rest). */
export function optionsError(err: z.ZodError, prefix = ''): ConfigError {
  const at = (i: z.core.$ZodIssue) => prefix + (i.path.length ? i.path.map(String).join('.') : '(options)');
  const [first, ...rest] = err.issues;
  const more = rest.slice(0, 7).map((i) => `; ${at(i)}: ${i.message}`).join('');
  return new ConfigError(first ? at(first) : prefix || '(options)', `${first?.message ?? 'invalid'}${more}`);
}

/** `a` or its alias `b` (in ms), an issue when both are given and differ. */
export function pickAlias(o: Record<string, unknown>, a: string, b: string, dflt: number, ctx: z.RefinementCtx): number {
  const x = o[a] as number | undefined;
  const y = o[b] as number | undefined;
  if (x !== undefined && y !== undefined && x !== y) ctx.addIssue({ code: 'custom', path: [a], message: `give ${a} or ${b}, not both (${x} ms and ${y} ms)` });
  return x ?? y ?? dflt;
}

export function resolveClusterFields(o: z.output<typeof ClusterOptionsSchema>, ctx: z.RefinementCtx): ResolvedClusterOptions {
  return {
    cluster: o.cluster ?? DEFAULT_CLUSTER_NAME,
    deadAfterMs: pickAlias(o, 'deadAfter', 'deadAfterMs', DEFAULT_DEAD_AFTER_MS, ctx),
    callTimeoutMs: pickAlias(o, 'callTimeout', 'callTimeoutMs', DEFAULT_CALL_TIMEOUT_MS, ctx),
    spawnTimeoutMs: pickAlias(o, 'spawnTimeout', 'spawnTimeoutMs', DEFAULT_SPAWN_TIMEOUT_MS, ctx),
    placementWaitMs: pickAlias(o, 'placementWait', 'placementWaitMs', DEFAULT_PLACEMENT_WAIT_MS, ctx),
    maxInflight: o.maxInflight ?? DEFAULT_MAX_INFLIGHT,
    objects: o.objects,
    log: o.log,
    logLevel: o.logLevel ?? DEFAULT_LOG_LEVEL,
  };
}

const ResolveClusterSchema = ClusterOptionsSchema.transform((o, ctx) => resolveClusterFields(o, ctx));

/** Mark resolved options, so a Cluster given them does not resolve them again. */
export function markResolved<T extends ResolvedClusterOptions>(r: T): T {
  resolvedHere.add(Object.freeze(r));
  return r;
}

/**
 * Validate cluster options and fill in the defaults, once; a bad value throws ConfigError with
 * the option's path (`deadAfter: duration must be above 0 …`). Options already resolved pass.
 */
export function resolveClusterOptions(opts: ClusterOptions | ResolvedClusterOptions = {}): ResolvedClusterOptions {
  if (resolvedHere.has(opts)) return opts as ResolvedClusterOptions;
  const r = ResolveClusterSchema.safeParse(opts);
  if (!r.success) throw optionsError(r.error);
  return markResolved(r.data);
}

interface NodeView {
  hb: Heartbeat;
  lastSeen: number;
}

interface Replica {
  instanceId: string;
  nodeId: string;
  restarts: number;
  dead: boolean;
  /** a restart is looking for a node: a second loss must not start another */
  placing: boolean;
}

interface Owned {
  actorId: string;
  cls: ActorClass<any, any, any>;
  args: unknown;
  opts: ActorOptions;
  replicas: Replica[];
  killed: boolean;
  deathReason: string | undefined;
  /** what made the last restart fail (a PlacementError), for the ActorDiedError callers get */
  deathCause: Error | undefined;
}

/**
 * An actor this client reused but did not create (a named actor answered its ping): nobody here
 * supervises it, but its node is watched, from the ping's answer on, as if heard in a heartbeat.
 */
interface Adopted {
  cls: string;
  nodeId: string;
  owner: string | undefined;
  /** the last sign of life of its node: the pong, then that node's heartbeats */
  seenAt: number;
  /** its node was declared lost; reset when a heartbeat lists the actor again */
  lost: boolean;
}

/** Lost nodes remembered for PlacementError messages (the oldest is forgotten first). */
const MAX_LOST_NODES = 64;

const memoryStores = new WeakMap<Bus, MemoryObjectStore>();

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The caller's side of the cluster: spawn actors with placement, call them through typed
 * handles, supervise the actors it owns (restart on node loss), and watch node liveness.
 */
export class Cluster {
  readonly name: string;
  readonly clientId = randomUUID().slice(0, 8);
  readonly objects: ObjectStore;
  private nodes = new Map<string, NodeView>();
  private owned = new Map<string, Owned>();
  private inflightCount = 0;
  // placements not yet visible in the node's heartbeat, so parallel spawns spread out
  private placedSinceBeat = new Map<string, number>();
  private deadActors = new Map<string, string>();
  private adopted = new Map<string, Adopted>();
  // nodes declared lost and why, until they beat again: what a PlacementError names
  private lostNodes = new Map<string, string>();
  // nodes out of the table because a spawn met no responders there: placement skips them at once;
  // their actors count as lost only if no heartbeat comes within deadAfter (a reconnecting node
  // also has no subscriptions for a moment, and comes back with its actors)
  private suspects = new Map<string, NodeView>();
  private counter = 0;
  private timer: NodeJS.Timeout;
  private connected = true;
  private closed = false;
  private readonly deadAfter: number;
  private readonly callTimeout: number;
  private readonly spawnTimeout: number;
  private readonly placementWait: number;
  private readonly maxInflight: number;
  private readonly log: (line: string) => void;
  private namedLocks = new Map<string, Promise<unknown>>();
  private logSub: BusSubscription | undefined;
  private logListeners = new Set<(r: LogRecord) => void>();
  private badLogSeen = false;

  /** `opts` are resolved here unless they come resolved (from init() or resolveClusterOptions()). */
  constructor(readonly bus: Bus, options: ClusterOptions | ResolvedClusterOptions = {}) {
    const opts = resolveClusterOptions(options);
    this.name = opts.cluster;
    this.deadAfter = opts.deadAfterMs;
    this.callTimeout = opts.callTimeoutMs;
    this.spawnTimeout = opts.spawnTimeoutMs;
    this.placementWait = opts.placementWaitMs;
    this.maxInflight = opts.maxInflight;
    this.log = opts.log ?? (() => {});
    if (opts.objects) this.objects = opts.objects;
    else if (bus instanceof NatsBus) this.objects = new JetStreamObjectStore(bus.nc, `hr1_${this.name}`);
    else {
      let m = memoryStores.get(bus);
      if (!m) memoryStores.set(bus, (m = new MemoryObjectStore()));
      this.objects = m;
    }
    bus.subscribe(subjects.heartbeat(this.name), (m) => {
      let hb: Heartbeat;
      try {
        hb = decode(HeartbeatSchema, m.data, 'heartbeat');
      } catch {
        return; // a stray publish on the heartbeat subject must not disturb the table
      }
      this.onHeartbeat(hb);
    });
    bus.onStatus((s) => {
      if (s === 'disconnect') this.connected = false;
      if (s === 'reconnect') {
        this.connected = true;
        // our own outage is not the nodes' death: give them a full window to beat again
        this.freshWindow(Date.now());
      }
    });
    this.timer = setInterval(() => this.checkLiveness(), Math.max(50, Math.floor(this.deadAfter / 6)));
    this.timer.unref();
    if (opts.log && opts.logLevel !== 'off') this.onLog((r) => this.log(formatLogRecord(r)), { level: opts.logLevel, remoteOnly: true });
  }

  /**
   * Follow the actors' log records of the whole cluster: their own `ctx.log` lines, failed calls,
   * constructors that threw, restarts. Returns the function that stops following. A message on
   * the log subject that is not a valid record is ignored (and noted once through `log`).
   *
   * @example
   * const stop = cluster.onLog((r) => console.error(formatLogRecord(r)), { level: 'warn' });
   */
  onLog(cb: (record: LogRecord) => void, opts: OnLogOptions = {}): () => void {
    const min = opts.level ?? 'info';
    const listener = (r: LogRecord) => {
      if (!atLeast(r.level, min) || (opts.remoteOnly && LOCAL_NODES.has(r.nodeId))) return;
      try {
        cb(r);
      } catch {
        // one listener's bug must not keep the others from their records
      }
    };
    this.logListeners.add(listener);
    this.logSub ??= this.bus.subscribe(subjects.log(this.name), (m) => {
      let r: LogRecord;
      try {
        r = decode(LogRecordSchema, m.data, 'log record');
      } catch (e) {
        if (!this.badLogSeen) this.log(`ignored a message on ${subjects.log(this.name)} that is not a log record (${(e as Error).message}); further ones are ignored silently`);
        this.badLogSeen = true;
        return;
      }
      for (const l of this.logListeners) l(r);
    });
    return () => {
      this.logListeners.delete(listener);
      if (this.logListeners.size === 0 && this.logSub) {
        this.logSub.unsubscribe();
        this.logSub = undefined;
      }
    };
  }

  private onHeartbeat(hb: Heartbeat): void {
    if (this.closed) return;
    if (hb.stopping) {
      const v = this.nodes.get(hb.nodeId) ?? this.suspects.get(hb.nodeId);
      if (v) this.nodeLost(hb.nodeId, v.hb, 'it stopped');
      else this.unheardNodeLost(hb.nodeId, 'it stopped');
      return;
    }
    const now = Date.now();
    this.nodes.set(hb.nodeId, { hb, lastSeen: now });
    this.placedSinceBeat.delete(hb.nodeId);
    if (this.lostNodes.size > 0) this.lostNodes.delete(hb.nodeId);
    if (this.suspects.size > 0) this.suspects.delete(hb.nodeId);
    for (const a of hb.actors) this.deadActors.delete(a.actorId);
    if (this.adopted.size > 0) {
      for (const a of hb.actors) {
        const ad = this.adopted.get(a.actorId);
        if (!ad) continue;
        ad.nodeId = hb.nodeId;
        ad.owner = a.owner;
        ad.seenAt = now;
        ad.lost = false;
      }
    }
  }

  /** Every node (and every adopted actor's node) gets a full deadAfter window from `now`. */
  private freshWindow(now: number): void {
    for (const n of this.nodes.values()) n.lastSeen = now;
    for (const n of this.suspects.values()) n.lastSeen = now;
    for (const a of this.adopted.values()) a.seenAt = now;
  }

  private lastTick = Date.now();

  private checkLiveness(): void {
    const now = Date.now();
    const gap = now - this.lastTick;
    this.lastTick = now;
    if (!this.connected || this.closed) return;
    // our own event loop stalled (a long synchronous task): the silence may be ours, not theirs;
    // give every node a fresh window, as after a reconnect
    if (gap > Math.max(1000, this.deadAfter / 2)) {
      this.freshWindow(now);
      return;
    }
    for (const [id, v] of this.nodes) {
      // a node in this very process lives and dies with it
      if (LOCAL_NODES.has(id)) continue;
      if (now - v.lastSeen > this.deadAfter) this.nodeLost(id, v.hb, `no heartbeat for ${now - v.lastSeen} ms`);
    }
    if (this.suspects.size > 0) {
      for (const [id, v] of this.suspects) if (now - v.lastSeen > this.deadAfter) this.nodeLost(id, v.hb, `no heartbeat for ${now - v.lastSeen} ms, and nothing listened to a spawn sent to it`);
    }
    // nodes known only because an actor reused here answered a ping from there: no heartbeat of
    // theirs has reached this client yet; silent for deadAfter since that answer, they are lost
    if (this.adopted.size > 0) {
      for (const [id, a] of this.adopted) {
        if (a.lost) continue;
        if (this.owned.has(id)) {
          this.adopted.delete(id);
          continue;
        }
        const v = this.nodes.get(a.nodeId) ?? this.suspects.get(a.nodeId);
        if (v) {
          // heartbeats cover it (nodeLost handles its death)
          if (v.lastSeen > a.seenAt) a.seenAt = v.lastSeen;
          continue;
        }
        if (LOCAL_NODES.has(a.nodeId)) continue;
        if (now - a.seenAt > this.deadAfter) this.unheardNodeLost(a.nodeId, `no heartbeat for ${now - a.seenAt} ms since it answered a ping`);
      }
    }
  }

  private suspectNode(nodeId: string): void {
    const v = this.nodes.get(nodeId);
    if (!v) return;
    this.nodes.delete(nodeId);
    this.suspects.set(nodeId, v);
    this.rememberLost(nodeId, 'nothing listened to a spawn sent to it');
    this.log(`node ${nodeId} left out of placement: nothing listened to a spawn sent to it (its actors count as lost without a heartbeat within ${this.deadAfter} ms)`);
  }

  private rememberLost(nodeId: string, why: string): void {
    this.lostNodes.delete(nodeId);
    this.lostNodes.set(nodeId, why);
    if (this.lostNodes.size > MAX_LOST_NODES) this.lostNodes.delete(this.lostNodes.keys().next().value as string);
  }

  private nodeLost(nodeId: string, hb: Heartbeat, why: string): void {
    if (!this.nodes.delete(nodeId) && !this.suspects.delete(nodeId)) return;
    this.suspects.delete(nodeId);
    this.rememberLost(nodeId, why);
    this.log(`node ${nodeId} lost (${why}); ${hb.actors.length} actor(s) were on it`);
    const seen = new Set<string>();
    for (const a of hb.actors) {
      seen.add(a.instanceId);
      this.actorLost(a.actorId, a.cls, a.owner, nodeId, why, a.instanceId);
      const o = this.owned.get(a.actorId);
      const r = o?.replicas.find((x) => x.instanceId === a.instanceId);
      if (o && r && !r.dead && !r.placing) void this.restartReplica(o, r, `node ${nodeId} was lost (${why})`);
    }
    // replicas placed there after its last heartbeat, which did not list them yet
    for (const o of this.owned.values()) {
      for (const r of o.replicas) {
        if (r.nodeId !== nodeId || r.dead || r.placing || seen.has(r.instanceId)) continue;
        this.actorLost(o.actorId, o.cls.def.name, this.clientId, nodeId, why, r.instanceId);
        void this.restartReplica(o, r, `node ${nodeId} was lost (${why})`);
      }
    }
    this.adoptedLost(nodeId, why);
  }

  /** A node this client never heard a heartbeat from, but which hosts an actor reused here, went silent. */
  private unheardNodeLost(nodeId: string, why: string): void {
    if (this.adopted.size === 0) return;
    const names = [...this.adopted].filter(([, a]) => a.nodeId === nodeId && !a.lost).map(([id]) => id);
    if (names.length === 0) return;
    this.rememberLost(nodeId, why);
    this.log(`node ${nodeId} lost (${why}); actor(s) reused here were on it: ${names.join(', ')}`);
    this.adoptedLost(nodeId, why);
  }

  private adoptedLost(nodeId: string, why: string): void {
    if (this.adopted.size === 0) return;
    for (const [id, a] of this.adopted) {
      if (a.lost || a.nodeId !== nodeId) continue;
      a.lost = true;
      this.actorLost(id, a.cls, a.owner, nodeId, why);
    }
  }

  /** An actor's node was lost: later calls meet ActorDiedError, calls in flight fail with it now. */
  private actorLost(actorId: string, cls: string, owner: string | undefined, nodeId: string, why: string, instanceId?: string): void {
    const ad = this.adopted.get(actorId);
    if (ad && ad.nodeId === nodeId) ad.lost = true;
    this.deadActors.set(actorId, `its node ${nodeId} was lost (${why})${this.owned.has(actorId) ? '' : this.unownedNote(owner)}`);
    this.failInflight(actorId, cls, owner, nodeId, why, instanceId);
  }

  private unownedNote(owner: string | undefined): string {
    return `; this client does not own it (it reused it${owner && owner !== this.clientId ? `; its owner is client ${owner}` : ''}), so it does not restart it: its owner restarts it if its maxRestarts allow; spawn it again to get it back, or create it anew`;
  }

  private failInflight(actorId: string, cls: string, owner: string | undefined, nodeId: string, why: string, instanceId?: string): void {
    const note = this.owned.has(actorId) ? '' : this.unownedNote(owner);
    const died = (subject: string) => {
      const method = subject.slice(subject.lastIndexOf('.') + 1);
      return new ActorDiedError(`actor ${cls} (${actorId}) died while ${method} was in flight: node ${nodeId} was lost (${why})${note}`, { actor: actorId, method, node: nodeId });
    };
    this.bus.failPending(`hr1.${this.name}.a.${actorId}.`, died);
    // calls sent to one replica by its instance id: that replica's (or, not knowing which, every one's)
    this.bus.failPending(instanceId !== undefined ? `hr1.${this.name}.i.${instanceId}.` : `hr1.${this.name}.i.${actorId}~`, died);
  }

  // -- placement -------------------------------------------------------------------------------

  /** Live nodes as last heard. */
  liveNodes(): Heartbeat[] {
    return [...this.nodes.values()].map((v) => v.hb).sort((a, b) => a.nodeId.localeCompare(b.nodeId));
  }

  /**
   * Ask every node for its state now (scatter-gather), and refresh the table. Returns as soon as
   * every node known from heartbeats answered; a loaded node gets up to 2 s before it is left out.
   */
  async status(windowMs = 300): Promise<Heartbeat[]> {
    const known = this.nodes.size;
    const replies = await this.bus.gather(subjects.ping(this.name), pack(null), known > 0 ? Math.max(windowMs, 2000) : windowMs, known > 0 ? known : Infinity);
    const out: Heartbeat[] = [];
    for (const r of replies) {
      try {
        const hb = decode(HeartbeatSchema, r, 'status reply');
        this.onHeartbeat(hb);
        out.push(hb);
      } catch {
        // ignore a malformed reply; the others still count
      }
    }
    return out.sort((a, b) => a.nodeId.localeCompare(b.nodeId));
  }

  /** Wait until at least `n` nodes are live. */
  async waitForNodes(n: number, timeoutMs = 10_000): Promise<Heartbeat[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const live = this.nodes.size >= n ? this.liveNodes() : await this.status(150);
      if (live.length >= n) return live;
      if (Date.now() > deadline) throw new PlacementError(`waited ${timeoutMs} ms for ${n} node(s); ${live.length} live: ${live.map((h) => h.nodeId).join(', ') || 'none'}`);
      await sleep(100);
    }
  }

  private candidates(cls: string, opts: ActorOptions, avoid: Set<string>, spread: Set<string>): Heartbeat[] {
    const res = opts.resources ?? {};
    const labels = opts.labels ?? {};
    const ok = this.liveNodes().filter((h) => {
      if (avoid.has(h.nodeId) || h.stopping) return false;
      if (!h.classes.includes(cls)) return false;
      for (const [k, v] of Object.entries(labels)) if (h.labels[k] !== v) return false;
      for (const [k, v] of Object.entries(res)) if (v > 0 && (h.available[k] ?? 0) < v) return false;
      return true;
    });
    const score = (h: Heartbeat) => (h.available.cpu ?? 0) / Math.max(1, h.total.cpu ?? 1) - (h.actors.length + (this.placedSinceBeat.get(h.nodeId) ?? 0)) * 0.01;
    return ok.sort((a, b) => Number(spread.has(a.nodeId)) - Number(spread.has(b.nodeId)) || score(b) - score(a) || a.nodeId.localeCompare(b.nodeId));
  }

  private describeNodes(): string {
    const live = this.liveNodes();
    if (live.length === 0) return 'no live nodes (start one with `hr1 node --address …`)';
    return live
      .map((h) => `${h.nodeId} [${Object.entries(h.available).map(([k, v]) => `${k} ${v}/${h.total[k] ?? 0}`).join(', ')}${Object.keys(h.labels).length ? `; ${Object.entries(h.labels).map(([k, v]) => `${k}=${v}`).join(',')}` : ''}]`)
      .join('; ');
  }

  /**
   * The PlacementError of a search that ran out of time: with no live node at all, it says so and
   * names the nodes that were lost and why; otherwise the last refusal, or what nobody offers.
   */
  private placementFailure(o: Owned, lastErr: Error | undefined, waitedMs: number): Error {
    if (this.nodes.size === 0) {
      const lost = [...this.lostNodes].sort(([a], [b]) => a.localeCompare(b));
      const shown = lost.slice(0, 8).map(([id, why]) => `${id}: ${why}`).join('; ') + (lost.length > 8 ? `; and ${lost.length - 8} more` : '');
      const what = lost.length > 0 ? `every node was lost (${shown})` : `no node has joined cluster "${this.name}"`;
      const hint = this.bus.kind === 'nats' ? `start one with \`hr1 node --address ${this.bus.address} --cluster ${this.name}\`` : 'start a ClusterNode on this bus';
      return new PlacementError(`no live node can host ${o.cls.def.name} (${o.actorId}) after waiting ${waitedMs} ms: ${what}; ${hint}`, { actor: o.actorId, ...(lastErr ? { cause: lastErr } : {}) });
    }
    return lastErr ?? new PlacementError(`no node can host ${o.cls.def.name} (${o.actorId}): needs resources ${JSON.stringify(o.opts.resources ?? {})}${o.opts.labels ? ` and labels ${JSON.stringify(o.opts.labels)}` : ''}; nodes: ${this.describeNodes()}`, { actor: o.actorId });
  }

  /** Find a node for replica `r` and start it there, until `deadlineMs`; `waitMs` is that budget as configured (for messages). */
  private async place(o: Owned, r: Replica, restartCount: number, avoid: Set<string>, deadlineMs: number, waitMs: number): Promise<string> {
    const spread = new Set(o.replicas.filter((x) => x !== r && !x.dead).map((x) => x.nodeId));
    const tried = new Set(avoid);
    let lastErr: Error | undefined;
    // after a lost connection, ask the same node again first (it may have started the actor)
    let prefer: string | undefined;
    if (this.nodes.size === 0) await this.status(200);
    for (;;) {
      if (this.closed) throw new Hr1Error('CLUSTER_CLOSED', `this cluster client was closed while placing ${o.cls.def.name} (${o.actorId})`, { actor: o.actorId });
      const cands = this.candidates(o.cls.def.name, o.opts, tried, spread);
      const target = (prefer !== undefined ? cands.find((c) => c.nodeId === prefer) : undefined) ?? cands[0];
      prefer = undefined;
      if (!target) {
        if (Date.now() > deadlineMs) throw this.placementFailure(o, lastErr, waitMs);
        // every candidate refused once: ask them again (resources free up, tables go stale);
        // with nobody left that fits (nodes lost meanwhile), wait for one to join until the deadline
        if (tried.size > avoid.size && this.candidates(o.cls.def.name, o.opts, avoid, spread).length > 0) {
          tried.clear();
          for (const a of avoid) tried.add(a);
        }
        await sleep(100);
        await this.status(150);
        continue;
      }
      const req: SpawnRequest = {
        actorId: o.actorId,
        instanceId: r.instanceId,
        cls: o.cls.def.name,
        args: o.args,
        owner: this.clientId,
        resources: o.opts.resources ?? {},
        labels: o.opts.labels ?? {},
        maxPending: o.opts.maxPending ?? DEFAULT_MAX_PENDING,
        maxConcurrency: o.opts.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
        restartCount,
      };
      if (o.opts.name !== undefined) req.name = o.opts.name;
      let reply: unknown;
      this.placedSinceBeat.set(target.nodeId, (this.placedSinceBeat.get(target.nodeId) ?? 0) + 1);
      const unplace = () => this.placedSinceBeat.set(target.nodeId, Math.max(0, (this.placedSinceBeat.get(target.nodeId) ?? 1) - 1));
      try {
        // the constructor may take long (a learner starts torch): the placement deadline bounds the search for a node, not this
        const bytes = await this.bus.request(subjects.nodeSpawn(this.name, target.nodeId), pack(req), this.spawnTimeout);
        reply = unpack(bytes);
      } catch (e) {
        unplace();
        if (e instanceof BusDisconnectedError) {
          // our connection dropped: the node may still be there, and may have started the actor
          lastErr = new PlacementError(`the connection to NATS was lost while node ${target.nodeId} was starting ${o.cls.def.name} (${o.actorId})`, { actor: o.actorId, node: target.nodeId, cause: e });
          prefer = target.nodeId;
          await sleep(100);
          continue;
        }
        if (e instanceof BusNoRespondersError) {
          // nothing listens on the node's spawn subject: it died (its heartbeat window is not over
          // yet) or it is reconnecting. Out of the table now, so no placement picks it again; its
          // next heartbeat brings it back, and without one its actors are lost as usual.
          this.suspectNode(target.nodeId);
        } else {
          lastErr = e instanceof BusTimeoutError ? new PlacementError(`node ${target.nodeId} did not answer the spawn of ${o.cls.def.name} in time`, { actor: o.actorId, node: target.nodeId }) : (e as Error);
        }
        tried.add(target.nodeId);
        continue;
      }
      const [tag, val] = reply as [number, unknown];
      if (tag === 0) {
        // keep our table honest until the node's next heartbeat
        for (const [k, v] of Object.entries(req.resources)) target.available[k] = (target.available[k] ?? 0) - v;
        return target.nodeId;
      }
      unplace();
      const err = fromWire(val as WireError);
      if (!(err instanceof PlacementError)) throw err;
      lastErr = err;
      tried.add(target.nodeId);
    }
  }

  // -- spawn, kill ----------------------------------------------------------------------------

  /**
   * Start an actor (or get the running one, for a named actor) and return its typed handle.
   * Rejects with ActorInitError when the constructor throws, PlacementError when no node fits.
   */
  async spawn<P extends Protocol, A extends z.ZodType, S>(cls: ActorClass<P, A, S>, args?: z.input<A>): Promise<Handle<P>> {
    if (this.closed) throw new Hr1Error('CLUSTER_CLOSED', 'this cluster client is closed; create a new one with init()');
    const name = cls.opts.name;
    if (name !== undefined) {
      // one get-or-create per name at a time in this client
      const prev = this.namedLocks.get(name) ?? Promise.resolve();
      const next = prev.catch(() => {}).then(() => this.getOrCreate(cls, args, name));
      this.namedLocks.set(name, next);
      return next;
    }
    return this.create(cls, args, `${cls.def.name}-${this.clientId}-${this.counter++}`);
  }

  private async getOrCreate<P extends Protocol, A extends z.ZodType, S>(cls: ActorClass<P, A, S>, args: unknown, name: string): Promise<Handle<P>> {
    const actorId = `@${name}`;
    // ours and running: no need to ask the bus (a busy node may answer a ping late)
    const mine = this.owned.get(actorId);
    if (mine && mine.cls.def.name === cls.def.name && !mine.killed && mine.replicas.some((r) => !r.dead)) return this.handle(cls, this.refOf(cls, actorId));
    try {
      const pong = validate(PongSchema, unpackOk(await this.pingNamed(actorId)), 'pong');
      if (pong.cls !== cls.def.name) throw new ConfigError(`${cls.def.name}.options.name`, `the name "${name}" is taken by an actor of class ${pong.cls}; choose another name`);
      this.adopt(actorId, pong);
      return this.handle(cls, this.refOf(cls, actorId));
    } catch (e) {
      if (!(e instanceof UnknownActorError || e instanceof ActorDiedError)) throw e;
    }
    return this.create(cls, args, actorId);
  }

  /** Ping a named actor; a node whose event loop is busy (a target decoding) may answer late, so a timeout is asked again, longer. */
  private async pingNamed(actorId: string): Promise<Uint8Array> {
    for (const ms of [1000, 5000, 15_000]) {
      try {
        return await this.rawCall(actorId, PING_METHOD, pack(null), ms);
      } catch (e) {
        if (!(e instanceof CallTimeoutError) || ms === 15_000) throw e;
      }
    }
    throw new Error('unreachable');
  }

  /** Watch the node of an actor reused here (not created here): see {@link Adopted}. */
  private adopt(actorId: string, pong: Pong): void {
    if (this.owned.has(actorId)) return;
    this.adopted.set(actorId, { cls: pong.cls, nodeId: pong.nodeId, owner: pong.owner, seenAt: Date.now(), lost: false });
  }

  private refOf(cls: ActorClass<any, any, any>, actorId: string): ActorRef {
    const ref: ActorRef = { cluster: this.name, actorId, cls: cls.def.name, maxTaskRetries: cls.opts.maxTaskRetries ?? 0 };
    if (cls.opts.name !== undefined) ref.name = cls.opts.name;
    return ref;
  }

  private async create<P extends Protocol, A extends z.ZodType, S>(cls: ActorClass<P, A, S>, args: unknown, actorId: string): Promise<Handle<P>> {
    const parsed = validate(cls.argsSchema, args, `arguments of ${cls.def.name}`, { actor: actorId });
    const o: Owned = { actorId, cls, args: parsed, opts: cls.opts, replicas: [], killed: false, deathReason: undefined, deathCause: undefined };
    const n = cls.opts.replicas ?? 1;
    for (let i = 0; i < n; i++) o.replicas.push({ instanceId: `${actorId}~${i}`, nodeId: '', restarts: 0, dead: false, placing: false });
    this.owned.set(actorId, o);
    this.adopted.delete(actorId);
    try {
      const deadline = Date.now() + this.spawnTimeout;
      for (const r of o.replicas) r.nodeId = await this.place(o, r, 0, new Set(), Math.min(deadline, Date.now() + this.placementWait), this.placementWait);
    } catch (e) {
      this.owned.delete(actorId);
      for (const r of o.replicas) if (r.nodeId) await this.killOn(o, r, 'spawn of a sibling replica failed').catch(() => {});
      throw e;
    }
    return this.handle(cls, this.refOf(cls, actorId));
  }

  private async restartReplica(o: Owned, r: Replica, why: string): Promise<void> {
    if (o.killed || this.closed) return;
    const max = o.opts.maxRestarts ?? 0;
    if (max !== -1 && r.restarts >= max) {
      r.dead = true;
      o.deathReason = `${why}; no restarts left (maxRestarts ${max})`;
      this.log(`actor ${o.cls.def.name} (${o.actorId}) is dead: ${o.deathReason}`);
      return;
    }
    r.restarts++;
    r.placing = true;
    try {
      // a lost node is already out of the table; a killed actor may come back on the same node.
      // With no node left, this waits up to spawnTimeout for one to join.
      r.nodeId = await this.place(o, r, r.restarts, new Set(), Date.now() + this.spawnTimeout, this.spawnTimeout);
      this.log(`actor ${o.cls.def.name} (${o.actorId}) restarted on ${r.nodeId} (restart ${r.restarts}${max === -1 ? '' : ` of ${max}`}) after ${why}`);
    } catch (e) {
      r.dead = true;
      o.deathReason = `restart after ${why} failed: ${(e as Error).message}`;
      o.deathCause = e as Error;
      this.log(`actor ${o.cls.def.name} (${o.actorId}) is dead: ${o.deathReason}`);
    } finally {
      r.placing = false;
    }
  }

  private async killOn(o: Owned, r: Replica, reason: string): Promise<void> {
    const bytes = await this.bus.request(subjects.nodeKill(this.name, r.nodeId), pack({ actorId: o.actorId, instanceId: r.instanceId, reason }), 5000);
    const [tag, val] = unpack(bytes) as [number, unknown];
    if (tag !== 0) throw fromWire(val as WireError);
  }

  /**
   * Kill an actor this client owns. With `restart: true` it restarts (constructor re-runs) if
   * its maxRestarts allow, as Ray's `ray.kill(a, no_restart=False)`.
   */
  async kill(target: { readonly ref: ActorRef } | ActorRef, opts: { restart?: boolean } = {}): Promise<void> {
    const ref = 'ref' in target ? target.ref : target;
    const o = this.owned.get(ref.actorId);
    if (!o) {
      // not ours: ask whichever node hosts it
      const hosts = this.liveNodes().filter((h) => h.actors.some((a) => a.actorId === ref.actorId));
      if (hosts.length === 0) throw new UnknownActorError(`no actor ${ref.actorId} in cluster ${this.name}`, { actor: ref.actorId });
      for (const h of hosts) await this.bus.request(subjects.nodeKill(this.name, h.nodeId), pack({ actorId: ref.actorId, reason: 'killed' }), 5000);
      return;
    }
    if (!opts.restart) o.killed = true;
    for (const r of o.replicas) {
      if (r.dead) continue;
      await this.killOn(o, r, opts.restart ? 'killed (restart requested)' : 'killed').catch(() => {});
      if (opts.restart) await this.restartReplica(o, r, 'kill with restart');
      else r.dead = true;
    }
    if (!opts.restart) {
      o.deathReason = 'killed by its owner';
      this.deadActors.set(o.actorId, 'it was killed');
    }
  }

  // -- calls ----------------------------------------------------------------------------------

  /** A typed handle for a ref (e.g. one received in a message). */
  handle<P extends Protocol>(cls: ActorClass<P, any, any>, ref: ActorRef): Handle<P> {
    const r = validate(ActorRefSchema, ref, 'actor ref');
    if (r.cls !== cls.def.name) throw new ConfigError('ref.cls', `ref names class ${r.cls} but a handle of ${cls.def.name} was asked for`);
    const h: Record<string, unknown> = { ref: r };
    for (const [method, spec] of Object.entries(cls.def.protocol)) {
      const fn = (input: unknown, opts?: CallOptions) => this.call(r, method, spec, input, opts);
      fn.tell = (input: unknown) => {
        try {
          this.bus.publish(subjects.actor(this.name, r.actorId, method), encode(spec.input, input, `input of ${r.cls}.${method}`, { actor: r.actorId, method }));
        } catch {
          // fire-and-forget: tell() never throws on the caller
        }
      };
      h[method] = fn;
    }
    return h as Handle<P>;
  }

  /** An untyped handle from a ref, looking the class up in this process's registry. */
  handleOf(ref: ActorRef): Handle<Protocol> {
    const cls = lookupActorClass(ref.cls);
    if (!cls) throw new ConfigError('ref.cls', `actor class ${ref.cls} is not loaded in this process; import the module that defines it`);
    return this.handle(cls, ref);
  }

  /** Call a method; the input and output are validated against the method's schemas here too. */
  call(ref: ActorRef, method: string, spec: { input: z.ZodType; output: z.ZodType }, input: unknown, opts: CallOptions = {}): Promise<any> {
    const where = { actor: ref.actorId, method };
    let data: Uint8Array;
    let timeout: number;
    try {
      data = encode(spec.input, input, `input of ${ref.cls}.${method}`, where);
      timeout = opts.timeout === undefined ? this.callTimeout : parseDuration(opts.timeout);
    } catch (e) {
      return Promise.reject(e);
    }
    const deadline = Date.now() + timeout;
    const decodeOut = (bytes: Uint8Array): unknown => validate(spec.output, unpackOk(bytes), `output of ${ref.cls}.${method}`, where);
    // the common case in one promise step; retries after an actor death take the slow path
    const instance = opts.replica === undefined ? undefined : `${ref.actorId}~${opts.replica}`;
    return this.rawCall(ref.actorId, method, data, timeout, ref.cls, instance).then(decodeOut, (e: unknown) => {
      if (!isResendable(e) || ref.maxTaskRetries === 0 || Date.now() >= deadline) throw e;
      return this.retryCall(ref, method, data, deadline, ref.maxTaskRetries, e, decodeOut);
    });
  }

  /** Re-send a call whose actor died or whose connection dropped, once the actor answers pings again. */
  private async retryCall(ref: ActorRef, method: string, data: Uint8Array, deadline: number, retries: number, first: ActorDiedError | CallLostError, decodeOut: (b: Uint8Array) => unknown): Promise<unknown> {
    let cause = first;
    for (;;) {
      if (retries === 0 || Date.now() >= deadline) throw cause;
      if (retries > 0) retries--;
      await this.waitAlive(ref, method, deadline, cause);
      try {
        return decodeOut(await this.rawCall(ref.actorId, method, data, Math.max(1, deadline - Date.now()), ref.cls));
      } catch (e) {
        if (!isResendable(e)) throw e;
        cause = e;
      }
    }
  }

  private async waitAlive(ref: ActorRef, method: string, deadline: number, cause: ActorDiedError | CallLostError): Promise<void> {
    for (;;) {
      const o = this.owned.get(ref.actorId);
      if (o && (o.killed || o.replicas.every((r) => r.dead))) {
        // dead for good: say why (a failed restart names its PlacementError), not only how the call was lost
        throw o.deathCause !== undefined && !o.killed ? new ActorDiedError(`actor ${ref.cls} (${ref.actorId}) is not running: ${o.deathReason}`, { actor: ref.actorId, method, node: o.replicas[0]?.nodeId, cause: o.deathCause }) : cause;
      }
      try {
        const bytes = await this.bus.request(subjects.actor(this.name, ref.actorId, PING_METHOD), pack(null), 250);
        if (!o) this.readopt(ref.actorId, bytes);
        return;
      } catch {
        if (Date.now() + 100 >= deadline) throw cause;
        await sleep(100);
      }
    }
  }

  /** An actor reused here answered a ping again (its owner restarted it): watch its new node. */
  private readopt(actorId: string, bytes: Uint8Array): void {
    if (!this.adopted.has(actorId)) return;
    try {
      this.adopt(actorId, validate(PongSchema, unpackOk(bytes), 'pong'));
    } catch {
      // not a pong: leave the record as it is
    }
  }

  /** Send bytes to an actor method; returns the raw `[0, value]` reply bytes or throws typed errors. */
  private rawCall(actorId: string, method: string, data: Uint8Array, timeoutMs: number, cls = '?', instance?: string): Promise<Uint8Array> {
    if (this.inflightCount >= this.maxInflight) {
      return Promise.reject(new BackpressureError(`this client has ${this.inflightCount} calls in flight (maxInflight ${this.maxInflight}); await some before sending more`, { actor: actorId, method }));
    }
    this.inflightCount++;
    return this.bus.request(instance === undefined ? `hr1.${this.name}.a.${actorId}.${method}` : subjects.instance(this.name, instance, method), data, timeoutMs).then(
      (bytes) => {
        this.inflightCount--;
        // fast path: fixarray(2) whose first element is 0 means success
        if (bytes[0] === 0x92 && bytes[1] === 0x00) return bytes;
        const [tag, val] = unpack(bytes, { actor: actorId, method }) as [number, unknown];
        if (tag === 0) return bytes;
        throw fromWire(validate(WireErrorSchema, val, 'error reply') as WireError);
      },
      (e: unknown) => {
        this.inflightCount--;
        throw this.mapBusError(e, actorId, method, cls, timeoutMs);
      },
    );
  }

  private mapBusError(e: unknown, actorId: string, method: string, cls: string, timeoutMs: number): Error {
    const where = { actor: actorId, method };
    if (e instanceof BusNoRespondersError) {
      const o = this.owned.get(actorId);
      const dead = this.deadActors.get(actorId);
      if (o || dead) {
        const node = o?.replicas[0]?.nodeId;
        return new ActorDiedError(`actor ${cls} (${actorId}) is not running: ${o?.deathReason ?? dead ?? 'it is restarting'}`, { ...where, node, ...(o?.deathCause ? { cause: o.deathCause } : {}) });
      }
      const known = [...new Set(this.liveNodes().flatMap((h) => h.actors.map((a) => `${a.cls}:${a.actorId}`)))];
      return new UnknownActorError(`no actor ${actorId} in cluster ${this.name}; actors seen: ${known.slice(0, 20).join(', ') || 'none'}`, where);
    }
    if (e instanceof BusDisconnectedError) {
      return new CallLostError(`the connection to NATS at ${e.address} was lost while ${cls}.${method} on ${actorId} was in flight, so its reply cannot arrive; it may or may not have run. The client reconnects by itself: the call may be sent again (it is retryable; give the actor maxTaskRetries to have the cluster re-send it)`, { ...where, cause: e });
    }
    if (e instanceof BusTimeoutError) return new CallTimeoutError(`${cls}.${method} on ${actorId} gave no reply within ${timeoutMs} ms; raise {timeout} or check the actor`, where);
    return e instanceof Error ? e : new Error(String(e));
  }

  /** Stop supervising and leave; owned actors keep running unless `killOwned`. */
  async close(opts: { killOwned?: boolean } = {}): Promise<void> {
    if (opts.killOwned) {
      for (const o of this.owned.values()) await this.kill(this.refOf(o.cls, o.actorId)).catch(() => {});
    }
    this.closed = true;
    clearInterval(this.timer);
    this.logListeners.clear();
    this.logSub?.unsubscribe();
    this.logSub = undefined;
  }
}

/** Errors after which `Cluster.call` re-sends a call when the actor's maxTaskRetries allow. */
function isResendable(e: unknown): e is ActorDiedError | CallLostError {
  return e instanceof ActorDiedError || e instanceof CallLostError;
}

/** The value of an `[0, value]` reply. */
function unpackOk(bytes: Uint8Array): unknown {
  return (unpack(bytes) as [number, unknown])[1];
}
