/**
 * Facts, worlds and conjunctive queries over a compiled game.
 *
 * A fact is a number: key(p, a, b) = (p * S + a + 1) * S + b + 1 with S = entities + 1 (arity <= 2;
 * a missing argument is 0). Static facts (predicates no action changes) live in the game; the
 * fluent ones are the state, a sorted number[] — plain, JSON-able data.
 */
import type { Formula, Term } from './pddl.ts';

export interface FactSpace {
  /** S = number of entities + 1 */
  S: number;
  nPreds: number;
}

export function factKey(fs: FactSpace, p: number, a: number, b: number): number {
  return (p * fs.S + a + 1) * fs.S + b + 1;
}
export function decodeFact(fs: FactSpace, k: number): [number, number, number] {
  const b = (k % fs.S) - 1;
  const r = Math.floor(k / fs.S);
  const a = (r % fs.S) - 1;
  const p = Math.floor(r / fs.S);
  return [p, a, b];
}

/** Indexed set of facts: membership, by predicate, by first and by second argument. */
export class FactIndex {
  readonly set = new Set<number>();
  readonly byPred: number[][] = [];
  readonly by0 = new Map<number, number[]>();
  readonly by1 = new Map<number, number[]>();
  constructor(readonly fs: FactSpace, keys: Iterable<number>) {
    for (let p = 0; p < fs.nPreds; p++) this.byPred.push([]);
    for (const k of keys) this.add(k);
  }
  add(k: number): void {
    if (this.set.has(k)) return;
    this.set.add(k);
    const S = this.fs.S;
    const b = k % S;
    const r = (k - b) / S;
    const a = r % S;
    const p = (r - a) / S;
    this.byPred[p]!.push(k);
    const k0 = p * S + a;
    const k1 = p * S + b;
    let l0 = this.by0.get(k0);
    if (!l0) this.by0.set(k0, (l0 = []));
    l0.push(k);
    let l1 = this.by1.get(k1);
    if (!l1) this.by1.set(k1, (l1 = []));
    l1.push(k);
  }
}

const EMPTY: number[] = [];

