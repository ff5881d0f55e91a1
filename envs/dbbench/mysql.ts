/**
 * MariaDB / MySQL backend: per episode a fresh database and a user that can touch only it, with a
 * statement time limit and a row cap; the database and user are dropped when the episode ends,
 * and databases left by dead processes are swept on start.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import mysql from 'mysql2';
import type { Connection, FieldPacket, Pool, QueryError } from 'mysql2';
import { DEFAULT_MAX_ROWS, DEFAULT_STATEMENT_TIMEOUT_MS, tooManyRows, type Backend, type DbSession, type ExecResult } from './backend.ts';
import { checkSandbox, splitStatements } from './dialect.ts';
import { DbbenchError } from './errors.ts';
import { pyRowsRepr, type PyValue } from './python.ts';
import type { DbbenchTask } from './tasks.ts';

export interface MysqlBackendOptions {
  /** mysql://user:password@host:port — an account that may CREATE DATABASE / CREATE USER / GRANT */
  url: string;
  /** @default 5000 */
  maxRows?: number;
  /** @default 5000 */
  statementTimeoutMs?: number;
}

/**
 * MySQL 8's default sql_mode without strict mode: the shipped labels were made on a server where
 * `UPDATE … WHERE text_col = 16` over a column holding 'Replay' updated the matching rows (strict
 * mode turns the conversion warning into error 1292; measured on tasks v0.2/standard/184 and 196).
 */
export const SQL_MODE = 'ONLY_FULL_GROUP_BY,NO_ENGINE_SUBSTITUTION';
/** prefix of every database and user this backend creates */
export const NAME_PREFIX = 'dbb_';

const HOST_TAG = createHash('sha1').update(hostname()).digest('hex').slice(0, 6);

const q = (name: string): string => `\`${name.replace(/`/g, '``')}\``;

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function errorText(e: unknown): string {
  const err = e as QueryError & { sqlMessage?: string };
  if (typeof err.errno === 'number' && err.sqlMessage !== undefined) {
    return err.sqlState ? `${err.errno} (${err.sqlState}): ${err.sqlMessage}` : `${err.errno}: ${err.sqlMessage}`;
  }
  return `2013 (HY000): ${(e as Error).message}`;
}

// mysql2 column type codes
const T = {
  DECIMAL: 0, TINY: 1, SHORT: 2, LONG: 3, FLOAT: 4, DOUBLE: 5, NULL: 6, TIMESTAMP: 7, LONGLONG: 8, INT24: 9,
  DATE: 10, TIME: 11, DATETIME: 12, YEAR: 13, NEWDATE: 14, BIT: 16, NEWDECIMAL: 246,
  TINY_BLOB: 249, MEDIUM_BLOB: 250, LONG_BLOB: 251, BLOB: 252, VAR_STRING: 253, STRING: 254,
} as const;

function dateRepr(s: string, withTime: boolean): string {
  const m = /^(\d+)-(\d+)-(\d+)(?:[ T](\d+):(\d+):(\d+)(?:\.(\d+))?)?/.exec(s);
  if (!m) return `'${s}'`;
  const n = (x: string | undefined): number => Number(x ?? 0);
  if (!withTime) return `datetime.date(${n(m[1])}, ${n(m[2])}, ${n(m[3])})`;
  const parts = [n(m[1]), n(m[2]), n(m[3]), n(m[4]), n(m[5])];
  if (n(m[6]) || n(m[7])) parts.push(n(m[6]));
  if (n(m[7])) parts.push(Number((m[7] ?? '').padEnd(6, '0')));
  return `datetime.datetime(${parts.join(', ')})`;
}

/** convert a mysql2 value to what mysql-connector would hand Python */
function toPy(v: unknown, f: FieldPacket | undefined): PyValue {
  if (v === null || v === undefined) return null;
  const type = f?.columnType ?? T.VAR_STRING;
  switch (type) {
    case T.DECIMAL:
    case T.NEWDECIMAL:
      return { kind: 'decimal', text: String(v) };
    case T.TINY:
    case T.SHORT:
    case T.LONG:
    case T.LONGLONG:
    case T.INT24:
    case T.YEAR:
      return BigInt(String(v));
    case T.FLOAT:
    case T.DOUBLE:
      return Number(v);
    case T.DATE:
    case T.NEWDATE:
      return { kind: 'date', repr: dateRepr(String(v), false) };
    case T.DATETIME:
    case T.TIMESTAMP:
      return { kind: 'date', repr: dateRepr(String(v), true) };
    default:
      if (Buffer.isBuffer(v)) return f?.characterSet === 63 ? { kind: 'bytes', data: new Uint8Array(v) } : v.toString('utf8');
      return String(v);
  }
}

