/**
 * A sketch parser for DBBench: a learned text-to-SQL model of the kind SQLNet, SQLova and
 * HydraNet are (WikiSQL's column-wise sketch models), not a decoder of SQL tokens. A small
 * transformer encoder reads the question, the table's name and its headers; heads predict the
 * statement's kind (13: lookup, count, SUM/MIN/MAX/AVG, comparison > / <, ranking DESC / ASC,
 * INSERT, UPDATE, DELETE), the selected column, the numeric column of a comparison or a ranking,
 * the columns of `WHERE … = v` and of `SET … = x`, and for each column the span of the question
 * that is its value (start and end pointers). The SQL is assembled from that sketch, the values
 * copied from the question as written there.
 *
 * What it learns from: the synthetic tasks of synth.ts (training-split tables only, renamed,
 * the same generator and phrasing the seq2seq zoo models clone); the sketch of each is read from
 * its generated SQL (sketchOf) and each value found in its question (spans). What it gets wrong
 * on real tasks is its own: a wrong kind, column or span, a value the question does not say.
 *
 * This file is pure (no torch, no ONNX): the encoding the model reads (encodeSketch), the labels it
 * trains on (sketchExample) and the SQL from its outputs (decodeSketch). Training: learner/sketch.py;
 * serving in the DBBench protocol: sketch-model.ts.
 */
import { hashString, type Rng } from '../../../../cluster/rng.ts';
import type { DbbenchTask } from '../../../../envs/dbbench/index.ts';

/** The statement kinds the sketch tells apart. */
export const SKETCH_KINDS = ['lookup', 'count', 'sum', 'min', 'max', 'avg', 'cmp_gt', 'cmp_lt', 'rank_desc', 'rank_asc', 'insert', 'update', 'delete'] as const;
export type SketchKind = (typeof SKETCH_KINDS)[number];

/** columns a table may have (a larger table's extra columns are not seen) */
export const SKETCH_MAX_COLS = 16;
/** question tokens read (the rest is cut) */
export const SKETCH_MAX_QUESTION = 112;
/** tokens of one header, of the table name, of harness text read */
export const SKETCH_MAX_NAME = 12;
export const SKETCH_MAX_EXTRA = 24;
/** hashed-word buckets and prefix buckets of the token features */
export const SKETCH_WORD_BUCKETS = 8192;
export const SKETCH_PREFIX_BUCKETS = 2048;
/** features per token: word, prefix, shape, match, segment */
export const SKETCH_FEATURES = 5;
/** position ids: within the question, within a header */
export const SKETCH_MAX_POS = 128;
/** segment ids: 0 question, 1 the table name, 2 harness text, 3 + i column i */
export const SKETCH_SEGMENTS = 3 + SKETCH_MAX_COLS;
/** a value spans at most this many tokens */
export const SKETCH_MAX_SPAN = 24;

/** A token of a text, with where it is. */
export interface SketchToken {
  low: string;
  start: number;
  end: number;
}

/** Words (letters and digits) and single symbols, lower-cased, with their character offsets. */
export function sketchTokens(text: string): SketchToken[] {
  return [...text.matchAll(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu)].map((m) => ({ low: m[0].toLowerCase(), start: m.index ?? 0, end: (m.index ?? 0) + m[0].length }));
}

/** What the parser reads: the question, the table's name and headers, and text a harness added. */
export interface SketchInput {
  question: string;
  table: string;
  columns: readonly string[];
  /** hint text a harness put in the conversation (read, cut at SKETCH_MAX_EXTRA tokens) */
  extra?: string;
}

/** One encoded input: L tokens. */
export interface SketchEncoded {
  /** L × SKETCH_FEATURES ids, row-major */
  feats: number[];
  /** L position ids */
  pos: number[];
  /** L: 1 a token, 0 padding (never here: one input has no padding) */
  mask: number[];
  /** L: 1 for a question token (where a value span may be) */
  qmask: number[];
  /** L: the column each token belongs to, -1 for none */
  col: number[];
  /** SKETCH_MAX_COLS × L: column i's tokens, each 1 / its length (mean pooling; from `col`) */
  colmat: number[];
  /** the question's tokens (their offsets give a span's text) */
  qTokens: SketchToken[];
  /** columns seen (min(columns, SKETCH_MAX_COLS)) */
  nCols: number;
  length: number;
}

