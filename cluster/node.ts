import { hostname } from 'node:os';
import { lookupActorClass, registeredActorClasses, type ActorClass, type ActorContext, type ActorLog, type Protocol } from './actor.ts';
import type { Bus, BusMsg, BusSubscription } from './bus.ts';
import { decode, encode, pack, validate } from './codec.ts';
import { DEFAULT_LOG_RATE, LogLimiter, clipMessage, formatLogRecord } from './logs.ts';
import { ActorDiedError, ActorInitError, BackpressureError, ConfigError, Hr1Error, PlacementError, UnknownActorError, UnknownMethodError, toWire, type WireError } from './errors.ts';
import { KillRequestSchema, LogRecordSchema, PING_METHOD, SpawnRequestSchema, subjects, type Heartbeat, type HostedActor, type LogLevel, type LogRecord, type SpawnRequest } from './protocol.ts';

/** Node options. */
export interface NodeOptions {
  /** Cluster namespace: subjects are `hr1.<cluster>.…`. @default 'default' */
  cluster?: string;
  /** Unique node id. @default `<host>-<pid>-<n>` */
  nodeId?: string;
  /** Resources this node offers. @default {cpu: <cores>, gpu: 0} */
  resources?: Record<string, number>;
  labels?: Record<string, string>;
  /** @default 500 */
  heartbeatMs?: number;
  /** What actors get as `ctx.services` (normally the node's cluster client). */
  services?: unknown;
  /** Log records each actor replica may publish per second on `hr1.<cluster>.sys.log` (info lines have a bucket of their own); the rest are counted and dropped; 0 = none. @default DEFAULT_LOG_RATE (20) */
  logRate?: number;
  /** Print actors' own warnings and errors (`ctx.log`) on this process's stderr too. @default true */
  printLogs?: boolean;
}

export const DEFAULT_HEARTBEAT_MS = 500;

interface Call {
  msg: BusMsg;
  method: string;
}

interface Instance {
  req: SpawnRequest;
  cls: ActorClass<Protocol, any, unknown>;
  state: unknown;
  ctx: ActorContext;
  sub: BusSubscription;
  queue: Call[];
  running: number;
  stopped: boolean;
  limiter: LogLimiter;
  // info lines have their own bucket: a chatty actor cannot crowd its warnings out
  infoLimiter: LogLimiter;
  /** calls its handlers finished, and of those the failed ones (heartbeat counters) */
  calls: number;
  errors: number;
}

let nodeCounter = 0;

/** Nodes hosted by this process: they live and die with it, so no client here times them out. */
export const LOCAL_NODES = new Set<string>();

/** A node hosts actors: it answers spawn and kill requests, runs calls through bounded mailboxes and heartbeats its resources. */
export class ClusterNode {
  readonly cluster: string;
  readonly nodeId: string;
  readonly labels: Record<string, string>;
  readonly total: Record<string, number>;
  private available: Record<string, number>;
  private instances = new Map<string, Instance>();
  // constructors running, by instance id: a spawn sent again waits for the first one's answer
  private starting = new Map<string, Promise<Uint8Array>>();
  private subs: BusSubscription[] = [];
  private timer: NodeJS.Timeout | undefined;
  private seq = 0;
  private readonly startedAt = Date.now();
  private stopping = false;
  private gone = false;
  private readonly logRate: number;
  private readonly printLogs: boolean;
  // constructor failures have no replica to charge: they share one bucket
  private readonly initLimiter: LogLimiter;
  services: unknown;

