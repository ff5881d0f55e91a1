/**
 * The ALFWorld step function: pure, state in → new state out. State is plain JSON-able data.
 */
import { AlfworldError } from './errors.ts';
import { World, factKey, solve, exists, holds, type Query } from './logic.ts';
import { variant, type CAction, type Game, type GrammarKind, type Variant } from './game.ts';
import type { Sym } from './grammar.ts';

/** Everything an episode needs to continue; JSON round-trips exactly. */
export interface AlfState {
  v: 1;
  game: string;
  grammar: GrammarKind;
  /** sorted fluent fact keys */
  facts: number[];
  /** env steps taken */
  steps: number;
  won: boolean;
  done: boolean;
  /** raw observation of the last step (for the repetition rule) */
  last: string;
  /** how many times in a row `last` was produced */
  repeats: number;
  protocol: Protocol;
}

export interface Protocol {
  /** episode ends (lost) after this many steps; 0 = no limit */
  stepLimit: number;
  /** append " AVAILABLE ACTIONS: a,b,…" to observations (AgentBench v0.2) */
  availableActions: boolean;
  /** map an inadmissible action to the closest admissible command (AgentBench v0.2: BLEU) */
  snap: boolean;
  /** end the episode (lost) after this many identical outputs in a row; 0 = off */
  repeatLimit: number;
  /** drop "You arrive at loc N. " as ReAct/AgentBench's process_ob does */
  stripArrive: boolean;
  /** drop the "-= Welcome to TextWorld, ALFRED! =-" banner from the first observation */
  dropBanner: boolean;
}

export const PROTOCOLS = {
  raw: { stepLimit: 0, availableActions: false, snap: false, repeatLimit: 0, stripArrive: false, dropBanner: false },
  react: { stepLimit: 49, availableActions: false, snap: false, repeatLimit: 0, stripArrive: true, dropBanner: true },
  agentbench: { stepLimit: 35, availableActions: true, snap: true, repeatLimit: 3, stripArrive: true, dropBanner: true },
} satisfies Record<string, Protocol>;
export type ProtocolName = keyof typeof PROTOCOLS;

export interface ResetOpts {
  grammar?: GrammarKind;
  protocol?: ProtocolName | Partial<Protocol>;
}
export interface StepInfo {
  won: boolean;
  /** the command that was executed (after snapping) */
  action: string;
  /** the PDDL action that ran, or null for "Nothing happens." */
  pddl: string | null;
  /** the observation before protocol post-processing */
  raw: string;
  /** why the episode ended, if it did */
  end?: 'won' | 'step_limit' | 'repeat';
  admissible?: string[];
}
export interface ResetResult {
  state: AlfState;
  observation: string;
  info: { raw: string; goal: string; taskType: string; admissible?: string[] };
}
export interface StepResult {
  state: AlfState;
  observation: string;
  reward: number;
  done: boolean;
  info: StepInfo;
}

export function resolveProtocol(p: ResetOpts['protocol']): Protocol {
  if (p === undefined) return { ...PROTOCOLS.react };
  if (typeof p === 'string') {
    const base = PROTOCOLS[p];
    if (!base) throw new AlfworldError('ALFWORLD_BAD_OPTION', `unknown protocol "${p}"; use raw, react or agentbench, or give a protocol object`, { field: 'protocol' });
    return { ...base };
  }
  return { ...PROTOCOLS.react, ...p };
}

// ---------------------------------------------------------------------------------------------
// derivation

type Ctx = Record<string, number>;

export function worldOf(g: Game, facts: readonly number[]): World {
  return new World(g.stat, facts, g.fluentPred);
}

function attr(g: Game, e: number, a: string): string {
  switch (a) {
    case '':
    case 'name':
      return g.names[e] ?? '';
    case 'id':
      return g.ents[e] ?? '';
    case 'indefinite':
      return 'a';
    case 'definite':
      return 'the';
    case 'type':
      return g.typeNames[g.lc.entType[e]!] ?? '';
    default:
      return '';
  }
}

function bindingFrom(q: Query, ctx: Ctx): Int32Array {
  const b = new Int32Array(q.varNames.length);
  for (let i = 0; i < b.length; i++) b[i] = ctx[q.varNames[i]!] ?? -1;
  return b;
}

function queryOf(g: Game, v: Variant, text: string): Query {
  let q = v.queries.get(text);
  if (!q) {
    // compile lazily; cached on the variant
    q = compileConditionCached(g, text);
    v.queries.set(text, q);
  }
  return q;
}
import { compileCondition } from './game.ts';
import { StateMemo, factsKey } from './state-memo.ts';
function compileConditionCached(g: Game, text: string): Query {
  return compileCondition(g, text);
}