const bucket = (s: string, n: number): number => 1 + (hashString(s) % (n - 1));

function shapeId(text: string, tok: SketchToken, quoted: boolean): number {
  const raw = text.slice(tok.start, tok.end);
  let shape: number;
  if (/^\d+$/.test(raw)) shape = 1;
  else if (/^['"`]$/.test(raw)) shape = 2;
  else if (/^[^\p{L}\p{N}]$/u.test(raw)) shape = 3;
  else if (/^\p{Lu}+$/u.test(raw) && raw.length > 1) shape = 4;
  else if (/^\p{Lu}/u.test(raw)) shape = 5;
  else if (/\d/.test(raw)) shape = 6;
  else shape = 7;
  return shape * 2 + (quoted ? 1 : 0);
}

/** Which tokens of a text are quote marks (', ", `); an apostrophe inside a word (don't, Hawai'i) is none. */
export function quoteMarks(text: string, toks: readonly SketchToken[]): boolean[] {
  return toks.map((t) => {
    const raw = text.slice(t.start, t.end);
    const prev = text[t.start - 1];
    const next = text[t.end];
    const inWord = raw === "'" && prev !== undefined && /[\p{L}\p{N}]/u.test(prev) && next !== undefined && /[\p{L}\p{N}]/u.test(next);
    return (raw === "'" || raw === '"' || raw === '`') && !inWord;
  });
}

/** Which tokens of a question sit inside a quote pair ('…', "…", `…`). */
export function quotedFlags(text: string, toks: readonly SketchToken[]): boolean[] {
  const out = toks.map(() => false);
  const marks = quoteMarks(text, toks);
  let open: { ch: string; at: number } | null = null;
  toks.forEach((t, i) => {
    if (!marks[i]) return;
    const raw = text.slice(t.start, t.end);
    if (open && open.ch === raw) {
      for (let j = open.at + 1; j < i; j++) out[j] = true;
      open = null;
    } else if (!open) open = { ch: raw, at: i };
  });
  return out;
}

/**
 * The model's input for one question: [question] [table name] [harness text] [header 1] … with,
 * per token, a hashed word, a hashed 3-letter prefix, its shape (number, capitalised, quote, …;
 * inside quotes or not), whether its word also occurs on the other side (a question word in a
 * header or the table name, a header word in the question: the schema-linking feature of
 * text-to-SQL parsers) and its segment.
 */
export function encodeSketch(inp: SketchInput): SketchEncoded {
  const q = sketchTokens(inp.question).slice(0, SKETCH_MAX_QUESTION);
  const name = sketchTokens(inp.table).slice(0, SKETCH_MAX_NAME);
  const extra = inp.extra ? sketchTokens(inp.extra).slice(0, SKETCH_MAX_EXTRA) : [];
  const cols = inp.columns.slice(0, SKETCH_MAX_COLS).map((c) => sketchTokens(c).slice(0, SKETCH_MAX_NAME));
  const qWords = new Set(q.map((t) => t.low).filter((w) => /[\p{L}\p{N}]/u.test(w)));
  const headerWords = new Set(cols.flat().map((t) => t.low));
  const nameWords = new Set(name.map((t) => t.low));
  const quoted = quotedFlags(inp.question, q);
  const feats: number[] = [];
  const pos: number[] = [];
  const qmask: number[] = [];
  const colOf: number[] = [];
  const push = (low: string, shape: number, match: number, seg: number, p: number, isQ: boolean, col: number): void => {
    const alnum = /[\p{L}\p{N}]/u.test(low);
    feats.push(bucket(`w:${low}`, SKETCH_WORD_BUCKETS), alnum && low.length > 3 ? bucket(`p:${low.slice(0, 3)}`, SKETCH_PREFIX_BUCKETS) : 0, shape, match, seg);
    pos.push(Math.min(p, SKETCH_MAX_POS - 1));
    qmask.push(isQ ? 1 : 0);
    colOf.push(col);
  };
  q.forEach((t, i) => {
    const alnum = /[\p{L}\p{N}]/u.test(t.low);
    const match = alnum ? (headerWords.has(t.low) ? 1 : 0) + (nameWords.has(t.low) ? 2 : 0) : 0;
    push(t.low, shapeId(inp.question, t, quoted[i]!), match, 0, i, true, -1);
  });
  name.forEach((t, i) => push(t.low, shapeId(inp.table, t, false), qWords.has(t.low) ? 1 : 0, 1, i, false, -1));
  extra.forEach((t, i) => push(t.low, shapeId(inp.extra!, t, false), 0, 2, i, false, -1));
  cols.forEach((ts, c) => {
    // an empty header still gets one token, so every column has a vector
    const list = ts.length > 0 ? ts : [{ low: '', start: 0, end: 0 }];
    list.forEach((t, i) => push(t.low, ts.length > 0 ? shapeId(inp.columns[c]!, t, false) : 0, qWords.has(t.low) ? 1 : 0, 3 + c, i, false, c));
  });
  const L = pos.length;
  const colmat = new Array<number>(SKETCH_MAX_COLS * L).fill(0);
  for (let c = 0; c < cols.length; c++) {
    const idx = colOf.map((x, i) => (x === c ? i : -1)).filter((i) => i >= 0);
    for (const i of idx) colmat[c * L + i] = 1 / idx.length;
  }
  return { feats, pos, mask: new Array<number>(L).fill(1), qmask, col: colOf, colmat, qTokens: q, nCols: cols.length, length: L };
}

// ---------------------------------------------------------------- labels from generated SQL

/** A statement's sketch: kind, columns by index, values as strings. */
export interface Sketch {
  kind: SketchKind;
  /** the selected column (reads but COUNT(*)), the aggregated one for SUM/MIN/MAX/AVG */
  sel: number | null;
  /** the numeric column of a comparison or a ranking */
  num: number | null;
  /** `WHERE col = value` conditions */
  where: Array<{ col: number; value: string }>;
  /** a comparison's bound (on `num`) */
  bound: string | null;
  /** `SET col = value` (UPDATE) */
  set: Array<{ col: number; value: string }>;
  /** an INSERT's values by column (null: not given) */
  values: Array<string | null>;
}

const BT = '`([^`]+)`';
const VAL = "'((?:[^']|'')*)'";
const unq = (v: string): string => v.replace(/''/g, "'");

/**
 * The sketch of a synthetic task's SQL (synth.ts writes a few fixed shapes), or null for SQL of
 * another shape. Columns are found by exact name in `columns`.
 */
export function sketchOf(statement: string, columns: readonly string[]): Sketch | null {
  // reads end in `;`, the writes' reference SQL (label[0]) does not
  const sql = statement.trim().endsWith(';') ? statement.trim() : `${statement.trim()};`;
  const col = (n: string): number => columns.indexOf(n);
  const empty = (kind: SketchKind): Sketch => ({ kind, sel: null, num: null, where: [], bound: null, set: [], values: columns.map(() => null) });
  /** `a = 'x' AND b = 'y' [AND n > k]`: the equalities, and a comparison when `cmp` */
  const condsOf = (w: string | undefined, cmp: boolean): { eq: Array<{ col: number; value: string }>; cmp: { col: number; op: string; bound: string } | null } | null => {
    const eq: Array<{ col: number; value: string }> = [];
    let rest = w ?? '';
    while (rest !== '') {
      const e = new RegExp(`^${BT} = ${VAL}(?: AND (.*))?$`).exec(rest);
      if (e) {
        if (col(e[1]!) < 0) return null;
        eq.push({ col: col(e[1]!), value: unq(e[2]!) });
        rest = e[3] ?? '';
        continue;
      }
      const c = cmp ? new RegExp(`^${BT} ([<>]) (-?[0-9.]+)$`).exec(rest) : null;
      if (c && col(c[1]!) >= 0) return { eq, cmp: { col: col(c[1]!), op: c[2]!, bound: c[3]! } };
      return null;
    }
    return { eq, cmp: null };
  };
  const W = '(?: WHERE (.+?))?';
  let m = new RegExp(`^SELECT ${BT} FROM ${BT}${W} ORDER BY CAST\\(${BT} AS DECIMAL\\) (DESC|ASC) LIMIT 1;$`).exec(sql);
  if (m) {
    const c = condsOf(m[3], false);
    return c && col(m[1]!) >= 0 && col(m[4]!) >= 0 ? { ...empty(m[5] === 'DESC' ? 'rank_desc' : 'rank_asc'), sel: col(m[1]!), num: col(m[4]!), where: c.eq } : null;
  }
  m = new RegExp(`^SELECT COUNT\\(\\*\\) FROM ${BT}${W};$`).exec(sql);
  if (m) {
    const c = condsOf(m[2], false);
    return c ? { ...empty('count'), where: c.eq } : null;
  }
  m = new RegExp(`^SELECT (SUM|MIN|MAX|AVG)\\(${BT}\\) FROM ${BT}${W};$`).exec(sql);
  if (m) {
    const c = condsOf(m[4], false);
    return c && col(m[2]!) >= 0 ? { ...empty(m[1]!.toLowerCase() as SketchKind), sel: col(m[2]!), where: c.eq } : null;
  }
  m = new RegExp(`^SELECT ${BT} FROM ${BT} WHERE (.+);$`).exec(sql);
  if (m) {
    const c = condsOf(m[3], true);
    if (!c || col(m[1]!) < 0) return null;
    if (c.cmp) return { ...empty(c.cmp.op === '>' ? 'cmp_gt' : 'cmp_lt'), sel: col(m[1]!), num: c.cmp.col, bound: c.cmp.bound, where: c.eq };
    return c.eq.length > 0 ? { ...empty('lookup'), sel: col(m[1]!), where: c.eq } : null;
  }
  m = new RegExp(`^INSERT INTO ${BT}(?: \\(((?:${BT}(?:, )?)+)\\))? VALUES \\((.*)\\);$`).exec(sql);
  if (m) {
    const names = m[2] ? [...m[2].matchAll(/`([^`]+)`/g)].map((x) => x[1]!) : columns.slice();
    const vals = [...m[4]!.matchAll(new RegExp(VAL, 'g'))].map((x) => unq(x[1]!));
    if (vals.length !== names.length) return null;
    const s = empty('insert');
    for (let i = 0; i < names.length; i++) {
      const c = col(names[i]!);
      if (c < 0) return null;
      s.values[c] = vals[i]!;
    }
    return s;
  }
  m = new RegExp(`^UPDATE ${BT} SET (.+) WHERE (${BT} = ${VAL});$`).exec(sql);
  if (m) {
    const set = [...m[2]!.matchAll(new RegExp(`${BT} = ${VAL}`, 'g'))].map((x) => ({ col: col(x[1]!), value: unq(x[2]!) }));
    const c = condsOf(m[3], false);
    if (!c || set.length === 0 || set.some((x) => x.col < 0)) return null;
    return { ...empty('update'), set, where: c.eq };
  }
  m = new RegExp(`^DELETE FROM ${BT} WHERE (.+);$`).exec(sql);
  if (m) {
    const c = condsOf(m[2], false);
    return c && c.eq.length > 0 ? { ...empty('delete'), where: c.eq } : null;
  }
  return null;
}

/**
 * Where a value is in the question: the token run whose text is the value (case aside), first
 * a quoted one, then any, skipping runs already taken. [start, end] token indices, or null.
 */
export function findSpan(question: string, toks: readonly SketchToken[], value: string, taken: Array<[number, number]>): [number, number] | null {
  const want = value.toLowerCase().trim();
  if (want === '') return null;
  const free = (a: number, b: number): boolean => taken.every(([x, y]) => b < x || a > y);
  const runs: Array<[number, number, boolean]> = [];
  for (let s = 0; s < toks.length; s++) {
    for (let e = s; e < toks.length && e - s < SKETCH_MAX_SPAN; e++) {
      const text = question.slice(toks[s]!.start, toks[e]!.end).toLowerCase();
      if (text.length > want.length) break;
      if (text === want) {
        const before = question[toks[s]!.start - 1];
        const after = question[toks[e]!.end];
        const quoted = (before === "'" || before === '"' || before === '`') && after === before;
        runs.push([s, e, quoted]);
      }
    }
  }
  for (const wantQuoted of [true, false]) {
    for (const [s, e, quoted] of runs) if ((!wantQuoted || quoted) && free(s, e)) return [s, e];
  }
  return null;
}

