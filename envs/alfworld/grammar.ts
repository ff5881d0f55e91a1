/**
 * TextWorld's `.twl2` text grammar, as far as the ALFWorld grammar uses it: production rules with
 * conditions, `#nonterminal#`, `{python-ish expression}`, `[{expr | query}]` lists joined with
 * `list_separator` / `list_last_separator` (`list_empty` when empty), action templates and feedbacks.
 */
import { Hr1Error } from '../../cluster/errors.ts';

export type Sym =
  | { k: 'text'; s: string }
  | { k: 'nt'; name: string }
  | { k: 'eval'; alts: EvalPart[][] }
  | { k: 'cond'; expr: Sym[]; given: string }
  | { k: 'list'; inner: Sym[] };
/** part of an expression: literal string or var.attr */
export type EvalPart = { lit: string } | { v: string; attr: string };

export interface RawRule {
  rhs: string;
  condition?: string;
}
export interface TwlGrammar {
  rules: Map<string, RawRule[]>;
  actions: Map<string, { template: string; feedback: string }>;
}

/** A `.twl2` grammar block that does not parse; `field` names the block. Game loading rewraps it as AlfworldBadGameError. */
export class GrammarSyntaxError extends Hr1Error<'ALFWORLD_GRAMMAR_SYNTAX'> {
  static override readonly wireAs = 'task';
  constructor(message: string, readonly field: string) {
    super('ALFWORLD_GRAMMAR_SYNTAX', message);
    this.name = 'GrammarSyntaxError';
  }
}

function addRules(g: TwlGrammar, json: string, field: string): void {
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch (e) {
    throw new GrammarSyntaxError(`grammar block is not JSON: ${(e as Error).message}`, field);
  }
  if (!data || typeof data !== 'object') throw new GrammarSyntaxError('grammar block is not an object', field);
  for (const [name, rules] of Object.entries(data as Record<string, unknown>)) {
    if (!Array.isArray(rules)) throw new GrammarSyntaxError(`rule "${name}" is not a list`, field);
    const list = g.rules.get(name) ?? [];
    for (const r of rules) {
      if (!r || typeof r !== 'object' || typeof (r as RawRule).rhs !== 'string')
        throw new GrammarSyntaxError(`rule "${name}" has an alternative without "rhs"`, field);
      const rr = r as RawRule;
      list.push(rr.condition ? { rhs: rr.rhs, condition: rr.condition } : { rhs: rr.rhs });
    }
    g.rules.set(name, list);
  }
}

/** Parse a `.twl2` file: the top `grammar :: """…""";` and the `action X { … }` blocks. */
export function parseTwl2(text: string, field = 'grammar'): TwlGrammar {
  const g: TwlGrammar = { rules: new Map(), actions: new Map() };
  const kv = /(\w+)\s*::\s*(?:"""([\s\S]*?)"""|"([\s\S]*?)")\s*;/g;
  // split into top level and action blocks
  const actionRe = /action\s+(\w+)\s*\{([\s\S]*?)\n\}/g;
  let top = text;
  let m: RegExpExecArray | null;
  const blocks: { name: string; body: string }[] = [];
  while ((m = actionRe.exec(text))) blocks.push({ name: m[1]!, body: m[2]! });
  top = text.replace(actionRe, '');
  let found = false;
  kv.lastIndex = 0;
  while ((m = kv.exec(top))) {
    if (m[1] === 'grammar') {
      addRules(g, m[2] ?? m[3] ?? '', field);
      found = true;
    }
  }
  if (!found) throw new GrammarSyntaxError('no top-level `grammar :: """…""";` block', field);
  for (const b of blocks) {
    let template: string | undefined;
    let feedback: string | undefined;
    kv.lastIndex = 0;
    while ((m = kv.exec(b.body))) {
      const v = m[2] ?? m[3] ?? '';
      if (m[1] === 'template') template = v;
      else if (m[1] === 'feedback') feedback = v;
      else if (m[1] === 'grammar') addRules(g, v, `${field}:${b.name}`);
    }
    if (template === undefined || feedback === undefined)
      throw new GrammarSyntaxError(`action ${b.name} lacks a template or feedback`, `${field}:${b.name}`);
    g.actions.set(b.name.toLowerCase(), { template, feedback });
  }
  return g;
}

