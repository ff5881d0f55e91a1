/**
 * Request templates mined from the TRAINING split's own writes (`v0.2/standard`): each INSERT or
 * UPDATE task whose reference SQL parses and whose question quotes every value it writes becomes a
 * template, its table name, column names and values replaced by slots, so synth.ts can phrase a
 * synthetic write over another training table the way a real request of the training split was
 * phrased ("Change the rank of {K} to {X} in the {T} table."). Mined by code from the training
 * split only (tasks on a table that shares a name or a row with a dev table are skipped, as in
 * trainingTables()); no dev question is read. Deterministic.
 */
import { loadTasks } from '../../../../envs/dbbench/index.ts';
import { sharesWithDev } from './synth.ts';

/** a piece of a template: text, or a slot the generator fills */
export type MinedPiece =
  | string
  | { slot: 'T' }
  /** INSERT: the name of column i / UPDATE: the name of the j-th SET column */
  | { slot: 'C'; i: number; lower: boolean }
  /** INSERT: the value of column i / UPDATE: the j-th SET value */
  | { slot: 'V'; i: number }
  /** UPDATE: the WHERE column's name */
  | { slot: 'Y'; lower: boolean }
  /** UPDATE: the WHERE value */
  | { slot: 'K' }
  /** read: the selected column's name */
  | { slot: 'S'; lower: boolean }
  /** read: the name of the i-th `=` condition's column */
  | { slot: 'Q'; i: number; lower: boolean }
  /** read: the i-th `=` condition's value */
  | { slot: 'W'; i: number }
  /** read: the numeric column (aggregated, compared or ranked) */
  | { slot: 'N'; lower: boolean }
  /** read: a comparison's bound */
  | { slot: 'B' };

export interface MinedTemplate {
  type: 'INSERT' | 'UPDATE';
  /** INSERT: the table's column count; UPDATE: the number of SET pairs */
  n: number;
  /** UPDATE: whether the question names the WHERE column (else the row is named by its value alone) */
  namesKey: boolean;
  pieces: MinedPiece[];
  /** the training task it was mined from */
  source: string;
}

// ---------------------------------------------------------------- a small SQL scanner

type Tok = { k: 'id' | 'str' | 'num' | 'word' | 'p'; v: string };

function scan(sql: string): Tok[] | null {
  const out: Tok[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '`' || c === '"' || c === '[') {
      const close = c === '[' ? ']' : c;
      const j = sql.indexOf(close, i + 1);
      if (j < 0) return null;
      out.push({ k: 'id', v: sql.slice(i + 1, j) });
      i = j + 1;
    } else if (c === "'") {
      let v = '';
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) return null;
        const d = sql[j]!;
        if (d === '\\' && j + 1 < sql.length) {
          v += sql[j + 1]!;
          j += 2;
        } else if (d === "'" && sql[j + 1] === "'") {
          v += "'";
          j += 2;
        } else if (d === "'") {
          break;
        } else {
          v += d;
          j++;
        }
      }
      out.push({ k: 'str', v });
      i = j + 1;
    } else if (/[(),=;]/.test(c)) {
      out.push({ k: 'p', v: c });
      i++;
    } else {
      const m = /^[^\s(),=;'`"]+/.exec(sql.slice(i))!;
      out.push({ k: /^-?\d+(?:\.\d+)?$/.test(m[0]) ? 'num' : 'word', v: m[0] });
      i += m[0].length;
    }
  }
  while (out.length > 0 && out[out.length - 1]!.v === ';') out.pop();
  return out;
}

const isKw = (t: Tok | undefined, kw: string): boolean => t?.k === 'word' && t.v.toUpperCase() === kw;
const name = (t: Tok | undefined): string | null => (t && (t.k === 'id' || t.k === 'word') ? t.v : null);
const value = (t: Tok | undefined): string | null => (t && (t.k === 'str' || t.k === 'num') ? t.v : null);

/** `INSERT INTO t [(c, …)] VALUES (v, …)`: the table, the columns named (or null) and the values */
export function parseInsert(sql: string): { table: string; columns: string[] | null; values: string[] } | null {
  const ts = scan(sql);
  if (!ts || !isKw(ts[0], 'INSERT') || !isKw(ts[1], 'INTO')) return null;
  const table = name(ts[2]);
  if (table === null) return null;
  let i = 3;
  let columns: string[] | null = null;
  if (ts[i]?.v === '(') {
    columns = [];
    for (i++; ; i += 2) {
      const c = name(ts[i]);
      if (c === null) return null;
      columns.push(c);
      if (ts[i + 1]?.v === ')') break;
      if (ts[i + 1]?.v !== ',') return null;
    }
    i += 2;
  }
  if (!isKw(ts[i], 'VALUES') || ts[i + 1]?.v !== '(') return null;
  const values: string[] = [];
  for (i += 2; ; i += 2) {
    const v = value(ts[i]);
    if (v === null) return null;
    values.push(v);
    if (ts[i + 1]?.v === ')') break;
    if (ts[i + 1]?.v !== ',') return null;
  }
  return i + 2 === ts.length ? { table, columns, values } : null;
}