class Deriver {
  constructor(readonly g: Game, readonly v: Variant, readonly w: World) {}

  cond(q: Query, ctx: Ctx): boolean {
    return exists(this.g.lc, this.w, q, bindingFrom(q, ctx));
  }

  nt(name: string, ctx: Ctx): string {
    const rules = this.v.rules.get(name);
    if (!rules || rules.length === 0) throw new Error(`grammar has no rule "#${name}#"`);
    for (const r of rules) {
      if (r.cond && !this.cond(r.cond, ctx)) continue;
      return this.syms(r.syms, ctx);
    }
    throw new Error(`no applicable alternative for "#${name}#"`);
  }

  /** items of a conditional symbol: one per assignment of its query, in entity order */
  items(s: Extract<Sym, { k: 'cond' }>, ctx: Ctx): string[] {
    const q = queryOf(this.g, this.v, s.given);
    const init = bindingFrom(q, ctx);
    const free: number[] = [];
    for (let i = 0; i < init.length; i++) if (init[i]! < 0) free.push(i);
    const sols: Int32Array[] = [];
    solve(this.g.lc, this.w, q, init, (b) => {
      sols.push(b.slice());
      return false;
    });
    sols.sort((x, y) => {
      for (const i of free) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return 0;
    });
    return sols.map((b) => {
      const c: Ctx = { ...ctx };
      for (const i of free) c[q.varNames[i]!] = b[i]!;
      return this.syms(s.expr, c);
    });
  }

  list(items: string[], ctx: Ctx): string {
    if (items.length === 0) return this.nt('list_empty', ctx);
    if (items.length === 1) return items[0]!;
    const sep = this.nt('list_separator', ctx);
    const last = this.nt('list_last_separator', ctx);
    return items.slice(0, -1).join(sep) + last + items[items.length - 1]!;
  }