function parseEval(src: string): EvalPart[][] {
  return src.split(/\s+or\s+/).map((alt) => {
    const parts: EvalPart[] = [];
    const re = /\s*(?:'([^']*)'|"([^"]*)"|([A-Za-z_]\w*)\.(\w+)|([A-Za-z_]\w*))\s*(\+|$)/y;
    let m: RegExpExecArray | null;
    let pos = 0;
    while (pos < alt.length && (re.lastIndex = pos, (m = re.exec(alt)))) {
      if (m[1] !== undefined) parts.push({ lit: m[1] });
      else if (m[2] !== undefined) parts.push({ lit: m[2] });
      else if (m[3] !== undefined) parts.push({ v: m[3], attr: m[4]! });
      else parts.push({ v: m[5]!, attr: '' });
      pos = re.lastIndex;
      if (m[0].length === 0) break;
    }
    if (pos < alt.length) throw new GrammarSyntaxError(`unsupported expression "{${src}}"`, 'grammar');
    return parts;
  });
}

/** Split on the first '|' that is not inside parentheses. */
function splitBar(s: string): [string, string] | null {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) return [s.slice(0, i), s.slice(i + 1)];
  }
  return null;
}

function parseBrace(inner: string): Sym {
  const bar = splitBar(inner);
  const exprSym = (e: string): Sym[] => {
    const t = e.trim();
    if (/^#[^#]+#$/.test(t)) return [{ k: 'nt', name: t.slice(1, -1) }];
    return [{ k: 'eval', alts: parseEval(t) }];
  };
  if (bar) return { k: 'cond', expr: exprSym(bar[0]), given: bar[1].trim() };
  return exprSym(inner)[0]!;
}

/** Parse a right-hand side into symbols. */
export function parseRhs(s: string): Sym[] {
  const out: Sym[] = [];
  let buf = '';
  const flush = () => {
    if (buf) out.push({ k: 'text', s: buf });
    buf = '';
  };
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '#') {
      const j = s.indexOf('#', i + 1);
      if (j < 0) {
        buf += c;
        i++;
        continue;
      }
      flush();
      out.push({ k: 'nt', name: s.slice(i + 1, j) });
      i = j + 1;
    } else if (c === '[' && s[i + 1] === '{') {
      const j = s.indexOf('}]', i);
      if (j < 0) throw new GrammarSyntaxError(`unclosed "[{" in "${s}"`, 'grammar');
      flush();
      out.push({ k: 'list', inner: [parseBrace(s.slice(i + 2, j))] });
      i = j + 2;
    } else if (c === '{') {
      const j = s.indexOf('}', i);
      if (j < 0) {
        buf += c;
        i++;
        continue;
      }
      flush();
      out.push(parseBrace(s.slice(i + 1, j)));
      i = j + 1;
    } else {
      buf += c;
      i++;
    }
  }
  flush();
  return out;
}

/** `pred(v:type) & not_pred(v:type, w:type)` */
export interface CondLit {
  neg: boolean;
  pred: string;
  args: { name: string; type: string }[];
}
export function parseCondition(s: string): CondLit[] {
  return s
    .split('&')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((x) => {
      const m = /^(\w+)\((.*)\)$/.exec(x);
      if (!m) throw new GrammarSyntaxError(`bad condition literal "${x}"`, 'grammar');
      let pred = m[1]!.toLowerCase();
      let neg = false;
      if (pred.startsWith('not_')) {
        neg = true;
        pred = pred.slice(4);
      }
      const args = m[2]!
        .split(',')
        .map((a) => a.trim())
        .filter(Boolean)
        .map((a) => {
          const [name, type] = a.split(':');
          return { name: name!.trim().toLowerCase(), type: (type ?? '').trim().toLowerCase() };
        });
      return { neg, pred, args };
    });
}