/** One training example: the input and the targets learner/sketch.py reads. */
export interface SketchExample {
  enc: SketchEncoded;
  kind: number;
  /** column index or -1 */
  sel: number;
  num: number;
  /** per column 0/1 (SKETCH_MAX_COLS) */
  where: number[];
  set: number[];
  /** per column the value's first and last token, -1 when it has none */
  spanStart: number[];
  spanEnd: number[];
}

/**
 * A synthetic task as a training example, or null when its SQL is of no sketch shape, its table
 * is wider than SKETCH_MAX_COLS, or a value is not in the question. `extra`: harness-like text
 * the model reads beside the question (hints.ts banks; training draws it).
 */
export function sketchExample(task: Pick<DbbenchTask, 'description' | 'tableName' | 'columns' | 'sqlQuery' | 'label'>, extra?: string): SketchExample | null {
  if (task.columns.length > SKETCH_MAX_COLS) return null;
  const sql = task.sqlQuery ?? task.label[0];
  if (!sql) return null;
  const sk = sketchOf(sql, task.columns);
  if (!sk) return null;
  const enc = encodeSketch({ question: task.description, table: task.tableName, columns: task.columns, ...(extra ? { extra } : {}) });
  const C = SKETCH_MAX_COLS;
  const spanStart = new Array<number>(C).fill(-1);
  const spanEnd = new Array<number>(C).fill(-1);
  const taken: Array<[number, number]> = [];
  const place = (c: number, v: string): boolean => {
    const sp = findSpan(task.description, enc.qTokens, v, taken);
    if (!sp) return false;
    taken.push(sp);
    spanStart[c] = sp[0];
    spanEnd[c] = sp[1];
    return true;
  };
  // set values before the row's key: a key is more often said last
  for (const s of sk.set) if (!place(s.col, s.value)) return null;
  for (const w of sk.where) if (!place(w.col, w.value)) return null;
  if (sk.bound !== null && sk.num !== null && !place(sk.num, sk.bound)) return null;
  for (let c = 0; c < sk.values.length; c++) {
    const v = sk.values[c];
    if (v !== null && v !== undefined && !place(c, v)) return null;
  }
  const where = new Array<number>(C).fill(0);
  const set = new Array<number>(C).fill(0);
  for (const w of sk.where) where[w.col] = 1;
  for (const s of sk.set) set[s.col] = 1;
  return { enc, kind: SKETCH_KINDS.indexOf(sk.kind), sel: sk.sel ?? -1, num: sk.num ?? -1, where, set, spanStart, spanEnd };
}