  syms(ss: readonly Sym[], ctx: Ctx): string {
    let out = '';
    for (const s of ss) {
      switch (s.k) {
        case 'text':
          out += s.s;
          break;
        case 'nt':
          out += this.nt(s.name, ctx);
          break;
        case 'eval': {
          let val = '';
          for (const alt of s.alts) {
            val = '';
            for (const p of alt) {
              if ('lit' in p) val += p.lit;
              else {
                const e = ctx[p.v];
                val += e === undefined ? `{${p.v}}` : attr(this.g, e, p.attr);
              }
            }
            if (val) break;
          }
          out += val;
          break;
        }
        case 'cond':
          out += this.items(s, ctx).join('');
          break;
        case 'list': {
          const inner = s.inner[0];
          out += inner && inner.k === 'cond' ? this.list(this.items(inner, ctx), ctx) : this.syms(s.inner, ctx);
          break;
        }
      }
    }
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// actions

export interface Grounded {
  action: CAction;
  /** entity per parameter */
  args: number[];
}

function ctxOf(a: CAction, args: readonly number[]): Ctx {
  const c: Ctx = {};
  a.params.forEach((p, i) => (c[p.name] = args[i]!));
  return c;
}

export function commandOf(g: Game, v: Variant, w: World, gr: Grounded): string {
  return new Deriver(g, v, w).syms(gr.action.template, ctxOf(gr.action, gr.args));
}

/** All applicable grounded actions, in domain order then parameter order (deduplicated). */
export function applicable(g: Game, v: Variant, w: World): Grounded[] {
  const out: Grounded[] = [];
  for (const a of v.actions) {
    const seen = new Set<string>();
    const np = a.params.length;
    for (const q of a.pre) {
      const b = new Int32Array(q.varNames.length).fill(-1);
      // parameters must be bound too: solve() enumerates unbound ones by type at the end
      solve(g.lc, w, q, b, (sol) => {
        const args = Array.from(sol.subarray(0, np));
        const key = args.join(',');
        if (!seen.has(key)) {
          seen.add(key);
          out.push({ action: a, args });
        }
        return false;
      });
    }
  }
  return out;
}

function admissibleOf(g: Game, v: Variant, w: World): string[] {
  const cmds = new Set<string>();
  const d = new Deriver(g, v, w);
  for (const gr of applicable(g, v, w)) cmds.add(d.syms(gr.action.template, ctxOf(gr.action, gr.args)));
  return [...cmds].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
}

/** Find the grounded action a command names, or null. */
export function parseCommand(g: Game, v: Variant, w: World, command: string): Grounded | null {
  let needFallback = false;
  for (const a of v.actions) {
    if (!a.pattern) {
      needFallback = true;
      continue;
    }
    const m = a.pattern.exec(command);
    if (!m) continue;
    const choices: number[][] = [];
    let ok = true;
    for (let i = 0; i < a.slots.length; i++) {
      const ents = g.nameToEnts.get(m[i + 1]!);
      if (!ents) {
        ok = false;
        break;
      }
      choices.push(ents);
    }
    if (!ok) continue;
    // cartesian product of candidate entities per slot (names are unique in practice)
    const combos: number[][] = [[]];
    for (const c of choices) {
      const next: number[][] = [];
      for (const prefix of combos) for (const e of c) next.push([...prefix, e]);
      combos.splice(0, combos.length, ...next);
    }
    for (const combo of combos) {
      for (const q of a.pre) {
        const b = new Int32Array(q.varNames.length).fill(-1);
        let clash = false;
        a.slots.forEach((pi, i) => {
          const e = combo[i]!;
          if (b[pi]! >= 0 && b[pi] !== e) clash = true;
          b[pi] = e;
        });
        if (clash) continue;
        let found: number[] | null = null;
        solve(g.lc, w, q, b, (sol) => {
          found = Array.from(sol.subarray(0, a.params.length));
          return true;
        });
        if (found) {
          const gr: Grounded = { action: a, args: found };
          if (commandOf(g, v, w, gr) === command) return gr;
        }
      }
    }
  }
  if (needFallback) {
    const d = new Deriver(g, v, w);
    for (const gr of applicable(g, v, w)) {
      if (gr.action.pattern) continue;
      if (d.syms(gr.action.template, ctxOf(gr.action, gr.args)) === command) return gr;
    }
  }
  return null;
}

/** Apply a grounded action's effects (conditional effects read the old state; adds win). */
export function applyAction(g: Game, w: World, facts: readonly number[], gr: Grounded): number[] {
  const fs = g.lc.fs;
  const arg = (x: number): number => (x >= 0 ? gr.args[x]! : x < -1e8 ? -1 : -x - 1);
  const adds: number[] = [];
  const dels = new Set<number>();
  for (const e of gr.action.effects) {
    if (e.when && !holds(g.lc, w, e.when, (b) => gr.args.forEach((x, i) => (b[i] = x)))) continue;
    const k = factKey(fs, e.p, arg(e.a), arg(e.b));
    if (e.add) adds.push(k);
    else dels.add(k);
  }
  const out = new Set<number>();
  for (const k of facts) if (!dels.has(k)) out.add(k);
  for (const k of adds) out.add(k);
  return [...out].sort((x, y) => x - y);
}

export function isWon(g: Game, w: World): boolean {
  return holds(g.lc, w, g.goalQs);
}

// ---------------------------------------------------------------------------------------------
// env contract

function post(p: Protocol, raw: string): string {
  if (p.stripArrive && raw.startsWith('You arrive at loc ')) return raw.slice(raw.indexOf('. ') + 2);
  return raw;
}

export function reset(g: Game, opts: ResetOpts = {}): ResetResult {
  const grammar = opts.grammar ?? 'legacy';
  const protocol = resolveProtocol(opts.protocol);
  const v = variant(g, grammar);
  const w = worldOf(g, g.init);
  const raw = new Deriver(g, v, w).nt('intro', {});
  let observation = raw;
  if (protocol.dropBanner) {
    // ReAct/AgentBench: '\n'.join(ob.split('\n\n')[1:])
    observation = raw.split('\n\n').slice(1).join('\n');
  }
  const state: AlfState = {
    v: 1,
    game: g.id,
    grammar,
    facts: g.init.slice(),
    steps: 0,
    won: isWon(g, w),
    done: false,
    last: '',
    repeats: 0,
    protocol,
  };
  const info: ResetResult['info'] = { raw, goal: g.goal, taskType: g.taskType };
  if (protocol.availableActions) {
    const adm = admissibleOf(g, v, w);
    info.admissible = adm;
    observation += ` AVAILABLE ACTIONS: ${adm.join(',')}`;
  }
  return { state, observation, info };
}

const admissibleMemo = new StateMemo<readonly string[]>(4096);

export function admissible(g: Game, state: AlfState): string[] {
  checkState(g, state);
  return admissibleMemo.get(g, factsKey(state.grammar, state.facts), () => admissibleOf(g, variant(g, state.grammar), worldOf(g, state.facts))).slice();
}

export function checkState(g: Game, s: AlfState): void {
  if (!s || s.v !== 1 || s.game !== g.id || !Array.isArray(s.facts))
    throw new AlfworldError('ALFWORLD_BAD_STATE', `state does not belong to game ${g.id}; pass the state that reset() or step() returned for this game`, { field: 'state' });
}

export function step(g: Game, state: AlfState, action: string): StepResult {
  checkState(g, state);
  const p = state.protocol;
  const v = variant(g, state.grammar);
  const w = worldOf(g, state.facts);
  let command = action.trim();
  let adm: string[] | undefined;
  if (p.snap) {
    command = command.toLowerCase().split('\n')[0]!.trim();
    adm = admissibleOf(g, v, w);
    if (!adm.includes(command)) command = snapBleu(command, adm);
  }
  const gr = state.done ? null : parseCommand(g, v, w, command);
  let facts = state.facts;
  let raw: string;
  let won = state.won;
  let w2 = w;
  if (gr) {
    facts = applyAction(g, w, state.facts, gr);
    w2 = worldOf(g, facts);
    raw = new Deriver(g, v, w2).syms(gr.action.feedback, ctxOf(gr.action, gr.args));
    won = isWon(g, w2);
  } else raw = 'Nothing happens.';
  const steps = state.steps + 1;
  const repeats = raw === state.last ? state.repeats + 1 : 1;
  let end: StepInfo['end'];
  if (won) end = 'won';
  else if (p.repeatLimit > 0 && repeats >= p.repeatLimit) end = 'repeat';
  else if (p.stepLimit > 0 && steps >= p.stepLimit) end = 'step_limit';
  const done = state.done || end !== undefined;
  let observation = post(p, raw);
  const info: StepInfo = { won, action: command, pddl: gr ? `${gr.action.name}(${gr.args.map((e) => g.ents[e]).join(', ')})` : null, raw };
  if (end) info.end = end;
  if (p.availableActions) {
    const a2 = admissibleOf(g, v, w2);
    info.admissible = a2;
    observation += ` AVAILABLE ACTIONS: ${a2.join(',')}`;
  }
  const next: AlfState = { ...state, facts, steps, won, done, last: raw, repeats };
  return { state: next, observation, reward: won && !state.won ? 1 : 0, done, info };
}

// ---------------------------------------------------------------------------------------------
// AgentBench's snapping: nltk sentence_bleu(choice.split(), action.split(), method4), argmax, > 0.01

function ngrams(t: string[], n: number): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i + n <= t.length; i++) {
    const k = t.slice(i, i + n).join('\u0000');
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  return m;
}

/** nltk.translate.bleu_score.sentence_bleu with SmoothingFunction().method4 (k = 5), 4-gram. */
export function bleu(reference: string, hypothesis: string): number {
  const ref = reference.split(/\s+/).filter(Boolean);
  const hyp = hypothesis.split(/\s+/).filter(Boolean);
  const hl = hyp.length;
  const num: number[] = [];
  const den: number[] = [];
  for (let n = 1; n <= 4; n++) {
    const h = ngrams(hyp, n);
    const r = ngrams(ref, n);
    let clipped = 0;
    let total = 0;
    for (const [k, c] of h) {
      clipped += Math.min(c, r.get(k) ?? 0);
      total += c;
    }
    num.push(clipped);
    den.push(Math.max(1, total));
  }
  if (num[0] === 0) return 0;
  const rl = ref.length;
  const bp = hl > rl ? 1 : hl === 0 ? 0 : Math.exp(1 - rl / hl);
  let s = 0;
  let incvnt = 1;
  for (let i = 0; i < 4; i++) {
    let p = num[i]! / den[i]!;
    if (num[i] === 0) {
      if (hl <= 1) return Number.NaN; // nltk raises (log of 0); AgentBench then keeps the raw action
      // nltk >= 3.6 method4: 1 / (2^incvnt * k / ln(len(hyp))), k = 5
      p = 1 / ((2 ** incvnt * 5) / Math.log(hl)) / den[i]!;
      incvnt++;
    }
    s += 0.25 * Math.log(p);
  }
  return bp * Math.exp(s);
}

export function snapBleu(action: string, choices: readonly string[]): string {
  if (choices.length === 0) return action;
  let best = -1;
  let bestScore = -Infinity;
  for (let i = 0; i < choices.length; i++) {
    const sc = bleu(choices[i]!, action);
    if (Number.isNaN(sc)) return action;
    if (sc > bestScore) {
      bestScore = sc;
      best = i;
    }
  }
  return bestScore > 0.01 ? choices[best]! : action;
}
