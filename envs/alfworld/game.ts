/**
 * Compile a game (domain + grammar + problem) into read-only lookup structures: entities in
 * demangled order, static fact index, compiled action preconditions/effects, grammar rules,
 * the goal query. Games are immutable once built; any worker can hold them.
 */
import { AlfworldBadGameError } from './errors.ts';
import {
  parseDomain,
  parseProblem,
  PddlSyntaxError,
  type ActionDef,
  type DomainDef,
  type Effect,
  type Formula,
  type ProblemDef,
  type Term,
} from './pddl.ts';
import { FactIndex, compileQueries, factKey, type LogicCtx, type Query, NONE } from './logic.ts';
import { GrammarSyntaxError, parseCondition, parseRhs, parseTwl2, type Sym, type TwlGrammar } from './grammar.ts';

export type GrammarKind = 'legacy' | 'current';

export interface GameSource {
  /** stable id: the path relative to json_2.1.1, e.g. valid_seen/pick_…/trial_…  */
  id: string;
  split: string;
  taskType: string;
  /** file the game came from (for error messages) */
  file: string;
  domain: string;
  /** the game's own grammar text (either grammar kind; the task sentence inside) */
  grammar: string;
  problem: ProblemDef;
  walkthrough: string[];
}

export interface CEff {
  add: boolean;
  p: number;
  a: number;
  b: number;
  when: Query[] | null;
}
export interface CAction {
  name: string;
  params: { name: string; type: string }[];
  pre: Query[];
  effects: CEff[];
  template: Sym[];
  feedback: Sym[];
  /** fast parse of a command into parameter names, or null */
  pattern: RegExp | null;
  slots: number[];
}
export interface CRule {
  cond: Query | null;
  syms: Sym[];
}
export interface Variant {
  kind: GrammarKind;
  actions: CAction[];
  rules: Map<string, CRule[]>;
  /** compiled conditional-symbol queries by their text */
  queries: Map<string, Query>;
}

export interface Game {
  id: string;
  split: string;
  taskType: string;
  file: string;
  /** the task sentence, e.g. "put a pencil in shelf." */
  goal: string;
  /** walkthrough as stored in the game file (current grammar: move X to Y) */
  walkthrough: string[];
  lc: LogicCtx;
  /** lower-cased PDDL ids, sorted; index = entity number */
  ents: string[];
  /** demangled names ("desk 2", "sinkbasin 1") */
  names: string[];
  typeNames: string[];
  nameToEnts: Map<string, number[]>;
  stat: FactIndex;
  fluentPred: boolean[];
  init: number[];
  goalQs: Query[];
  goalFormula: Formula;
  /** source texts kept for lazy compilation of grammar variants */
  src: { domain: DomainDef; grammarText: string };
  variants: Partial<Record<GrammarKind, Variant>>;
}

// ---------------------------------------------------------------------------------------------
// grammar variants

const CUR_ARRIVE = '"You arrive at {r.name}. #examineReceptacle.feedback#"';
const LEG_ARRIVE = '"You arrive at {lend.name}. #examineReceptacle.feedback#"';
const CUR_PUTFB = '"You move the {o.name} to the {r.name}."';
const LEG_PUTFB = '"You put the {o.name} in/on the {r.name}."';
const CUR_PUT = 'template :: "move {o} to {r}";';
const LEG_PUT = 'template :: "put {o} in/on {r}";';
export const HELP_TEXT =
  '\nAvailable commands:\n  look:                             look around your current location\n  inventory:                        check your current inventory\n  go to (receptacle):               move to a receptacle\n  open (receptacle):                open a receptacle\n  close (receptacle):               close a receptacle\n  take (object) from (receptacle):  take an object from a receptacle\n  move (object) to (receptacle):  place an object in or on a receptacle\n  examine (something):              examine a receptacle or an object\n  use (object):                     use an object\n  heat (object) with (receptacle):  heat an object using a receptacle\n  clean (object) with (receptacle): clean an object using a receptacle\n  cool (object) with (receptacle):  cool an object using a receptacle\n  slice (object) with (object):     slice an object using a sharp object\n';