/** `UPDATE t SET a = x [, …] WHERE y = v`: one equality in the WHERE */
export function parseUpdate(sql: string): { table: string; sets: [string, string][]; key: [string, string] } | null {
  const ts = scan(sql);
  if (!ts || !isKw(ts[0], 'UPDATE')) return null;
  const table = name(ts[1]);
  if (table === null || !isKw(ts[2], 'SET')) return null;
  const sets: [string, string][] = [];
  let i = 3;
  for (;;) {
    const a = name(ts[i]);
    const x = value(ts[i + 2]);
    if (a === null || ts[i + 1]?.v !== '=' || x === null) return null;
    sets.push([a, x]);
    i += 3;
    if (ts[i]?.v !== ',') break;
    i++;
  }
  if (!isKw(ts[i], 'WHERE')) return null;
  const y = name(ts[i + 1]);
  const v = value(ts[i + 3]);
  if (y === null || ts[i + 2]?.v !== '=' || v === null || i + 4 !== ts.length) return null;
  return { table, sets, key: [y, v] };
}

// ---------------------------------------------------------------- templating a question

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** [start, end) of `needle` in `text` (case-insensitive, not inside a word), avoiding `taken` */
function find(text: string, needle: string, taken: readonly [number, number][]): [number, number] | null {
  if (needle.trim() === '') return null;
  const re = new RegExp(`(?<![\\p{L}\\p{N}])${escape(needle)}(?![\\p{L}\\p{N}])`, 'giu');
  for (const m of text.matchAll(re)) {
    const s = m.index!;
    const e = s + m[0].length;
    if (!taken.some(([a, b]) => s < b && a < e)) return [s, e];
  }
  return null;
}

type Want = { text: string; piece: Exclude<MinedPiece, string>; required: boolean; alt?: string };

/** the question with each wanted text replaced by its slot (longest first); null if a required one is missing */
function templatize(text: string, wants: readonly Want[]): { pieces: MinedPiece[]; found: Set<Want> } | null {
  const taken: [number, number][] = [];
  const hits: { s: number; e: number; want: Want }[] = [];
  const found = new Set<Want>();
  for (const w of [...wants].sort((a, b) => b.text.length - a.text.length)) {
    const at = find(text, w.text, taken) ?? (w.alt ? find(text, w.alt, taken) : null);
    if (!at) {
      if (w.required) return null;
      continue;
    }
    taken.push(at);
    found.add(w);
    const said = text.slice(at[0], at[1]);
    const piece = w.piece.slot === 'C' || w.piece.slot === 'Y' || w.piece.slot === 'S' || w.piece.slot === 'Q' || w.piece.slot === 'N' ? { ...w.piece, lower: said === said.toLowerCase() && said !== said.toUpperCase() && w.text !== w.text.toLowerCase() } : w.piece;
    hits.push({ s: at[0], e: at[1], want: { ...w, piece } });
  }
  hits.sort((a, b) => a.s - b.s);
  const pieces: MinedPiece[] = [];
  let at = 0;
  for (const h of hits) {
    if (h.s > at) pieces.push(text.slice(at, h.s));
    pieces.push(h.want.piece);
    at = h.e;
  }
  if (at < text.length) pieces.push(text.slice(at));
  // a value or name said twice (one left as text, e.g. in a quoted SQL statement after the
  // request) would leave the old one in every filled question: not a template
  const rest = pieces.filter((x): x is string => typeof x === 'string').join('\u0000');
  if (wants.some((w) => (w.piece.slot === 'V' || w.piece.slot === 'K' || w.piece.slot === 'W' || w.piece.slot === 'B' || w.text.length >= 3) && find(rest, w.text, []))) return null;
  return { pieces, found };
}

let memo: MinedTemplate[] | null = null;

/**
 * The templates of the training split's INSERT and UPDATE tasks (in data order): INSERTs of 2–7
 * columns whose question has every value; UPDATEs with 1–3 SET pairs whose question has every SET
 * value, every SET column's name and the WHERE value (the WHERE column's name may be missing:
 * `namesKey` false). Tasks on a table that shares anything with a dev table are skipped (sharesWithDev, as trainingTables()).
 */
