import { registeredActorClasses } from '../../cluster/actor.ts';
import { NatsBus, authFromEnv, type NatsAuth } from '../../cluster/bus-nats.ts';
import { onShutdown } from '../../cluster/signals.ts';
import { Cluster } from '../../cluster/client.ts';
import { ClusterNode } from '../../cluster/node.ts';
import { formatLogRecord } from '../../cluster/logs.ts';
import type { LogLevel } from '../../cluster/protocol.ts';
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

/** The flags' credentials and TLS files over the HR1_NATS_* variables. */
function mergeAuth(o: ClusterCliOptions): NatsAuth {
  const a: NatsAuth = authOf(o);
  const env = authFromEnv();
  const out: NatsAuth = {};
  for (const k of ['user', 'pass', 'token', 'creds', 'tlsCa', 'tlsCert', 'tlsKey'] as const) out[k] = a[k] ?? env[k];
  return out;
}

/**
 * `hr1 node`: join a cluster and host actors until SIGINT, SIGTERM or SIGHUP: then the node
 * announces its stop, destroys its actors (their owners see them die at once) and leaves; the
 * CLI's signal handler (cluster/signals.ts) runs that and exits with 128 + the signal's number.
 */
export async function runNode(o: NodeCliOptions): Promise<void> {
  await import('../../actors/index.ts');
  await loadModules(o.module);
  const bus = await NatsBus.connect({ address: o.address, name: `hr1-node`, ...mergeAuth(o) });
  // the node's client only serves its actors: other nodes' logs are not this node's to print
  const cluster = new Cluster(bus, { cluster: o.cluster, log: (l) => console.log(`[node] ${l}`), logLevel: 'off' });
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
    onShutdown('hr1 node', async () => {
      console.log(`[node] stopping ${node.hosted().length} actor(s)`);
      try {
        await node.stop();
        await cluster.close();
        await bus.close();
      } finally {
        resolveStop();
      }
    });
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
    const actors = nodes.flatMap((h) => h.actors.map((a) => [a.actorId, a.cls, a.name ?? '-', h.nodeId, a.restartCount, a.pending, a.calls ?? '-', a.errors ?? '-'] as (string | number)[]));
    if (actors.length) console.log(`\n${table(['actor', 'class', 'name', 'node', 'restarts', 'pending', 'calls', 'errors'], actors)}`);
  } finally {
    await cluster.close();
    await bus.close();
  }
}

export interface LogsCliOptions extends ClusterCliOptions {
  address: string;
  /** the least severe level shown */
  level: LogLevel;
  json?: boolean;
}

/**
 * `hr1 logs`: follow the actors' log records of a cluster (their warnings and errors, failed
 * calls, constructors that threw, restarts) until SIGINT, SIGTERM or SIGHUP: one line each on
 * stdout, or one JSON record a line with `--json`; notes go to stderr.
 */
export async function runLogs(o: LogsCliOptions): Promise<void> {
  const bus = await NatsBus.connect({ address: o.address, name: 'hr1-logs', ...mergeAuth(o) });
  const cluster = new Cluster(bus, { cluster: o.cluster, log: (l) => console.error(`[logs] ${l}`), logLevel: 'off' });
  cluster.onLog((r) => console.log(o.json ? JSON.stringify(r) : `${new Date(r.time).toISOString()} ${formatLogRecord(r)}`), { level: o.level });
  bus.onStatus((s) => console.error(`[logs] NATS ${s}`));
  // subscribed at the server before we say so: a record published after this line reaches us
  await bus.flush();
  console.error(`[logs] following cluster "${o.cluster}" at ${o.address} (level ${o.level} and above); Ctrl-C to stop`);
  await new Promise<void>((resolveStop) => {
    onShutdown('hr1 logs', async () => {
      try {
        await cluster.close();
        await bus.close();
      } finally {
        resolveStop();
      }
    });
  });
}
