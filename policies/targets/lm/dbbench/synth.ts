/**
 * Synthetic DBBench tasks for the learned targets' behaviour cloning: templated questions over the
 * tables of the TRAINING split (`v0.2/standard`) only, with the SQL and the answer computed by the
 * generator through the env's own SQLite backend (so a label is what the env would compare
 * against). Tables that share a name or a row with a `v0.2/dev` table are left out, so no dev
 * table (and no dev row) is ever seen in training.
 *
 * Types follow the real set: lookups (`other`, WikiSQL style), `counting`, `aggregation-*`
 * (SUM/MIN/MAX/AVG), `comparison`, `ranking`, and the writes `INSERT`/`UPDATE`/`DELETE`, which
 * v0.2 scores by the table hash after the episode (`answerMd5`, computed here the same way).
 */
import { createHash } from 'node:crypto';
import type { Rng } from '../../../../cluster/rng.ts';
import { loadTasks, SqliteBackend, type DbbenchTask, type TaskType } from '../../../../envs/dbbench/index.ts';
import { pyFloat, pyRowsRepr, pyLiteralEval, pyStr, type PyLit } from '../../../../envs/dbbench/python.ts';
import { TRUNCATE_AT } from '../../../../envs/dbbench/protocol.ts';
import { LmTargetError } from '../errors.ts';
import { fillRead, fillTemplate, minedReads, minedTemplates, type MinedReadKind, type MinedTemplate } from './mined.ts';
import { turnEventLoop } from '../../../../cluster/turn.ts';

/** A training table: name, columns and rows (cells as the task data has them). */
export interface SynthTable {
  name: string;
  columns: readonly string[];
  rows: readonly (readonly (string | null)[])[];
}

/** Relative weights of the synthetic task types. */
export type SynthWeights = Partial<Record<TaskType, number>>;

/** @default: about the real sets' mix (two thirds writes), with every read type present */
export const DEFAULT_SYNTH_WEIGHTS: Readonly<Record<TaskType, number>> = Object.freeze({
  other: 0.16,
  counting: 0.08,
  comparison: 0.06,
  ranking: 0.06,
  'aggregation-SUM': 0.025,
  'aggregation-MIN': 0.025,
  'aggregation-MAX': 0.025,
  'aggregation-AVG': 0.025,
  INSERT: 0.25,
  UPDATE: 0.25,
  DELETE: 0.05,
});

const cellKey = (r: readonly (string | null)[]): string => JSON.stringify(r);
/** a table name as compared with dev's: lower case, spaces and underscores alike */
export const tableNameKey = (name: string): string => name.toLowerCase().replace(/[\s_]+/g, ' ').trim();
const tableKey = (t: { columns: readonly string[]; rows: readonly (readonly (string | null)[])[] }): string => JSON.stringify([t.columns, t.rows]);

let tablesMemo: SynthTable[] | null = null;
let devMemo: { names: Set<string>; rows: Set<string>; contents: Set<string> } | null = null;

/** Names (tableNameKey), rows and whole contents of the dev split's tables. */
export function devTables(): { names: Set<string>; rows: Set<string>; contents: Set<string> } {
  if (devMemo) return devMemo;
  const dev = loadTasks({ file: 'v0.2/dev' });
  devMemo = {
    names: new Set(dev.map((t) => tableNameKey(t.tableName))),
    rows: new Set(dev.flatMap((t) => t.rows.map(cellKey))),
    contents: new Set(dev.map(tableKey)),
  };
  return devMemo;
}

/** Whether a table shares its name (tableNameKey), its whole content or any row with a dev table. */
export function sharesWithDev(t: { tableName: string; columns: readonly string[]; rows: readonly (readonly (string | null)[])[] }): boolean {
  const dev = devTables();
  return dev.names.has(tableNameKey(t.tableName)) || dev.contents.has(tableKey(t)) || t.rows.some((r) => dev.rows.has(cellKey(r)));
}

/**
 * The training split's distinct tables that share nothing with the dev split (no table name, no
 * row) and that SQLite can hold (distinct, non-empty column names without backticks), in data order.
 */