export function minedTemplates(): MinedTemplate[] {
  if (memo) return memo;
  const out: MinedTemplate[] = [];
  for (const t of loadTasks({ file: 'v0.2/standard' })) {
    if (t.type !== 'INSERT' && t.type !== 'UPDATE') continue;
    if (sharesWithDev(t)) continue;
    const sql = t.label[0] ?? '';
    const T: Want = { text: t.tableName, alt: t.tableName.replace(/_/g, ' '), piece: { slot: 'T' }, required: false };
    const col = (c: string): number => t.columns.findIndex((x) => x.toLowerCase() === c.toLowerCase());
    if (t.type === 'INSERT') {
      const p = parseInsert(sql);
      if (!p || p.values.length !== t.columns.length || p.values.length < 2 || p.values.length > 7) continue;
      const order = p.columns ? p.columns.map(col) : t.columns.map((_c, i) => i);
      if (order.some((i) => i < 0) || new Set(order).size !== order.length) continue;
      const wants: Want[] = [T];
      order.forEach((ci, j) => {
        wants.push({ text: p.values[j]!, piece: { slot: 'V', i: ci }, required: true });
        wants.push({ text: t.columns[ci]!, piece: { slot: 'C', i: ci, lower: false }, required: false });
      });
      const got = templatize(t.description, wants);
      if (got) out.push({ type: 'INSERT', n: t.columns.length, namesKey: false, pieces: got.pieces, source: t.id });
    } else {
      const p = parseUpdate(sql);
      if (!p || p.sets.length > 3 || p.sets.some(([a]) => col(a) < 0) || col(p.key[0]) < 0) continue;
      const wants: Want[] = [T];
      p.sets.forEach(([a, x], j) => {
        wants.push({ text: x, piece: { slot: 'V', i: j }, required: true });
        wants.push({ text: a, piece: { slot: 'C', i: j, lower: false }, required: true });
      });
      const Y: Want = { text: p.key[0], piece: { slot: 'Y', lower: false }, required: false };
      wants.push({ text: p.key[1], piece: { slot: 'K' }, required: true }, Y);
      const got = templatize(t.description, wants);
      if (got) out.push({ type: 'UPDATE', n: p.sets.length, namesKey: got.found.has(Y), pieces: got.pieces, source: t.id });
    }
  }
  memo = out;
  return out;
}

/** Pieces with each slot replaced by `value(slot)`, lower-cased where the slot was said in lower case. */
function fillPieces(pieces: readonly MinedPiece[], value: (p: Exclude<MinedPiece, string>) => string): string {
  return pieces.map((p) => (typeof p === 'string' ? p : 'lower' in p && p.lower ? value(p).toLowerCase() : value(p))).join('');
}

/** A template filled: `names` of the table and columns, `values` as the slots number them. */
export function fillTemplate(m: MinedTemplate, f: { table: string; column: (i: number) => string; value: (i: number) => string; keyColumn?: string; keyValue?: string }): string {
  return fillPieces(m.pieces, (p) => {
    switch (p.slot) {
      case 'T':
        return f.table;
      case 'C':
        return f.column(p.i);
      case 'V':
        return f.value(p.i);
      case 'Y':
        return f.keyColumn ?? '';
      case 'K':
        return f.keyValue ?? '';
      default:
        return '';
    }
  });
}

// ---------------------------------------------------------------- read requests

/** The shape of a read the training split asks for, as the sketch parser knows reads. */
export type MinedReadKind = 'lookup' | 'count' | 'sum' | 'min' | 'max' | 'avg' | 'cmp_gt' | 'cmp_lt' | 'rank_desc' | 'rank_asc';

export interface MinedRead {
  kind: MinedReadKind;
  /** `column = value` conditions */
  eq: number;
  pieces: MinedPiece[];
  /** the training task it was mined from */
  source: string;
}

