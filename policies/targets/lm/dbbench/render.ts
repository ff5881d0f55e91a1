/**
 * DBBench replies from a learned target's tokens. The word tokenizer keeps neither case nor
 * whitespace, and v0.2's protocol needs both (`Action: Operation\n```sql\n…\n```` and
 * `\nFinal Answer:`; string values that must match the table's exactly). The model writes the
 * protocol's words itself (`action : operation ` ` ` sql select … ` ` ``); this renders them:
 *
 * - `action : X` → `Action: X` and a newline (X capitalised, whatever word the model wrote);
 * - a ``` fence (three backtick tokens, `sql` after the opening one) → the fence on its own line;
 * - `final answer :` → `Final Answer: ` on a line of its own;
 * - a quoted span (`'…'`, `"…"`, `` `…` ``) → the same words as they are written in the
 *   conversation (original case and spacing: a value from the question, a cell from a result, a
 *   column from the table info), found by matching its tokens against the conversation's; a span
 *   found nowhere keeps the model's lower-case words;
 * - other words and symbols with SQL spacing (`count(*)`, `>=`, `1.5`, `a, b`).
 *
 * Nothing is added that the model did not write: a reply without `action :` stays without it and
 * fails the env's format check, a wrong column stays wrong.
 */
import type { ChatMessage } from '../../../../harness/index.ts';
import type { LmTokenizer } from '../tokenizer.ts';

/** an `<unk>` token: any one character the vocabulary lacks */
const UNK = '\u0000';
const QUOTES = new Set(["'", '"', '`']);
/** SQL functions MySQL wants glued to their parenthesis */
const FUNCS = new Set(['count', 'sum', 'min', 'max', 'avg', 'cast', 'abs', 'round', 'length', 'lower', 'upper', 'substr', 'substring', 'concat', 'coalesce', 'ifnull', 'replace', 'trim', 'year', 'date', 'char_length', 'left', 'right', 'instr', 'locate']);
const OPS = new Set(['<', '>', '=', '!']);

/** The model's tokens as words and symbols (spelled words joined, structure tokens dropped, `<unk>` as one unknown character). */
export function replyPieces(tok: LmTokenizer, ids: readonly number[]): string[] {
  return tok.pieces(ids, UNK);
}

interface CtxTok {
  low: string;
  start: number;
  end: number;
}

/** Finds a piece sequence in the conversation (newest message first) and returns it as written there. */
export function contextFinder(messages: readonly ChatMessage[]): (ps: readonly string[]) => string | null {
  const texts = messages.map((m) => m.content).reverse();
  const toks: CtxTok[][] = texts.map((t) => [...t.matchAll(/[a-z0-9]+|\S/gi)].map((m) => ({ low: m[0].toLowerCase(), start: m.index ?? 0, end: (m.index ?? 0) + m[0].length })));
  return (ps) => {
    if (ps.length === 0) return null;
    for (let k = 0; k < texts.length; k++) {
      const ts = toks[k]!;
      for (let s = 0; s + ps.length <= ts.length; s++) {
        let ok = true;
        for (let j = 0; j < ps.length && ok; j++) {
          const p = ps[j]!;
          const c = ts[s + j]!.low;
          ok = p === UNK ? !/^[a-z0-9]/.test(c) : p === c;
        }
        if (ok) return texts[k]!.slice(ts[s]!.start, ts[s + ps.length - 1]!.end);
      }
    }
    return null;
  };
}

/** words and symbols with SQL spacing */
function join(units: readonly { text: string; raw: string }[]): string {
  let out = '';
  for (let i = 0; i < units.length; i++) {
    const u = units[i]!;
    const prev = units[i - 1];
    let space = i > 0;
    if (prev) {
      if ([',', ')', ';', '.', ']', ':'].includes(u.raw)) space = false;
      if (['(', '.', '['].includes(prev.raw)) space = false;
      if (u.raw === '(' && FUNCS.has(prev.raw)) space = false;
      if (OPS.has(u.raw) && OPS.has(prev.raw)) space = false;
    }
    out += (space ? ' ' : '') + u.text;
  }
  return out;
}

function renderBody(ps: readonly string[], find: (ps: readonly string[]) => string | null, tok: LmTokenizer): string {
  const units: { text: string; raw: string }[] = [];
  for (let i = 0; i < ps.length; ) {
    const p = ps[i]!;
    if (QUOTES.has(p)) {
      let j = ps.indexOf(p, i + 1);
      const closed = j >= 0;
      if (!closed) j = ps.length;
      const inner = ps.slice(i + 1, j);
      const text = inner.length === 0 ? '' : (find(inner) ?? tok.decode(tok.encode(inner.map((x) => (x === UNK ? '?' : x)).join(' '))));
      units.push({ text: `${p}${text}${closed ? p : ''}`, raw: 'quoted' });
      i = j + 1;
    } else {
      units.push({ text: p === UNK ? '?' : p, raw: p });
      i++;
    }
  }
  return join(units);
}

const cap = (w: string): string => (w === UNK ? '?' : w.charAt(0).toUpperCase() + w.slice(1));

/**
 * The reply text for a DBBench decision from the model's tokens (EOS removed), given the
 * conversation the model saw. `expand` rewrites the pieces first (value slots back to their words).
 *
 * @example
 * renderDbbench(tok.encode("Action: Operation\n```sql\nSELECT `Name` FROM `t`;\n```"), tok, messages)
 * // "Action: Operation\n```sql\nselect `Name` from `t`;\n```"
 */
export function renderDbbench(ids: readonly number[], tok: LmTokenizer, messages: readonly ChatMessage[], expand?: (ps: readonly string[]) => string[]): string {
  const ps = expand ? expand(replyPieces(tok, ids)) : replyPieces(tok, ids);
  const find = contextFinder(messages);
  let out = '';
  let i = 0;
  if (ps[0] === 'action' && ps[1] === ':' && ps[2] !== undefined) {
    out += `Action: ${cap(ps[2])}\n`;
    i = 3;
  }
  const fence = (k: number): boolean => ps[k] === '`' && ps[k + 1] === '`' && ps[k + 2] === '`';
  if (fence(i)) {
    i += 3;
    let lang = '';
    if (ps[i] === 'sql') {
      lang = 'sql';
      i++;
    }
    let end = -1;
    for (let k = ps.length - 3; k >= i; k--) {
      if (fence(k)) {
        end = k;
        break;
      }
    }
    out += `\`\`\`${lang}\n${renderBody(ps.slice(i, end >= 0 ? end : ps.length), find, tok)}${end >= 0 ? '\n```' : ''}`;
    i = end >= 0 ? end + 3 : ps.length;
  }
  if (ps[i] === 'final' && ps[i + 1] === 'answer' && ps[i + 2] === ':') {
    out += `${out === '' || out.endsWith('\n') ? '' : '\n'}Final Answer: ${renderBody(ps.slice(i + 3), find, tok)}`;
    i = ps.length;
  }
  if (i < ps.length) out += `${out === '' || out.endsWith('\n') ? '' : ' '}${renderBody(ps.slice(i), find, tok)}`;
  return out;
}
