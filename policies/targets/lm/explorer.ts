/**
 * A searching ALFWorld teacher for behaviour cloning.
 *
 * The env's oracle knows where every object is and walks straight to it; a model cloned from it
 * cannot see what the oracle saw, so it learns to `take` objects that are not there. The explorer
 * only acts on what an agent could know from its observations: while it is looking for the
 * task's object (hands empty) or for a lamp (holding the object in a look-at-in-light task) it
 * visits the room's receptacles in a fixed order — most likely first, by how often the training
 * games put that object type there, ties in room-listing order — opens closed ones, and takes the
 * object (or uses the lamp) as soon as it is in view. Everything else (transforming, placing,
 * putting away a wrong object) is the oracle's, which needs nothing hidden: appliances and target
 * receptacles are named in the room listing.
 *
 * The order only depends on the room and the object type, so the next receptacle follows from the
 * last one visited: a model with a short window can learn it.
 */
import { admissible, expert, loadGames, reset, step, taskSpec, type AlfState, type Game } from '../../../envs/alfworld/index.ts';

/** `apple 1` → `apple`; `desklamptype` → `desklamp` */
const kindOf = (name: string): string => name.replace(/\s+\d+$/, '');
const typeName = (t: string): string => t.replace(/type$/, '');

/** How often each receptacle kind holds each object kind in the training games' start states (`''` = all kinds). */
export type SearchPrior = Map<string, Map<string, number>>;

let priorMemo: SearchPrior | null = null;

const SEE_RE = /you see (.*?)\.?$/;

/**
 * Count, over the ALFWorld games of `split` (in the data's order), which object kinds each
 * receptacle kind holds at the start: every receptacle is visited (and opened) once from the
 * start state and its listing read. Deterministic; memoised for the default split.
 */
export function searchPrior(split = 'valid_train'): SearchPrior {
  if (split === 'valid_train' && priorMemo) return priorMemo;
  const prior: SearchPrior = new Map();
  const bump = (obj: string, rec: string): void => {
    for (const k of [obj, '']) {
      const m = prior.get(k) ?? new Map<string, number>();
      m.set(rec, (m.get(rec) ?? 0) + 1);
      prior.set(k, m);
    }
  };
  for (const g of loadGames().games) {
    if (g.split !== split) continue;
    const s0 = reset(g, { grammar: 'legacy', protocol: 'react' }).state;
    const recs = admissible(g, s0)
      .filter((a) => a.startsWith('go to '))
      .map((a) => a.slice(6));
    for (const r of recs) {
      let x = step(g, s0, `go to ${r}`);
      if (admissible(g, x.state).includes(`open ${r}`)) x = step(g, x.state, `open ${r}`);
      const m = SEE_RE.exec(x.observation);
      if (!m || m[1] === 'nothing') continue;
      for (const part of m[1]!.split(/,\s*(?:and\s+)?|\s+and\s+/)) {
        const o = part.replace(/^an?\s+/, '').trim();
        if (o) bump(kindOf(o), kindOf(r));
      }
    }
  }
  if (split === 'valid_train') priorMemo = prior;
  return prior;
}

/** The number in a name (`cabinet 12` → 12). */
const numOf = (name: string): number => Number(/(\d+)$/.exec(name)?.[1] ?? 0);

/** The explorer's memory of one episode. */
export interface Explorer {
  /** the explorer's next action from the state (null when won) */
  next(s: AlfState): string | null;
  /** tell it what was played (its own action or another one) and what the env answered */
  played(action: string, observation: string): void;
}

/**
 * An explorer for one episode of `game`.
 *
 * @example
 * const ex = explorer(game); let s = reset(game, …).state;
 * const a = ex.next(s)!; const r = step(game, s, a); s = r.state; ex.played(a, r.observation);
 */
/**
 * The order of the explorer's visits within a receptacle kind: 'up' (drawer 1, 2, 3, then the
 * next kind: a model must see that 3 is the room's last drawer) or 'down' (drawer 3, 2, 1: the
 * first is the number the room listing ends the kind with, the last is always 1). Kinds keep
 * their order either way; the games won and the steps taken are measured in the tests.
 */
export type SearchOrder = 'up' | 'down';