const ID = '(?:`[^`]+`|"[^"]+"|\\[[^\\]]+\\]|[\\w#%]+)';
const VAL = "(?:'(?:[^']|'')*'|-?\\d+(?:\\.\\d+)?)";
const unquoteId = (s: string): string => (/^[`"[]/.test(s) ? s.slice(1, -1) : s);
const unquoteVal = (s: string): string => (s.startsWith("'") ? s.slice(1, -1).replace(/''/g, "'") : s);

/**
 * A training read's reference SQL in one of the sketch's shapes: `SELECT x | FN(x) | COUNT(*) FROM t
 * [WHERE c op v [AND …]] [ORDER BY c DESC|ASC LIMIT 1]`, at most one `<` / `>` condition; null otherwise.
 */
export function parseRead(sql: string): { fn: string | null; sel: string | null; table: string; conds: Array<[string, string, string]>; order: [string, 'DESC' | 'ASC'] | null } | null {
  const re = new RegExp(`^SELECT\\s+(?:(SUM|MIN|MAX|AVG|COUNT)\\s*\\(\\s*(${ID}|\\*)\\s*\\)|(${ID}))\\s+FROM\\s+(${ID})(?:\\s+WHERE\\s+(${ID}\\s*(?:=|<|>)\\s*${VAL}(?:\\s+AND\\s+${ID}\\s*(?:=|<|>)\\s*${VAL})*))?(?:\\s+ORDER\\s+BY\\s+(${ID})\\s+(DESC|ASC)\\s+LIMIT\\s+1)?\\s*;?\\s*$`, 'i');
  const m = re.exec(sql.trim());
  if (!m) return null;
  const conds: Array<[string, string, string]> = [];
  if (m[5]) {
    for (const c of m[5].split(/\s+AND\s+/i)) {
      const x = new RegExp(`^(${ID})\\s*(=|<|>)\\s*(${VAL})$`).exec(c.trim());
      if (!x) return null;
      conds.push([unquoteId(x[1]!), x[2]!, unquoteVal(x[3]!)]);
    }
  }
  const fn = m[1] ? m[1].toUpperCase() : null;
  const sel = m[2] ? (m[2] === '*' ? null : unquoteId(m[2])) : m[3] ? unquoteId(m[3]) : null;
  return { fn, sel, table: unquoteId(m[4]!), conds, order: m[6] ? [unquoteId(m[6]), m[7]!.toUpperCase() as 'DESC' | 'ASC'] : null };
}

let readMemo: MinedRead[] | null = null;

/**
 * Templates of the training split's reads (in data order), as the write templates are mined: a
 * read whose reference SQL has a sketch shape (parseRead) and whose question says the columns it
 * selects, aggregates, compares or ranks and every condition's value (a condition's column may go
 * unsaid) becomes a template with those names and values as slots. Tasks on a table that shares
 * anything with a dev table are skipped; no dev question is read.
 */
export function minedReads(): MinedRead[] {
  if (readMemo) return readMemo;
  const out: MinedRead[] = [];
  for (const t of loadTasks({ file: 'v0.2/standard' })) {
    if (t.type === 'INSERT' || t.type === 'UPDATE' || t.type === 'DELETE' || !t.sqlQuery) continue;
    if (sharesWithDev(t)) continue;
    const p = parseRead(t.sqlQuery);
    if (!p) continue;
    const has = (c: string): boolean => t.columns.some((x) => x.toLowerCase() === c.toLowerCase());
    if ((p.sel !== null && !has(p.sel)) || p.conds.some(([c]) => !has(c)) || (p.order && !has(p.order[0]))) continue;
    const cmps = p.conds.filter(([, op]) => op !== '=');
    const eqs = p.conds.filter(([, op]) => op === '=');
    if (cmps.length > 1 || (cmps.length === 1 && (p.fn !== null || p.order))) continue;
    let kind: MinedReadKind;
    if (p.fn === 'COUNT') kind = 'count';
    else if (p.fn) kind = p.fn.toLowerCase() as MinedReadKind;
    else if (p.order) kind = p.order[1] === 'DESC' ? 'rank_desc' : 'rank_asc';
    else if (cmps.length === 1) kind = cmps[0]![1] === '>' ? 'cmp_gt' : 'cmp_lt';
    else if (eqs.length > 0 && p.sel) kind = 'lookup';
    else continue;
    const wants: Want[] = [{ text: t.tableName, alt: t.tableName.replace(/_/g, ' '), piece: { slot: 'T' }, required: false }];
    // the column read: the selected one (lookup, comparison, ranking), the aggregated one (SUM…), none for COUNT
    if (p.fn && p.fn !== 'COUNT' && p.sel) wants.push({ text: p.sel, piece: { slot: 'N', lower: false }, required: true });
    else if (!p.fn && p.sel) wants.push({ text: p.sel, piece: { slot: 'S', lower: false }, required: true });
    if (p.order) wants.push({ text: p.order[0], piece: { slot: 'N', lower: false }, required: true });
    if (cmps.length === 1) wants.push({ text: cmps[0]![0], piece: { slot: 'N', lower: false }, required: true }, { text: cmps[0]![2], piece: { slot: 'B' }, required: true });
    eqs.forEach(([c, , v], i) => wants.push({ text: v, piece: { slot: 'W', i }, required: true }, { text: c, piece: { slot: 'Q', i, lower: false }, required: false }));
    const got = templatize(t.description, wants);
    if (got) out.push({ kind, eq: eqs.length, pieces: got.pieces, source: t.id });
  }
  readMemo = out;
  return out;
}

/** A read template filled with a table's names and values. */
export function fillRead(m: MinedRead, f: { table: string; sel?: string; num?: string; eqColumn: (i: number) => string; eqValue: (i: number) => string; bound?: string }): string {
  return fillPieces(m.pieces, (p) => {
    switch (p.slot) {
      case 'T':
        return f.table;
      case 'S':
        return f.sel ?? '';
      case 'N':
        return f.num ?? '';
      case 'Q':
        return f.eqColumn(p.i);
      case 'W':
        return f.eqValue(p.i);
      case 'B':
        return f.bound ?? '';
      default:
        return '';
    }
  });
}