export function grammarKindOf(text: string): GrammarKind {
  return text.includes(CUR_PUT) ? 'current' : 'legacy';
}

function stripHelpBlock(text: string): string {
  return text.replace(/\n*action help \{[\s\S]*?\n\}\s*$/, '\n').replace(/\n*action help \{[\s\S]*?\n\}\n/, '\n');
}

/** Rewrite a grammar text into the wanted kind (three text replacements and the help action). */
export function convertGrammar(text: string, to: GrammarKind): string {
  const from = grammarKindOf(text);
  if (from === to) return text;
  if (to === 'legacy') {
    return stripHelpBlock(text.split(CUR_ARRIVE).join(LEG_ARRIVE).split(CUR_PUTFB).join(LEG_PUTFB).split(CUR_PUT).join(LEG_PUT));
  }
  const body = text.split(LEG_ARRIVE).join(CUR_ARRIVE).split(LEG_PUTFB).join(CUR_PUTFB).split(LEG_PUT).join(CUR_PUT);
  const help = `\naction help {\n    template :: "help";\n    feedback :: "#help.feedback#";\n\n    grammar :: """\n        {\n            "help.feedback": [\n                {\n                    "rhs": ${JSON.stringify(HELP_TEXT)}\n                }\n            ]\n        }\n    """;\n}\n`;
  return body.replace(/\s*$/, '\n') + help;
}