interface Server {
  mariadb: boolean;
  collation: string;
}

class MysqlSession implements DbSession {
  private conn: Connection | null = null;
  private closed = false;

  constructor(
    private readonly backend: MysqlBackend,
    readonly database: string,
    private readonly user: string,
    private readonly password: string,
  ) {}

  async connect(): Promise<Connection> {
    if (this.conn) return this.conn;
    const b = this.backend;
    const conn = mysql.createConnection({
      host: b.host,
      port: b.port,
      user: this.user,
      password: this.password,
      database: this.database,
      charset: 'utf8mb4_general_ci',
      rowsAsArray: true,
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
      decimalNumbers: false,
      multipleStatements: false,
      connectTimeout: 10_000,
    });
    conn.on('error', () => {
      // a dropped connection is noticed and replaced on the next query
      this.conn = null;
    });
    await new Promise<void>((resolve, reject) => conn.connect((e) => (e ? reject(e) : resolve())));
    const secs = b.statementTimeoutMs / 1000;
    const setup = [
      `SET SESSION sql_mode = '${SQL_MODE}'`,
      'SET SESSION group_concat_max_len = 1024',
      `SET SESSION sql_select_limit = ${b.maxRows + 1}`,
      b.server?.mariadb ? `SET SESSION max_statement_time = ${secs}` : `SET SESSION max_execution_time = ${b.statementTimeoutMs}`,
    ];
    for (const s of setup) await new Promise<void>((resolve, reject) => conn.query(s, (e) => (e ? reject(e) : resolve())));
    this.conn = conn;
    return conn;
  }

  async exec(sql: string): Promise<ExecResult> {
    const statements = splitStatements(sql);
    if (statements.length === 0) return { ok: false, error: '1065 (42000): Query was empty' };
    let first: ExecResult | null = null;
    for (const st of statements) {
      const refused = checkSandbox(st, this.database);
      if (refused) return { ok: false, error: refused.reason };
      const r = await this.execOne(st);
      if (!r.ok) return r;
      first ??= r;
    }
    return first ?? { ok: true, rows: [] };
  }

  private async execOne(sql: string): Promise<ExecResult> {
    if (this.closed) return { ok: false, error: '2006 (HY000): MySQL server has gone away' };
    let conn: Connection;
    try {
      conn = await this.connect();
    } catch (e) {
      return { ok: false, error: errorText(e) };
    }
    const max = this.backend.maxRows;
    return new Promise<ExecResult>((resolve) => {
      const rows: PyValue[][] = [];
      let fields: FieldPacket[] = [];
      let overflow = false;
      let settled = false;
      const done = (r: ExecResult): void => {
        if (!settled) {
          settled = true;
          clearTimeout(guard);
          resolve(r);
        }
      };
      // the server enforces the time limit; this only catches a server that does not answer
      const guard = setTimeout(() => {
        this.conn = null;
        conn.destroy();
        done({ ok: false, error: `DBBench sandbox: the statement ran past ${this.backend.statementTimeoutMs} ms and was stopped. The episode goes on.` });
      }, this.backend.statementTimeoutMs + 5000);
      const query = conn.query({ sql, rowsAsArray: true });
      query.on('error', (e: Error) => done(overflow ? { ok: false, error: tooManyRows(max) } : { ok: false, error: errorText(e) }));
      query.on('fields', (f: FieldPacket[]) => {
        // only the first result set counts, as with mysql-connector's fetchall()
        if (fields.length === 0) fields = f;
      });
      query.on('result', (row: unknown) => {
        if (!Array.isArray(row) || overflow) return;
        if (rows.length >= max) {
          overflow = true;
          this.backend.killQuery(conn.threadId);
          return;
        }
        rows.push(row.map((v, i) => toPy(v, fields[i])));
      });
      query.on('end', () => done(overflow ? { ok: false, error: tooManyRows(max) } : { ok: true, rows }));
    });
  }

