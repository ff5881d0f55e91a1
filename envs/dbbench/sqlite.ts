/**
 * SQLite backend: one in-memory better-sqlite3 database per episode, made to answer like MySQL
 * where these tasks need it (see docs/DBBENCH.md for what still differs).
 */
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { DbbenchError } from './errors.ts';
import { DEFAULT_MAX_ROWS, tooManyRows, type Backend, type DbSession, type ExecResult } from './backend.ts';
import { checkSandbox, FOLD_FN, foldText, mysqlOnlyError, mysqlToSqlite, NUM_FN, significant, splitStatements, tokenize } from './dialect.ts';
import { tableHashRepr } from './protocol.ts';
import type { PyValue } from './python.ts';
import type { DbbenchTask } from './tasks.ts';

export interface SqliteBackendOptions {
  /** @default 5000 */
  maxRows?: number;
}

const SYNTAX_PREFIX = "1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near";

/** MySQL's string → number conversion: the longest numeric prefix, else 0 */
function mysqlNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v !== 'string') return 0;
  const m = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(v);
  return m ? Number(m[0]) : 0;
}

const likeCache = new Map<string, RegExp>();
function mysqlLike(pattern: string, value: string, escape = '\\'): boolean {
  const key = `${escape}\u0000${pattern}`;
  let re = likeCache.get(key);
  if (!re) {
    let src = '';
    const p = foldText(pattern);
    for (let i = 0; i < p.length; i++) {
      const c = p[i] ?? '';
      if (c === escape && i + 1 < p.length) {
        src += (p[++i] ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      } else if (c === '%') src += '[\\s\\S]*';
      else if (c === '_') src += '[\\s\\S]';
      else src += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
    re = new RegExp(`^${src}$`, 'u');
    if (likeCache.size > 10_000) likeCache.clear();
    likeCache.set(key, re);
  }
  return re.test(foldText(value));
}

const asText = (v: unknown): string | null =>
  v === null || v === undefined ? null : typeof v === 'string' ? v : typeof v === 'bigint' ? v.toString() : String(v);

/** functions MySQL has and SQLite lacks (or has with other meanings) */
function installMysqlFunctions(db: Database.Database): void {
  const det = { deterministic: true } as const;
  db.function(FOLD_FN, det, (v: unknown) => (typeof v === 'string' ? foldText(v) : (v as never)));
  db.function(NUM_FN, det, (v: unknown) => (v === null ? null : typeof v === 'string' ? mysqlNumber(v) : (v as never)));
  db.function('like', det, (p: unknown, v: unknown) => (p === null || v === null ? null : mysqlLike(String(asText(p)), String(asText(v))) ? 1 : 0));
  db.function('like', det, (p: unknown, v: unknown, e: unknown) =>
    p === null || v === null ? null : mysqlLike(String(asText(p)), String(asText(v)), String(asText(e) ?? '\\')) ? 1 : 0);
  db.function('concat', { ...det, varargs: true }, (...a: unknown[]) => (a.some((x) => x === null) ? null : a.map(asText).join('')));
  db.function('concat_ws', { ...det, varargs: true }, (sep: unknown, ...a: unknown[]) =>
    sep === null ? null : a.filter((x) => x !== null).map(asText).join(String(asText(sep))));
  db.function('md5', det, (v: unknown) => (v === null ? null : createHash('md5').update(String(asText(v))).digest('hex')));
  db.function('if', det, (c: unknown, a: unknown, b: unknown) => (c !== null && mysqlNumber(c) !== 0 ? a : b) as never);
  db.function('left', det, (s: unknown, n: unknown) => (s === null || n === null ? null : [...String(asText(s))].slice(0, Math.max(0, Number(n))).join('')));
  db.function('right', det, (s: unknown, n: unknown) => {
    if (s === null || n === null) return null;
    const cs = [...String(asText(s))];
    const k = Math.max(0, Number(n));
    return k === 0 ? '' : cs.slice(-k).join('');
  });
  db.function('locate', { ...det, varargs: true }, (sub: unknown, s: unknown, pos: unknown = 1) => {
    if (sub === null || s === null) return null;
    const hay = foldText(String(asText(s)));
    const i = hay.indexOf(foldText(String(asText(sub))), Math.max(0, Number(pos) - 1));
    return BigInt(i + 1);
  });
  db.function('char_length', det, (s: unknown) => (s === null ? null : BigInt([...String(asText(s))].length)));
  db.function('lcase', det, (s: unknown) => (s === null ? null : String(asText(s)).toLowerCase()));
  db.function('ucase', det, (s: unknown) => (s === null ? null : String(asText(s)).toUpperCase()));
  db.function('mid', det, (s: unknown, p: unknown, n: unknown) => (s === null ? null : [...String(asText(s))].slice(Number(p) - 1, Number(p) - 1 + Number(n)).join('')));
  db.function('regexp', det, (p: unknown, v: unknown) => (p === null || v === null ? null : new RegExp(String(asText(p)), 'iu').test(String(asText(v))) ? 1 : 0));
  db.function('truncate', det, (x: unknown, d: unknown) => {
    const f = 10 ** Number(d);
    return Math.trunc(mysqlNumber(x) * f) / f;
  });
  // MySQL sums and averages text as DOUBLE (a TEXT column's "1174" sums to 1174.0)
  db.aggregate('sum', {
    start: () => ({ acc: 0, any: false, float: false, int: 0n }),
    step: (st: { acc: number; any: boolean; float: boolean; int: bigint }, v: unknown) => {
      if (v === null) return st;
      st.any = true;
      if (typeof v === 'bigint') st.int += v;
      else st.float = true;
      st.acc += mysqlNumber(v);
      return st;
    },
    result: (st: { acc: number; any: boolean; float: boolean; int: bigint }) => (!st.any ? null : st.float ? st.acc : st.int),
  });
  db.aggregate('avg', {
    start: () => ({ acc: 0, n: 0 }),
    step: (st: { acc: number; n: number }, v: unknown) => {
      if (v !== null) {
        st.acc += mysqlNumber(v);
        st.n++;
      }
      return st;
    },
    result: (st: { acc: number; n: number }) => (st.n === 0 ? null : st.acc / st.n),
  });
}

function toPy(v: unknown): PyValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'string') return v;
  if (v instanceof Uint8Array) return { kind: 'bytes', data: v };
  return String(v);
}

