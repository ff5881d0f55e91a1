/**
 * A MySQL tokenizer, used twice: to refuse statements that try to leave the episode's sandbox (both
 * backends), and to translate the MySQL that agents write into SQLite (string escapes, double-quoted
 * strings, names that start with digits, `||` as OR, CAST targets, true division).
 */

export type TokKind = 'ws' | 'comment' | 'str' | 'dqstr' | 'ident' | 'qident' | 'num' | 'word' | 'op';

export interface Tok {
  kind: TokKind;
  /** source text */
  text: string;
  /** decoded value for strings and quoted identifiers */
  value?: string;
  pos: number;
}

const MYSQL_ESCAPES: Record<string, string> = {
  '0': '\0', "'": "'", '"': '"', b: '\b', n: '\n', r: '\r', t: '\t', Z: '\x1a', '\\': '\\',
  // MySQL keeps the backslash of \% and \_ (they matter to LIKE)
  '%': '\\%', _: '\\_',
};

function readQuoted(sql: string, i: number, q: string, backslash: boolean): { end: number; value: string } | null {
  let j = i + 1;
  let value = '';
  while (j < sql.length) {
    const c = sql[j] ?? '';
    if (backslash && c === '\\' && j + 1 < sql.length) {
      const n = sql[j + 1] ?? '';
      value += MYSQL_ESCAPES[n] ?? n;
      j += 2;
      continue;
    }
    if (c === q) {
      if (sql[j + 1] === q) {
        value += q;
        j += 2;
        continue;
      }
      return { end: j + 1, value };
    }
    value += c;
    j++;
  }
  return null;
}

const NUM = /^(?:0x[0-9a-fA-F]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)(?![A-Za-z0-9_$\u0080-\uffff])/;
const WORD = /^[A-Za-z0-9_$\u0080-\uffff]+/;

/** tokenize MySQL; unterminated quotes become one trailing 'op' token (the server reports them) */
export function tokenize(sql: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i] ?? '';
    const rest = sql.slice(i, i + 3);
    if (/\s/.test(c)) {
      const m = /^\s+/.exec(sql.slice(i))?.[0] ?? c;
      out.push({ kind: 'ws', text: m, pos: i });
      i += m.length;
    } else if (c === '#' || rest.startsWith('-- ') || rest === '--' || (rest.startsWith('--') && /\s/.test(rest[2] ?? ''))) {
      const nl = sql.indexOf('\n', i);
      const end = nl < 0 ? sql.length : nl;
      out.push({ kind: 'comment', text: sql.slice(i, end), pos: i });
      i = end;
    } else if (rest.startsWith('/*')) {
      const end = sql.indexOf('*/', i + 2);
      const e = end < 0 ? sql.length : end + 2;
      out.push({ kind: 'comment', text: sql.slice(i, e), pos: i });
      i = e;
    } else if (c === "'" || c === '"' || c === '`') {
      const r = readQuoted(sql, i, c, c !== '`');
      if (!r) {
        out.push({ kind: 'op', text: sql.slice(i), pos: i });
        break;
      }
      out.push({ kind: c === "'" ? 'str' : c === '"' ? 'dqstr' : 'qident', text: sql.slice(i, r.end), value: r.value, pos: i });
      i = r.end;
    } else {
      const num = NUM.exec(sql.slice(i))?.[0];
      if (num) {
        out.push({ kind: 'num', text: num, pos: i });
        i += num.length;
        continue;
      }
      const word = WORD.exec(sql.slice(i))?.[0];
      if (word) {
        out.push({ kind: /^\d/.test(word) ? 'ident' : 'word', text: word, pos: i });
        i += word.length;
        continue;
      }
      const op = /^(?:<=>|<>|!=|<=|>=|\|\||&&|:=|<<|>>)/.exec(sql.slice(i))?.[0] ?? c;
      out.push({ kind: 'op', text: op, pos: i });
      i += op.length;
    }
  }
  return out;
}

/** significant tokens (no whitespace or comments) */
export function significant(toks: readonly Tok[]): Tok[] {
  return toks.filter((t) => t.kind !== 'ws' && t.kind !== 'comment');
}

