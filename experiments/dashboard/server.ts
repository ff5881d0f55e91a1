/**
 * `hr1 dashboard`: a web page served by the project, live from a cluster (when an address is
 * given) and from the run folders under one directory. The page (assets/) is plain ESM on preact +
 * htm with uPlot for curves, all served from this process (node_modules), no CDN. The server only
 * reads: JSON APIs over the cluster's heartbeats and forwarded logs and over the run folders
 * (experiments/runs), and the files of a run's plots folder.
 */
import { createReadStream, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cluster } from '../../cluster/client.ts';
import type { Heartbeat, LogRecord } from '../../cluster/protocol.ts';
import { ConfigError } from '../../cluster/errors.ts';
import { RUN_SEARCH_DEPTH, TRAIN_FILES, listEpisodes, listRuns, readEpisode, readJsonl, readRun, runKindOf, type EpisodeRef } from '../runs/index.ts';

/** Ray's dashboard port, so a Ray user finds it where they look. @default 8265 */
export const DEFAULT_DASHBOARD_PORT = 8265;
/** Forwarded log lines kept for the page. @default 500 */
export const DEFAULT_LOG_LINES = 500;
/** How long the cluster is asked for node replies per refresh, ms. @default 300 */
export const STATUS_WINDOW_MS = 300;

export interface DashboardOptions {
  /** the folder whose subfolders are run folders (hr1 exp, hr1 train) */
  runsDir: string;
  /** @default DEFAULT_DASHBOARD_PORT; 0 picks a free port */
  port?: number;
  /** @default '127.0.0.1' (the page reads run folders: expose it on purpose, with --host) */
  host?: string;
  /** a joined cluster to show; null: run folders only */
  cluster?: Cluster | null;
  /** shown on the page */
  address?: string | null;
  clusterName?: string;
}

