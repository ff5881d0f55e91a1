import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hr1Error, type ClusterErrorCode } from './errors.ts';
import { onShutdown } from './signals.ts';

/** Where nats-server is looked for: `$HR1_NATS_SERVER`, then PATH, then Debian's /usr/sbin. */
export function findNatsServer(): string | undefined {
  const env = process.env.HR1_NATS_SERVER;
  if (env && existsSync(env)) return env;
  const r = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' });
  const onPath = r.stdout.trim();
  if (r.status === 0 && onPath) return onPath;
  for (const p of ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server']) if (existsSync(p)) return p;
  return undefined;
}

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = tcpConnect({ host: '127.0.0.1', port }, () => {
      c.destroy();
      resolve(true);
    });
    c.on('error', () => resolve(false));
  });
}

export interface NatsServerOptions {
  /** @default a free port */
  port?: number;
  /** JetStream (needed by the object store). @default true */
  jetstream?: boolean;
  user?: string;
  pass?: string;
  token?: string;
  /** Extra command-line arguments. */
  args?: string[];
  /**
   * nats-server configuration text (e.g. `tls { … }`, `authorization { users = […] }`), written to
   * `nats.conf` in the server's temp folder and passed with `-c`. The command-line settings above
   * (address, port, JetStream, user/token) win over the same settings in it.
   */
  config?: string;
}

/**
 * The watchdog next to every nats-server child: it waits on a pipe from this process, which the
 * kernel closes when this process ends in any way (SIGKILL included); then it stops the server
 * (SIGTERM, SIGKILL after 3 s) and removes its temp folder. A normal stop kills the watchdog
 * first. It ignores SIGINT and SIGHUP, which a terminal sends to the whole process group. It
 * waits with the shell's own `read` (no child process), so killing it leaves nothing behind.
 * $1: the server's pid, $2: its temp folder.
 */
const WATCHDOG = `trap '' INT HUP
read -r _
kill -TERM "$1" 2>/dev/null
i=0
while kill -0 "$1" 2>/dev/null && [ "$i" -lt 30 ]; do sleep 0.1; i=$((i+1)); done
kill -KILL "$1" 2>/dev/null
rm -rf "$2"`;

/** A private nats-server on loopback: started by the embedded default and by the integration tests. */
export class NatsServer {
  private child: ChildProcess | undefined;
  private watchdog: ChildProcess | undefined;
  private readonly storeDir: string;
  private unregister: (() => void) | undefined;
  /** a server being stopped (SIGTERM sent, exit not yet seen) */
  private stoppingChild: ChildProcess | undefined;
  // process exit (process.exit, a fatal error, a second signal in the middle of stop()): kill the
  // server and remove its folder, synchronously. Listening from start() until dispose() has removed
  // the folder, so no exit in between leaves the folder behind (the watchdog is gone during stop()).
  private onExit = () => {
    this.watchdog?.kill('SIGKILL');
    this.child?.kill('SIGKILL');
    this.stoppingChild?.kill('SIGKILL');
    try {
      rmSync(this.storeDir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // the watchdog removes it once the server is gone
    }
  };
  stderr = '';

  private constructor(readonly bin: string, readonly port: number, readonly opts: NatsServerOptions) {
    this.storeDir = mkdtempSync(join(tmpdir(), 'hr1-nats-'));
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** The same server as a `tls://` address (for a server configured with `tls { … }`). */
  get tlsUrl(): string {
    return `tls://127.0.0.1:${this.port}`;
  }

  /** The server's temp folder (JetStream store, config file). */
  get dir(): string {
    return this.storeDir;
  }

  /** Start nats-server and wait until it accepts connections. */
  static async start(opts: NatsServerOptions = {}): Promise<NatsServer> {
    const bin = findNatsServer();
    if (!bin) throw new Hr1Error<ClusterErrorCode>('NATS_SERVER_MISSING', 'nats-server not found; install it (`apt-get install -y nats-server`) or set HR1_NATS_SERVER to its path');
    const s = new NatsServer(bin, opts.port ?? (await freePort()), opts);
    process.on('exit', s.onExit);
    // a signal to the CLI (cluster/signals.ts) stops it and removes its folder
    s.unregister = onShutdown(`nats-server on port ${s.port}`, () => s.dispose());
    try {
      await s.launch();
    } catch (e) {
      await s.dispose();
      throw e;
    }
    return s;
  }

  private async launch(): Promise<void> {
    const args = ['-a', '127.0.0.1', '-p', String(this.port)];
    if (this.opts.jetstream ?? true) args.push('-js', '-sd', this.storeDir);
    if (this.opts.user !== undefined) args.push('--user', this.opts.user, '--pass', this.opts.pass ?? '');
    if (this.opts.token !== undefined) args.push('--auth', this.opts.token);
    if (this.opts.config !== undefined) {
      const file = join(this.storeDir, 'nats.conf');
      writeFileSync(file, this.opts.config);
      args.push('-c', file);
    }
    args.push(...(this.opts.args ?? []));
    const child = spawn(this.bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    this.watch(child);
    this.stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      if (this.stderr.length < 20_000) this.stderr += d.toString();
    });
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) break;
      if (await canConnect(this.port)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    child.kill('SIGKILL');
    throw new Hr1Error<ClusterErrorCode>('NATS_SERVER_START', `nats-server did not start on port ${this.port}: ${this.stderr.trim().split('\n').slice(-3).join(' | ') || 'no output'}`, { data: { port: this.port } });
  }

  /** Start the watchdog that stops `child` if this process dies without stopping it. */
  private watch(child: ChildProcess): void {
    if (child.pid === undefined || process.platform === 'win32') return;
    const w = spawn('sh', ['-c', WATCHDOG, 'hr1-nats-watchdog', String(child.pid), this.storeDir], { stdio: ['pipe', 'ignore', 'ignore'] });
    w.on('error', () => {});
    w.stdin?.on('error', () => {});
    // neither the watchdog nor its pipe keeps this process alive
    w.unref();
    (w.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.watchdog = w;
  }

  /** Stop the server (SIGTERM, then SIGKILL). */
  async stop(): Promise<void> {
    const c = this.child;
    this.child = undefined;
    this.watchdog?.kill('SIGKILL');
    this.watchdog = undefined;
    if (!c || c.exitCode !== null) return;
    this.stoppingChild = c;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => c.kill('SIGKILL'), 3000);
      c.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      c.kill('SIGTERM');
    });
    this.stoppingChild = undefined;
  }

  /** Stop and start again on the same port (for reconnect tests). */
  async restart(downMs = 0): Promise<void> {
    await this.stop();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.launch();
  }

  /** Stop and delete the JetStream store. */
  async dispose(): Promise<void> {
    this.unregister?.();
    this.unregister = undefined;
    try {
      await this.stop();
      rmSync(this.storeDir, { recursive: true, force: true });
    } finally {
      process.removeListener('exit', this.onExit);
    }
  }
}