// ---------------------------------------------------------------- SQL from the model's outputs

/** The model's outputs for one input (logits; spans over all L tokens, masked here). */
export interface SketchOutputs {
  kind: Float32Array | number[];
  sel: Float32Array | number[];
  num: Float32Array | number[];
  where: Float32Array | number[];
  set: Float32Array | number[];
  /** SKETCH_MAX_COLS × L */
  start: Float32Array | number[];
  end: Float32Array | number[];
}

const bt = (n: string): string => `\`${n.replace(/`/g, '')}\``;
const qv = (v: string): string => `'${v.replace(/'/g, "''")}'`;

function pickIndex(logits: readonly number[], rng: Rng | null, temperature: number): number {
  if (!rng || temperature <= 0) {
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
    return best;
  }
  const mx = Math.max(...logits);
  const ps = logits.map((x) => Math.exp((x - mx) / temperature));
  const total = ps.reduce((a, b) => a + b, 0);
  let r = rng.next() * total;
  for (let i = 0; i < ps.length; i++) {
    r -= ps[i]!;
    if (r <= 0) return i;
  }
  return ps.length - 1;
}

/**
 * The SQL of a sketch read from the model's outputs. Greedy without an rng; with one, the kind,
 * the columns and each span are sampled at `temperature` (a retry after an SQL error draws another
 * reading). The table and column names are the input's, the values the question's text.
 */