export function trainingTables(): SynthTable[] {
  if (tablesMemo) return tablesMemo;
  const seen = new Set<string>();
  const out: SynthTable[] = [];
  for (const t of loadTasks({ file: 'v0.2/standard' })) {
    const key = tableKey(t);
    if (seen.has(key)) continue;
    seen.add(key);
    if (sharesWithDev(t)) continue;
    const lower = t.columns.map((c) => c.toLowerCase());
    if (new Set(lower).size !== lower.length || t.columns.some((c) => c === '' || c !== c.trim() || c.length > 64 || /[`\n\\]/.test(c))) continue;
    if (/[`\n\\]/.test(t.tableName) || t.tableName.length > 64 || t.rows.length < 3) continue;
    out.push({ name: t.tableName, columns: t.columns, rows: t.rows });
  }
  tablesMemo = out;
  return out;
}

// ---------------------------------------------------------------- running SQL as the env does

const backend = new SqliteBackend();

function shell(table: SynthTable, id: string): DbbenchTask {
  return {
    id,
    variant: 'v0.2',
    type: 'other',
    description: '',
    addDescription: '',
    tableName: table.name,
    columns: table.columns,
    rows: table.rows,
    label: [],
    sqlQuery: null,
    answerMd5: null,
  };
}

/** What the env shows for `sql` on a fresh copy of the table, and the table hash after it. */
async function runOnTable(table: SynthTable, sql: string): Promise<{ ok: boolean; observation: string; hash: string; before: string }> {
  const task = shell(table, 'dbsynth/probe');
  const s = await backend.open(task);
  try {
    const before = await s.tableHash(task);
    const r = await s.exec(sql);
    const text = r.ok ? pyRowsRepr(r.rows, 900) : r.error;
    const observation = text.length > TRUNCATE_AT ? `${text.slice(0, TRUNCATE_AT)}[TRUNCATED]` : text;
    return { ok: r.ok, observation, hash: await s.tableHash(task), before };
  } finally {
    await s.close();
  }
}

/**
 * The cells of a SQL result as the env printed it (`[('a',), (2,)]` → `['a', '2']`), each as
 * Python's str() gives it; null when the text is not a result (an error, a truncated result).
 */
export function resultCells(observation: string): string[] | null {
  if (!observation.startsWith('[') || observation.endsWith('[TRUNCATED]')) return null;
  let v: PyLit;
  try {
    v = pyLiteralEval(observation);
  } catch {
    return null;
  }
  if (v.t !== 'list') return null;
  const out: string[] = [];
  for (const row of v.items) {
    if (row.t !== 'tuple') return null;
    for (const c of row.items) out.push(pyStr(c));
  }
  return out;
}

/** The final answer the protocol expects for those cells: `Final Answer: ["a", "2"]`. */
export function answerText(cells: readonly string[]): string {
  return `Action: Answer\nFinal Answer: ${JSON.stringify(cells)}`;
}

/** The operation text for one SQL statement. */
export function operationText(sql: string): string {
  return `Action: Operation\n\`\`\`sql\n${sql}\n\`\`\``;
}

// ---------------------------------------------------------------- picking columns and values

const NUM = /^-?\d+(?:\.\d+)?$/;
const BAD_VALUE = /['"\\`\n\r\t]|^\s|\s$/;

/** a value a question can quote and SQL can hold: short, no quotes or escapes */
function goodValue(v: string | null): v is string {
  return v !== null && v !== '' && v.length <= 40 && !BAD_VALUE.test(v) && !/^[-–—?]+$/.test(v) && v.split(/\s+/).length <= 6;
}

function numericCols(t: SynthTable): number[] {
  const out: number[] = [];
  t.columns.forEach((_c, i) => {
    const vs = t.rows.map((r) => r[i] ?? '').filter((v) => v !== '');
    if (vs.length >= 3 && vs.filter((v) => NUM.test(v)).length >= 0.9 * vs.length && new Set(vs).size > 1) out.push(i);
  });
  return out;
}

/** columns whose cells are mostly quotable values */
function valueCols(t: SynthTable): number[] {
  return t.columns.map((_c, i) => i).filter((i) => t.rows.filter((r) => goodValue(r[i] ?? null)).length >= 0.6 * t.rows.length);
}

/** row indices whose value in column `c` is quotable and unique in the column */
function uniqueRows(t: SynthTable, c: number): number[] {
  const count = new Map<string, number>();
  for (const r of t.rows) {
    const v = (r[c] ?? '').toLowerCase();
    count.set(v, (count.get(v) ?? 0) + 1);
  }
  return t.rows.map((_r, i) => i).filter((i) => goodValue(t.rows[i]![c] ?? null) && count.get((t.rows[i]![c] ?? '').toLowerCase()) === 1);
}

const q = (v: string): string => `'${v}'`;
const bt = (n: string): string => `\`${n}\``;

/** a column name as a question writes it (as is, or lower case) */
function said(rng: Rng, name: string): string {
  return rng.chance(0.3) ? name.toLowerCase() : name;
}

interface Draft {
  type: TaskType;
  description: string;
  sql: string;
}

function pickOther(rng: Rng, xs: readonly number[], not: number): number | null {
  const ys = xs.filter((x) => x !== not);
  return ys.length > 0 ? rng.pick(ys) : null;
}

function draftLookup(rng: Rng, t: SynthTable): Draft | null {
  const keys = valueCols(t).filter((c) => uniqueRows(t, c).length > 0);
  if (keys.length === 0) return null;
  const y = rng.pick(keys);
  const x = pickOther(rng, valueCols(t), y);
  if (x === null) return null;
  const r = t.rows[rng.pick(uniqueRows(t, y))]!;
  const v = r[y]!;
  const X = t.columns[x]!;
  const Y = t.columns[y]!;
  const templates = [
    `What is the ${said(rng, X)} when the ${said(rng, Y)} is ${v}?`,
    `What ${said(rng, X)} has a ${said(rng, Y)} of ${v}?`,
    `Which ${said(rng, X)} has ${said(rng, Y)} ${v}?`,
    `Tell me the ${said(rng, X)} for the ${said(rng, Y)} ${v}.`,
    `Name the ${said(rng, X)} for ${said(rng, Y)} of ${v}`,
    `what is the ${said(rng, X)} if ${said(rng, Y)} is ${v}?`,
  ];
  return { type: 'other', description: rng.pick(templates), sql: `SELECT ${bt(X)} FROM ${bt(t.name)} WHERE ${bt(Y)} = ${q(v)};` };
}

function draftCounting(rng: Rng, t: SynthTable): Draft | null {
  const cols = valueCols(t);
  if (cols.length === 0) return null;
  const y = rng.pick(cols);
  const r = rng.pick(t.rows.filter((row) => goodValue(row[y] ?? null)));
  const v = r[y]!;
  const Y = t.columns[y]!;
  const X = t.columns[pickOther(rng, cols, y) ?? y]!;
  const templates = [
    `How many rows have a ${said(rng, Y)} of ${v}?`,
    `How many ${said(rng, X)} entries are there when the ${said(rng, Y)} is ${v}?`,
    `What is the number of entries with ${said(rng, Y)} ${v}?`,
    `Count the rows where ${said(rng, Y)} is ${v}.`,
    `how many times is the ${said(rng, Y)} ${v}?`,
  ];
  return { type: 'counting', description: rng.pick(templates), sql: `SELECT COUNT(*) FROM ${bt(t.name)} WHERE ${bt(Y)} = ${q(v)};` };
}

const AGG: Record<'SUM' | 'MIN' | 'MAX' | 'AVG', readonly string[]> = {
  SUM: ['What is the total {N}{W}?', 'What is the sum of {N}{W}?', 'Name the total number of {N}{W}'],
  MIN: ['What is the lowest {N}{W}?', 'What is the smallest {N}{W}?', 'Name the least {N}{W}'],
  MAX: ['What is the highest {N}{W}?', 'What is the largest {N}{W}?', 'Name the most {N}{W}'],
  AVG: ['What is the average {N}{W}?', 'What is the mean {N}{W}?', 'Name the average {N}{W}'],
};

function draftAggregation(rng: Rng, t: SynthTable, fn: 'SUM' | 'MIN' | 'MAX' | 'AVG'): Draft | null {
  const nums = numericCols(t);
  if (nums.length === 0) return null;
  const n = rng.pick(nums);
  const N = t.columns[n]!;
  let where = '';
  let w = '';
  const cols = valueCols(t).filter((c) => c !== n);
  if (cols.length > 0 && rng.chance(0.7)) {
    const y = rng.pick(cols);
    const v = rng.pick(t.rows.filter((row) => goodValue(row[y] ?? null)))[y]!;
    const Y = t.columns[y]!;
    where = ` WHERE ${bt(Y)} = ${q(v)}`;
    w = rng.pick([` when the ${said(rng, Y)} is ${v}`, ` for ${said(rng, Y)} ${v}`, ` with a ${said(rng, Y)} of ${v}`]);
  }
  const text = rng.pick(AGG[fn]).replace('{N}', said(rng, N)).replace('{W}', w);
  return { type: `aggregation-${fn}`, description: text, sql: `SELECT ${fn}(${bt(N)}) FROM ${bt(t.name)}${where};` };
}

/** A numeric column and another value column of `t` (drawn in that order), or null. */
function numericAndOther(rng: Rng, t: SynthTable): { n: number; x: number } | null {
  const nums = numericCols(t);
  if (nums.length === 0) return null;
  const n = rng.pick(nums);
  const x = pickOther(rng, valueCols(t), n);
  return x === null ? null : { n, x };
}

function draftComparison(rng: Rng, t: SynthTable): Draft | null {
  const pair = numericAndOther(rng, t);
  if (pair === null) return null;
  const { n, x } = pair;
  const values = [...new Set(t.rows.map((r) => r[n] ?? '').filter((v) => NUM.test(v)).map(Number))].sort((a, b) => a - b);
  if (values.length < 4) return null;
  const m = 1 + rng.int(3);
  const greater = rng.chance(0.5);
  // strictly above the m+1-th largest (below the m+1-th smallest): m distinct values pass
  const k = greater ? values[values.length - 1 - m]! : values[m]!;
  const N = t.columns[n]!;
  const X = t.columns[x]!;
  const word = greater ? rng.pick(['greater than', 'more than', 'larger than', 'above']) : rng.pick(['less than', 'smaller than', 'fewer than', 'below']);
  const templates = [`What is the ${said(rng, X)} when the ${said(rng, N)} is ${word} ${k}?`, `Which ${said(rng, X)} has a ${said(rng, N)} ${word} ${k}?`, `Name the ${said(rng, X)} with ${said(rng, N)} ${word} ${k}`];
  return { type: 'comparison', description: rng.pick(templates), sql: `SELECT ${bt(X)} FROM ${bt(t.name)} WHERE ${bt(N)} ${greater ? '>' : '<'} ${k};` };
}

function draftRanking(rng: Rng, t: SynthTable): Draft | null {
  const pair = numericAndOther(rng, t);
  if (pair === null) return null;
  const { n, x } = pair;
  const N = t.columns[n]!;
  const X = t.columns[x]!;
  const top = rng.chance(0.5);
  const word = top ? rng.pick(['highest', 'largest', 'most']) : rng.pick(['lowest', 'smallest', 'fewest']);
  const templates = [`Which ${said(rng, X)} has the ${word} ${said(rng, N)}?`, `What is the ${said(rng, X)} with the ${word} ${said(rng, N)}?`, `name the ${said(rng, X)} that has the ${word} ${said(rng, N)}`];
  return { type: 'ranking', description: rng.pick(templates), sql: `SELECT ${bt(X)} FROM ${bt(t.name)} ORDER BY CAST(${bt(N)} AS DECIMAL) ${top ? 'DESC' : 'ASC'} LIMIT 1;` };
}

/** a value for column c that is not in the row: another row's, or a new number for numbers */
function newValue(rng: Rng, t: SynthTable, c: number, not: string | null): string | null {
  const nums = numericCols(t).includes(c);
  if (nums && rng.chance(0.5)) {
    const vs = t.rows.map((r) => Number(r[c])).filter((x) => Number.isFinite(x));
    const hi = Math.max(10, Math.ceil(Math.max(...vs) * 1.2));
    const v = String(rng.int(hi + 1));
    return v === not ? null : v;
  }
  const pool = t.rows.map((r) => r[c] ?? null).filter((v): v is string => goodValue(v) && v !== not);
  return pool.length > 0 ? rng.pick(pool) : null;
}

/**
 * The columns of an INSERT in the order the request mentions their values: each value's first
 * free occurrence in `description` (quoted first, else bounded by non-alphanumerics, case aside),
 * values said twice taking their occurrences in turn; values not found follow in header order.
 * No draws: the same for the same request.
 */
export function mentionOrder(description: string, values: readonly string[]): number[] {
  const text = description.toLowerCase();
  const taken: Array<[number, number]> = [];
  const free = (a: number, b: number): boolean => taken.every(([x, y]) => b <= x || a >= y);
  const at = values.map((v) => {
    const w = v.toLowerCase();
    if (w.length === 0) return Infinity;
    for (const quoted of [true, false]) {
      const needle = quoted ? `'${w}'` : w;
      for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
        const a = quoted ? i + 1 : i;
        const b = a + w.length;
        const edge = (c: string | undefined): boolean => c === undefined || !/[\p{L}\p{N}]/u.test(c);
        if (!quoted && !(edge(text[i - 1]) && edge(text[b]))) continue;
        if (!free(a, b)) continue;
        taken.push([a, b]);
        return a;
      }
    }
    return Infinity;
  });
  return values.map((_v, i) => i).sort((i, j) => (at[i]! === at[j]! ? i - j : at[i]! < at[j]! ? -1 : 1));
}

function draftInsert(rng: Rng, t: SynthTable, wide = false, columns?: SynthInsertColumns): Draft | null {
  if (t.columns.length > 7) return null;
  const vals: string[] = [];
  for (let c = 0; c < t.columns.length; c++) {
    const v = newValue(rng, t, c, null);
    if (v === null) return null;
    vals.push(v);
  }
  if (t.rows.some((r) => cellKey(r) === cellKey(vals))) return null;
  const pairs = t.columns.map((c, i) => [said(rng, c), vals[i]!] as const);
  const list = (sep: (c: string, v: string) => string): string => {
    const parts = pairs.map(([c, v]) => sep(c, v));
    return parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}` : parts[0]!;
  };
  const templates = [
    `Insert a new row into the ${t.name} table: ${list((c, v) => `${c} is ${v}`)}.`,
    `Add a record to ${t.name} with ${list((c, v) => `${c} '${v}'`)}.`,
    `Insert into ${t.name} (${t.columns.join(', ')}) values (${vals.map(q).join(', ')}).`,
    `A new entry has ${list((c, v) => `${c} ${v}`)}. Insert it into the table.`,
  ];
  // wide: most requests phrased as one of the training split's own INSERTs of as many columns
  const mined = wide ? minedTemplates().filter((m) => m.type === 'INSERT' && m.n === t.columns.length) : [];
  const description = mined.length > 0 && rng.chance(WIDE_SHARE) ? fillTemplate(rng.pick(mined), { table: t.name, column: (i) => t.columns[i]!, value: (i) => vals[i]! }) : rng.pick(templates);
  if (columns === 'mention') {
    const order = mentionOrder(description, vals);
    return { type: 'INSERT', description, sql: `INSERT INTO ${bt(t.name)} (${order.map((i) => bt(t.columns[i]!)).join(', ')}) VALUES (${order.map((i) => q(vals[i]!)).join(', ')});` };
  }
  return { type: 'INSERT', description, sql: `INSERT INTO ${bt(t.name)} VALUES (${vals.map(q).join(', ')});` };
}

function draftUpdate(rng: Rng, t: SynthTable, wide = false): Draft | null {
  const keys = valueCols(t).filter((c) => uniqueRows(t, c).length > 0);
  if (keys.length === 0) return null;
  if (wide && rng.chance(WIDE_SHARE)) {
    const mined = minedTemplates().filter((m) => m.type === 'UPDATE' && m.n < t.columns.length);
    if (mined.length > 0) return minedUpdate(rng, t, keys, rng.pick(mined));
  }
  const y = rng.pick(keys);
  const a = pickOther(rng, t.columns.map((_c, i) => i), y);
  if (a === null) return null;
  const row = t.rows[rng.pick(uniqueRows(t, y))]!;
  const x = newValue(rng, t, a, row[a] ?? null);
  if (x === null) return null;
  const A = t.columns[a]!;
  const Y = t.columns[y]!;
  const v = row[y]!;
  const templates = [
    `Update the ${said(rng, A)} to ${x} where the ${said(rng, Y)} is ${v}.`,
    `Change the ${said(rng, A)} of the row with ${said(rng, Y)} ${v} to '${x}'.`,
    `In the ${t.name} table, set ${said(rng, A)} to '${x}' for ${said(rng, Y)} ${v}.`,
    `Modify the record where ${said(rng, Y)} is '${v}': the ${said(rng, A)} should be '${x}'.`,
  ];
  return { type: 'UPDATE', description: rng.pick(templates), sql: `UPDATE ${bt(t.name)} SET ${bt(A)} = ${q(x)} WHERE ${bt(Y)} = ${q(v)};` };
}

/** the share of INSERT and UPDATE requests phrased as a mined template under the 'wide' phrasing */
const WIDE_SHARE = 0.7;

/**
 * An UPDATE phrased as a training-split request (mined.ts): its n SET columns drawn from the
 * table, the row found by a unique value; when the request does not name the WHERE column, the
 * row is named by the first text column that can name it, as the training split's requests do.
 */
function minedUpdate(rng: Rng, t: SynthTable, keys: readonly number[], m: MinedTemplate): Draft | null {
  const nums = numericCols(t);
  const y = m.namesKey ? rng.pick(keys) : keys.find((c) => !nums.includes(c));
  if (y === undefined) return null;
  const row = t.rows[rng.pick(uniqueRows(t, y))]!;
  const others = rng.shuffle(t.columns.map((_c, i) => i).filter((i) => i !== y)).slice(0, m.n);
  if (others.length < m.n) return null;
  const xs: string[] = [];
  for (const a of others) {
    const x = newValue(rng, t, a, row[a] ?? null);
    if (x === null) return null;
    xs.push(x);
  }
  const Y = t.columns[y]!;
  const v = row[y]!;
  const description = fillTemplate(m, { table: t.name, column: (j) => t.columns[others[j]!]!, value: (j) => xs[j]!, keyColumn: Y, keyValue: v });
  const sets = others.map((a, j) => `${bt(t.columns[a]!)} = ${q(xs[j]!)}`).join(', ');
  return { type: 'UPDATE', description, sql: `UPDATE ${bt(t.name)} SET ${sets} WHERE ${bt(Y)} = ${q(v)};` };
}

function draftDelete(rng: Rng, t: SynthTable): Draft | null {
  const keys = valueCols(t).filter((c) => uniqueRows(t, c).length > 0);
  if (keys.length === 0) return null;
  const y = rng.pick(keys);
  const v = t.rows[rng.pick(uniqueRows(t, y))]![y]!;
  const Y = t.columns[y]!;
  const templates = [`Delete the row where the ${said(rng, Y)} is ${v}.`, `Remove the entry with ${said(rng, Y)} '${v}' from the ${t.name} table.`, `Delete the record whose ${said(rng, Y)} is ${v}.`];
  return { type: 'DELETE', description: rng.pick(templates), sql: `DELETE FROM ${bt(t.name)} WHERE ${bt(Y)} = ${q(v)};` };
}

/** the read kinds of a task type (mined.ts MinedReadKind) */
const READ_KINDS: Partial<Record<TaskType, readonly MinedReadKind[]>> = {
  other: ['lookup'],
  counting: ['count'],
  'aggregation-SUM': ['sum'],
  'aggregation-MIN': ['min'],
  'aggregation-MAX': ['max'],
  'aggregation-AVG': ['avg'],
  comparison: ['cmp_gt', 'cmp_lt'],
  ranking: ['rank_desc', 'rank_asc'],
};

/** the share of reads phrased as a mined read template under the 'mined' phrasing (when one of the type exists) */
const MINED_READ_SHARE = 0.5;

/**
 * A read phrased as one of the training split's reads (mined.ts minedReads): the template's kind
 * and number of `=` conditions, over this table's columns, one row giving the conditions' values
 * (so at least that row answers), a comparison's bound one of the column's values.
 */
function draftMinedRead(rng: Rng, t: SynthTable, type: TaskType): Draft | null {
  const kinds = READ_KINDS[type];
  const ms = kinds ? minedReads().filter((m) => kinds.includes(m.kind)) : [];
  if (ms.length === 0) return null;
  const m = rng.pick(ms);
  const nums = numericCols(t);
  const vals = valueCols(t);
  const needsNum = m.kind !== 'lookup' && m.kind !== 'count';
  const needsSel = m.kind === 'lookup' || m.kind.startsWith('cmp') || m.kind.startsWith('rank');
  const num = needsNum ? (nums.length > 0 ? rng.pick(nums) : null) : null;
  if (needsNum && num === null) return null;
  const sel = needsSel ? pickOther(rng, vals, num ?? -1) : null;
  if (needsSel && sel === null) return null;
  const pool = rng.shuffle(vals.filter((c) => c !== sel && c !== num));
  if (pool.length < m.eq) return null;
  const eqCols = pool.slice(0, m.eq);
  const rows = t.rows.filter((r) => eqCols.every((c) => goodValue(r[c] ?? null)) && (num === null || NUM.test(r[num] ?? '')));
  if (rows.length === 0) return null;
  const row = rng.pick(rows);
  const eqVals = eqCols.map((c) => row[c]!);
  const conds = eqCols.map((c, i) => `${bt(t.columns[c]!)} = ${q(eqVals[i]!)}`);
  let bound: string | undefined;
  if (m.kind === 'cmp_gt' || m.kind === 'cmp_lt') {
    // strictly past a value of the matching rows, so 1–3 of them pass
    const vs = [...new Set(rows.filter((r) => eqCols.every((c, i) => (r[c] ?? '').toLowerCase() === eqVals[i]!.toLowerCase())).map((r) => Number(r[num!])))].sort((a, b) => a - b);
    if (vs.length < 2) return null;
    const k = 1 + rng.int(Math.min(3, vs.length - 1));
    bound = String(m.kind === 'cmp_gt' ? vs[vs.length - 1 - k]! : vs[k]!);
    conds.push(`${bt(t.columns[num!]!)} ${m.kind === 'cmp_gt' ? '>' : '<'} ${bound}`);
  }
  const where = conds.length > 0 ? ` WHERE ${conds.join(' AND ')}` : '';
  const T = bt(t.name);
  let sql: string;
  if (m.kind === 'lookup') sql = `SELECT ${bt(t.columns[sel!]!)} FROM ${T}${where};`;
  else if (m.kind === 'count') sql = `SELECT COUNT(*) FROM ${T}${where};`;
  else if (m.kind.startsWith('cmp')) sql = `SELECT ${bt(t.columns[sel!]!)} FROM ${T}${where};`;
  else if (m.kind.startsWith('rank')) sql = `SELECT ${bt(t.columns[sel!]!)} FROM ${T}${where} ORDER BY CAST(${bt(t.columns[num!]!)} AS DECIMAL) ${m.kind === 'rank_desc' ? 'DESC' : 'ASC'} LIMIT 1;`;
  else sql = `SELECT ${m.kind.toUpperCase()}(${bt(t.columns[num!]!)}) FROM ${T}${where};`;
  const description = fillRead(m, { table: t.name, ...(sel !== null ? { sel: t.columns[sel]! } : {}), ...(num !== null ? { num: t.columns[num]! } : {}), eqColumn: (i) => t.columns[eqCols[i]!]!, eqValue: (i) => eqVals[i]!, ...(bound !== undefined ? { bound } : {}) });
  return { type, description, sql };
}

function draft(rng: Rng, t: SynthTable, type: TaskType, wide: boolean, columns?: SynthInsertColumns, minedReadsToo = false): Draft | null {
  if (minedReadsToo && READ_KINDS[type] && rng.chance(MINED_READ_SHARE)) {
    const d = draftMinedRead(rng, t, type);
    if (d) return d;
  }
  switch (type) {
    case 'other':
      return draftLookup(rng, t);
    case 'counting':
      return draftCounting(rng, t);
    case 'comparison':
      return draftComparison(rng, t);
    case 'ranking':
      return draftRanking(rng, t);
    case 'aggregation-SUM':
      return draftAggregation(rng, t, 'SUM');
    case 'aggregation-MIN':
      return draftAggregation(rng, t, 'MIN');
    case 'aggregation-MAX':
      return draftAggregation(rng, t, 'MAX');
    case 'aggregation-AVG':
      return draftAggregation(rng, t, 'AVG');
    case 'INSERT':
      return draftInsert(rng, t, wide, columns);
    case 'UPDATE':
      return draftUpdate(rng, t, wide);
    case 'DELETE':
      return draftDelete(rng, t);
  }
}

function pickType(rng: Rng, w: Readonly<Record<string, number>>): TaskType {
  const entries = Object.entries(w).filter(([, x]) => x > 0);
  const total = entries.reduce((a, [, x]) => a + x, 0);
  let u = rng.next() * total;
  for (const [k, x] of entries) {
    u -= x;
    if (u < 0) return k as TaskType;
  }
  return entries[entries.length - 1]![0] as TaskType;
}

export interface SynthOptions {
  /** relative weights of the task types. @default DEFAULT_SYNTH_WEIGHTS */
  weights?: SynthWeights;
  /** tables to draw from. @default trainingTables() */
  tables?: readonly SynthTable[];
  /**
   * Entity-name augmentation, in [0, 1]: with this probability a task's table gets a new table
   * name and new column names (augmentTable), and, drawn again with it, its string columns get
   * other tables' values, so a model must copy names and values from the prompt instead of
   * memorising the training tables. 0 draws exactly the tasks of the unaugmented generator.
   * @default 0 (the BC collection uses DEFAULT_RENAME)
   */
  rename?: number;
  /**
   * The request templates: 'base' (a few per type), or 'wide': 70 % of the INSERTs and UPDATEs
   * phrased as one of the training split's own write requests, mined by code (mined.ts: the
   * request with its table, column names and values as slots), filled with the drawn table's.
   * Reads keep the base templates. 'mined': as 'wide', and half the reads of a type the training
   * split's reads have a template for phrased as one of them (mined.ts minedReads: kind, columns,
   * conditions and values as slots; multi-condition and comparison reads among them). 'base' draws
   * exactly the tasks it drew before the option existed, and 'wide' those it drew before 'mined'.
   * @default 'base'
   */
  phrasing?: SynthPhrasing;
  /**
   * How an INSERT's SQL names its columns: absent, `INSERT INTO t VALUES (…)` in header order
   * (every value, none named); 'mention', `INSERT INTO t (c2, c1, …) VALUES (…)` with the columns
   * and values in the order the request mentions the values (mentionOrder), so the statement
   * says how many values it writes and copies them left to right. The same row either way (the
   * same table hash); no extra draws, so the tasks are those drawn without it but for the SQL.
   */
  insertColumns?: SynthInsertColumns;
}

/** The request templates of synthTasks: see SynthOptions.phrasing. */
export type SynthPhrasing = 'base' | 'wide' | 'mined';

/** How a synthetic INSERT names its columns: see SynthOptions.insertColumns. */
export type SynthInsertColumns = 'mention';

/** @default: the probability of the entity-name augmentation in the BC collection (collectDbbench) */
export const DEFAULT_RENAME = 0.7;

// ---------------------------------------------------------------- entity-name augmentation

interface NamePools {
  /** lower-case words ([a-z]+, as the vocabulary harvest splits them) of the training tables, most frequent first */
  words: string[];
  /** quotable, non-numeric cells of the training tables by shape (augmentShape), distinct case-insensitively */
  values: Map<string, string[]>;
}

const poolsMemo = new WeakMap<readonly SynthTable[], NamePools>();

/** a cell's shape: a capitalised word → A, a lower-case run → a, digits → 9 ("W 24–17" → "A 9–9") */
export function augmentShape(v: string): string {
  return v.replace(/\p{Lu}\p{Ll}*/gu, 'A').replace(/\p{Ll}+/gu, 'a').replace(/\d+/g, '9');
}

/**
 * The word pool (the words of the tables' names and headers, ×5, and cells, as words.ts weighs them
 * for the vocabulary; kept when counted ≥ 3 times, at most 3,000: so mostly in the 4,000-word
 * vocabulary) and the value pools of a table set.
 */
function namePools(tables: readonly SynthTable[]): NamePools {
  const hit = poolsMemo.get(tables);
  if (hit) return hit;
  const counts = new Map<string, number>();
  const count = (text: string, w: number): void => {
    for (const m of text.toLowerCase().matchAll(/[a-z]+/g)) if (m[0].length >= 2 && m[0].length <= 14) counts.set(m[0], (counts.get(m[0]) ?? 0) + w);
  };
  const values = new Map<string, string[]>();
  const seen = new Set<string>();
  for (const t of tables) {
    count(t.name, 5);
    count(t.columns.join(' '), 5);
    for (const r of t.rows) {
      for (const c of r) {
        if (c === null) continue;
        count(c, 1);
        if (!goodValue(c) || NUM.test(c) || seen.has(c.toLowerCase())) continue;
        seen.add(c.toLowerCase());
        const k = augmentShape(c);
        const xs = values.get(k) ?? [];
        xs.push(c);
        values.set(k, xs);
      }
    }
  }
  const words = [...counts.entries()].filter(([, n]) => n >= 3).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([w]) => w).slice(0, 3000);
  const pools = { words, values };
  poolsMemo.set(tables, pools);
  return pools;
}

function casing(rng: Rng, words: readonly string[]): string[] {
  const u = rng.next();
  if (u < 0.55) return words.map((w) => w[0]!.toUpperCase() + w.slice(1));
  if (u < 0.8) return words.map((w, i) => (i === 0 ? w[0]!.toUpperCase() + w.slice(1) : w));
  return words.slice();
}

/** a name of 1–`most` pool words (a few with a number or joined by `_`), as WikiSQL / WTQ names look */
function newName(rng: Rng, pool: readonly string[], most: number, sep: string): string {
  const k = 1 + Math.min(most - 1, rng.pick([0, 0, 1, 1, 1, 2, 2, 3]));
  const ws = casing(rng, Array.from({ length: k }, () => pool[rng.int(pool.length)]!));
  const u = rng.next();
  if (u < 0.1) ws.unshift(String(1950 + rng.int(75)));
  else if (u < 0.18) ws.push(String(1 + rng.int(rng.chance(0.5) ? 9 : 99)));
  return ws.join(sep);
}

/**
 * `table` as a new table for the augmentation: a new name (1–4 pool words, not a dev table name
 * nor the old name) and new column names (1–3 pool words, distinct case-insensitively, none the
 * table's name) when `names`; when `values`, each string column's distinct values replaced one to
 * one by other tables' values of the same shape (a column whose shape has too few is kept), and
 * the old values kept if a row would then be a dev row. Names are legal for the env (no
 * backticks, ≤ 64 characters, trimmed).
 */
export function augmentTable(rng: Rng, table: SynthTable, o: { names: boolean; values: boolean; pools?: readonly SynthTable[] }): SynthTable {
  const pools = namePools(o.pools ?? trainingTables());
  const dev = devTables();
  let name = table.name;
  let columns = table.columns;
  if (o.names && pools.words.length >= 20) {
    for (let i = 0; i < 20; i++) {
      const n = newName(rng, pools.words, 4, rng.chance(0.25) ? '_' : ' ');
      if (n.length <= 64 && !dev.names.has(tableNameKey(n)) && tableNameKey(n) !== tableNameKey(table.name)) {
        name = n;
        break;
      }
    }
    const used = new Set<string>([name.toLowerCase()]);
    const cols: string[] = [];
    for (const c of table.columns) {
      let got = c;
      for (let i = 0; i < 20; i++) {
        const n = newName(rng, pools.words, 3, rng.chance(0.1) ? '_' : ' ');
        if (n.length <= 64 && !used.has(n.toLowerCase())) {
          got = n;
          break;
        }
      }
      // (a column that found no new name keeps its own, unless it is taken)
      if (used.has(got.toLowerCase())) return { ...table, name };
      used.add(got.toLowerCase());
      cols.push(got);
    }
    columns = cols;
  }
  let rows = table.rows;
  if (o.values) {
    const nums = new Set(numericCols(table));
    const maps = table.columns.map((_c, i): Map<string, string> | null => {
      if (nums.has(i)) return null;
      const byShape = new Map<string, string[]>();
      for (const v of table.rows.map((r) => r[i]).filter((x): x is string => goodValue(x ?? null) && !NUM.test(x!))) {
        const k = augmentShape(v);
        if (!byShape.get(k)?.some((y) => y.toLowerCase() === v.toLowerCase())) byShape.set(k, [...(byShape.get(k) ?? []), v]);
      }
      const ownAll = new Set(table.rows.flatMap((r) => r).filter((v): v is string => v !== null).map((v) => v.toLowerCase()));
      const m = new Map<string, string>();
      const taken = new Set<string>();
      for (const [k, vs] of byShape) {
        const pool = (pools.values.get(k) ?? []).filter((v) => !ownAll.has(v.toLowerCase()));
        if (pool.length < vs.length) continue;
        const pick: string[] = [];
        const got = new Set<string>();
        for (let tries = 0; pick.length < vs.length && tries < 20 * vs.length + 20; tries++) {
          const v = pool[rng.int(pool.length)]!;
          if (taken.has(v.toLowerCase()) || got.has(v.toLowerCase())) continue;
          got.add(v.toLowerCase());
          pick.push(v);
        }
        if (pick.length < vs.length) continue;
        vs.forEach((v, j) => {
          m.set(v.toLowerCase(), pick[j]!);
          taken.add(pick[j]!.toLowerCase());
        });
      }
      return m.size > 0 ? m : null;
    });
    if (maps.some((m) => m !== null)) {
      const next = table.rows.map((r) => r.map((v, i) => (v !== null && maps[i]?.get(v.toLowerCase())) || v));
      if (!next.some((r) => dev.rows.has(cellKey(r)))) rows = next;
    }
  }
  return { name, columns, rows };
}

/** The SQL a synthetic task's teacher runs (reads: sqlQuery; writes: label[0]). */
export function synthSql(task: DbbenchTask): string {
  const s = task.sqlQuery ?? task.label[0];
  if (!s) throw new LmTargetError('LM_BAD_OPTION', `task ${task.id} has no reference SQL; pass a task from synthTasks()`, { data: { id: task.id } });
  return s;
}

/**
 * `n` synthetic DBBench tasks (the v0.2 protocol, same shape as loadTasks()'s), drawn from `rng`:
 * the same RNG state gives the same tasks. Reads have 1–5 answer cells (computed by running the
 * SQL on the env's SQLite backend); writes change the table (their answerMd5 is the table hash
 * after the SQL). Ids are `dbsynth/<k>-<content hash>`.
 *
 * @example
 * const tasks = await synthTasks(new Rng('dbsynth:1'), 100);
 * await runEpisode(dbbenchEnv(tasks[0]!), { model: teacherModel(tasks[0]!) });
 */
export async function synthTasks(rng: Rng, n: number, o: SynthOptions = {}): Promise<DbbenchTask[]> {
  if (!Number.isInteger(n) || n < 0) throw new LmTargetError('LM_BAD_OPTION', `synthTasks: n must be an integer ≥ 0, got ${String(n)}`, { data: { n } });
  const tables = o.tables ?? trainingTables();
  if (tables.length === 0) throw new LmTargetError('LM_BAD_OPTION', 'synthTasks: no tables to draw from', {});
  const weights = { ...DEFAULT_SYNTH_WEIGHTS, ...(o.weights ?? {}) };
  for (const [k, w] of Object.entries(weights)) {
    if (!(typeof w === 'number' && Number.isFinite(w) && w >= 0)) throw new LmTargetError('LM_BAD_OPTION', `synthTasks: weight of ${k} must be a number ≥ 0, got ${String(w)}`, { data: { type: k } });
  }
  if (!Object.values(weights).some((w) => w > 0)) throw new LmTargetError('LM_BAD_OPTION', 'synthTasks: every type weight is 0', {});
  const phrasing = o.phrasing ?? 'base';
  if (phrasing !== 'base' && phrasing !== 'wide' && phrasing !== 'mined') throw new LmTargetError('LM_BAD_OPTION', `synthTasks: phrasing must be 'base', 'wide' or 'mined', got ${String(phrasing)}`, { data: { phrasing } });
  if (o.insertColumns !== undefined && o.insertColumns !== 'mention') throw new LmTargetError('LM_BAD_OPTION', `synthTasks: insertColumns must be 'mention' or absent, got ${String(o.insertColumns)}`, { data: { insertColumns: o.insertColumns } });
  const rename = o.rename ?? 0;
  if (!(typeof rename === 'number' && rename >= 0 && rename <= 1)) throw new LmTargetError('LM_BAD_OPTION', `synthTasks: rename must be a probability in [0, 1], got ${String(rename)}`, { data: { rename } });
  const out: DbbenchTask[] = [];
  let tries = 0;
  while (out.length < n) {
    if (++tries > 50 * (n + 10)) throw new LmTargetError('LM_BAD_OPTION', `synthTasks: could not draw ${n} tasks from ${tables.length} tables with these weights`, { data: { n } });
    // a signal (Ctrl-C on hr1 zoo build) is handled within 256 draws, not after all of them
    if (tries % 256 === 0) await turnEventLoop();
    const type = pickType(rng, weights);
    const drawn = rng.pick(tables);
    // (no draws at rename 0: the same tasks as without the option)
    const names = rename > 0 && rng.chance(rename);
    const values = rename > 0 && rng.chance(rename);
    const table = names || values ? augmentTable(rng, drawn, { names, values, pools: tables }) : drawn;
    const d = draft(rng, table, type, phrasing !== 'base', o.insertColumns, phrasing === 'mined');
    if (!d) continue;
    const r = await runOnTable(table, d.sql);
    if (!r.ok) continue;
    const write = type === 'INSERT' || type === 'UPDATE' || type === 'DELETE';
    let label: string[];
    if (write) {
      if (r.hash === r.before) continue;
      label = [d.sql.replace(/;$/, '')];
    } else {
      const cells = resultCells(r.observation);
      if (!cells || cells.length === 0 || cells.length > 5 || cells.some((c) => c.length > 60 || Number.isNaN(pyFloat(c)))) continue;
      label = cells;
    }
    const addDescription = `The name of this table is ${table.name}, and the headers of this table are ${table.columns.join(',')}.`;
    const digest = createHash('sha256').update(JSON.stringify([table.name, d.description, d.sql])).digest('hex').slice(0, 10);
    out.push({
      id: `dbsynth/${out.length}-${digest}`,
      variant: 'v0.2',
      type,
      description: d.description,
      addDescription,
      tableName: table.name,
      columns: table.columns,
      rows: table.rows,
      label,
      sqlQuery: write ? null : d.sql,
      answerMd5: write ? r.hash : null,
    });
  }
  return out;
}
