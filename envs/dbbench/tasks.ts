import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DbbenchError } from './errors.ts';

/** which AgentBench DBBench protocol to follow */
export type DbbenchVariant = 'v0.2' | 'main-fc';

export const TASK_TYPES = [
  'other',
  'counting',
  'comparison',
  'ranking',
  'aggregation-SUM',
  'aggregation-MIN',
  'aggregation-MAX',
  'aggregation-AVG',
  'INSERT',
  'UPDATE',
] as const;
export type TaskType = (typeof TASK_TYPES)[number] | 'DELETE';

export interface DbbenchTask {
  /** stable id: `<set>/<line index>`, e.g. `v0.2/dev/3` */
  readonly id: string;
  readonly variant: DbbenchVariant;
  readonly type: TaskType;
  readonly description: string;
  readonly addDescription: string;
  readonly tableName: string;
  readonly columns: readonly string[];
  /** cells exactly as Python's str() would pass them to the server */
  readonly rows: readonly (readonly (string | null)[])[];
  /** reads: the answers; writes: the reference SQL (label[0]) */
  readonly label: readonly string[];
  /** reads: the reference query (not always valid MySQL: it is what AgentBench ships) */
  readonly sqlQuery: string | null;
  /** writes: repr of the expected table-hash row, e.g. `[('09aa…',)]` */
  readonly answerMd5: string | null;
}

export function isWriteType(t: TaskType): boolean {
  return t === 'INSERT' || t === 'UPDATE' || t === 'DELETE';
}

const HERE = dirname(fileURLToPath(import.meta.url));
/** the vendored data folder */
export const DATA_DIR = join(HERE, 'data');

/** named task sets shipped with the project */
export const SHIPPED_SETS = {
  'v0.2/dev': { file: join(DATA_DIR, 'v0.2', 'dev.jsonl'), variant: 'v0.2' },
  'v0.2/standard': { file: join(DATA_DIR, 'v0.2', 'standard.jsonl'), variant: 'v0.2' },
  'main-fc/standard': { file: join(DATA_DIR, 'main-fc', 'standard.jsonl'), variant: 'main-fc' },
} as const satisfies Record<string, { file: string; variant: DbbenchVariant }>;
export type ShippedSet = keyof typeof SHIPPED_SETS;

/** @default 'v0.2/standard' */
export const DEFAULT_SET: ShippedSet = 'v0.2/standard';

export interface LoadTasksOptions {
  /** a shipped set name (`v0.2/dev`, `v0.2/standard`, `main-fc/standard`) or a path to an AgentBench jsonl */
  file?: string;
  /** protocol; @default the set's own ('main-fc' for main-fc/standard, else 'v0.2') */
  variant?: DbbenchVariant;
}

const registry = new Map<string, DbbenchTask>();

/** a task loaded earlier in this process (steps find their task by id) */
export function getTask(id: string): DbbenchTask {
  const t = registry.get(id);
  if (!t) {
    throw new DbbenchError(
      'DBBENCH_UNKNOWN_TASK',
      `unknown DBBench task '${id}': call loadTasks() (with the same file) in this worker before step()`,
      { id },
    );
  }
  return t;
}

export function registerTask(task: DbbenchTask): void {
  registry.set(task.id, task);
}