export function decodeSketch(inp: SketchInput, enc: SketchEncoded, out: SketchOutputs, o: { rng?: Rng; temperature?: number } = {}): { sql: string; sketch: Sketch } {
  const rng = o.rng ?? null;
  const T = o.temperature ?? 0;
  const C = enc.nCols;
  const L = enc.length;
  const arr = (x: Float32Array | number[], from: number, n: number): number[] => Array.from(x.slice(from, from + n));
  const kind = SKETCH_KINDS[pickIndex(arr(out.kind, 0, SKETCH_KINDS.length), rng, T)]!;
  const colPick = (x: Float32Array | number[], not: readonly number[] = []): number => {
    const ls = arr(x, 0, C).map((v, i) => (not.includes(i) ? -1e9 : v));
    return pickIndex(ls, rng, T);
  };
  const on = (x: Float32Array | number[], c: number): boolean => {
    const p = 1 / (1 + Math.exp(-(x[c] ?? -1e9)));
    return rng && T > 0 ? rng.next() < p : p > 0.5;
  };
  const qIdx = enc.qmask.map((m, i) => (m > 0 ? i : -1)).filter((i) => i >= 0);
  // a value never runs across a quote mark, a quoted value is taken whole ('Scenic Rim', never
  // 'Scenic'), and the values of one statement never overlap
  const quoteAt = quoteMarks(inp.question, enc.qTokens);
  const inQuotes = quotedFlags(inp.question, enc.qTokens);
  const taken: Array<[number, number]> = [];
  const candidates = (c: number): Array<{ s: number; e: number; lp: number }> => {
    const st = arr(out.start, c * L, L);
    const en = arr(out.end, c * L, L);
    const xs: Array<{ s: number; e: number; lp: number }> = [];
    for (const s of qIdx) {
      if (quoteAt[s]) continue;
      const quoted = inQuotes[s] === true;
      if (quoted && !quoteAt[s - 1]) continue;
      for (let e = s; e < Math.min(qIdx.length, s + SKETCH_MAX_SPAN); e++) {
        if (quoteAt[e]) break;
        if (quoted && !quoteAt[e + 1]) continue;
        xs.push({ s, e, lp: st[s]! + en[e]! });
      }
    }
    // log-probabilities over the column's spans, so columns compare
    const mx = Math.max(...xs.map((x) => x.lp));
    const z = mx + Math.log(xs.reduce((a, x) => a + Math.exp(x.lp - mx), 0));
    for (const x of xs) x.lp -= z;
    return xs;
  };
  /** values for columns `cs`: the surest column first, each its best (or sampled) span clear of those taken */
  const spans = (cs: readonly number[]): Map<number, string> => {
    const got = new Map<number, string>();
    const cands = new Map(cs.map((c) => [c, candidates(c)] as const));
    const best = new Map(cs.map((c) => [c, Math.max(-Infinity, ...cands.get(c)!.map((x) => x.lp))] as const));
    for (const c of [...cs].sort((a, b) => best.get(b)! - best.get(a)! || a - b)) {
      const free = cands.get(c)!.filter((x) => taken.every(([a, b]) => x.e < a || x.s > b));
      if (free.length === 0) {
        got.set(c, '');
        continue;
      }
      const x = free[pickIndex(free.map((y) => y.lp), rng, T)]!;
      taken.push([x.s, x.e]);
      got.set(c, inp.question.slice(enc.qTokens[x.s]!.start, enc.qTokens[x.e]!.end));
    }
    return got;
  };
  const span = (c: number): string => spans([c]).get(c) ?? '';
  const cols = inp.columns;
  const empty: Sketch = { kind, sel: null, num: null, where: [], bound: null, set: [], values: cols.map(() => null) };
  const whereCols = (not: readonly number[], atLeastOne: boolean): number[] => {
    const ws: number[] = [];
    for (let c = 0; c < C; c++) if (!not.includes(c) && on(out.where, c)) ws.push(c);
    if (ws.length === 0 && atLeastOne) ws.push(colPick(out.where, not));
    return ws;
  };
  const conds = (ws: readonly number[]): Array<{ col: number; value: string }> => {
    const vs = spans(ws);
    return ws.map((c) => ({ col: c, value: vs.get(c) ?? '' }));
  };
  const whereSql = (ws: ReadonlyArray<{ col: number; value: string }>): string => ws.map((w) => `${bt(cols[w.col]!)} = ${qv(w.value)}`).join(' AND ');
  const T_ = bt(inp.table);
  let sk: Sketch;
  let sql: string;
  switch (kind) {
    case 'lookup':
    case 'count': {
      const sel = kind === 'lookup' ? colPick(out.sel) : null;
      // a lookup names its row; a count may count the whole table
      const where = conds(whereCols(sel === null ? [] : [sel], kind === 'lookup'));
      sk = { ...empty, sel, where };
      sql = `SELECT ${sel === null ? 'COUNT(*)' : bt(cols[sel]!)} FROM ${T_}${where.length ? ` WHERE ${whereSql(where)}` : ''};`;
      break;
    }
    case 'sum':
    case 'min':
    case 'max':
    case 'avg': {
      const sel = colPick(out.sel);
      const where = conds(whereCols([sel], false));
      sk = { ...empty, sel, where };
      sql = `SELECT ${kind.toUpperCase()}(${bt(cols[sel]!)}) FROM ${T_}${where.length ? ` WHERE ${whereSql(where)}` : ''};`;
      break;
    }
    case 'cmp_gt':
    case 'cmp_lt': {
      const sel = colPick(out.sel);
      const num = colPick(out.num, [sel]);
      const bound = span(num);
      const where = conds(whereCols([sel, num], false));
      sk = { ...empty, sel, num, bound, where };
      const n = /^-?\d+(?:\.\d+)?$/.test(bound.trim()) ? bound.trim() : qv(bound);
      sql = `SELECT ${bt(cols[sel]!)} FROM ${T_} WHERE ${[...where.map((w) => `${bt(cols[w.col]!)} = ${qv(w.value)}`), `${bt(cols[num]!)} ${kind === 'cmp_gt' ? '>' : '<'} ${n}`].join(' AND ')};`;
      break;
    }
    case 'rank_desc':
    case 'rank_asc': {
      const sel = colPick(out.sel);
      const num = colPick(out.num, [sel]);
      const where = conds(whereCols([sel, num], false));
      sk = { ...empty, sel, num, where };
      sql = `SELECT ${bt(cols[sel]!)} FROM ${T_}${where.length ? ` WHERE ${whereSql(where)}` : ''} ORDER BY CAST(${bt(cols[num]!)} AS DECIMAL) ${kind === 'rank_desc' ? 'DESC' : 'ASC'} LIMIT 1;`;
      break;
    }
    case 'insert': {
      const vs = spans(cols.map((_c, i) => i).filter((i) => i < C));
      const values = cols.map((_c, i) => vs.get(i) ?? null);
      sk = { ...empty, values };
      const given = values.map((v, i) => [i, v] as const).filter((x): x is readonly [number, string] => x[1] !== null);
      sql = `INSERT INTO ${T_} (${given.map(([i]) => bt(cols[i]!)).join(', ')}) VALUES (${given.map(([, v]) => qv(v)).join(', ')});`;
      break;
    }
    case 'update': {
      const sets: number[] = [];
      for (let c = 0; c < C; c++) if (on(out.set, c)) sets.push(c);
      if (sets.length === 0) sets.push(colPick(out.set));
      const set = conds(sets);
      const where = conds(whereCols(sets, true).slice(0, 1));
      sk = { ...empty, set, where };
      sql = `UPDATE ${T_} SET ${set.map((s) => `${bt(cols[s.col]!)} = ${qv(s.value)}`).join(', ')} WHERE ${whereSql(where)};`;
      break;
    }
    case 'delete': {
      const where = conds(whereCols([], true));
      sk = { ...empty, where };
      sql = `DELETE FROM ${T_} WHERE ${whereSql(where)};`;
      break;
    }
  }
  return { sql, sketch: sk };
}

/** The question, table and headers of a DBBench v0.2 request message, or null when it is not one. */
export function parseRequest(content: string): SketchInput | null {
  const m = /^([\s\S]*)\nThe name of this table is ([\s\S]*?), and the headers of this table are ([\s\S]*)\.\s*$/.exec(content);
  if (!m) return null;
  return { question: m[1]!.trim(), table: m[2]!, columns: m[3]!.split(',') };
}