  async tableHash(task: DbbenchTask): Promise<string> {
    const cols = task.columns.map(q).join(',');
    const sql = `select md5(group_concat(rowhash order by rowhash)) as hash from( SELECT substring(MD5(CONCAT_WS(',', ${cols})), 1, 5) AS rowhash FROM ${q(task.tableName)}) as sub`;
    const r = await this.execOne(sql);
    return r.ok ? pyRowsRepr(r.rows) : r.error;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const c = this.conn;
    this.conn = null;
    if (c) await new Promise<void>((resolve) => c.end(() => resolve())).catch(() => c.destroy());
    await this.backend.dropEpisode(this.database, this.user);
  }
}

/** a MySQL-compatible server reached through a URL */
export class MysqlBackend implements Backend {
  readonly kind = 'mysql' as const;
  readonly key: string;
  readonly host: string;
  readonly port: number;
  readonly maxRows: number;
  readonly statementTimeoutMs: number;
  server: Server | null = null;
  private readonly pool: Pool;
  private readonly live = new Set<MysqlSession>();
  private ready: Promise<Server> | null = null;
  private counter = 0;

  /** the backend key for a URL (credentials left out) */
  static keyOf(url: string): string {
    const u = new URL(url.replace(/^mariadb:/, 'mysql:'));
    return `mysql://${decodeURIComponent(u.username)}@${u.hostname}:${u.port || '3306'}`;
  }