export function explorer(game: Game, prior: SearchPrior = searchPrior(), o: { order?: SearchOrder } = {}): Explorer {
  const down = o.order === 'down';
  const spec = taskSpec(game, game.goalFormula);
  const objKind = typeName(spec.otype);
  const lampKind = spec.lampType ? typeName(spec.lampType) : null;
  const targetKind = spec.rtype ? typeName(spec.rtype) : null;
  let held: string | null = null;
  let at: string | null = null;
  let phase: 'obj' | 'lamp' | null = null;
  /** receptacles whose inside this phase has seen */
  let seen = new Set<string>();
  let rooms: string[] | null = null;
  /** the last observation: only what it names is in view */
  let lastObs = '';
  /**
   * what the arrival at (or the opening of) the current place showed: a lamp stays where it is,
   * so one seen there is still usable after the object was taken (the lamp seen on arrival)
   */
  let hereObs = '';
  const names = (text: string, obj: string): boolean => new RegExp(`\\b${obj.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`).test(text);
  const inView = (obj: string): boolean => names(lastObs, obj);
  const lampHere = (lamp: string): boolean => names(lastObs, lamp) || names(hereObs, lamp);

  /** search order per object kind: a function of the room and the prior only, so computed once */
  const orders = new Map<string, string[]>();
  const orderFor = (kind: string, s: AlfState): string[] => {
    const hit = orders.get(kind);
    if (hit) return hit;
    rooms ??= admissible(game, s)
      .filter((a) => a.startsWith('go to '))
      .map((a) => a.slice(6));
    const p = prior.get(kind) ?? new Map<string, number>();
    const all = prior.get('') ?? new Map<string, number>();
    const sum = (m: Map<string, number>): number => Math.max(1, [...m.values()].reduce((a, b) => a + b, 0));
    const np = sum(p);
    const na = sum(all);
    const score = (r: string): number => (p.get(kindOf(r)) ?? 0) / np + 0.05 * ((all.get(kindOf(r)) ?? 0) / na);
    const order = rooms
      .map((r) => ({ r, s: score(r), n: numOf(r) }))
      .sort((a, b) => b.s - a.s || kindOf(a.r).localeCompare(kindOf(b.r)) || (down ? b.n - a.n : a.n - b.n))
      .map((x) => x.r);
    orders.set(kind, order);
    return order;
  };

  const search = (s: AlfState, kind: string, adm: string[]): string | null => {
    if (at && !seen.has(at)) {
      if (adm.includes(`open ${at}`)) return `open ${at}`;
      seen.add(at);
    }
    const next = orderFor(kind, s).find((r) => !seen.has(r) && r !== at);
    return next ? `go to ${next}` : null;
  };

  return {
    next(s) {
      const a = expert(game, s);
      if (a === null) return null;
      const adm = admissible(game, s);
      const holdingObj = held !== null && kindOf(held) === objKind;
      const want: 'obj' | 'lamp' | null = held === null && a !== 'look' ? 'obj' : lampKind && holdingObj ? 'lamp' : null;
      if (want !== phase) {
        phase = want;
        seen = new Set();
      }
      if (phase === 'obj') {
        const m0 = /^take (.+) from /.exec(a);
        if (m0 && inView(m0[1]!)) return a;
        // an object of the task's kind in view (not one already placed in a pick-two target)
        const take = adm.find((x) => {
          const m = /^take (.+) from (.+)$/.exec(x);
          return m !== null && kindOf(m[1]!) === objKind && inView(m[1]!) && !(spec.count > 1 && targetKind !== null && kindOf(m[2]!) === targetKind);
        });
        if (take) return take;
        return search(s, objKind, adm) ?? a;
      }
      if (phase === 'lamp' && lampKind) {
        if (a.startsWith('use ') && lampHere(a.slice(4))) return a;
        const use = adm.find((x) => x.startsWith('use ') && kindOf(x.slice(4)) === lampKind && lampHere(x.slice(4)));
        if (use) return use;
        return search(s, lampKind, adm) ?? a;
      }
      return a;
    },
    played(action, observation) {
      // an action that did nothing (a student's, DAgger) changes nothing: what was in view stays in view
      if (/^Nothing happens/.test(observation)) return;
      lastObs = observation;
      let m: RegExpExecArray | null;
      if ((m = /^go to (.+)$/.exec(action))) {
        at = m[1]!;
        hereObs = observation;
      } else if ((m = /^take (.+) from (.+)$/.exec(action))) held = m[1]!;
      else if (/^(put|move) /.test(action)) held = null;
      else if ((m = /^open (.+)$/.exec(action)) && m[1] === at) {
        seen.add(at);
        hereObs = observation;
      }
    },
  };
}