// JSON numbers become their source text, so a cell written 82562.0 stays "82562.0" as in Python
function numbersAsText(line: string): string {
  return line.replace(/"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g, (m) => (m.startsWith('"') ? m : `"${m}"`));
}

function cell(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return String(v);
}

/** parse one AgentBench DBBench jsonl text into tasks */
export function parseTasks(text: string, setName: string, variant: DbbenchVariant): DbbenchTask[] {
  const out: DbbenchTask[] = [];
  const lines = text.split('\n');
  let index = 0;
  for (let n = 0; n < lines.length; n++) {
    const line = (lines[n] ?? '').trim();
    if (line === '') continue;
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(numbersAsText(line)) as Record<string, unknown>;
    } catch (e) {
      throw new DbbenchError('DBBENCH_BAD_DATA', `${setName}:${n + 1}: not JSON (${(e as Error).message}); expected one AgentBench task per line`, { line: n + 1 }, { cause: e });
    }
    const bad = (what: string): never => {
      throw new DbbenchError('DBBENCH_BAD_DATA', `${setName}:${n + 1}: ${what}; expected AgentBench's dbbench format (description, label, table{table_name, table_info{columns, rows}}, type)`, { line: n + 1 });
    };
    const table = raw.table as Record<string, unknown> | undefined;
    if (!table || typeof table.table_name !== 'string') bad('missing table.table_name');
    const info = (table as Record<string, unknown>).table_info as Record<string, unknown> | undefined;
    if (!info || !Array.isArray(info.columns) || !Array.isArray(info.rows)) bad('missing table.table_info.columns/rows');
    const type = Array.isArray(raw.type) ? raw.type[0] : raw.type;
    if (typeof type !== 'string') bad('missing type');
    const label = Array.isArray(raw.label) ? raw.label.map((x) => cell(x) ?? 'None') : [];
    const sql = raw.sql as { query?: unknown } | undefined;
    out.push({
      id: `${setName}/${index}`,
      variant,
      type: type as TaskType,
      description: String(raw.description ?? ''),
      addDescription: String(raw.add_description ?? ''),
      tableName: (table as { table_name: string }).table_name,
      columns: (info as { columns: { name: unknown }[] }).columns.map((c) => String(c.name)),
      rows: (info as { rows: unknown[][] }).rows.map((r) => r.map(cell)),
      label,
      sqlQuery: typeof sql?.query === 'string' ? sql.query : null,
      answerMd5: typeof raw.answer_md5 === 'string' ? raw.answer_md5 : null,
    });
    index++;
  }
  return out;
}

/**
 * Load DBBench tasks: a shipped set by name, or a user's own AgentBench jsonl by path.
 *
 * @example
 * const tasks = loadTasks({ file: 'v0.2/dev' });
 * const mine = loadTasks({ file: '/data/AgentBench/data/dbbench/standard.jsonl' });
 */
export function loadTasks(opts: LoadTasksOptions = {}): DbbenchTask[] {
  const name = opts.file ?? DEFAULT_SET;
  if (opts.variant !== undefined && opts.variant !== 'v0.2' && opts.variant !== 'main-fc') {
    throw new DbbenchError('DBBENCH_BAD_OPTION', `options.variant must be 'v0.2' or 'main-fc', got ${JSON.stringify(opts.variant)}`, { variant: opts.variant });
  }
  // parsed once per file and variant while the file is unchanged: a rollout opens every episode's
  // session by loading its set (envs/dbbench/descriptor.ts), shipped or a user's --data file, and
  // parsing v0.2/standard costs ~16 ms
  let file: string;
  let variant: DbbenchVariant;
  let setNameOf: (text: string) => string;
  if (name in SHIPPED_SETS) {
    const s = SHIPPED_SETS[name as ShippedSet];
    file = s.file;
    variant = opts.variant ?? s.variant;
    const setName = opts.variant && opts.variant !== s.variant ? `${name}@${opts.variant}` : name;
    setNameOf = () => setName;
  } else {
    file = name;
    if (!existsSync(file)) {
      throw new DbbenchError('DBBENCH_DATA_NOT_FOUND', `no DBBench data at '${file}': pass a path to an AgentBench dbbench .jsonl or one of ${Object.keys(SHIPPED_SETS).join(', ')}`, { file });
    }
    variant = opts.variant ?? 'v0.2';
    const v = variant;
    setNameOf = (text) => `${basename(file).replace(/\.jsonl?$/, '')}-${createHash('sha256').update(text).digest('hex').slice(0, 8)}@${v}`;
  }
  const key = `${name}\0${variant}`;
  const { mtimeMs, size } = statSync(file);
  let hit = parsed.get(key);
  if (!hit || hit.mtimeMs !== mtimeMs || hit.size !== size) {
    const text = readFileSync(file, 'utf8');
    parsed.set(key, (hit = { mtimeMs, size, tasks: parseTasks(text, setNameOf(text), variant) }));
  }
  return register([...hit.tasks]);
}

const parsed = new Map<string, { mtimeMs: number; size: number; tasks: DbbenchTask[] }>();

function register(tasks: DbbenchTask[]): DbbenchTask[] {
  for (const t of tasks) registerTask(t);
  return tasks;
}
