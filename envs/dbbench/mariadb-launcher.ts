/**
 * Start a private MariaDB server (own datadir in a temp folder, loopback, a free port) for tests
 * and for `--db mariadb`; stop() kills it and removes the folder.
 *
 * Equivalent shell, for CI scripts:
 *   D=$(mktemp -d); mariadb-install-db --no-defaults --datadir=$D/data --auth-root-authentication-method=normal --skip-test-db --user=$(id -un)
 *   mariadbd --no-defaults --datadir=$D/data --socket=$D/sock --port=$PORT --bind-address=127.0.0.1 \
 *     --skip-name-resolve --skip-log-bin --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_520_nopad_ci \
 *     --innodb-buffer-pool-size=64M --max-allowed-packet=16M --user=$(id -un) &
 *   # then --db mysql://root@127.0.0.1:$PORT
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { onShutdown } from '../../cluster/signals.ts';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2';
import { DbbenchError } from './errors.ts';

export interface StartMariadbOptions {
  /** @default found on PATH, /usr/sbin, /usr/local/sbin */
  binary?: string;
  /** @default 60000 */
  startTimeoutMs?: number;
}

export interface MariadbServer {
  /** mysql://root@127.0.0.1:PORT */
  url: string;
  port: number;
  dir: string;
  pid: number;
  stop(): Promise<void>;
}

const SEARCH = ['/usr/sbin', '/usr/local/sbin', '/usr/bin', '/usr/local/bin', '/usr/local/mysql/bin'];

function which(names: string[]): string | null {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), ...SEARCH];
  for (const n of names) for (const d of dirs) if (existsSync(join(d, n))) return join(d, n);
  return null;
}

/** paths of mariadbd and mariadb-install-db, or null when MariaDB is not installed */
export function findMariadb(binary?: string): { server: string; installDb: string } | null {
  const server = binary ?? which(['mariadbd', 'mysqld']);
  const installDb = which(['mariadb-install-db', 'mysql_install_db']);
  return server && installDb ? { server, installDb } : null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = mysql.createConnection({ host: '127.0.0.1', port, user: 'root', connectTimeout: 2000 });
    c.on('error', () => undefined);
    c.connect((e) => {
      if (e) {
        c.destroy();
        resolve(false);
      } else c.end(() => resolve(true));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Start a private MariaDB and wait until it accepts connections.
 *
 * @example
 * const srv = await startMariadb();
 * try { await verifyDbbench({ db: srv.url }); } finally { await srv.stop(); }
 */
export async function startMariadb(opts: StartMariadbOptions = {}): Promise<MariadbServer> {
  const bins = findMariadb(opts.binary);
  if (!bins) {
    throw new DbbenchError('DBBENCH_MARIADB_NOT_INSTALLED', 'mariadbd / mariadb-install-db not found: install MariaDB (Debian: apt-get install -y mariadb-server) or pass --db mysql://… for a running server', {});
  }
  const dir = mkdtempSync(join(tmpdir(), 'hr1-mariadb-'));
  const data = join(dir, 'data');
  const user = userInfo().username;
  const inst = spawnSync(bins.installDb, [
    '--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=normal', '--skip-test-db', `--user=${user}`,
  ], { encoding: 'utf8', timeout: 120_000 });
  if (inst.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new DbbenchError('DBBENCH_MARIADB_START_FAILED', `mariadb-install-db failed (exit ${String(inst.status)}): ${(inst.stderr || inst.stdout || '').slice(-800)}`, { dir });
  }
  const timeout = opts.startTimeoutMs ?? 60_000;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child: ChildProcess = spawn(bins.server, [
      '--no-defaults', `--datadir=${data}`, `--socket=${join(dir, 'mysqld.sock')}`, `--port=${port}`,
      '--bind-address=127.0.0.1', '--skip-name-resolve', '--skip-log-bin', `--pid-file=${join(dir, 'mysqld.pid')}`,
      `--log-error=${join(dir, 'error.log')}`, '--character-set-server=utf8mb4', '--collation-server=utf8mb4_unicode_520_nopad_ci',
      '--innodb-buffer-pool-size=64M', '--max-allowed-packet=16M', '--max-connections=500', '--innodb-flush-log-at-trx-commit=2',
      `--user=${user}`,
    ], { stdio: 'ignore', detached: false });
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    let unregister = (): void => {};
    const stop = async (): Promise<void> => {
      unregister();
      if (!exited) {
        child.kill('SIGTERM');
        for (let i = 0; i < 100 && !exited; i++) await sleep(100);
        if (!exited) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    };
    const deadline = Number(process.hrtime.bigint() / 1_000_000n) + timeout;
    while (!exited && Number(process.hrtime.bigint() / 1_000_000n) < deadline) {
      if (await ping(port)) {
        // a signal to the command stops the server and removes its folder too
        unregister = onShutdown(`mariadb (${dir})`, stop);
        return { url: `mysql://root@127.0.0.1:${port}`, port, dir, pid: child.pid ?? -1, stop };
      }
      await sleep(150);
    }
    if (!exited) child.kill('SIGKILL');
    // a port taken between probe and bind: try another
    const log = existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '';
    if (!/Address already in use|Can't start server: Bind/.test(log) || attempt === 2) {
      rmSync(dir, { recursive: true, force: true });
      throw new DbbenchError('DBBENCH_MARIADB_START_FAILED', `mariadbd did not come up within ${timeout} ms; its log ends: ${log.slice(-800)}`, { dir });
    }
  }
  throw new DbbenchError('DBBENCH_MARIADB_START_FAILED', 'mariadbd could not bind a port', { dir });
}
