/**
 * The oracle: the next action towards the goal from ANY reachable state (not a walkthrough
 * replay). It reads the task structure off the goal formula (object type, receptacle type,
 * clean/heat/cool, pick-two, lamp), looks at the full state and plans greedily:
 * put away a useless held object → fetch a needed object (go, open, take) → transform it at the
 * right appliance → go to the target receptacle (open it) → put it; for look_at_obj_in_light:
 * fetch the object, go to a lamp, use it.
 */
import type { Formula } from './pddl.ts';
import { factKey, type World } from './logic.ts';
import type { Game, GrammarKind } from './game.ts';
import { checkState, worldOf, type AlfState } from './engine.ts';
import { StateMemo, factsKey } from './state-memo.ts';

export interface TaskSpec {
  otype: string;
  rtype: string | null;
  transform: 'clean' | 'heat' | 'cool' | null;
  count: number;
  lampType: string | null;
}

const specCache = new WeakMap<Game, TaskSpec>();

/** Read the task's parameters off its goal formula. */
export function taskSpec(g: Game, goal: Formula): TaskSpec {
  const hit = specCache.get(g);
  if (hit) return hit;
  const objType = new Map<string, string>();
  const recType = new Map<string, string>();
  const toggled = new Set<string>();
  let transform: TaskSpec['transform'] = null;
  const walk = (f: Formula) => {
    switch (f.t) {
      case 'atom': {
        const v = f.args[0] && 'v' in f.args[0] ? f.args[0].v : null;
        const c = f.args[1] && 'c' in f.args[1] ? f.args[1].c : null;
        if (f.p === 'objecttype' && v && c) objType.set(v, c);
        else if (f.p === 'receptacletype' && v && c) recType.set(v, c);
        else if ((f.p === 'istoggled' || f.p === 'toggleable') && v) toggled.add(v);
        else if (f.p === 'isclean') transform = 'clean';
        else if (f.p === 'ishot') transform = 'heat';
        else if (f.p === 'iscool') transform = 'cool';
        return;
      }
      case 'not':
        return walk(f.x);
      case 'and':
      case 'or':
        return f.xs.forEach(walk);
      case 'imply':
        walk(f.a);
        return walk(f.b);
      case 'exists':
      case 'forall':
        return walk(f.x);
      default:
        return;
    }
  };
  walk(goal);
  let lampType: string | null = null;
  let otype = '';
  let count = 0;
  for (const [v, t] of objType) {
    if (toggled.has(v)) lampType = t;
    else {
      otype = t;
      count++;
    }
  }
  const spec: TaskSpec = { otype, rtype: [...recType.values()][0] ?? null, transform, count: Math.max(1, count), lampType };
  specCache.set(g, spec);
  return spec;
}


interface View {
  g: Game;
  w: World;
  P: (n: string) => number;
  E: (id: string) => number;
}

function fact(v: View, p: string, a: number, b = -1): boolean {
  return v.w.has(factKey(v.g.lc.fs, v.P(p), a, b));
}
/** second arguments of p(a, ·) */
function seconds(v: View, p: string, a: number): number[] {
  const S = v.g.lc.fs.S;
  return Array.from(v.w.candidates(v.P(p), a, -1), (k) => (k % S) - 1);
}
/** first arguments of p(·, b) */
function firsts(v: View, p: string, b: number): number[] {
  const S = v.g.lc.fs.S;
  return Array.from(v.w.candidates(v.P(p), -1, b), (k) => (Math.floor(k / S) % S) - 1);
}

/**
 * True when the state cannot reach the goal any more because the agent holds an object that no
 * receptacle can contain (the PDDL allows taking e.g. a papertowelroll out of a garbagecan that
 * no canContain fact lets it be put back into), and it is not the object the task needs.
 */
export function isDeadEnd(g: Game, state: AlfState): boolean {
  const w = worldOf(g, state.facts);
  const P = (n: string) => g.lc.predIndex.get(n) ?? -1;
  const S = g.lc.fs.S;
  const agent = g.lc.entsByType[g.lc.typeIndex.get('agent')!]![0]!;
  const held = Array.from(w.candidates(P('holds'), agent, -1), (k) => (k % S) - 1)[0];
  if (held === undefined) return false;
  const spec = taskSpec(g, g.goalFormula);
  const ot = Array.from(w.candidates(P('objecttype'), held, -1), (k) => (k % S) - 1)[0] ?? -1;
  if (ot === (g.lc.entIndex.get(spec.otype) ?? -2)) return false;
  const recs = g.lc.entsByType[g.lc.typeIndex.get('receptacle')!] ?? [];
  return !recs.some((r) => {
    const rt = Array.from(w.candidates(P('receptacletype'), r, -1), (k) => (k % S) - 1)[0] ?? -1;
    return w.has(factKey(g.lc.fs, P('cancontain'), rt, ot));
  });
}

const expertMemo = new StateMemo<string | null>(8192);

/** The next oracle action, or null when the game is already won ('look' in a dead end). */
export function expert(g: Game, state: AlfState): string | null {
  checkState(g, state);
  if (state.won) return null;
  return expertMemo.get(g, factsKey(state.grammar, state.facts), () => expertOf(g, state));
}

