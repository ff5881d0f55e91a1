import type { PyValue } from './python.ts';
import type { DbbenchTask } from './tasks.ts';

/** what one SQL text produced: rows (possibly none) or the server's error text */
export type ExecResult =
  | { ok: true; rows: PyValue[][] }
  | { ok: false; error: string };

/** one episode's private database */
export interface DbSession {
  /** the database name agents see (SHOW DATABASES, error texts) */
  readonly database: string;
  /** run the agent's SQL (one or more statements; the first result is returned, as mysql-connector does) */
  exec(sql: string): Promise<ExecResult>;
  /** the repr of AgentBench's table-hash query for the task table */
  tableHash(task: DbbenchTask): Promise<string>;
  /** drop the database and anything made for it; safe to call twice */
  close(): Promise<void>;
}

export interface Backend {
  readonly kind: 'sqlite' | 'mysql';
  /** identifies the backend in episode state, without credentials */
  readonly key: string;
  /** create a fresh database holding the task's table */
  open(task: DbbenchTask, episodeId: string): Promise<DbSession>;
  /** release connections (open sessions are closed first) */
  shutdown(): Promise<void>;
}

/** @default 5000: a result with more rows is refused (the agent sees 800 characters anyway) */
export const DEFAULT_MAX_ROWS = 5000;
/** @default 5000 ms per statement */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5000;

export function tooManyRows(max: number): string {
  return `DBBench sandbox: the result has more than ${max} rows; add a LIMIT or aggregate (COUNT, GROUP BY). The episode goes on.`;
}