/** split a multi-statement text at top-level semicolons (empty statements dropped) */
export function splitStatements(sql: string): string[] {
  const toks = tokenize(sql);
  const out: string[] = [];
  let start = 0;
  for (const t of toks) {
    if (t.kind === 'op' && t.text === ';') {
      out.push(sql.slice(start, t.pos));
      start = t.pos + 1;
    }
  }
  out.push(sql.slice(start));
  return out.filter((s) => significant(tokenize(s)).length > 0);
}

// ---------------------------------------------------------------- sandbox guard

/** why a statement is refused, as the agent will read it */
export interface Refusal {
  reason: string;
}

const LIMIT_VARS = new Set(['max_statement_time', 'sql_select_limit', 'max_execution_time', 'group_concat_max_len', 'secure_file_priv', 'sql_mode', 'local_infile', 'max_join_size', 'sql_big_selects']);

function refusal(what: string, hint: string): Refusal {
  return { reason: `DBBench sandbox: ${what} is not allowed in this environment; ${hint}. The episode goes on.` };
}

/**
 * Statements that would reach outside the episode (files, other databases, server state, limits)
 * are refused before they reach the server, with a message the agent can act on.
 */
export function checkSandbox(sql: string, episodeDb: string): Refusal | null {
  const toks = significant(tokenize(sql));
  const up = (t: Tok | undefined): string => (t && (t.kind === 'word' || t.kind === 'ident') ? t.text.toUpperCase() : '');
  const first = up(toks[0]);
  const hint = 'query only the task table in the current database';
  if (first === 'ATTACH' || first === 'DETACH') return refusal(`${first} DATABASE`, hint);
  if (first === 'PRAGMA' || first === 'VACUUM') return refusal(first, hint);
  if (['GRANT', 'REVOKE', 'SHUTDOWN', 'KILL', 'INSTALL', 'UNINSTALL', 'FLUSH', 'RESET', 'PURGE', 'HANDLER', 'PREPARE', 'EXECUTE', 'DEALLOCATE', 'LOCK', 'UNLOCK', 'CHANGE', 'BINLOG', 'CACHE', 'LOAD', 'BACKUP', 'RENAME'].includes(first)) {
    if (first === 'RENAME' && up(toks[1]) === 'TABLE') {
      // RENAME TABLE is harmless inside the episode's own database
    } else if (first === 'LOAD') return refusal('LOAD DATA / LOAD XML (reading files from the server)', hint);
    else return refusal(`the ${first} statement`, hint);
  }
  if (first === 'CREATE' || first === 'DROP' || first === 'ALTER') {
    const obj = up(toks[1]) === 'OR' ? up(toks[3]) : up(toks[1]);
    const what = obj === 'TEMPORARY' || obj === 'UNIQUE' || obj === 'FULLTEXT' || obj === 'SPATIAL' ? up(toks[2]) : obj;
    if (['USER', 'ROLE', 'SERVER', 'DATABASE', 'SCHEMA', 'FUNCTION', 'PROCEDURE', 'TRIGGER', 'EVENT', 'TABLESPACE', 'LOGFILE', 'DEFINER', 'ALGORITHM', 'SQL', 'AGGREGATE', 'PACKAGE'].includes(what)) {
      return refusal(`${first} ${what}`, 'work on the task table only');
    }
  }
  if (first === 'USE') {
    const db = toks[1]?.value ?? toks[1]?.text ?? '';
    if (db !== episodeDb) return refusal(`switching to another database ('${db}')`, hint);
  }
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i] as Tok;
    const u = up(t);
    const next = toks[i + 1];
    if ((u === 'LOAD_FILE' || u === 'SYS_EXEC' || u === 'SYS_EVAL' || u === 'LOAD_EXTENSION' || u === 'READFILE' || u === 'WRITEFILE') && next?.text === '(') {
      return refusal(`${u}() (reading files from the server)`, hint);
    }
    if (u === 'SLEEP' || u === 'BENCHMARK') {
      if (next?.text === '(') return refusal(`${u}()`, 'every statement has a time limit anyway');
    }
    if (u === 'INTO' && (up(next) === 'OUTFILE' || up(next) === 'DUMPFILE')) {
      return refusal(`SELECT … INTO ${up(next)} (writing files on the server)`, 'read results in the response instead');
    }
    if (u === 'GLOBAL' || u === 'PERSIST' || u === 'PERSIST_ONLY') {
      if (toks.slice(0, i).some((x) => up(x) === 'SET')) return refusal(`SET ${u}`, hint);
    }
    if (t.kind === 'op' && t.text.startsWith('@@')) {
      const name = (next?.text ?? '').toLowerCase();
      if (up(toks[0]) === 'SET' || name === 'global') return refusal('changing server variables', hint);
    }
    if ((t.kind === 'word' || t.kind === 'qident') && LIMIT_VARS.has(t.text.replace(/`/g, '').toLowerCase())) {
      if (toks.some((x) => up(x) === 'SET')) return refusal(`changing ${t.text.replace(/`/g, '').toLowerCase()}`, 'limits are fixed per episode');
    }
    // db.table: a qualifier naming a system schema is another database
    if (next?.text === '.' && i + 2 < toks.length) {
      const q = (t.value ?? t.text).toLowerCase();
      if (['mysql', 'information_schema', 'performance_schema', 'sys'].includes(q)) {
        return refusal(`reading another database ('${t.value ?? t.text}')`, hint);
      }
    }
  }
  return null;
}

// ---------------------------------------------------------------- MySQL → SQLite

const sqliteStr = (v: string): string => `'${v.replace(/'/g, "''")}'`;
const sqliteIdent = (v: string): string => `"${v.replace(/"/g, '""')}"`;

/**
 * Translate a MySQL statement into SQLite. What it cannot translate is left as is; SQLite's error
 * then tells the agent.
 */
export function mysqlToSqlite(sql: string): string {
  const toks = tokenize(sql);
  const sig = significant(toks);
  const sigIndex = new Map<Tok, number>();
  sig.forEach((t, i) => sigIndex.set(t, i));
  const up = (t: Tok | undefined): string => (t && t.kind === 'word' ? t.text.toUpperCase() : '');
  const fold = planFolding(sig);
  let out = '';
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k] as Tok;
    const si = sigIndex.get(t);
    const f = fold.get(t);
    if (f?.open) out += `${FOLD_FN}(`;
    if (f?.num) out += `${NUM_FN}(`;
    if (f?.literal) {
      out += sqliteStr(foldText(t.value ?? ''));
      if (f.close) out += ')';
      continue;
    }
    const prev = si === undefined ? undefined : sig[si - 1];
    const next = si === undefined ? undefined : sig[si + 1];
    switch (t.kind) {
      case 'str':
        out += sqliteStr(t.value ?? '');
        break;
      case 'dqstr':
        // MySQL (without ANSI_QUOTES) reads "…" as a string; SQLite would read an identifier
        out += sqliteStr(t.value ?? '');
        break;
      case 'qident':
        out += sqliteIdent(t.value ?? '');
        break;
      case 'ident':
        out += sqliteIdent(t.text);
        break;
      case 'op':
        if (t.text === '||') out += ' OR ';
        else if (t.text === '&&') out += ' AND ';
        // MySQL's / is true division; SQLite divides integers as integers
        else if (t.text === '/') out += '* 1.0 /';
        else out += t.text;
        break;
      case 'word': {
        const u = t.text.toUpperCase();
        if (up(prev) === 'AS' && prev && isCastTarget(sig, si ?? 0)) {
          if (u === 'SIGNED' || u === 'UNSIGNED') {
            out += 'INTEGER';
            if (next && (up(next) === 'INTEGER' || up(next) === 'INT')) k = toks.indexOf(next);
          } else if (u === 'DECIMAL' || u === 'DOUBLE' || u === 'FLOAT') {
            out += 'REAL';
            if (next?.text === '(') k = skipParens(toks, toks.indexOf(next));
          } else if (u === 'CHAR' || u === 'VARCHAR' || u === 'NCHAR') {
            out += 'TEXT';
            if (next?.text === '(') k = skipParens(toks, toks.indexOf(next));
          } else if (u === 'DATE' || u === 'DATETIME') out += 'TEXT';
          else out += t.text;
        } else if (u === 'XOR') out += '<>';
        else out += t.text;
        break;
      }
      default:
        out += t.text;
    }
    if (f?.close) out += ')';
  }
  return out;
}