  constructor(readonly bus: Bus, opts: NodeOptions = {}) {
    this.cluster = opts.cluster ?? 'default';
    this.nodeId = opts.nodeId ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '_')}-${process.pid}-${nodeCounter++}`;
    this.labels = { ...(opts.labels ?? {}) };
    this.total = { cpu: 1, gpu: 0, ...(opts.resources ?? {}) };
    this.available = { ...this.total };
    this.services = opts.services;
    this.logRate = opts.logRate ?? DEFAULT_LOG_RATE;
    if (!(Number.isFinite(this.logRate) && this.logRate >= 0)) throw new ConfigError('logRate', `must be a number of lines per second, 0 or more; got ${String(opts.logRate)}`);
    this.printLogs = opts.printLogs ?? true;
    this.initLimiter = new LogLimiter(this.logRate);
    const hb = opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    const c = this.cluster;
    this.subs.push(bus.subscribe(subjects.nodeSpawn(c, this.nodeId), (m) => void this.onSpawn(m)));
    this.subs.push(bus.subscribe(subjects.nodeKill(c, this.nodeId), (m) => void this.onKill(m)));
    this.subs.push(bus.subscribe(subjects.ping(c), (m) => m.respond(pack(this.heartbeat()))));
    LOCAL_NODES.add(this.nodeId);
    this.beat();
    this.timer = setInterval(() => this.beat(), hb);
    this.timer.unref();
  }

  /** The node's current heartbeat record. */
  heartbeat(): Heartbeat {
    const actors: HostedActor[] = [];
    for (const inst of this.instances.values()) {
      const a: HostedActor = {
        actorId: inst.req.actorId,
        instanceId: inst.req.instanceId,
        cls: inst.req.cls,
        owner: inst.req.owner,
        restartCount: inst.req.restartCount,
        pending: inst.queue.length + inst.running,
        resources: inst.req.resources,
        calls: inst.calls,
        errors: inst.errors,
        logsDropped: inst.limiter.dropped + inst.infoLimiter.dropped,
      };
      if (inst.req.name !== undefined) a.name = inst.req.name;
      actors.push(a);
    }
    return {
      nodeId: this.nodeId,
      host: hostname(),
      pid: process.pid,
      labels: this.labels,
      total: this.total,
      available: this.available,
      classes: registeredActorClasses(),
      actors,
      startedAt: this.startedAt,
      seq: this.seq++,
      stopping: this.stopping,
    };
  }

  private beat(): void {
    try {
      this.bus.publish(subjects.heartbeat(this.cluster), pack(this.heartbeat()));
    } catch {
      // bus down: the next beat after reconnect tells the cluster we are alive
    }
  }

  /** Publish one log record of a replica (within its rate limit); an actor's own warnings print here too. */
  private emit(req: SpawnRequest, limiter: LogLimiter, level: LogLevel, source: LogRecord['source'], message: string, extra: { method?: string; code?: string } = {}): void {
    if (this.gone) return;
    const dropped = limiter.take();
    if (dropped === undefined) return;
    const rec: LogRecord = { nodeId: this.nodeId, actorId: req.actorId, instanceId: req.instanceId, cls: req.cls, level, source, message: clipMessage(message), time: Date.now(), ...extra };
    if (req.name !== undefined) rec.name = req.name;
    if (dropped > 0) rec.dropped = dropped;
    if (this.printLogs && source === 'actor' && level !== 'info') process.stderr.write(`${formatLogRecord(rec)}\n`);
    try {
      this.bus.publish(subjects.log(this.cluster), encode(LogRecordSchema, rec, 'log record'));
    } catch {
      // bus down: logs are best effort, calls are not disturbed
    }
  }

  private reply(msg: BusMsg, value: unknown): void {
    msg.respond(pack([0, value]));
  }

  private replyError(msg: BusMsg, w: WireError): void {
    msg.respond(pack([1, w]));
  }

  private fits(res: Record<string, number>): string | undefined {
    for (const [k, v] of Object.entries(res)) {
      if (v <= 0) continue;
      const have = this.available[k] ?? 0;
      if (have < v) return `${k}: needs ${v}, node ${this.nodeId} has ${have} free of ${this.total[k] ?? 0}`;
    }
    return undefined;
  }

  private async onSpawn(msg: BusMsg): Promise<void> {
    const where = { node: this.nodeId };
    let req: SpawnRequest;
    try {
      req = decode(SpawnRequestSchema, msg.data, 'spawn request', where);
    } catch (e) {
      return this.replyError(msg, toWire(e, 'MALFORMED_MESSAGE', where));
    }
    const fields = { actor: req.actorId, node: this.nodeId };
    if (this.stopping) return this.replyError(msg, new PlacementError(`node ${this.nodeId} is stopping`, fields).toWire());
    // a spawn sent again (the client's connection dropped before our answer) gets the first one's answer
    if (this.instances.has(req.instanceId)) return this.reply(msg, { nodeId: this.nodeId });
    const already = this.starting.get(req.instanceId);
    if (already) return msg.respond(await already);
    const cls = lookupActorClass(req.cls);
    if (!cls) {
      return this.replyError(msg, new PlacementError(`node ${this.nodeId} cannot host actor class ${req.cls}: not loaded here (it knows ${registeredActorClasses().join(', ') || 'no classes'}); start the node with --module FILE that defines it`, { ...fields, retryable: true }).toWire());
    }
    for (const [k, v] of Object.entries(req.labels)) {
      if (this.labels[k] !== v) return this.replyError(msg, new PlacementError(`node ${this.nodeId} lacks label ${k}=${v}`, fields).toWire());
    }
    const short = this.fits(req.resources);
    if (short) return this.replyError(msg, new PlacementError(`not enough resources (${short})`, fields).toWire());
    const start = this.startInstance(req, cls, fields);
    this.starting.set(req.instanceId, start);
    let answer: Uint8Array;
    try {
      answer = await start;
    } finally {
      this.starting.delete(req.instanceId);
    }
    msg.respond(answer);
    if (this.instances.has(req.instanceId)) this.beat();
  }

  /** Reserve, run the constructor and subscribe; the spawn's reply bytes. */
  private async startInstance(req: SpawnRequest, cls: ActorClass<Protocol, any, unknown>, fields: { actor: string; node: string }): Promise<Uint8Array> {
    for (const [k, v] of Object.entries(req.resources)) this.available[k] = (this.available[k] ?? 0) - v;
    const limiter = new LogLimiter(this.logRate);
    const infoLimiter = new LogLimiter(this.logRate);
    const say = (level: LogLevel) => (msg: string) => this.emit(req, level === 'info' ? infoLimiter : limiter, level, 'actor', String(msg));
    const log: ActorLog = { info: say('info'), warn: say('warn'), error: say('error') };
    const ctx: ActorContext = {
      actorId: req.actorId,
      instanceId: req.instanceId,
      name: req.name,
      nodeId: this.nodeId,
      restartCount: req.restartCount,
      services: this.services,
      log,
    };
    let state: unknown;
    try {
      const args = validate(cls.argsSchema, req.args, `arguments of ${req.cls}`, fields);
      state = await cls.def.create(args, ctx);
    } catch (e) {
      this.release(req.resources);
      const w = e instanceof Hr1Error && e.code === 'SCHEMA_INVALID' ? e.toWire() : new ActorInitError(`constructor of ${req.cls} (${req.actorId}) threw on node ${this.nodeId}: ${(e as Error)?.message ?? String(e)}`, { ...fields, remoteStack: (e as Error)?.stack, cause: e }).toWire();
      this.emit(req, this.initLimiter, 'error', 'init', w.message, { code: w.code });
      return pack([1, w]);
    }
    const inst: Instance = { req, cls, state, ctx, sub: undefined as unknown as BusSubscription, queue: [], running: 0, stopped: false, limiter, infoLimiter, calls: 0, errors: 0 };
    const group = this.bus.subscribe(subjects.actorAll(this.cluster, req.actorId), (m) => this.onCall(inst, m), { queue: `q.${req.actorId}` });
    // the same replica by its instance id: a caller that picks the replica itself (a straggler's resend goes to another one)
    const direct = this.bus.subscribe(subjects.instanceAll(this.cluster, req.instanceId), (m) => this.onCall(inst, m));
    inst.sub = {
      unsubscribe: () => {
        group.unsubscribe();
        direct.unsubscribe();
      },
    };
    this.instances.set(req.instanceId, inst);
    if (req.restartCount > 0) this.emit(req, limiter, 'warn', 'restart', `restarted on node ${this.nodeId} (restart ${req.restartCount}): its constructor ran again, its state is new`);
    await this.bus.flush().catch(() => {});
    return pack([0, { nodeId: this.nodeId }]);
  }

  private release(res: Record<string, number>): void {
    for (const [k, v] of Object.entries(res)) this.available[k] = Math.min(this.total[k] ?? 0, (this.available[k] ?? 0) + v);
  }

  private onCall(inst: Instance, msg: BusMsg): void {
    const method = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
    const fields = { actor: inst.req.actorId, method, node: this.nodeId };
    if (inst.stopped) return this.replyError(msg, new ActorDiedError(`actor ${inst.req.cls} (${inst.req.actorId}) was stopped on node ${this.nodeId} before ${method} ran`, fields).toWire());
    if (method === PING_METHOD) return this.reply(msg, { instanceId: inst.req.instanceId, cls: inst.req.cls, nodeId: this.nodeId, restartCount: inst.req.restartCount, owner: inst.req.owner });
    if (!Object.prototype.hasOwnProperty.call(inst.cls.def.protocol, method)) {
      return this.replyError(msg, new UnknownMethodError(`actor ${inst.req.cls} has no method "${method}"; its methods are ${Object.keys(inst.cls.def.protocol).join(', ')}`, fields).toWire());
    }
    // an idle replica runs the call now, without queueing it
    if (inst.running < inst.req.maxConcurrency && inst.queue.length === 0) {
      inst.running++;
      this.run(inst, { msg, method });
      return;
    }
    const max = inst.req.maxPending;
    if (inst.queue.length >= max) {
      return this.replyError(msg, new BackpressureError(`mailbox of ${inst.req.cls} (${inst.req.actorId}) on node ${this.nodeId} is full (${max} pending); back off and retry, or raise maxPending / add replicas`, fields).toWire());
    }
    inst.queue.push({ msg, method });
    this.pump(inst);
  }

  private pump(inst: Instance): void {
    while (inst.running < inst.req.maxConcurrency && inst.queue.length > 0) {
      const call = inst.queue.shift() as Call;
      inst.running++;
      this.run(inst, call);
    }
  }

  private run(inst: Instance, call: Call): void {
    const { msg, method } = call;
    let out: unknown;
    try {
      const spec = inst.cls.def.protocol[method]!;
      const input = decode(spec.input, msg.data, `input of ${inst.req.cls}.${method}`);
      out = (inst.cls.def.handlers as Record<string, (s: unknown, i: unknown, c: ActorContext) => unknown>)[method]!(inst.state, input, inst.ctx);
    } catch (e) {
      this.finish(inst, call, e, true);
      return;
    }
    // stay synchronous for sync handlers: no extra microtask per call
    if (out instanceof Promise) {
      out.then(
        (v) => this.finish(inst, call, v, false),
        (e) => this.finish(inst, call, e, true),
      );
    } else this.finish(inst, call, out, false);
  }

  private finish(inst: Instance, call: Call, value: unknown, failed: boolean): void {
    const { msg, method } = call;
    let bytes: Uint8Array | undefined;
    if (!failed) {
      try {
        bytes = pack([0, validate(inst.cls.def.protocol[method]!.output, value, `output of ${inst.req.cls}.${method}`)]);
      } catch (e) {
        value = e;
      }
    }
    let w: WireError | undefined;
    if (bytes === undefined) bytes = pack([1, (w = toWire(value, 'ACTOR_TASK', { actor: inst.req.actorId, method, node: this.nodeId }))]);
    msg.respond(bytes);
    inst.calls++;
    if (w) {
      inst.errors++;
      const code = typeof w.data?.taskCode === 'string' ? w.data.taskCode : w.code;
      this.emit(inst.req, inst.limiter, 'error', 'call', `${method} failed: ${w.message}`, { method, code });
    }
    inst.running--;
    if (inst.queue.length > 0) this.pump(inst);
  }

  private async onKill(msg: BusMsg): Promise<void> {
    let req;
    try {
      req = decode(KillRequestSchema, msg.data, 'kill request', { node: this.nodeId });
    } catch (e) {
      return this.replyError(msg, toWire(e, 'MALFORMED_MESSAGE', { node: this.nodeId }));
    }
    const victims = [...this.instances.values()].filter((i) => i.req.actorId === req.actorId && (req.instanceId === undefined || i.req.instanceId === req.instanceId));
    if (victims.length === 0) return this.replyError(msg, new UnknownActorError(`node ${this.nodeId} hosts no actor ${req.actorId}`, { actor: req.actorId, node: this.nodeId }).toWire());
    for (const v of victims) await this.stopInstance(v, req.reason);
    this.reply(msg, { killed: victims.length });
    this.beat();
  }

  private async stopInstance(inst: Instance, reason: string): Promise<void> {
    if (inst.stopped) return;
    inst.stopped = true;
    inst.sub.unsubscribe();
    this.instances.delete(inst.req.instanceId);
    this.release(inst.req.resources);
    for (const c of inst.queue.splice(0)) {
      this.replyError(c.msg, new ActorDiedError(`actor ${inst.req.cls} (${inst.req.actorId}) died on node ${this.nodeId} before ${c.method} ran: ${reason}`, { actor: inst.req.actorId, method: c.method, node: this.nodeId }).toWire());
    }
    try {
      await inst.cls.def.destroy?.(inst.state, inst.ctx);
    } catch {
      // a failing destructor must not keep the node from stopping
    }
  }

  /** Ids of hosted instances (for tests and status). */
  hosted(): HostedActor[] {
    return this.heartbeat().actors;
  }

  /**
   * Vanish without a word, as a process killed with SIGKILL would: heartbeats stop, every
   * subscription is dropped, queued calls get no reply. For fault tests on the in-process
   * transport (over NATS, tests kill a real node process instead).
   */
  vanish(): void {
    LOCAL_NODES.delete(this.nodeId);
    this.gone = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const inst of this.instances.values()) {
      inst.stopped = true;
      inst.sub.unsubscribe();
      inst.queue.length = 0;
    }
    this.instances.clear();
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
  }

  /** Stop every hosted actor and leave the cluster. */
  async stop(): Promise<void> {
    LOCAL_NODES.delete(this.nodeId);
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.stopping = true;
    this.beat();
    for (const inst of [...this.instances.values()]) await this.stopInstance(inst, `node ${this.nodeId} stopped`);
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
  }
}

