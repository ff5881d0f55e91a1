/**
 * A small PDDL reader for the ALFWorld domain and problems: s-expressions (lower-cased, as Fast
 * Downward's parser does), typed parameter lists, formulas (and/or/not/imply/exists/forall/=) and
 * effects (add/delete/when/forall/increase). Pure data out, no classes.
 */
import { Hr1Error } from '../../cluster/errors.ts';

export type SExpr = string | SExpr[];

export type Term = { v: string } | { c: string };
export type Formula =
  | { t: 'true' }
  | { t: 'atom'; p: string; args: Term[] }
  | { t: 'eq'; a: Term; b: Term }
  | { t: 'not'; x: Formula }
  | { t: 'and'; xs: Formula[] }
  | { t: 'or'; xs: Formula[] }
  | { t: 'imply'; a: Formula; b: Formula }
  | { t: 'exists' | 'forall'; vars: Param[]; x: Formula };
export type Effect =
  | { t: 'and'; xs: Effect[] }
  | { t: 'add'; p: string; args: Term[] }
  | { t: 'del'; p: string; args: Term[] }
  | { t: 'when'; cond: Formula; eff: Effect }
  | { t: 'forall'; vars: Param[]; eff: Effect }
  | { t: 'noop' };
export interface Param {
  name: string;
  type: string;
}
export interface ActionDef {
  name: string;
  params: Param[];
  pre: Formula;
  eff: Effect;
}
export interface DomainDef {
  name: string;
  types: string[];
  predicates: { name: string; params: Param[] }[];
  actions: ActionDef[];
}
export interface ProblemDef {
  name: string;
  objects: Param[];
  init: { p: string; args: string[] }[];
  goal: Formula;
}

/** PDDL text that does not parse; `field` names the part. Game loading rewraps it as AlfworldBadGameError. */
export class PddlSyntaxError extends Hr1Error<'ALFWORLD_PDDL_SYNTAX'> {
  static override readonly wireAs = 'task';
  readonly field: string;
  constructor(message: string, field: string) {
    super('ALFWORLD_PDDL_SYNTAX', message);
    this.name = 'PddlSyntaxError';
    this.field = field;
  }
}

/** Tokenise and parse every top-level s-expression of `text`. */
export function parseSExprs(text: string, field = 'pddl'): SExpr[] {
  const src = text.replace(/;[^\n]*/g, ' ').toLowerCase();
  const tokens = src.match(/\(|\)|[^\s()]+/g) ?? [];
  const out: SExpr[] = [];
  const stack: SExpr[][] = [];
  for (const tok of tokens) {
    if (tok === '(') {
      const l: SExpr[] = [];
      if (stack.length) stack[stack.length - 1]!.push(l);
      stack.push(l);
    } else if (tok === ')') {
      const l = stack.pop();
      if (!l) throw new PddlSyntaxError('unbalanced ")"', field);
      if (!stack.length) out.push(l);
    } else {
      if (!stack.length) throw new PddlSyntaxError(`token "${tok}" outside any list`, field);
      stack[stack.length - 1]!.push(tok);
    }
  }
  if (stack.length) throw new PddlSyntaxError('unbalanced "(": missing ")"', field);
  return out;
}

function isList(x: SExpr | undefined): x is SExpr[] {
  return Array.isArray(x);
}
function str(x: SExpr | undefined, field: string): string {
  if (typeof x !== 'string') throw new PddlSyntaxError(`expected a name, got ${JSON.stringify(x)}`, field);
  return x;
}

/** `?a ?b - t ?c - u` (commas tolerated, as the shipped domain has one). */
export function parseTypedList(xs: SExpr[], field: string): Param[] {
  const out: Param[] = [];
  let pending: string[] = [];
  for (let i = 0; i < xs.length; i++) {
    const tok = str(xs[i], field).replace(/,$/, '');
    if (tok === '') continue;
    if (tok === '-') {
      const type = str(xs[++i], field).replace(/,$/, '');
      for (const n of pending) out.push({ name: n, type });
      pending = [];
    } else pending.push(tok);
  }
  for (const n of pending) out.push({ name: n, type: 'object' });
  return out;
}

function term(x: SExpr, field: string): Term {
  const s = str(x, field);
  return s.startsWith('?') ? { v: s.slice(1) } : { c: s };
}

export function parseFormula(x: SExpr, field: string): Formula {
  if (!isList(x)) throw new PddlSyntaxError(`expected a formula, got "${x}"`, field);
  if (x.length === 0) return { t: 'true' };
  const head = str(x[0], field);
  switch (head) {
    case 'and':
      return { t: 'and', xs: x.slice(1).map((y) => parseFormula(y, field)) };
    case 'or':
      return { t: 'or', xs: x.slice(1).map((y) => parseFormula(y, field)) };
    case 'not':
      return { t: 'not', x: parseFormula(x[1] ?? [], field) };
    case 'imply':
      return { t: 'imply', a: parseFormula(x[1] ?? [], field), b: parseFormula(x[2] ?? [], field) };
    case 'exists':
    case 'forall': {
      const vars = x[1];
      if (!isList(vars)) throw new PddlSyntaxError(`${head} without a variable list`, field);
      return {
        t: head,
        vars: parseTypedList(vars, field).map((p) => ({ name: p.name.replace(/^\?/, ''), type: p.type })),
        x: parseFormula(x[2] ?? [], field),
      };
    }
    case '=':
      return { t: 'eq', a: term(x[1] ?? '', field), b: term(x[2] ?? '', field) };
    default:
      return { t: 'atom', p: head, args: x.slice(1).map((y) => term(y, field)) };
  }
}

