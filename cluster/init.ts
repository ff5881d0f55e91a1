import { cpus } from 'node:os';
import { InProcessBus } from './bus-inproc.ts';
import { NatsBus, authFromEnv, type NatsAuth } from './bus-nats.ts';
import type { Bus } from './bus.ts';
import { z } from 'zod';
import { Cluster, ClusterOptionsShape, markResolved, optionsError, pickAlias, resolveClusterFields, type ResolvedClusterOptions } from './client.ts';
import { zPositiveDuration } from './duration.ts';
import { ClusterNode, DEFAULT_HEARTBEAT_MS } from './node.ts';
import { NatsServer, findNatsServer } from './nats-server.ts';
import { onShutdown } from './signals.ts';

/** The local node's heartbeat interval, in ms (re-exported from node.ts). @default 500 */
export { DEFAULT_HEARTBEAT_MS };
/** How long init() waits for its local node to be seen, in ms. @default 5000 */
export const DEFAULT_LOCAL_NODE_WAIT_MS = 5000;

const optionalString = z.string().optional();

/** init()'s options as a schema: the cluster client's ({@link ClusterOptionsShape}), NATS auth and the local node's. */
export const InitOptionsSchema = z.strictObject({
  ...ClusterOptionsShape,
  /** `nats://host:port` (or `tls://host:port`) of an existing cluster. Without it, a private nats-server is started. */
  address: optionalString,
  /** Force the in-process transport (no NATS at all). @default false */
  inProcess: z.boolean().optional(),
  /** Host actors in this process too. @default true without `address`, false with it */
  localNode: z.boolean().optional(),
  /** Resources of the local node. @default {cpu: <cores>, gpu: 0} */
  resources: z.record(z.string(), z.number().min(0)).optional(),
  /** Labels of the local node. @default {} */
  labels: z.record(z.string(), z.string()).optional(),
  /** The local node's heartbeat interval (ms or "500ms"). @default DEFAULT_HEARTBEAT_MS (500) */
  heartbeat: zPositiveDuration.optional(),
  /** The same as `heartbeat`. */
  heartbeatMs: zPositiveDuration.optional(),
  user: optionalString,
  pass: optionalString,
  token: optionalString,
  /** Path to a `.creds` file (JWT + nkey seed). */
  creds: optionalString,
  /** TLS to an existing cluster (cluster/tls.ts): the CA that signed the server's certificate (PEM file). */
  tlsCa: optionalString,
  /** This client's certificate (PEM), for servers that verify clients; with `tlsKey`. */
  tlsCert: optionalString,
  /** The private key of `tlsCert` (PEM). */
  tlsKey: optionalString,
});
export type InitOptions = z.input<typeof InitOptionsSchema>;

/** init()'s options resolved once: defaults filled in, durations in ms. */
export interface ResolvedInitOptions {
  readonly client: ResolvedClusterOptions;
  /** '' = none */
  readonly address: string;
  readonly inProcess: boolean;
  readonly localNode: boolean;
  readonly resources: Record<string, number>;
  readonly labels: Record<string, string>;
  readonly heartbeatMs: number;
  readonly auth: NatsAuth;
}

const ResolveInitSchema = InitOptionsSchema.transform((o, ctx): ResolvedInitOptions => ({
  client: markResolved(resolveClusterFields(o, ctx)),
  address: o.address ?? '',
  inProcess: o.inProcess ?? false,
  localNode: o.localNode ?? !o.address,
  resources: o.resources ?? { cpu: cpus().length, gpu: 0 },
  labels: o.labels ?? {},
  heartbeatMs: pickAlias(o, 'heartbeat', 'heartbeatMs', DEFAULT_HEARTBEAT_MS, ctx),
  auth: stripUndefined({ user: o.user, pass: o.pass, token: o.token, creds: o.creds, tlsCa: o.tlsCa, tlsCert: o.tlsCert, tlsKey: o.tlsKey }),
}));

/**
 * Validate init()'s options and fill in the defaults, once; a bad value throws ConfigError with
 * the option's path (`heartbeat: duration "soon" is not understood …`).
 */
export function resolveInitOptions(opts: InitOptions = {}): ResolvedInitOptions {
  const r = ResolveInitSchema.safeParse(opts);
  if (!r.success) throw optionsError(r.error);
  return r.data;
}

export type ClusterMode = 'nats' | 'nats-embedded' | 'inproc';

/** What `init()` returns: the client, the local node if any, and one way to shut it all down. */
export interface Runtime {
  cluster: Cluster;
  node: ClusterNode | undefined;
  bus: Bus;
  mode: ClusterMode;
  /** The NATS URL in use, or `inproc`. */
  address: string;
  /** A line saying how the cluster was set up, for the user. */
  note: string;
  /**
   * Kill the actors this client owns, stop the local node, close the connection, stop the
   * embedded server. Idempotent: every call waits for the same shutdown. A signal to the CLI
   * runs it too (cluster/signals.ts).
   */
  shutdown(): Promise<void>;
}

/**
 * Like `ray.init()`: connect to `address`, or start a private nats-server on a free loopback
 * port (stopped on shutdown), or fall back to the in-process transport when the binary is
 * missing, and say which.
 */
export async function init(options: InitOptions = {}): Promise<Runtime> {
  const opts = resolveInitOptions(options);
  const auth = { ...authFromEnv(), ...opts.auth };
  let bus: Bus;
  let server: NatsServer | undefined;
  let mode: ClusterMode;
  let note: string;
  if (opts.address) {
    bus = await NatsBus.connect({ address: opts.address, ...auth });
    mode = 'nats';
    note = `connected to NATS at ${opts.address}`;
  } else if (opts.inProcess) {
    bus = new InProcessBus();
    mode = 'inproc';
    note = 'in-process transport (asked for)';
  } else if (findNatsServer()) {
    server = await NatsServer.start({ jetstream: true });
    try {
      bus = await NatsBus.connect({ address: server.url });
    } catch (e) {
      await server.dispose();
      throw e;
    }
    mode = 'nats-embedded';
    note = `embedded cluster: private nats-server at ${server.url} (stopped on exit)`;
  } else {
    bus = new InProcessBus();
    mode = 'inproc';
    note = 'nats-server not found: running in-process (install it with `apt-get install -y nats-server` for the NATS transport)';
  }
  const cluster = new Cluster(bus, opts.client);
  let node: ClusterNode | undefined;
  if (opts.localNode) {
    node = new ClusterNode(bus, { cluster: cluster.name, resources: opts.resources, labels: opts.labels, services: cluster, heartbeatMs: opts.heartbeatMs });
    try {
      await cluster.waitForNodes(1, DEFAULT_LOCAL_NODE_WAIT_MS);
    } catch (e) {
      // nothing of a half-started runtime stays behind
      await cluster.close().catch(() => {});
      await node.stop().catch(() => {});
      await bus.close().catch(() => {});
      await server?.dispose();
      throw e;
    }
  }
  let down: Promise<void> | undefined;
  // a signal to the CLI shuts the runtime down (its actors killed, on remote nodes too) before the server
  const unregister = onShutdown(`cluster runtime (${mode})`, () => shutdown());
  const shutdown = (): Promise<void> =>
    (down ??= (async () => {
      unregister();
      try {
        await cluster.close({ killOwned: true });
        await node?.stop();
        await bus.close();
      } finally {
        await server?.dispose();
      }
    })());
  return {
    cluster,
    node,
    bus,
    mode,
    address: server?.url ?? (opts.address || 'inproc'),
    note,
    shutdown,
  };
}

function stripUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
