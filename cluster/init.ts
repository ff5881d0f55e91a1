import { cpus } from 'node:os';
import { InProcessBus } from './bus-inproc.ts';
import { NatsBus, authFromEnv, type NatsAuth } from './bus-nats.ts';
import type { Bus } from './bus.ts';
import { Cluster, type ClusterOptions } from './client.ts';
import { ClusterNode } from './node.ts';
import { NatsServer, findNatsServer } from './nats-server.ts';

export interface InitOptions extends ClusterOptions, NatsAuth {
  /** `nats://host:port` of an existing cluster. Without it, a private nats-server is started. */
  address?: string;
  /** Force the in-process transport (no NATS at all). @default false */
  inProcess?: boolean;
  /** Host actors in this process too. @default true without `address`, false with it */
  localNode?: boolean;
  /** Resources of the local node. @default {cpu: <cores>, gpu: 0} */
  resources?: Record<string, number>;
  labels?: Record<string, string>;
  heartbeatMs?: number;
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
  shutdown(): Promise<void>;
}

/**
 * Like `ray.init()`: connect to `address`, or start a private nats-server on a free loopback
 * port (stopped on shutdown), or fall back to the in-process transport when the binary is
 * missing, and say which.
 */
export async function init(opts: InitOptions = {}): Promise<Runtime> {
  const auth = { ...authFromEnv(), ...stripUndefined({ user: opts.user, pass: opts.pass, token: opts.token, creds: opts.creds }) };
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
    bus = await NatsBus.connect({ address: server.url });
    mode = 'nats-embedded';
    note = `embedded cluster: private nats-server at ${server.url} (stopped on exit)`;
  } else {
    bus = new InProcessBus();
    mode = 'inproc';
    note = 'nats-server not found: running in-process (install it with `apt-get install -y nats-server` for the NATS transport)';
  }
  const cluster = new Cluster(bus, opts);
  let node: ClusterNode | undefined;
  if (opts.localNode ?? !opts.address) {
    node = new ClusterNode(bus, {
      cluster: cluster.name,
      resources: opts.resources ?? { cpu: cpus().length, gpu: 0 },
      labels: opts.labels ?? {},
      services: cluster,
      ...(opts.heartbeatMs !== undefined ? { heartbeatMs: opts.heartbeatMs } : {}),
    });
    await cluster.waitForNodes(1, 5000);
  }
  let down = false;
  return {
    cluster,
    node,
    bus,
    mode,
    address: server?.url ?? opts.address ?? 'inproc',
    note,
    async shutdown() {
      if (down) return;
      down = true;
      await cluster.close({ killOwned: true });
      await node?.stop();
      await bus.close();
      await server?.dispose();
    },
  };
}

function stripUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