export function parseEffect(x: SExpr, field: string): Effect {
  if (!isList(x)) throw new PddlSyntaxError(`expected an effect, got "${x}"`, field);
  if (x.length === 0) return { t: 'noop' };
  const head = str(x[0], field);
  switch (head) {
    case 'and':
      return { t: 'and', xs: x.slice(1).map((y) => parseEffect(y, field)) };
    case 'not': {
      const a = x[1];
      if (!isList(a)) throw new PddlSyntaxError('(not …) effect without an atom', field);
      return { t: 'del', p: str(a[0], field), args: a.slice(1).map((y) => term(y, field)) };
    }
    case 'when':
      return { t: 'when', cond: parseFormula(x[1] ?? [], field), eff: parseEffect(x[2] ?? [], field) };
    case 'forall': {
      const vars = x[1];
      if (!isList(vars)) throw new PddlSyntaxError('forall without a variable list', field);
      return {
        t: 'forall',
        vars: parseTypedList(vars, field).map((p) => ({ name: p.name.replace(/^\?/, ''), type: p.type })),
        eff: parseEffect(x[2] ?? [], field),
      };
    }
    case 'increase':
    case 'decrease':
    case 'assign':
      return { t: 'noop' };
    default:
      return { t: 'add', p: head, args: x.slice(1).map((y) => term(y, field)) };
  }
}

function section(list: SExpr[], key: string): SExpr[] | undefined {
  for (const s of list) if (isList(s) && s[0] === key) return s;
  return undefined;
}

export function parseDomain(text: string, field = 'pddl_domain'): DomainDef {
  const top = parseSExprs(text, field);
  const d = top.find((s) => isList(s) && s[0] === 'define');
  if (!isList(d)) throw new PddlSyntaxError('no (define …) in the domain', field);
  const nameS = section(d, 'domain');
  const typesS = section(d, ':types');
  const predsS = section(d, ':predicates') ?? [];
  const actions: ActionDef[] = [];
  for (const s of d) {
    if (!isList(s) || s[0] !== ':action') continue;
    const name = str(s[1], field);
    let params: Param[] = [];
    let pre: Formula = { t: 'true' };
    let eff: Effect = { t: 'noop' };
    for (let i = 2; i < s.length; i += 2) {
      const k = s[i];
      const v = s[i + 1] ?? [];
      if (k === ':parameters') params = parseTypedList(isList(v) ? v : [], `${field}:${name}`).map((p) => ({ name: p.name.replace(/^\?/, ''), type: p.type }));
      else if (k === ':precondition') pre = parseFormula(v, `${field}:${name}`);
      else if (k === ':effect') eff = parseEffect(v, `${field}:${name}`);
    }
    actions.push({ name, params, pre, eff });
  }
  return {
    name: nameS ? str(nameS[1], field) : '',
    types: typesS ? parseTypedList(typesS.slice(1), field).map((p) => p.name) : [],
    predicates: predsS.slice(1).filter(isList).map((p) => ({
      name: str(p[0], field),
      params: parseTypedList(p.slice(1), field).map((q) => ({ name: q.name.replace(/^\?/, ''), type: q.type })),
    })),
    actions,
  };
}

export function parseProblem(text: string, field = 'pddl_problem'): ProblemDef {
  const top = parseSExprs(text, field);
  const d = top.find((s) => isList(s) && s[0] === 'define');
  if (!isList(d)) throw new PddlSyntaxError('no (define …) in the problem', field);
  const nameS = section(d, 'problem');
  const objS = section(d, ':objects');
  const initS = section(d, ':init');
  const goalS = section(d, ':goal');
  if (!objS) throw new PddlSyntaxError('no (:objects …)', `${field}:objects`);
  if (!initS) throw new PddlSyntaxError('no (:init …)', `${field}:init`);
  if (!goalS || goalS[1] === undefined) throw new PddlSyntaxError('no (:goal …)', `${field}:goal`);
  const init = initS.slice(1).map((a) => {
    if (!isList(a) || a.length === 0) throw new PddlSyntaxError(`bad init fact ${JSON.stringify(a)}`, `${field}:init`);
    return { p: str(a[0], `${field}:init`), args: a.slice(1).map((y) => str(y, `${field}:init`)) };
  });
  return {
    name: nameS ? str(nameS[1], field) : '',
    objects: parseTypedList(objS.slice(1), `${field}:objects`),
    init,
    goal: parseFormula(goalS[1], `${field}:goal`),
  };
}

function termText(t: Term): string {
  return 'v' in t ? `?${t.v}` : t.c;
}
export function formulaText(f: Formula): string {
  switch (f.t) {
    case 'true':
      return '()';
    case 'atom':
      return `(${[f.p, ...f.args.map(termText)].join(' ')})`;
    case 'eq':
      return `(= ${termText(f.a)} ${termText(f.b)})`;
    case 'not':
      return `(not ${formulaText(f.x)})`;
    case 'and':
    case 'or':
      return `(${f.t} ${f.xs.map(formulaText).join(' ')})`;
    case 'imply':
      return `(imply ${formulaText(f.a)} ${formulaText(f.b)})`;
    case 'exists':
    case 'forall':
      return `(${f.t} (${f.vars.map((v) => `?${v.name} - ${v.type}`).join(' ')}) ${formulaText(f.x)})`;
  }
}
/** Write a problem back as PDDL text (used to rebuild upstream-layout files from compact data). */
export function problemText(p: ProblemDef): string {
  return [
    `(define (problem ${p.name || 'p'})`,
    '(:domain alfred)',
    '(:objects',
    ...p.objects.map((o) => `  ${o.name} - ${o.type}`),
    ')',
    '(:init',
    ...p.init.map((f) => `  (${[f.p, ...f.args].join(' ')})`),
    ')',
    `(:goal ${formulaText(p.goal)})`,
    ')',
  ].join('\n');
}
