import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type ActorClass, type ActorOptions, type Protocol, DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_PENDING, lookupActorClass } from './actor.ts';
import { BusNoRespondersError, BusTimeoutError, type Bus } from './bus.ts';
import { NatsBus } from './bus-nats.ts';
import { decode, encode, pack, unpack, validate } from './codec.ts';
import { parseDuration, zDuration, zPositiveDuration, type Duration } from './duration.ts';
import { ActorDiedError, BackpressureError, CallTimeoutError, ConfigError, Hr1Error, PlacementError, UnknownActorError, fromWire, type WireError } from './errors.ts';
import { JetStreamObjectStore, MemoryObjectStore, type ObjectStore } from './objects.ts';
import { LOCAL_NODES } from './node.ts';
import { HeartbeatSchema, PING_METHOD, PongSchema, WireErrorSchema, subjects, type Heartbeat, type HostedActor, type SpawnRequest } from './protocol.ts';

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
}

interface Owned {
  actorId: string;
  cls: ActorClass<any, any, any>;
  args: unknown;
  opts: ActorOptions;
  replicas: Replica[];
  killed: boolean;
  deathReason: string | undefined;
}

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
        const now = Date.now();
        for (const n of this.nodes.values()) n.lastSeen = now;
      }
    });
    this.timer = setInterval(() => this.checkLiveness(), Math.max(50, Math.floor(this.deadAfter / 6)));
    this.timer.unref();
  }

  private onHeartbeat(hb: Heartbeat): void {
    if (this.closed) return;
    if (hb.stopping) {
      const v = this.nodes.get(hb.nodeId);
      if (v) this.nodeLost(hb.nodeId, v.hb, 'it stopped');
      return;
    }
    this.nodes.set(hb.nodeId, { hb, lastSeen: Date.now() });
    this.placedSinceBeat.delete(hb.nodeId);
    for (const a of hb.actors) this.deadActors.delete(a.actorId);
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
      for (const v of this.nodes.values()) v.lastSeen = now;
      return;
    }
    for (const [id, v] of this.nodes) {
      // a node in this very process lives and dies with it
      if (LOCAL_NODES.has(id)) continue;
      if (now - v.lastSeen > this.deadAfter) this.nodeLost(id, v.hb, `no heartbeat for ${now - v.lastSeen} ms`);
    }
  }

  private nodeLost(nodeId: string, hb: Heartbeat, why: string): void {
    if (!this.nodes.delete(nodeId)) return;
    this.log(`node ${nodeId} lost (${why}); ${hb.actors.length} actor(s) were on it`);
    for (const a of hb.actors) {
      this.deadActors.set(a.actorId, `its node ${nodeId} was lost (${why})`);
      this.failInflight(a, nodeId, why);
      const o = this.owned.get(a.actorId);
      const r = o?.replicas.find((x) => x.instanceId === a.instanceId);
      if (o && r && !r.dead) void this.restartReplica(o, r, `node ${nodeId} was lost (${why})`);
    }
  }

  private failInflight(a: HostedActor, nodeId: string, why: string): void {
    this.bus.failPending(`hr1.${this.name}.a.${a.actorId}.`, (subject) => {
      const method = subject.slice(subject.lastIndexOf('.') + 1);
      return new ActorDiedError(`actor ${a.cls} (${a.actorId}) died while ${method} was in flight: node ${nodeId} was lost (${why})`, { actor: a.actorId, method, node: nodeId });
    });
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

  private async place(o: Owned, r: Replica, restartCount: number, avoid: Set<string>, deadlineMs: number): Promise<string> {
    const spread = new Set(o.replicas.filter((x) => x !== r && !x.dead).map((x) => x.nodeId));
    const tried = new Set(avoid);
    let lastErr: Error | undefined;
    if (this.nodes.size === 0) await this.status(200);
    for (;;) {
      const cands = this.candidates(o.cls.def.name, o.opts, tried, spread);
      const target = cands[0];
      if (!target) {
        if (Date.now() > deadlineMs || tried.size > avoid.size) {
          // one pass over every candidate failed, or nobody fits and time is up
          if (Date.now() > deadlineMs || this.candidates(o.cls.def.name, o.opts, avoid, spread).length === 0) {
            throw lastErr ?? new PlacementError(`no node can host ${o.cls.def.name} (${o.actorId}): needs resources ${JSON.stringify(o.opts.resources ?? {})}${o.opts.labels ? ` and labels ${JSON.stringify(o.opts.labels)}` : ''}; nodes: ${this.describeNodes()}`, { actor: o.actorId });
          }
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
        lastErr = e instanceof BusTimeoutError ? new PlacementError(`node ${target.nodeId} did not answer the spawn of ${o.cls.def.name} in time`, { actor: o.actorId, node: target.nodeId }) : (e as Error);
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
    try {
      const pong = validate(PongSchema, unpackOk(await this.rawCall(actorId, PING_METHOD, pack(null), 1000)), 'pong');
      if (pong.cls !== cls.def.name) throw new ConfigError(`${cls.def.name}.options.name`, `the name "${name}" is taken by an actor of class ${pong.cls}; choose another name`);
      return this.handle(cls, this.refOf(cls, actorId));
    } catch (e) {
      if (!(e instanceof UnknownActorError || e instanceof ActorDiedError)) throw e;
    }
    return this.create(cls, args, actorId);
  }

  private refOf(cls: ActorClass<any, any, any>, actorId: string): ActorRef {
    const ref: ActorRef = { cluster: this.name, actorId, cls: cls.def.name, maxTaskRetries: cls.opts.maxTaskRetries ?? 0 };
    if (cls.opts.name !== undefined) ref.name = cls.opts.name;
    return ref;
  }

  private async create<P extends Protocol, A extends z.ZodType, S>(cls: ActorClass<P, A, S>, args: unknown, actorId: string): Promise<Handle<P>> {
    const parsed = validate(cls.argsSchema, args, `arguments of ${cls.def.name}`, { actor: actorId });
    const o: Owned = { actorId, cls, args: parsed, opts: cls.opts, replicas: [], killed: false, deathReason: undefined };
    const n = cls.opts.replicas ?? 1;
    for (let i = 0; i < n; i++) o.replicas.push({ instanceId: `${actorId}~${i}`, nodeId: '', restarts: 0, dead: false });
    this.owned.set(actorId, o);
    try {
      const deadline = Date.now() + this.spawnTimeout;
      for (const r of o.replicas) r.nodeId = await this.place(o, r, 0, new Set(), Math.min(deadline, Date.now() + this.placementWait));
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
    try {
      // a lost node is already out of the table; a killed actor may come back on the same node
      r.nodeId = await this.place(o, r, r.restarts, new Set(), Date.now() + this.spawnTimeout);
      this.log(`actor ${o.cls.def.name} (${o.actorId}) restarted on ${r.nodeId} (restart ${r.restarts}${max === -1 ? '' : ` of ${max}`}) after ${why}`);
    } catch (e) {
      r.dead = true;
      o.deathReason = `restart after ${why} failed: ${(e as Error).message}`;
      this.log(`actor ${o.cls.def.name} (${o.actorId}) is dead: ${o.deathReason}`);
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
    return this.rawCall(ref.actorId, method, data, timeout, ref.cls).then(decodeOut, (e: unknown) => {
      if (!(e instanceof ActorDiedError) || ref.maxTaskRetries === 0 || Date.now() >= deadline) throw e;
      return this.retryCall(ref, method, data, deadline, ref.maxTaskRetries, e, decodeOut);
    });
  }

  private async retryCall(ref: ActorRef, method: string, data: Uint8Array, deadline: number, retries: number, first: ActorDiedError, decodeOut: (b: Uint8Array) => unknown): Promise<unknown> {
    let cause = first;
    for (;;) {
      if (retries === 0 || Date.now() >= deadline) throw cause;
      if (retries > 0) retries--;
      await this.waitAlive(ref, deadline, cause);
      try {
        return decodeOut(await this.rawCall(ref.actorId, method, data, Math.max(1, deadline - Date.now()), ref.cls));
      } catch (e) {
        if (!(e instanceof ActorDiedError)) throw e;
        cause = e;
      }
    }
  }

  private async waitAlive(ref: ActorRef, deadline: number, cause: ActorDiedError): Promise<void> {
    for (;;) {
      const o = this.owned.get(ref.actorId);
      if (o && (o.killed || o.replicas.every((r) => r.dead))) throw cause;
      try {
        await this.bus.request(subjects.actor(this.name, ref.actorId, PING_METHOD), pack(null), 250);
        return;
      } catch {
        if (Date.now() + 100 >= deadline) throw cause;
        await sleep(100);
      }
    }
  }

  /** Send bytes to an actor method; returns the raw `[0, value]` reply bytes or throws typed errors. */
  private rawCall(actorId: string, method: string, data: Uint8Array, timeoutMs: number, cls = '?'): Promise<Uint8Array> {
    if (this.inflightCount >= this.maxInflight) {
      return Promise.reject(new BackpressureError(`this client has ${this.inflightCount} calls in flight (maxInflight ${this.maxInflight}); await some before sending more`, { actor: actorId, method }));
    }
    this.inflightCount++;
    return this.bus.request(`hr1.${this.name}.a.${actorId}.${method}`, data, timeoutMs).then(
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
        return new ActorDiedError(`actor ${cls} (${actorId}) is not running: ${o?.deathReason ?? dead ?? 'it is restarting'}`, { ...where, node });
      }
      const known = [...new Set(this.liveNodes().flatMap((h) => h.actors.map((a) => `${a.cls}:${a.actorId}`)))];
      return new UnknownActorError(`no actor ${actorId} in cluster ${this.name}; actors seen: ${known.slice(0, 20).join(', ') || 'none'}`, where);
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
  }
}

/** The value of an `[0, value]` reply. */
function unpackOk(bytes: Uint8Array): unknown {
  return (unpack(bytes) as [number, unknown])[1];
}