function lowerBound(a: Int32Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A state's view: static facts of the game (indexed once) plus the fluent facts of the state,
 * kept as a sorted Int32Array: membership and "p(a, ·)" are binary searches, nothing is built.
 */
export class World {
  readonly keys: Int32Array;
  constructor(readonly stat: FactIndex, keys: readonly number[], readonly fluentPred: readonly boolean[]) {
    this.keys = Int32Array.from(keys);
  }
  hasFluent(k: number): boolean {
    const i = lowerBound(this.keys, k);
    return i < this.keys.length && this.keys[i] === k;
  }
  has(k: number): boolean {
    return this.hasFluent(k) || this.stat.set.has(k);
  }
  /** facts of predicate p with optional bound arguments (-1 = free) */
  candidates(p: number, a: number, b: number): ArrayLike<number> {
    const S = this.stat.fs.S;
    if (!this.fluentPred[p]) {
      const idx = this.stat;
      if (a >= 0) return idx.by0.get(p * S + a + 1) ?? EMPTY;
      if (b >= 0) return idx.by1.get(p * S + b + 1) ?? EMPTY;
      return idx.byPred[p] ?? EMPTY;
    }
    if (a >= 0) {
      const lo = (p * S + a + 1) * S;
      return this.keys.subarray(lowerBound(this.keys, lo), lowerBound(this.keys, lo + S));
    }
    const lo = p * S * S;
    const range = this.keys.subarray(lowerBound(this.keys, lo), lowerBound(this.keys, lo + S * S));
    if (b < 0) return range;
    const out: number[] = [];
    for (let i = 0; i < range.length; i++) if (range[i]! % S === b + 1) out.push(range[i]!);
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Conjunctive queries

/** argument: >= 0 variable index; < 0 constant entity -(e + 1); arity-1 atoms use NONE for b */
export const NONE = -1_000_000_000;
export interface Lit {
  kind: 'pos' | 'neg' | 'eq' | 'neq' | 'filter';
  p: number;
  a: number;
  b: number;
  /** for filters: the formula and the variable names it reads */
  f?: Formula;
  fvars?: string[];
  vars: number[];
}
export interface Query {
  varNames: string[];
  /** required entity type per variable (-1: any) */
  varTypes: number[];
  lits: Lit[];
}

export interface LogicCtx {
  fs: FactSpace;
  predIndex: Map<string, number>;
  predArity: number[];
  entIndex: Map<string, number>;
  entType: Int32Array;
  typeIndex: Map<string, number>;
  entsByType: number[][];
  nEnts: number;
}

type RawLit =
  | { kind: 'pos' | 'neg'; p: string; args: Term[] }
  | { kind: 'eq' | 'neq'; args: Term[] }
  | { kind: 'filter'; f: Formula; free: string[] };
interface RawConj {
  lits: RawLit[];
  vars: { name: string; type: string }[];
}

let freshCounter = 0;

function freeVars(f: Formula, bound: Set<string>, out: Set<string>): void {
  const t = (x: Term) => {
    if ('v' in x && !bound.has(x.v)) out.add(x.v);
  };
  switch (f.t) {
    case 'true':
      return;
    case 'atom':
      f.args.forEach(t);
      return;
    case 'eq':
      t(f.a);
      t(f.b);
      return;
    case 'not':
      freeVars(f.x, bound, out);
      return;
    case 'and':
    case 'or':
      for (const x of f.xs) freeVars(x, bound, out);
      return;
    case 'imply':
      freeVars(f.a, bound, out);
      freeVars(f.b, bound, out);
      return;
    case 'exists':
    case 'forall': {
      const nb = new Set(bound);
      for (const v of f.vars) nb.add(v.name);
      freeVars(f.x, nb, out);
      return;
    }
  }
}

function renameTerm(x: Term, ren: Map<string, string>): Term {
  return 'v' in x && ren.has(x.v) ? { v: ren.get(x.v)! } : x;
}
function renameFormula(f: Formula, ren: Map<string, string>): Formula {
  switch (f.t) {
    case 'true':
      return f;
    case 'atom':
      return { t: 'atom', p: f.p, args: f.args.map((a) => renameTerm(a, ren)) };
    case 'eq':
      return { t: 'eq', a: renameTerm(f.a, ren), b: renameTerm(f.b, ren) };
    case 'not':
      return { t: 'not', x: renameFormula(f.x, ren) };
    case 'and':
    case 'or':
      return { t: f.t, xs: f.xs.map((x) => renameFormula(x, ren)) };
    case 'imply':
      return { t: 'imply', a: renameFormula(f.a, ren), b: renameFormula(f.b, ren) };
    case 'exists':
    case 'forall': {
      const inner = new Map(ren);
      for (const v of f.vars) inner.delete(v.name);
      return { t: f.t, vars: f.vars, x: renameFormula(f.x, inner) };
    }
  }
}

function cross(a: RawConj[], b: RawConj[]): RawConj[] {
  const out: RawConj[] = [];
  for (const x of a) for (const y of b) out.push({ lits: [...x.lits, ...y.lits], vars: [...x.vars, ...y.vars] });
  return out;
}

/** Disjunctive normal form; existentials become fresh variables, universals become filters. */
export function toDNF(f: Formula, neg = false): RawConj[] {
  switch (f.t) {
    case 'true':
      return neg ? [] : [{ lits: [], vars: [] }];
    case 'atom':
      return [{ lits: [{ kind: neg ? 'neg' : 'pos', p: f.p, args: f.args }], vars: [] }];
    case 'eq':
      return [{ lits: [{ kind: neg ? 'neq' : 'eq', args: [f.a, f.b] }], vars: [] }];
    case 'not':
      return toDNF(f.x, !neg);
    case 'imply':
      return toDNF({ t: 'or', xs: [{ t: 'not', x: f.a }, f.b] }, neg);
    case 'and':
    case 'or': {
      const conj = (f.t === 'and') !== neg;
      if (conj) {
        let acc: RawConj[] = [{ lits: [], vars: [] }];
        for (const x of f.xs) acc = cross(acc, toDNF(x, neg));
        return acc;
      }
      return f.xs.flatMap((x) => toDNF(x, neg));
    }
    case 'exists':
    case 'forall': {
      if ((f.t === 'exists') !== neg) {
        const ren = new Map<string, string>();
        const vars = f.vars.map((v) => {
          const n = `${v.name}#${++freshCounter}`;
          ren.set(v.name, n);
          return { name: n, type: v.type };
        });
        return toDNF(renameFormula(f.x, ren), neg).map((c) => ({ lits: c.lits, vars: [...vars, ...c.vars] }));
      }
      const fv = new Set<string>();
      freeVars(f, new Set(), fv);
      const g: Formula = neg ? { t: 'not', x: f } : f;
      return [{ lits: [{ kind: 'filter', f: g, free: [...fv] }], vars: [] }];
    }
  }
}

/** Compile a formula to queries (one per DNF disjunct) whose first variables are `params`. */
export function compileQueries(lc: LogicCtx, f: Formula, params: { name: string; type: string }[], where: string): Query[] {
  return toDNF(f).map((c) => {
    const varNames = params.map((p) => p.name);
    const varTypes = params.map((p) => lc.typeIndex.get(p.type) ?? -1);
    const vi = (n: string, type?: string): number => {
      let i = varNames.indexOf(n);
      if (i < 0) {
        i = varNames.length;
        varNames.push(n);
        varTypes.push(type !== undefined ? (lc.typeIndex.get(type) ?? -1) : -1);
      }
      return i;
    };
    for (const v of c.vars) vi(v.name, v.type);
    const arg = (t: Term | undefined): number => {
      if (t === undefined) return NONE;
      if ('v' in t) return vi(t.v);
      const e = lc.entIndex.get(t.c);
      // an unknown constant matches nothing; use an impossible entity
      return e === undefined ? -(lc.nEnts + 1) - 1 : -(e + 1);
    };
    const lits: Lit[] = c.lits.map((l) => {
      if (l.kind === 'filter') {
        return { kind: 'filter', p: -1, a: NONE, b: NONE, f: l.f, fvars: l.free, vars: l.free.map((n) => vi(n)) };
      }
      if (l.kind === 'eq' || l.kind === 'neq') {
        const a = arg(l.args[0]);
        const b = arg(l.args[1]);
        return { kind: l.kind, p: -1, a, b, vars: [a, b].filter((x) => x >= 0) };
      }
      const lp = l as { kind: 'pos' | 'neg'; p: string; args: Term[] };
      const p = lc.predIndex.get(lp.p);
      if (p === undefined) throw new Error(`unknown predicate "${lp.p}" in ${where}`);
      if (l.args.length > 2) throw new Error(`predicate "${lp.p}" has arity > 2 in ${where}`);
      const a = arg(l.args[0]);
      const b = arg(l.args[1]);
      return { kind: l.kind, p, a, b, vars: [a, b].filter((x) => x >= 0 && x !== NONE) };
    });
    return { varNames, varTypes, lits };
  });
}

function val(binding: Int32Array, x: number): number {
  return x >= 0 ? binding[x]! : x === NONE ? -1 : -x - 1;
}

/** Generic evaluation of a (filter) formula under an environment. */
export function evalFormula(lc: LogicCtx, w: World, f: Formula, env: Map<string, number>): boolean {
  const tv = (t: Term): number => ('v' in t ? (env.get(t.v) ?? -2) : (lc.entIndex.get(t.c) ?? -3));
  switch (f.t) {
    case 'true':
      return true;
    case 'atom': {
      const p = lc.predIndex.get(f.p);
      if (p === undefined) return false;
      const a = f.args[0] ? tv(f.args[0]) : -1;
      const b = f.args[1] ? tv(f.args[1]) : -1;
      return w.has(factKey(lc.fs, p, a, b));
    }
    case 'eq':
      return tv(f.a) === tv(f.b);
    case 'not':
      return !evalFormula(lc, w, f.x, env);
    case 'and':
      return f.xs.every((x) => evalFormula(lc, w, x, env));
    case 'or':
      return f.xs.some((x) => evalFormula(lc, w, x, env));
    case 'imply':
      return !evalFormula(lc, w, f.a, env) || evalFormula(lc, w, f.b, env);
    case 'exists':
    case 'forall': {
      const rec = (i: number): boolean => {
        if (i === f.vars.length) return evalFormula(lc, w, f.x, env);
        const v = f.vars[i]!;
        const t = lc.typeIndex.get(v.type);
        const dom = t === undefined ? [...Array(lc.nEnts).keys()] : (lc.entsByType[t] ?? []);
        const saved = env.get(v.name);
        let res = f.t === 'forall';
        for (const e of dom) {
          env.set(v.name, e);
          const r = rec(i + 1);
          if (f.t === 'exists' && r) {
            res = true;
            break;
          }
          if (f.t === 'forall' && !r) {
            res = false;
            break;
          }
        }
        if (saved === undefined) env.delete(v.name);
        else env.set(v.name, saved);
        return res;
      };
      return rec(0);
    }
  }
}

function bound(binding: Int32Array, x: number): boolean {
  return x < 0 || binding[x]! >= 0;
}

function checkReady(lc: LogicCtx, w: World, q: Query, binding: Int32Array, used: Uint8Array): boolean {
  const lits = q.lits;
  for (let i = 0; i < lits.length; i++) {
    const l = lits[i]!;
    if (l.kind === 'pos' || used[i]) continue;
    let ready = true;
    for (let j = 0; j < l.vars.length; j++) if (binding[l.vars[j]!]! < 0) ready = false;
    if (!ready) continue;
    let ok: boolean;
    if (l.kind === 'neg') ok = !w.has(factKey(lc.fs, l.p, val(binding, l.a), val(binding, l.b)));
    else if (l.kind === 'eq') ok = val(binding, l.a) === val(binding, l.b);
    else if (l.kind === 'neq') ok = val(binding, l.a) !== val(binding, l.b);
    else {
      const env = new Map<string, number>();
      for (let j = 0; j < l.fvars!.length; j++) env.set(l.fvars![j]!, binding[l.vars[j]!]!);
      ok = evalFormula(lc, w, l.f!, env);
    }
    if (!ok) return false;
  }
  return true;
}

function typeOk(lc: LogicCtx, q: Query, v: number, e: number): boolean {
  const t = q.varTypes[v]!;
  return t < 0 || lc.entType[e] === t;
}

function solveRec(
  lc: LogicCtx,
  w: World,
  q: Query,
  binding: Int32Array,
  used: Uint8Array,
  visit: (b: Int32Array) => boolean,
): boolean {
  if (!checkReady(lc, w, q, binding, used)) return false;
  const lits = q.lits;
  const n = lits.length;
  let best = -1;
  let bestScore = 99;
  for (let i = 0; i < n; i++) {
    if (used[i]) continue;
    const l = lits[i]!;
    if (l.kind !== 'pos') continue;
    const score = (bound(binding, l.a) ? 0 : 2) + (l.b === NONE || bound(binding, l.b) ? 0 : 1);
    if (score < bestScore) {
      bestScore = score;
      best = i;
      if (score === 0) break;
    }
  }
  if (best < 0) {
    let v = -1;
    for (let i = 0; i < binding.length; i++) {
      if (binding[i]! < 0) {
        v = i;
        break;
      }
    }
    if (v < 0) return visit(binding);
    const t = q.varTypes[v]!;
    const dom = t >= 0 ? (lc.entsByType[t] ?? EMPTY) : [...Array(lc.nEnts).keys()];
    for (let i = 0; i < dom.length; i++) {
      binding[v] = dom[i]!;
      if (solveRec(lc, w, q, binding, used, visit)) {
        binding[v] = -1;
        return true;
      }
    }
    binding[v] = -1;
    return false;
  }
  const l = lits[best]!;
  used[best] = 1;
  let stop = false;
  if (bestScore === 0) {
    if (w.has(factKey(lc.fs, l.p, val(binding, l.a), l.b === NONE ? -1 : val(binding, l.b))))
      stop = solveRec(lc, w, q, binding, used, visit);
  } else {
    const S = lc.fs.S;
    const a0 = bound(binding, l.a) ? val(binding, l.a) : -1;
    const b0 = l.b === NONE ? -1 : bound(binding, l.b) ? val(binding, l.b) : -1;
    const cands = w.candidates(l.p, a0, b0);
    const va = l.a >= 0 && binding[l.a]! < 0 ? l.a : -1;
    const vb = l.b >= 0 && l.b !== NONE && binding[l.b]! < 0 ? l.b : -1;
    for (let ci = 0; ci < cands.length && !stop; ci++) {
      const k = cands[ci]!;
      const fb = (k % S) - 1;
      const fa = (Math.floor(k / S) % S) - 1;
      if (b0 >= 0 && fb !== b0) continue;
      if (a0 >= 0 && fa !== a0) continue;
      if (va >= 0 && !typeOk(lc, q, va, fa)) continue;
      if (vb >= 0 && !typeOk(lc, q, vb, fb)) continue;
      if (va >= 0 && va === vb && fa !== fb) continue;
      if (va >= 0) binding[va] = fa;
      if (vb >= 0) binding[vb] = fb;
      stop = solveRec(lc, w, q, binding, used, visit);
      if (va >= 0) binding[va] = -1;
      if (vb >= 0) binding[vb] = -1;
    }
  }
  used[best] = 0;
  return stop;
}

/**
 * Enumerate the assignments of `q` in `w` extending `binding` (-1 = unbound). `visit` gets the
 * binding (do not keep it); return true from it to stop. Returns true if stopped.
 */
export function solve(lc: LogicCtx, w: World, q: Query, binding: Int32Array, visit: (b: Int32Array) => boolean): boolean {
  return solveRec(lc, w, q, binding, new Uint8Array(q.lits.length), visit);
}

const STOP = (): boolean => true;
/** is there any assignment? */
export function exists(lc: LogicCtx, w: World, q: Query, binding: Int32Array): boolean {
  return solveRec(lc, w, q, binding, new Uint8Array(q.lits.length), STOP);
}

/** true if any disjunct has an assignment */
export function holds(lc: LogicCtx, w: World, qs: readonly Query[], init?: (b: Int32Array) => void): boolean {
  for (const q of qs) {
    const b = new Int32Array(q.varNames.length).fill(-1);
    if (init) init(b);
    if (exists(lc, w, q, b)) return true;
  }
  return false;
}