  constructor(opts: MysqlBackendOptions) {
    let u: URL;
    try {
      u = new URL(opts.url.replace(/^mariadb:/, 'mysql:'));
    } catch (e) {
      throw new DbbenchError('DBBENCH_BAD_OPTION', `options.db is not a URL: use mysql://user:password@host:port`, { url: opts.url }, { cause: e });
    }
    const extra = [opts.maxRows !== undefined ? `maxRows=${opts.maxRows}` : '', opts.statementTimeoutMs !== undefined ? `timeoutMs=${opts.statementTimeoutMs}` : ''].filter(Boolean);
    this.key = MysqlBackend.keyOf(opts.url) + (extra.length > 0 ? `?${extra.join('&')}` : '');
    this.host = u.hostname;
    this.port = Number(u.port || 3306);
    this.maxRows = opts.maxRows ?? DEFAULT_MAX_ROWS;
    this.statementTimeoutMs = opts.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
    this.pool = mysql.createPool({
      host: this.host,
      port: this.port,
      user: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password),
      charset: 'utf8mb4_general_ci',
      connectionLimit: 4,
      multipleStatements: false,
      connectTimeout: 10_000,
    });
  }

  private admin(sql: string, params: unknown[] = []): Promise<unknown> {
    return this.pool.promise().query(sql, params).then(([rows]) => rows);
  }

  private init(): Promise<Server> {
    this.ready ??= (async () => {
      let version: string;
      try {
        const rows = (await this.admin('SELECT VERSION() AS v')) as { v: string }[];
        version = rows[0]?.v ?? '';
      } catch (e) {
        this.ready = null;
        throw new DbbenchError('DBBENCH_BACKEND_UNAVAILABLE', `cannot reach the MySQL server at ${this.key}: ${(e as Error).message}. Start it, or check host, port and credentials in --db`, { key: this.key }, { cause: e });
      }
      const mariadb = /mariadb/i.test(version);
      // closest to MySQL 8's utf8mb4_0900_ai_ci (accent- and case-insensitive, no padding)
      const server: Server = { mariadb, collation: mariadb ? 'utf8mb4_unicode_520_nopad_ci' : 'utf8mb4_0900_ai_ci' };
      this.server = server;
      await this.sweep();
      return server;
    })();
    return this.ready;
  }

  /** drop databases and users left by processes on this host that no longer run */
  async sweep(): Promise<string[]> {
    const dropped: string[] = [];
    const dbs = (await this.admin(`SELECT SCHEMA_NAME AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'dbb\\_%'`)) as { n: string }[];
    let users: { n: string }[] = [];
    try {
      users = (await this.admin(`SELECT DISTINCT User AS n FROM mysql.user WHERE User LIKE 'dbb\\_%'`)) as { n: string }[];
    } catch {
      // an account without access to mysql.user cannot sweep users
    }
    const names = new Set([...dbs.map((r) => r.n), ...users.map((r) => r.n)]);
    for (const name of names) {
      const m = /^dbb_([0-9a-f]{6})_(\d+)_\d+$/.exec(name);
      if (!m || m[1] !== HOST_TAG || pidAlive(Number(m[2]))) continue;
      await this.dropEpisode(name, name);
      dropped.push(name);
    }
    return dropped;
  }

  async open(task: DbbenchTask): Promise<DbSession> {
    const server = await this.init();
    const name = `${NAME_PREFIX}${HOST_TAG}_${process.pid}_${++this.counter}`;
    // a throwaway credential for one episode; not part of any simulated outcome
    const password = randomBytes(12).toString('hex');
    try {
      await this.admin(`CREATE DATABASE ${q(name)} CHARACTER SET utf8mb4 COLLATE ${server.collation}`);
      try {
        const limit = server.mariadb ? ` WITH MAX_STATEMENT_TIME ${this.statementTimeoutMs / 1000}` : '';
        await this.admin(`CREATE USER ?@'%' IDENTIFIED BY ?${limit}`, [name, password]);
        await this.admin(`GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, CREATE TEMPORARY TABLES, CREATE VIEW, SHOW VIEW ON ${q(name)}.* TO ?@'%'`, [name]);
      } catch (e) {
        const err = e as QueryError;
        if (err.errno === 1227 || err.errno === 1044 || err.errno === 1045 || err.errno === 1410) {
          throw new DbbenchError('DBBENCH_MYSQL_PRIVILEGES', `the account in --db may not create per-episode users (${errorText(e)}): use an account with CREATE USER and GRANT OPTION, e.g. root`, { key: this.key }, { cause: e });
        }
        throw e;
      }
      const cols = task.columns.map((c) => `${q(c)} TEXT`).join(',');
      let created = true;
      try {
        await this.admin(`CREATE TABLE IF NOT EXISTS ${q(name)}.${q(task.tableName)} (${cols})`);
      } catch (e) {
        // as on AgentBench's server: a table that cannot be created leaves the database empty
        if ((e as QueryError).errno === undefined) throw e;
        created = false;
      }
      if (created && task.rows.length > 0) {
        const values = task.rows.map((r) => `(${task.columns.map(() => '?').join(',')})`).join(',');
        const params = task.rows.flatMap((r) => task.columns.map((_c, i) => r[i] ?? null));
        await this.admin(`INSERT INTO ${q(name)}.${q(task.tableName)} (${task.columns.map(q).join(',')}) VALUES ${values}`, params);
      }
      const s = new MysqlSession(this, name, name, password);
      await s.connect();
      this.live.add(s);
      return s;
    } catch (e) {
      await this.dropEpisode(name, name).catch(() => undefined);
      throw e;
    }
  }

  /** stop a runaway query from a session (used when a result grows past the row cap) */
  killQuery(threadId: number | null): void {
    if (threadId !== null) this.admin(`KILL QUERY ${Number(threadId)}`).catch(() => undefined);
  }

  async dropEpisode(database: string, user: string): Promise<void> {
    for (const s of this.live) if (s.database === database) this.live.delete(s);
    await this.admin(`DROP DATABASE IF EXISTS ${q(database)}`);
    await this.admin(`DROP USER IF EXISTS ?@'%'`, [user]);
  }

  /** databases this backend's naming scheme owns that exist on the server now */
  async listEpisodeDatabases(): Promise<string[]> {
    const rows = (await this.admin(`SELECT SCHEMA_NAME AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'dbb\\_%' ORDER BY 1`)) as { n: string }[];
    return rows.map((r) => r.n);
  }

  async shutdown(): Promise<void> {
    await Promise.allSettled([...this.live].map((s) => s.close()));
    await this.pool.promise().end().catch(() => undefined);
  }
}