/** turn SQLite's error into the MySQL server text an agent would have seen */
export function mysqlErrorText(message: string, sql: string, database: string): string {
  let m = /^no such table: (?:main\.)?(.+)$/.exec(message);
  if (m) return `1146 (42S02): Table '${database}.${m[1]}' doesn't exist`;
  m = /^no such column: (.+)$/.exec(message);
  if (m) return `1054 (42S22): Unknown column '${(m[1] ?? '').replace(/^"|"$/g, '')}' in 'field list'`;
  m = /^near "([\s\S]*)": syntax error$/.exec(message);
  if (m) {
    const at = sql.indexOf(m[1] ?? '');
    const near = at >= 0 ? sql.slice(at, at + 80) : (m[1] ?? '');
    return `${SYNTAX_PREFIX} '${near}' at line 1`;
  }
  if (/^incomplete input$|^unrecognized token/.test(message)) return `${SYNTAX_PREFIX} '' at line 1`;
  m = /^duplicate column name: (.+)$/.exec(message);
  if (m) return `1060 (42S21): Duplicate column name '${m[1]}'`;
  m = /^table (?:"|`)?(.+?)(?:"|`)? already exists$/.exec(message);
  if (m) return `1050 (42S01): Table '${m[1]}' already exists`;
  m = /^no such function: (.+)$/.exec(message);
  if (m) return `1305 (42000): FUNCTION ${database}.${m[1]} does not exist`;
  m = /^wrong number of arguments to function (\w+)\(\)$/.exec(message);
  if (m) return `1582 (42000): Incorrect parameter count in the call to native function '${m[1]}'`;
  m = /^(\d+) values for (\d+) columns$|^table .+ has (\d+) columns but (\d+) values were supplied$/.exec(message);
  if (m) return "1136 (21S01): Column count doesn't match value count at row 1";
  return `1105 (HY000): ${message}`;
}

class SqliteSession implements DbSession {
  private db: Database.Database | null;
  setupError: string | null = null;

  constructor(
    readonly database: string,
    private readonly task: DbbenchTask,
    private readonly maxRows: number,
  ) {
    this.db = new Database(':memory:');
    installMysqlFunctions(this.db);
    const cols = task.columns.map((c) => `"${c.replace(/"/g, '""')}" TEXT COLLATE NOCASE`).join(', ');
    const name = `"${task.tableName.replace(/"/g, '""')}"`;
    // names MySQL refuses (SQLite would take them): the table is not created, as on MySQL
    const badCol = task.columns.find((c) => c === '' || c !== c.trimEnd() || c.length > 64);
    if (badCol !== undefined || task.tableName.length > 64 || task.tableName !== task.tableName.trimEnd()) {
      this.setupError = badCol !== undefined ? `1166 (42000): Incorrect column name '${badCol}'` : `1103 (42000): Incorrect table name '${task.tableName}'`;
      return;
    }
    try {
      this.db.exec(`CREATE TABLE ${name} (${cols})`);
    } catch (e) {
      // as on AgentBench's server, a table that cannot be created (duplicate column names in
      // v0.2 data) leaves the episode with an empty database
      this.setupError = mysqlErrorText((e as Error).message, '', database);
      return;
    }
    if (task.rows.length > 0 && task.columns.length > 0) {
      const ins = this.db.prepare(`INSERT INTO ${name} VALUES (${task.columns.map(() => '?').join(', ')})`);
      const db = this.db;
      db.transaction(() => {
        for (const r of task.rows) ins.run(...task.columns.map((_c, i) => r[i] ?? null));
      })();
    }
  }

  private get handle(): Database.Database {
    if (!this.db) throw new DbbenchError('DBBENCH_SESSION_CLOSED', 'this DBBench SQLite session is closed; open a new session for the next episode');
    return this.db;
  }

  async exec(sql: string): Promise<ExecResult> {
    const statements = splitStatements(sql);
    if (statements.length === 0) return { ok: false, error: `1065 (42000): Query was empty` };
    let first: ExecResult | null = null;
    for (const st of statements) {
      const r = this.execOne(st);
      if (!r.ok) return r;
      first ??= r;
    }
    return first ?? { ok: true, rows: [] };
  }

  private execOne(sql: string): ExecResult {
    const refused = checkSandbox(sql, this.database);
    if (refused) return { ok: false, error: refused.reason };
    const shown = this.mysqlShow(sql);
    if (shown) return shown;
    const mysqlError = mysqlOnlyError(sql, this.tableNames(), this.database);
    if (mysqlError) return { ok: false, error: mysqlError };
    const translated = mysqlToSqlite(sql);
    try {
      const stmt = this.handle.prepare(translated);
      if (!stmt.reader) {
        stmt.run();
        return { ok: true, rows: [] };
      }
      stmt.safeIntegers(true).raw(true);
      const rows: PyValue[][] = [];
      for (const r of stmt.iterate() as Iterable<unknown[]>) {
        if (rows.length >= this.maxRows) return { ok: false, error: tooManyRows(this.maxRows) };
        rows.push(r.map(toPy));
      }
      return { ok: true, rows };
    } catch (e) {
      return { ok: false, error: mysqlErrorText((e as Error).message, sql, this.database) };
    }
  }

  private tableNames(): string[] {
    return (this.handle.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").raw(true).all() as string[][]).map((r) => r[0] ?? '');
  }

  /** SHOW TABLES / SHOW DATABASES / DESCRIBE t / SHOW COLUMNS FROM t, as MySQL answers them */
  private mysqlShow(sql: string): ExecResult | null {
    const sig = significant(tokenize(sql));
    const words = sig.map((t) => (t.kind === 'word' ? t.text.toUpperCase() : t.value ?? t.text));
    const tables = (): string[] =>
      (this.handle.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").raw(true).all() as string[][]).map((r) => r[0] ?? '');
    if (words[0] === 'SHOW' && (words[1] === 'TABLES' || (words[1] === 'FULL' && words[2] === 'TABLES'))) {
      return { ok: true, rows: tables().map((t) => (words[1] === 'FULL' ? [t, 'BASE TABLE'] : [t])) };
    }
    if (words[0] === 'SHOW' && (words[1] === 'DATABASES' || words[1] === 'SCHEMAS')) {
      return { ok: true, rows: [['information_schema'], [this.database]] };
    }
    let table: string | undefined;
    if ((words[0] === 'DESCRIBE' || words[0] === 'DESC' || words[0] === 'EXPLAIN') && sig.length === 2) table = sig[1]?.value ?? sig[1]?.text;
    if (words[0] === 'SHOW' && (words[1] === 'COLUMNS' || words[1] === 'FIELDS') && (words[2] === 'FROM' || words[2] === 'IN')) table = sig[3]?.value ?? sig[3]?.text;
    if (words[0] === 'SHOW' && words[1] === 'FULL' && (words[2] === 'COLUMNS' || words[2] === 'FIELDS')) table = sig[4]?.value ?? sig[4]?.text;
    if (table === undefined) return null;
    const found = tables().find((t) => t.toLowerCase() === table?.toLowerCase());
    if (!found) return { ok: false, error: `1146 (42S02): Table '${this.database}.${table}' doesn't exist` };
    const cols = this.handle.prepare(`SELECT name, type FROM pragma_table_info(?)`).raw(true).all(found) as string[][];
    return { ok: true, rows: cols.map(([name, type]) => [name ?? '', (type ?? 'text').toLowerCase().split(' ')[0] ?? 'text', 'YES', '', null, '']) };
  }

  async tableHash(task: DbbenchTask): Promise<string> {
    const cols = task.columns.map((c) => `"${c.replace(/"/g, '""')}"`).join(', ');
    try {
      const rows = this.handle.prepare(`SELECT ${cols} FROM "${task.tableName.replace(/"/g, '""')}"`).raw(true).all() as unknown[][];
      return tableHashRepr(rows.map((r) => r.map(asText)));
    } catch (e) {
      return mysqlErrorText((e as Error).message, '', this.database);
    }
  }

  async close(): Promise<void> {
    this.db?.close();
    this.db = null;
  }
}

/** the embedded default backend */
export class SqliteBackend implements Backend {
  readonly kind = 'sqlite' as const;
  readonly key = 'sqlite';
  private readonly maxRows: number;

  constructor(opts: SqliteBackendOptions = {}) {
    this.maxRows = opts.maxRows ?? DEFAULT_MAX_ROWS;
  }

  async open(task: DbbenchTask): Promise<DbSession> {
    // AgentBench v0.2 names the database after the table
    return new SqliteSession(task.tableName, task, this.maxRows);
  }

  async shutdown(): Promise<void> {}
}
