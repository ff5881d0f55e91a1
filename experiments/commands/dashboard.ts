/** `hr1 dashboard`: serve the dashboard page until SIGINT/SIGTERM. */
import { existsSync } from 'node:fs';
import { NatsBus, authFromEnv, type NatsAuth } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { onShutdown } from '../../cluster/signals.ts';
import { startDashboard, DEFAULT_DASHBOARD_PORT } from '../dashboard/server.ts';
import { authOf, type ClusterCliOptions } from './runtime.ts';

export interface DashboardCliOptions extends ClusterCliOptions {
  runs: string;
  port?: number;
  host?: string;
}

export async function runDashboard(o: DashboardCliOptions): Promise<void> {
  let bus: NatsBus | null = null;
  let cluster: Cluster | null = null;
  if (o.address) {
    const a: NatsAuth = authOf(o);
    const env = authFromEnv();
    const auth: NatsAuth = {};
    for (const k of ['user', 'pass', 'token', 'creds', 'tlsCa', 'tlsCert', 'tlsKey'] as const) auth[k] = a[k] ?? env[k];
    bus = await NatsBus.connect({ address: o.address, name: 'hr1-dashboard', ...auth });
    cluster = new Cluster(bus, { cluster: o.cluster });
  }
  const d = await startDashboard({ runsDir: o.runs, port: o.port ?? DEFAULT_DASHBOARD_PORT, ...(o.host ? { host: o.host } : {}), cluster, address: o.address ?? null, clusterName: o.cluster });
  // the URL on stdout (scripts and tests read it), what it shows on stderr
  console.log(`dashboard: ${d.url}`);
  if (!existsSync(o.runs)) process.stderr.write(`dashboard: no folder ${o.runs} yet; runs appear here when hr1 exp or hr1 train write them there (or pass --runs DIR)\n`);
  process.stderr.write(`dashboard: run folders under ${o.runs}; ${cluster ? `cluster "${o.cluster}" at ${o.address}` : 'no cluster (pass --address nats://… to show one)'}; Ctrl-C stops it\n`);
  await new Promise<void>((done) => {
    onShutdown('hr1 dashboard', async () => {
      try {
        await d.close();
        await cluster?.close();
        await bus?.close();
      } finally {
        done();
      }
    });
  });
}
