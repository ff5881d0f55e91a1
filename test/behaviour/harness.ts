import { InProcessBus } from '../../cluster/bus-inproc.ts';
import { NatsBus } from '../../cluster/bus-nats.ts';
import type { Bus } from '../../cluster/bus.ts';
import { Cluster } from '../../cluster/client.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { ClusterNode, type NodeOptions } from '../../cluster/node.ts';

/** One transport under test: how to get a bus for a client or a node. */
export interface Transport {
  name: 'inproc' | 'nats';
  bus(): Promise<Bus>;
  close(): Promise<void>;
  server?: NatsServer;
}

export function inProcessTransport(): Transport {
  const bus = new InProcessBus();
  return { name: 'inproc', bus: async () => bus, close: () => bus.close() };
}

/** A real nats-server on a random port; every client and node gets its own connection. */
export async function natsTransport(): Promise<Transport> {
  const server = await NatsServer.start({ jetstream: true });
  const buses: Bus[] = [];
  return {
    name: 'nats',
    server,
    bus: async () => {
      const b = await NatsBus.connect({ address: server.url });
      buses.push(b);
      return b;
    },
    close: async () => {
      for (const b of buses) await b.close().catch(() => {});
      await server.dispose();
    },
  };
}

let clusterSeq = 0;

/** A small cluster on a transport: a client and some nodes, isolated by a fresh cluster name. */
export class TestCluster {
  readonly name = `t${process.pid}x${clusterSeq++}`;
  cluster!: Cluster;
  nodes: ClusterNode[] = [];
  logs: string[] = [];

  constructor(readonly transport: Transport) {}

  static async start(transport: Transport, nodes: NodeOptions[] = [{}]): Promise<TestCluster> {
    const tc = new TestCluster(transport);
    tc.cluster = new Cluster(await transport.bus(), { cluster: tc.name, deadAfterMs: 900, callTimeoutMs: 10_000, log: (l) => tc.logs.push(l) });
    for (const n of nodes) await tc.addNode(n);
    await tc.cluster.waitForNodes(nodes.length, 5000);
    return tc;
  }

  async addNode(opts: NodeOptions = {}): Promise<ClusterNode> {
    const bus = await this.transport.bus();
    const services = new Cluster(bus, { cluster: this.name, deadAfterMs: 900 });
    const node = new ClusterNode(bus, { resources: { cpu: 4, gpu: 0 }, heartbeatMs: 150, ...opts, cluster: this.name, services });
    this.nodes.push(node);
    return node;
  }

  async close(): Promise<void> {
    await this.cluster.close({ killOwned: true }).catch(() => {});
    for (const n of this.nodes) await n.stop().catch(() => {});
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Poll until `fn` returns a truthy value or the time is up. */
export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 5000, what = 'condition'): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await sleep(50);
  }
}