/** expert()'s plan: a function of the state's grammar and facts only */
function expertOf(g: Game, state: AlfState): string | null {
  const spec = taskSpec(g, g.goalFormula);
  const w = worldOf(g, state.facts);
  const P = (n: string): number => {
    const i = g.lc.predIndex.get(n);
    if (i === undefined) throw new Error(`domain lacks predicate ${n}`);
    return i;
  };
  const E = (id: string): number => g.lc.entIndex.get(id) ?? -1;
  const v: View = { g, w, P, E };
  const name = (e: number) => g.names[e]!;
  const gk: GrammarKind = state.grammar;

  const agent = g.lc.entsByType[g.lc.typeIndex.get('agent')!]![0]!;
  const here = seconds(v, 'atlocation', agent)[0] ?? -1;
  const held = seconds(v, 'holds', agent)[0] ?? -1;
  const locOf = (r: number) => seconds(v, 'receptacleatlocation', r)[0] ?? -2;
  const recOf = (o: number) => seconds(v, 'inreceptacle', o)[0] ?? -1;
  const otypeOf = (o: number) => seconds(v, 'objecttype', o)[0] ?? -1;
  const rtypeOf = (r: number) => seconds(v, 'receptacletype', r)[0] ?? -1;
  const accessible = (r: number) => !fact(v, 'openable', r) || fact(v, 'opened', r);
  const isCand = (o: number) => otypeOf(o) === E(spec.otype) && fact(v, 'pickupable', o);
  const good = (o: number) =>
    spec.transform === null ||
    fact(v, spec.transform === 'clean' ? 'isclean' : spec.transform === 'heat' ? 'ishot' : 'iscool', o);
  const receptaclesOfType = (t: number) => firsts(v, 'receptacletype', t).sort((a, b) => a - b);

  /** go to r / open r, or null when r is reachable and open */
  const approach = (r: number): string | null => {
    if (locOf(r) !== here) return `go to ${name(r)}`;
    if (!accessible(r)) return `open ${name(r)}`;
    return null;
  };
  const put = (o: number, r: number) => (gk === 'legacy' ? `put ${name(o)} in/on ${name(r)}` : `move ${name(o)} to ${name(r)}`);

  const cands = firsts(v, 'objecttype', E(spec.otype)).filter(isCand).sort((a, b) => a - b);

  // --- look_at_obj_in_light
  if (spec.lampType !== null) {
    const lamps = firsts(v, 'objecttype', E(spec.lampType))
      .filter((l) => fact(v, 'toggleable', l) && recOf(l) >= 0)
      .sort((a, b) => a - b);
    if (held >= 0 && isCand(held)) {
      const lit = lamps.find((l) => fact(v, 'istoggled', l));
      const lamp = lit ?? lamps[0];
      if (lamp === undefined) return 'look';
      const r = recOf(lamp);
      if (locOf(r) !== here) return `go to ${name(r)}`;
      return `use ${name(lamp)}`;
    }
    if (held >= 0) return putAway(held);
    const o = cands.find((c) => recOf(c) >= 0);
    if (o === undefined) return 'look';
    const r = recOf(o);
    return approach(r) ?? `take ${name(o)} from ${name(r)}`;
  }

  // --- place tasks
  const targets = spec.rtype ? receptaclesOfType(E(spec.rtype)).filter((r) => fact(v, 'cancontain', rtypeOf(r), E(spec.otype))) : [];
  const placed = (o: number) => good(o) && targets.includes(recOf(o));
  let target = targets[0] ?? -1;
  if (spec.count > 1) {
    // keep the pair together: the target receptacle already holding a placed object
    const withOne = targets.find((r) => cands.some((o) => recOf(o) === r && placed(o)));
    if (withOne !== undefined) target = withOne;
  }
  if (target < 0) return 'look';

  if (held >= 0 && isCand(held)) {
    if (!good(held)) {
      const app = appliances(spec.transform!);
      const r = app.find((x) => locOf(x) === here) ?? app[0];
      if (r === undefined) return 'look';
      if (locOf(r) !== here) return `go to ${name(r)}`;
      return `${spec.transform} ${name(held)} with ${name(r)}`;
    }
    return approach(target) ?? put(held, target);
  }
  if (held >= 0) return putAway(held);

  // fetch: good ones first, skip objects already placed in the target (pick-two)
  const order = cands
    .filter((o) => recOf(o) >= 0 && !(spec.count > 1 && recOf(o) === target && placed(o)))
    .sort((a, b) => Number(good(b)) - Number(good(a)) || a - b);
  const o = order[0];
  if (o === undefined) return 'look';
  const r = recOf(o);
  return approach(r) ?? `take ${name(o)} from ${name(r)}`;

  function appliances(t: 'clean' | 'heat' | 'cool'): number[] {
    const types = t === 'clean' ? ['sinkbasintype', 'sinktype'] : t === 'heat' ? ['microwavetype'] : ['fridgetype'];
    return types.flatMap((ty) => (E(ty) >= 0 ? receptaclesOfType(E(ty)) : []));
  }

  /** put a held object that is not needed somewhere it fits */
  function putAway(o: number): string {
    const ot = otypeOf(o);
    const fits = (r: number) => fact(v, 'cancontain', rtypeOf(r), ot);
    const all = g.lc.entsByType[g.lc.typeIndex.get('receptacle')!]!.filter(fits);
    const local = all.filter((r) => locOf(r) === here);
    const r = local.find(accessible) ?? local[0] ?? all.find((x) => !fact(v, 'openable', x)) ?? all[0];
    if (r === undefined) return 'look';
    return approach(r) ?? put(o, r);
  }
}
