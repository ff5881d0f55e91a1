import { registeredActorClasses } from '../../cluster/actor.ts';
import { NatsBus, authFromEnv } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { ClusterNode } from '../../cluster/node.ts';
import { cpus } from 'node:os';
import { loadModules } from './modules.ts';
import { authOf, type ClusterCliOptions } from './runtime.ts';
import { table } from './table.ts';

export interface NodeCliOptions extends ClusterCliOptions {
  address: string;
  resources?: Record<string, number>;
  labels?: Record<string, string>;
  module: string[];
  nodeId?: string;
  heartbeat?: number;
}

function mergeAuth(o: ClusterCliOptions) {
  const a = authOf(o);
  const env = authFromEnv();
  return { user: a.user ?? env.user, pass: a.pass ?? env.pass, token: a.token ?? env.token, creds: a.creds ?? env.creds };
}

/** `hr1 node`: join a cluster and host actors until SIGINT/SIGTERM. */
export async function runNode(o: NodeCliOptions): Promise<void> {
  await import('../../actors/index.ts');
  await loadModules(o.module);
  const bus = await NatsBus.connect({ address: o.address, name: `hr1-node`, ...mergeAuth(o) });
  const cluster = new Cluster(bus, { cluster: o.cluster, log: (l) => console.log(`[node] ${l}`) });
  const node = new ClusterNode(bus, {
    cluster: o.cluster,
    resources: { cpu: cpus().length, gpu: 0, ...(o.resources ?? {}) },
    labels: o.labels ?? {},
    services: cluster,
    ...(o.nodeId ? { nodeId: o.nodeId } : {}),
    ...(o.heartbeat ? { heartbeatMs: o.heartbeat } : {}),
  });
  bus.onStatus((s) => console.log(`[node] NATS ${s}`));
  console.log(`[node] ${node.nodeId} joined cluster "${o.cluster}" at ${o.address}; resources ${Object.entries(node.total).map(([k, v]) => `${k}=${v}`).join(',')}${Object.keys(node.labels).length ? `; labels ${Object.entries(node.labels).map(([k, v]) => `${k}=${v}`).join(',')}` : ''}; classes ${registeredActorClasses().join(', ') || 'none'}`);
  await new Promise<void>((resolveStop) => {
    const stop = async (sig: string) => {
      console.log(`[node] ${sig}: stopping ${node.hosted().length} actor(s)`);
      await node.stop();
      await cluster.close();
      await bus.close();
      resolveStop();
    };
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));
  });
}

export interface StatusCliOptions extends ClusterCliOptions {
  address: string;
  json?: boolean;
  wait: number;
}

/** `hr1 status`: list nodes, their resources and actors. */
export async function runStatus(o: StatusCliOptions): Promise<void> {
  const bus = await NatsBus.connect({ address: o.address, name: 'hr1-status', ...mergeAuth(o) });
  const cluster = new Cluster(bus, { cluster: o.cluster });
  try {
    const nodes = await cluster.status(o.wait);
    if (o.json) {
      console.log(JSON.stringify({ cluster: o.cluster, address: o.address, nodes }, null, 2));
      return;
    }
    console.log(`cluster "${o.cluster}" at ${o.address}: ${nodes.length} node(s), ${nodes.reduce((n, h) => n + h.actors.length, 0)} actor(s)\n`);
    if (nodes.length === 0) return;
    const fmt = (h: (typeof nodes)[number]) => Object.keys(h.total).map((k) => `${k} ${h.available[k] ?? 0}/${h.total[k]}`).join(', ');
    console.log(table(['node', 'host', 'pid', 'resources (free/total)', 'labels', 'actors'], nodes.map((h) => [h.nodeId, h.host, h.pid, fmt(h), Object.entries(h.labels).map(([k, v]) => `${k}=${v}`).join(',') || '-', h.actors.length])));
    const actors = nodes.flatMap((h) => h.actors.map((a) => [a.actorId, a.cls, a.name ?? '-', h.nodeId, a.restartCount, a.pending] as (string | number)[]));
    if (actors.length) console.log(`\n${table(['actor', 'class', 'name', 'node', 'restarts', 'pending'], actors)}`);
  } finally {
    await cluster.close();
    await bus.close();
  }
}