/** the SQLite function that converts like MySQL does when text meets a number ('12abc' → 12) */
export const NUM_FN = 'mysql_num';

/** the SQLite function that folds text the way MySQL's accent- and case-insensitive collation compares */
export const FOLD_FN = 'mysql_ci';

/** case- and accent-insensitive key: 'José' and 'JOSE' fold alike */
export function foldText(s: string): string {
  // eslint-disable-next-line no-control-regex
  return /^[\x00-\x7f]*$/.test(s) ? s.toLowerCase() : s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

const CMP_OPS = new Set(['=', '<>', '!=', '<', '>', '<=', '>=', '<=>']);
const KEYWORDS = new Set([
  'AND', 'OR', 'NOT', 'WHERE', 'SET', 'SELECT', 'FROM', 'ON', 'WHEN', 'THEN', 'ELSE', 'CASE', 'END', 'IS', 'NULL', 'IN',
  'LIKE', 'BETWEEN', 'HAVING', 'BY', 'AS', 'VALUES', 'LIMIT', 'XOR', 'DISTINCT', 'ALL', 'ANY', 'EXISTS', 'JOIN',
]);

interface FoldMark {
  open?: boolean;
  /** open a MySQL string → number conversion instead */
  num?: boolean;
  close?: boolean;
  literal?: boolean;
}

const isIdentTok = (t: Tok | undefined): boolean =>
  t !== undefined && (t.kind === 'qident' || t.kind === 'ident' || (t.kind === 'word' && !KEYWORDS.has(t.text.toUpperCase())));

/**
 * MySQL compares text case- and accent-insensitively; better-sqlite3 cannot register a collation,
 * so `col <op> 'literal'` and `col IN ('a', …)` become `mysql_ci(col) <op> 'folded literal'`.
 * Assignments (UPDATE … SET a = 'x') are left alone.
 */
function planFolding(sig: readonly Tok[]): Map<Tok, FoldMark> {
  const marks = new Map<Tok, FoldMark>();
  const mark = (t: Tok, m: FoldMark): void => {
    marks.set(t, { ...marks.get(t), ...m });
  };
  // operand ending at index e (inclusive): ident(.ident)*; returns its start index or -1
  const operandStart = (e: number): number => {
    if (!isIdentTok(sig[e])) return -1;
    let s = e;
    while (s >= 2 && sig[s - 1]?.text === '.' && isIdentTok(sig[s - 2])) s -= 2;
    // a function call or a keyword-like context before it disqualifies nothing; keep simple
    return s;
  };
  const operandEnd = (s: number): number => {
    if (!isIdentTok(sig[s]) || sig[s + 1]?.text === '(') return -1;
    let e = s;
    while (sig[e + 1]?.text === '.' && isIdentTok(sig[e + 2])) e += 2;
    return e;
  };
  let inSet = false;
  let depth = 0;
  for (let i = 0; i < sig.length; i++) {
    const t = sig[i] as Tok;
    const u = t.kind === 'word' ? t.text.toUpperCase() : '';
    if (t.text === '(') depth++;
    else if (t.text === ')') depth--;
    if (u === 'SET' && depth === 0) inSet = true;
    if ((u === 'WHERE' || u === 'ORDER' || u === 'LIMIT') && depth === 0) inSet = false;
    if (t.kind === 'op' && CMP_OPS.has(t.text) && !(inSet && depth === 0 && t.text === '=')) {
      const l = sig[i - 1];
      const r = sig[i + 1];
      const isStr = (x: Tok | undefined): boolean => x !== undefined && (x.kind === 'str' || x.kind === 'dqstr');
      const isNum = (x: Tok | undefined): boolean => x !== undefined && x.kind === 'num';
      if (isNum(r) && sig[i + 2]?.text !== '(' && sig[i + 2]?.text !== '.') {
        const s = operandStart(i - 1);
        if (s >= 0 && sig[i - 1]?.text !== ')' && sig[s - 1]?.text !== '.') {
          mark(sig[s] as Tok, { num: true });
          mark(sig[i - 1] as Tok, { close: true });
        }
      } else if (isNum(l) && sig[i - 2]?.text !== '.') {
        const e = operandEnd(i + 1);
        if (e >= 0) {
          mark(sig[i + 1] as Tok, { num: true });
          mark(sig[e] as Tok, { close: true });
        }
      }
      if (isStr(r) && sig[i + 2]?.text !== '(' ) {
        const s = operandStart(i - 1);
        if (s >= 0 && sig[i - 1]?.text !== ')' && sig[s - 1]?.text !== '.') {
          mark(sig[s] as Tok, { open: true });
          mark(sig[i - 1] as Tok, { close: true });
          mark(r as Tok, { literal: true });
        }
      } else if (isStr(l)) {
        const e = operandEnd(i + 1);
        if (e >= 0) {
          mark(sig[i + 1] as Tok, { open: true });
          mark(sig[e] as Tok, { close: true });
          mark(l as Tok, { literal: true });
        }
      }
    }
    if (u === 'IN' && sig[i + 1]?.text === '(') {
      const opEnd = sig[i - 1]?.kind === 'word' && sig[i - 1]?.text.toUpperCase() === 'NOT' ? i - 2 : i - 1;
      const s = operandStart(opEnd);
      // every element a string literal
      const lits: Tok[] = [];
      let j = i + 2;
      let ok = true;
      for (; j < sig.length; j += 2) {
        const x = sig[j];
        if (!x || (x.kind !== 'str' && x.kind !== 'dqstr')) {
          ok = false;
          break;
        }
        lits.push(x);
        if (sig[j + 1]?.text === ')') break;
        if (sig[j + 1]?.text !== ',') {
          ok = false;
          break;
        }
      }
      if (ok && s >= 0 && lits.length > 0) {
        mark(sig[s] as Tok, { open: true });
        mark(sig[opEnd] as Tok, { close: true });
        for (const x of lits) mark(x, { literal: true });
      }
    }
  }
  return marks;
}

function isCastTarget(sig: readonly Tok[], i: number): boolean {
  // walk back to the matching "(" and check that it follows CAST
  let depth = 0;
  for (let j = i - 1; j >= 0; j--) {
    const t = sig[j] as Tok;
    if (t.text === ')') depth++;
    else if (t.text === '(') {
      if (depth === 0) return (sig[j - 1]?.text ?? '').toUpperCase() === 'CAST';
      depth--;
    }
  }
  return false;
}

function skipParens(toks: readonly Tok[], open: number): number {
  let depth = 0;
  for (let j = open; j < toks.length; j++) {
    const t = toks[j] as Tok;
    if (t.text === '(') depth++;
    else if (t.text === ')') {
      depth--;
      if (depth === 0) return j;
    }
  }
  return toks.length - 1;
}

/**
 * What MySQL rejects but SQLite would accept: a quoted string or a [bracketed] name where a table
 * belongs, and a table name in the wrong letter case (MySQL on Linux compares table names exactly).
 * Returns the server text MySQL would give, or null.
 */
export function mysqlOnlyError(sql: string, tables: readonly string[], database: string): string | null {
  const sig = significant(tokenize(sql));
  const near = (t: Tok): string => `1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '${sql.slice(t.pos, t.pos + 80)}' at line 1`;
  for (let i = 0; i < sig.length; i++) {
    const t = sig[i] as Tok;
    if (t.kind === 'op' && t.text === '[') return near(t);
    const u = t.kind === 'word' ? t.text.toUpperCase() : '';
    if (u === 'FROM' || u === 'JOIN' || u === 'INTO' || u === 'UPDATE' || u === 'TABLE') {
      const n = sig[i + 1];
      if (!n) continue;
      if (n.kind === 'str' || n.kind === 'dqstr') return near(n);
      if ((n.kind === 'qident' || n.kind === 'ident' || n.kind === 'word') && sig[i + 2]?.text !== '.' && sig[i + 2]?.text !== '(') {
        const name = n.value ?? n.text;
        if (n.kind === 'word' && KEYWORDS.has(name.toUpperCase())) continue;
        if (!tables.includes(name) && tables.some((x) => x.toLowerCase() === name.toLowerCase())) {
          return `1146 (42S02): Table '${database}.${name}' doesn't exist`;
        }
      }
    }
  }
  return null;
}