export interface Dashboard {
  url: string;
  port: number;
  close(): Promise<void>;
}

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/** url path → file: the page, its script and style, and the vendored libraries */
function assetTable(): Map<string, string> {
  // each package's main file sits in its dist folder, beside the ESM build we serve
  const dist = (spec: string) => dirname(require.resolve(spec));
  return new Map([
    ['/', join(here, 'assets', 'index.html')],
    ['/assets/app.js', join(here, 'assets', 'app.js')],
    ['/assets/app.css', join(here, 'assets', 'app.css')],
    ['/vendor/preact.mjs', join(dist('preact'), 'preact.module.js')],
    ['/vendor/preact-hooks.mjs', join(dist('preact/hooks'), 'hooks.module.js')],
    ['/vendor/htm.mjs', join(dist('htm'), 'htm.module.js')],
    ['/vendor/uplot.mjs', join(dist('uplot'), 'uPlot.esm.js')],
    ['/vendor/uplot.css', join(dist('uplot'), 'uPlot.min.css')],
  ]);
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Start the dashboard; resolves once it listens. */
export async function startDashboard(o: DashboardOptions): Promise<Dashboard> {
  const runsDir = resolve(o.runsDir);
  const assets = assetTable();
  for (const [url, file] of assets) if (!existsSync(file)) throw new ConfigError('dashboard', `asset ${url} is missing (${file}); run npm ci`);
  const cluster = o.cluster ?? null;
  const logs: LogRecord[] = [];
  // the warnings and errors the nodes forward (cluster/logs.ts), newest kept
  const unsubscribe = cluster
    ? cluster.onLog(
        (l) => {
          logs.push(l);
          if (logs.length > DEFAULT_LOG_LINES) logs.splice(0, logs.length - DEFAULT_LOG_LINES);
        },
        { level: 'warn' },
      )
    : null;
  // call rates from the counters of two heartbeats (display only: wall clock is fine here)
  const lastCalls = new Map<string, { calls: number; t: number }>();
  let statusCache: { t: number; body: unknown } | null = null;

  const clusterView = async (): Promise<unknown> => {
    if (!cluster) return { connected: false, address: null, cluster: o.clusterName ?? null, nodes: [], actors: [], logs: [] };
    const now = Date.now();
    if (statusCache && now - statusCache.t < 1000) return statusCache.body;
    const nodes: Heartbeat[] = await cluster.status(STATUS_WINDOW_MS);
    nodes.sort((a, b) => a.nodeId.localeCompare(b.nodeId));
    const actors = nodes.flatMap((h) =>
      h.actors.map((a) => {
        const calls = (a as { calls?: number }).calls;
        let rate: number | null = null;
        if (typeof calls === 'number') {
          const prev = lastCalls.get(a.actorId);
          if (prev && now > prev.t) rate = Math.max(0, (calls - prev.calls) / ((now - prev.t) / 1000));
          lastCalls.set(a.actorId, { calls, t: now });
        }
        return { actorId: a.actorId, cls: a.cls, name: a.name ?? null, node: h.nodeId, restarts: a.restartCount, mailbox: a.pending, calls: calls ?? null, errors: (a as { errors?: number }).errors ?? null, callRate: rate, resources: a.resources };
      }),
    );
    const body = {
      connected: true,
      address: o.address ?? null,
      cluster: o.clusterName ?? null,
      nodes: nodes.map((h) => ({ nodeId: h.nodeId, host: h.host, pid: h.pid, labels: h.labels, total: h.total, available: h.available, actors: h.actors.length, stopping: h.stopping ?? false })),
      actors,
      logs: logs.slice(-100).map((l) => ({ time: new Date(l.time).toISOString(), level: l.level, node: l.nodeId, actor: l.name ?? l.actorId, class: l.cls, method: l.method ?? null, message: l.message })),
    };
    statusCache = { t: now, body };
    return body;
  };

  // a run's folder from its name (its path under runsDir, as listRuns names it), without listing every run per request:
  // plain path segments only, no deeper than listRuns looks, a run folder with no run folder above it
  const runPath = (name: string): string => {
    const parts = name.split('/');
    const plain = parts.length <= RUN_SEARCH_DEPTH && parts.every((x) => x !== '' && x !== '.' && x !== '..' && !/[\\\0]/.test(x));
    const dir = plain ? join(runsDir, ...parts) : '';
    if (!plain || !runKindOf(dir) || parts.slice(0, -1).some((_, i) => runKindOf(join(runsDir, ...parts.slice(0, i + 1))))) throw new HttpError(404, `no run folder "${name}" under ${runsDir}`);
    return dir;
  };

  // a training run's iterations (a line being written is left out)
  const trainingCurves = (path: string): unknown[] => readJsonl(join(path, TRAIN_FILES.iterations));

  const api = async (path: string, q: URLSearchParams): Promise<unknown> => {
    if (path === '/api/cluster') return clusterView();
    if (path === '/api/runs') return { runsDir, runs: listRuns(runsDir) };
    const m = /^\/api\/runs\/([^/]+)(\/episodes|\/episode)?$/.exec(path);
    if (m) {
      const name = decodeURIComponent(m[1]!);
      const p = runPath(name);
      if (!m[2]) return { ...readRun(p), curves: trainingCurves(p) };
      if (m[2] === '/episodes') {
        const f: Record<string, string | number | boolean> = {};
        for (const k of ['env', 'target', 'method', 'taskId'] as const) if (q.get(k)) f[k] = q.get(k)!;
        if (q.get('seed')) f.seed = Number(q.get('seed'));
        if (q.get('won')) f.won = q.get('won') === 'true';
        const all = listEpisodes(p, f as Parameters<typeof listEpisodes>[1]);
        const limit = Math.min(Number(q.get('limit') ?? 2000) || 2000, 20000);
        return { total: all.length, episodes: all.slice(0, limit) };
      }
      const want = { env: q.get('env'), target: q.get('target'), method: q.get('method'), taskId: q.get('taskId'), seed: q.get('seed') };
      for (const [k, v] of Object.entries(want)) if (v === null) throw new HttpError(400, `episode needs ${k}=… (env, target, method, taskId, seed)`);
      const ref = listEpisodes(p, { env: want.env!, target: want.target!, method: want.method!, taskId: want.taskId!, seed: Number(want.seed) }).find((e: EpisodeRef) => q.get('packet') === null || String(e.packet) === q.get('packet'));
      if (!ref) throw new HttpError(404, `no episode ${want.method} ${want.taskId} seed ${want.seed} in run ${name}`);
      return { ref, ...readEpisode(p, ref) };
    }
    throw new HttpError(404, `no API ${path}`);
  };

  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer): void => {
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
    res.end(body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://dashboard');
    const path = url.pathname;
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'the dashboard only reads (GET)');
      if (path.startsWith('/api/')) return send(res, 200, TYPES['.json']!, JSON.stringify(await api(path, url.searchParams)));
      const file = assets.get(path);
      if (file) return send(res, 200, TYPES[extname(file)] ?? 'application/octet-stream', readFileSync(file));
      const f = /^\/files\/([^/]+)\/(plots\/)?([^/]+)$/.exec(path);
      if (f) {
        const dir = runPath(decodeURIComponent(f[1]!));
        const name = basename(decodeURIComponent(f[3]!));
        const folder = f[2] ? join(dir, 'plots') : dir;
        // only files that are there, by their listed name, of a type we serve
        if (!existsSync(folder) || !readdirSync(folder).includes(name) || !TYPES[extname(name)] || !statSync(join(folder, name)).isFile()) throw new HttpError(404, `no file ${name} in run ${f[1]}`);
        res.writeHead(200, { 'content-type': TYPES[extname(name)]!, 'cache-control': 'no-store' });
        createReadStream(join(folder, name)).pipe(res);
        return;
      }
      throw new HttpError(404, `nothing at ${path}`);
    } catch (e) {
      const status = e instanceof HttpError ? e.status : 500;
      send(res, status, TYPES['.json']!, JSON.stringify({ error: (e as Error).message }));
    }
  };

  const server: Server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((ok, fail) => {
    server.once('error', (e: NodeJS.ErrnoException) => fail(e.code === 'EADDRINUSE' ? new ConfigError('--port', `port ${o.port ?? DEFAULT_DASHBOARD_PORT} is in use; pick another with --port (0 picks a free one)`) : e));
    server.listen(o.port ?? DEFAULT_DASHBOARD_PORT, o.host ?? '127.0.0.1', () => ok());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : (o.port ?? DEFAULT_DASHBOARD_PORT);
  return {
    url: `http://${o.host ?? '127.0.0.1'}:${port}/`,
    port,
    close: async () => {
      unsubscribe?.();
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