/** Replace the task sentence inside a grammar text. */
export function grammarTaskOf(text: string): string | undefined {
  const m = /"task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*"Your task is to: ((?:[^"\\]|\\.)*)"/.exec(text);
  return m ? JSON.parse(`"${m[1]}"`) : undefined;
}
export function withTask(text: string, task: string): string {
  return text.replace(
    /("task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*)"Your task is to: (?:[^"\\]|\\.)*"/,
    (_m, pre: string) => `${pre}${JSON.stringify(`Your task is to: ${task}`)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// demangling (ALFWorld's Demangler: ids sorted, counted per name, numbers handed out by pop())

export function demangle(ids: readonly string[]): string[] {
  const count = new Map<string, number>();
  const baseName = (id: string): string | null => {
    const i = id.indexOf('_bar_');
    if (i < 0) return null;
    let name = id.slice(0, i);
    if (id.includes('basin')) name += 'basin';
    return name;
  };
  for (const id of ids) {
    const n = baseName(id);
    if (n !== null) count.set(n, (count.get(n) ?? 0) + 1);
  }
  const next = new Map(count);
  return ids.map((id) => {
    const text = id
      .split('_bar_')
      .join('|')
      .split('_minus_')
      .join('-')
      .split('_plus_')
      .join('+')
      .split('_dot_')
      .join('.')
      .split('_comma_')
      .join(',');
    const bar = text.indexOf('|');
    if (bar < 0) return `${text} `;
    let name = text.slice(0, bar);
    if (id.includes('basin')) name += 'basin';
    const k = next.get(name)!;
    next.set(name, k - 1);
    return `${name} ${k}`;
  });
}

// ---------------------------------------------------------------------------------------------

const domainCache = new Map<string, DomainDef>();
export function parseDomainCached(text: string, file: string): DomainDef {
  let d = domainCache.get(text);
  if (!d) {
    try {
      d = parseDomain(text);
    } catch (e) {
      if (e instanceof PddlSyntaxError) throw new AlfworldBadGameError(e.message, file, e.field, e);
      throw e;
    }
    domainCache.set(text, d);
  }
  return d;
}

function effectPreds(e: Effect, out: Set<string>): void {
  if (e.t === 'and') e.xs.forEach((x) => effectPreds(x, out));
  else if (e.t === 'add' || e.t === 'del') out.add(e.p);
  else if (e.t === 'when') effectPreds(e.eff, out);
  else if (e.t === 'forall') effectPreds(e.eff, out);
}

export function buildGame(src: GameSource): Game {
  const file = src.file;
  const domain = parseDomainCached(src.domain, file);
  const prob = src.problem;
  const task = grammarTaskOf(src.grammar);
  if (task === undefined) throw new AlfworldBadGameError('grammar has no "task" rule with "Your task is to: …"', file, 'grammar');

  // types and predicates
  const typeNames: string[] = [];
  const typeIndex = new Map<string, number>();
  const addType = (t: string) => {
    if (!typeIndex.has(t)) {
      typeIndex.set(t, typeNames.length);
      typeNames.push(t);
    }
  };
  domain.types.forEach(addType);
  const predIndex = new Map<string, number>();
  const predArity: number[] = [];
  for (const p of domain.predicates) {
    if (p.params.length > 2) throw new AlfworldBadGameError(`predicate ${p.name} has arity > 2`, file, 'pddl_domain');
    predIndex.set(p.name, predArity.length);
    predArity.push(p.params.length);
  }
  const declared = new Map<string, string>();
  for (const o of prob.objects) {
    addType(o.type);
    declared.set(o.name.toLowerCase(), o.type.toLowerCase());
  }
  // entities: every argument of an initial fact (TextWorld's entity infos), sorted
  const entSet = new Set<string>();
  for (const f of prob.init) {
    if (!predIndex.has(f.p)) throw new AlfworldBadGameError(`unknown predicate "${f.p}" in an initial fact`, file, 'pddl_problem:init');
    if (f.args.length !== predArity[predIndex.get(f.p)!])
      throw new AlfworldBadGameError(`fact (${f.p} ${f.args.join(' ')}) has the wrong arity`, file, 'pddl_problem:init');
    for (const a of f.args) entSet.add(a.toLowerCase());
  }
  const ents = [...entSet].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  const entIndex = new Map<string, number>();
  ents.forEach((e, i) => entIndex.set(e, i));
  const entType = new Int32Array(ents.length);
  const entsByType: number[][] = typeNames.map(() => []);
  ents.forEach((e, i) => {
    const t = declared.get(e);
    if (t === undefined) throw new AlfworldBadGameError(`"${e}" is used in :init but not declared in :objects`, file, 'pddl_problem:objects');
    const ti = typeIndex.get(t)!;
    entType[i] = ti;
    entsByType[ti]!.push(i);
  });
  const names = demangle(ents);
  const nameToEnts = new Map<string, number[]>();
  names.forEach((n, i) => {
    const l = nameToEnts.get(n);
    if (l) l.push(i);
    else nameToEnts.set(n, [i]);
  });
  const fs = { S: ents.length + 1, nPreds: predArity.length };
  const lc: LogicCtx = { fs, predIndex, predArity, entIndex, entType, typeIndex, entsByType, nEnts: ents.length };

  const fluentNames = new Set<string>();
  for (const a of domain.actions) effectPreds(a.eff, fluentNames);
  const fluentPred = predArity.map((_, i) => false);
  for (const n of fluentNames) {
    const i = predIndex.get(n);
    if (i !== undefined) fluentPred[i] = true;
  }
  const stat: number[] = [];
  const init: number[] = [];
  for (const f of prob.init) {
    const p = predIndex.get(f.p)!;
    const a = f.args[0] !== undefined ? entIndex.get(f.args[0].toLowerCase())! : -1;
    const b = f.args[1] !== undefined ? entIndex.get(f.args[1].toLowerCase())! : -1;
    const k = factKey(fs, p, a, b);
    (fluentPred[p] ? init : stat).push(k);
  }
  const initSorted = [...new Set(init)].sort((x, y) => x - y);
  let goalQs: Query[];
  try {
    goalQs = compileQueries(lc, prob.goal, [], 'goal');
  } catch (e) {
    throw new AlfworldBadGameError((e as Error).message, file, 'pddl_problem:goal', e);
  }
  return {
    id: src.id,
    split: src.split,
    taskType: src.taskType,
    file,
    goal: task,
    walkthrough: src.walkthrough,
    lc,
    ents,
    names,
    typeNames,
    nameToEnts,
    stat: new FactIndex(fs, stat),
    fluentPred,
    init: initSorted,
    goalQs,
    goalFormula: prob.goal,
    src: { domain, grammarText: src.grammar },
    variants: {},
  };
}

// ---------------------------------------------------------------------------------------------
// grammar variant compilation

function slotOf(lc: LogicCtx, t: Term | undefined, params: string[]): number {
  if (t === undefined) return NONE;
  if ('v' in t) {
    const i = params.indexOf(t.v);
    if (i < 0) throw new Error(`effect uses unbound variable ?${t.v}`);
    return i;
  }
  const e = lc.entIndex.get(t.c);
  return e === undefined ? -(lc.nEnts + 2) : -(e + 1);
}

function compileEffects(g: Game, a: ActionDef): CEff[] {
  const out: CEff[] = [];
  const params = a.params.map((p) => p.name);
  const walk = (e: Effect, when: Query[] | null) => {
    if (e.t === 'and') e.xs.forEach((x) => walk(x, when));
    else if (e.t === 'when') {
      if (when) throw new Error('nested when');
      walk(e.eff, compileQueries(g.lc, e.cond, a.params, `${a.name}:when`));
    } else if (e.t === 'add' || e.t === 'del') {
      const p = g.lc.predIndex.get(e.p);
      if (p === undefined) throw new Error(`unknown predicate ${e.p} in effect of ${a.name}`);
      out.push({ add: e.t === 'add', p, a: slotOf(g.lc, e.args[0], params), b: slotOf(g.lc, e.args[1], params), when });
    } else if (e.t === 'forall') throw new Error(`forall effects are not supported (${a.name})`);
  };
  walk(a.eff, null);
  return out;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function compilePattern(syms: Sym[], params: string[]): { pattern: RegExp | null; slots: number[] } {
  let re = '^';
  const slots: number[] = [];
  for (const s of syms) {
    if (s.k === 'text') re += escapeRe(s.s);
    else if (s.k === 'eval' && s.alts.length === 1 && s.alts[0]!.length === 1) {
      const part = s.alts[0]![0]!;
      if (!('v' in part) || (part.attr !== '' && part.attr !== 'name')) return { pattern: null, slots: [] };
      const i = params.indexOf(part.v);
      if (i < 0) return { pattern: null, slots: [] };
      re += '(.+)';
      slots.push(i);
    } else if (s.k === 'list' && s.inner.length === 1 && s.inner[0]!.k === 'cond') {
      const c = s.inner[0]!;
      const e = c.expr[0];
      if (c.expr.length !== 1 || !e || e.k !== 'eval' || e.alts.length !== 1 || e.alts[0]!.length !== 1) return { pattern: null, slots: [] };
      const part = e.alts[0]![0]!;
      if (!('v' in part) || part.attr !== 'name') return { pattern: null, slots: [] };
      const i = params.indexOf(part.v);
      // every variable of the query must be a parameter (then the list has at most one item)
      const qvars = parseCondition(c.given).flatMap((l) => l.args.map((x) => x.name));
      if (i < 0 || !qvars.every((v) => params.includes(v))) return { pattern: null, slots: [] };
      re += '(.+)';
      slots.push(i);
    } else return { pattern: null, slots: [] };
  }
  return { pattern: new RegExp(`${re}$`), slots };
}

export function compileCondition(g: Game, cond: string): Query {
  const lits = parseCondition(cond);
  const f = {
    t: 'and' as const,
    xs: lits.map((l) => {
      const atom = { t: 'atom' as const, p: l.pred, args: l.args.map((a) => ({ v: a.name })) };
      return l.neg ? { t: 'not' as const, x: atom } : atom;
    }),
  };
  const params: { name: string; type: string }[] = [];
  for (const l of lits) for (const a of l.args) if (!params.some((p) => p.name === a.name)) params.push({ name: a.name, type: a.type });
  const qs = compileQueries(g.lc, f, params, `condition ${cond}`);
  return qs[0]!;
}

export function variant(g: Game, kind: GrammarKind): Variant {
  const have = g.variants[kind];
  if (have) return have;
  let tw: TwlGrammar;
  try {
    tw = parseTwl2(convertGrammar(g.src.grammarText, kind));
  } catch (e) {
    if (e instanceof GrammarSyntaxError) throw new AlfworldBadGameError(e.message, g.file, e.field, e);
    throw e;
  }
  let defs = g.src.domain.actions;
  if (kind === 'legacy') defs = defs.filter((a) => a.name !== 'help');
  else if (!defs.some((a) => a.name === 'help'))
    defs = [...defs, { name: 'help', params: [{ name: 'a', type: 'agent' }], pre: { t: 'true' }, eff: { t: 'noop' } }];
  const v: Variant = { kind, actions: [], rules: new Map(), queries: new Map() };
  try {
    for (const a of defs) {
      const tpl = tw.actions.get(a.name);
      if (!tpl) continue; // an action without a template has no command
      const params = a.params.map((p) => ({ name: p.name.toLowerCase(), type: p.type }));
      const template = parseRhs(tpl.template);
      const { pattern, slots } = compilePattern(template, params.map((p) => p.name));
      v.actions.push({
        name: a.name,
        params,
        pre: compileQueries(g.lc, a.pre, params, `action ${a.name}`),
        effects: compileEffects(g, a),
        template,
        feedback: parseRhs(tpl.feedback),
        pattern,
        slots,
      });
    }
    for (const [name, rules] of tw.rules) {
      v.rules.set(
        name,
        rules.map((r) => ({ cond: r.condition ? compileCondition(g, r.condition) : null, syms: parseRhs(r.rhs) })),
      );
    }
  } catch (e) {
    if (e instanceof AlfworldBadGameError) throw e;
    throw new AlfworldBadGameError((e as Error).message, g.file, 'grammar', e);
  }
  g.variants[kind] = v;
  return v;
}

/** Parse a game.tw-pddl JSON text into a GameSource (typed errors name file and field). */
export function sourceFromGameJson(text: string, file: string, meta: { id: string; split: string; taskType?: string }): GameSource {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new AlfworldBadGameError(`not JSON: ${(e as Error).message}`, file, '(root)', e);
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new AlfworldBadGameError('not a JSON object', file, '(root)');
  const d = data as Record<string, unknown>;
  for (const f of ['pddl_domain', 'grammar', 'pddl_problem'] as const) {
    if (typeof d[f] !== 'string' || (d[f] as string).length === 0) throw new AlfworldBadGameError(`missing or not a string`, file, f);
  }
  const wt = d.walkthrough ?? [];
  if (!Array.isArray(wt) || !wt.every((x) => typeof x === 'string')) throw new AlfworldBadGameError('not a list of strings', file, 'walkthrough');
  let problem: ProblemDef;
  try {
    problem = parseProblem(d.pddl_problem as string);
  } catch (e) {
    if (e instanceof PddlSyntaxError) throw new AlfworldBadGameError(e.message, file, e.field, e);
    throw e;
  }
  parseDomainCached(d.pddl_domain as string, file);
  return {
    id: meta.id,
    split: meta.split,
    taskType: meta.taskType ?? taskTypeOf(meta.id),
    file,
    domain: d.pddl_domain as string,
    grammar: d.grammar as string,
    problem,
    walkthrough: wt as string[],
  };
}

export const TASK_TYPES = [
  'pick_and_place_simple',
  'look_at_obj_in_light',
  'pick_clean_then_place_in_recep',
  'pick_heat_then_place_in_recep',
  'pick_cool_then_place_in_recep',
  'pick_two_obj_and_place',
] as const;
export type TaskType = (typeof TASK_TYPES)[number];

export function taskTypeOf(id: string): string {
  for (const t of TASK_TYPES) if (id.includes(`${t}-`)) return t;
  return 'unknown';
}
