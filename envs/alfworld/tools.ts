/**
 * What the CLI calls: verify (walkthroughs + expert from start and perturbed states), replay
 * (JSONL of an action list on one game) and bench (reset/step rates, direct).
 */
import { Rng } from '../../cluster/rng.ts';
import { loadGames, loadGameFile, type LoadOpts } from './data.ts';
import { reset, step, admissible, type AlfState, type ResetOpts } from './engine.ts';
import { expert, isDeadEnd } from './expert.ts';
import type { Game, GrammarKind } from './game.ts';
import { TASK_TYPES } from './game.ts';

/** Walkthroughs are stored in the current grammar; translate put/move for the legacy one. */
export function translateAction(a: string, to: GrammarKind): string {
  if (to === 'legacy') return a.replace(/^move (.+) to (.+)$/, 'put $1 in/on $2');
  return a.replace(/^put (.+) in\/on (.+)$/, 'move $1 to $2');
}

export interface VerifyOpts extends LoadOpts {
  grammar?: GrammarKind | 'both';
  /** perturbed starts per game (default 3) */
  perturbations?: number;
  seed?: number;
  /** max expert steps per run (default 60) */
  maxSteps?: number;
  log?: (line: string) => void;
  /** only these games (ids) */
  games?: string[];
}
export interface VerifyRow {
  taskType: string;
  games: number;
  walkthrough: number;
  expertStart: number;
  expertPerturbed: number;
  perturbedRuns: number;
  /** perturbed starts that were dead ends (held object nothing can contain); not counted */
  deadEnds: number;
}
export interface VerifyResult {
  rows: VerifyRow[];
  failures: { game: string; check: string; detail: string }[];
  ok: boolean;
  games: number;
  ms: number;
}

function runExpert(g: Game, s0: AlfState, maxSteps: number): { won: boolean; trace: string[] } {
  let s = s0;
  const trace: string[] = [];
  for (let i = 0; i < maxSteps && !s.won; i++) {
    const a = expert(g, s);
    if (a === null) break;
    const r = step(g, s, a);
    trace.push(`${a} -> ${r.info.raw}`);
    s = r.state;
  }
  return { won: s.won, trace };
}

/** Random admissible actions from the start (seeded); stops early rather than winning. */
export function perturb(g: Game, grammar: GrammarKind, rng: Rng, n: number): AlfState {
  let s = reset(g, { grammar, protocol: 'raw' }).state;
  for (let i = 0; i < n; i++) {
    const adm = admissible(g, s);
    const a = rng.pick(adm);
    const r = step(g, s, a);
    if (r.state.won) break;
    s = r.state;
  }
  return s;
}

export function verifyAlfworld(opts: VerifyOpts = {}): VerifyResult {
  const t0 = performance.now();
  const log = opts.log ?? (() => {});
  let games = loadGames(opts).games;
  if (opts.games) games = games.filter((g) => opts.games!.includes(g.id));
  const grammars: GrammarKind[] = opts.grammar === 'both' || opts.grammar === undefined ? ['legacy', 'current'] : [opts.grammar];
  const nPert = opts.perturbations ?? 3;
  const maxSteps = opts.maxSteps ?? 60;
  const rows = new Map<string, VerifyRow>();
  const failures: VerifyResult['failures'] = [];
  for (const g of games) {
    const row =
      rows.get(g.taskType) ??
      rows.set(g.taskType, { taskType: g.taskType, games: 0, walkthrough: 0, expertStart: 0, expertPerturbed: 0, perturbedRuns: 0, deadEnds: 0 }).get(g.taskType)!;
    row.games++;
    // walkthrough in every grammar
    let wtOk = true;
    for (const gk of grammars) {
      let s = reset(g, { grammar: gk, protocol: 'raw' }).state;
      for (const a of g.walkthrough) {
        const r = step(g, s, translateAction(a, gk));
        if (r.info.pddl === null) {
          failures.push({ game: g.id, check: `walkthrough/${gk}`, detail: `"${a}" → Nothing happens.` });
          wtOk = false;
          break;
        }
        s = r.state;
      }
      if (wtOk && !s.won) {
        failures.push({ game: g.id, check: `walkthrough/${gk}`, detail: 'walkthrough ends without the goal' });
        wtOk = false;
      }
    }
    if (wtOk) row.walkthrough++;
    // expert from the start
    const gk0 = grammars[0]!;
    const start = runExpert(g, reset(g, { grammar: gk0, protocol: 'raw' }).state, maxSteps);
    if (start.won) row.expertStart++;
    else failures.push({ game: g.id, check: 'expert/start', detail: start.trace.slice(-3).join(' | ') });
    // expert from perturbed states
    for (let i = 0; i < nPert; i++) {
      const rng = new Rng(`${opts.seed ?? 0}:${g.id}:${i}`);
      const gk = grammars[i % grammars.length]!;
      const s = perturb(g, gk, rng, 3 + rng.int(12));
      if (isDeadEnd(g, s)) {
        row.deadEnds++;
        continue;
      }
      row.perturbedRuns++;
      const r = runExpert(g, s, maxSteps);
      if (r.won) row.expertPerturbed++;
      else failures.push({ game: g.id, check: `expert/perturbed#${i}`, detail: r.trace.slice(-3).join(' | ') });
    }
  }
  const ordered = [...rows.values()].sort((a, b) => TASK_TYPES.indexOf(a.taskType as never) - TASK_TYPES.indexOf(b.taskType as never));
  for (const r of ordered)
    log(`${r.taskType.padEnd(32)} walkthrough ${r.walkthrough}/${r.games}  expert ${r.expertStart}/${r.games}  perturbed ${r.expertPerturbed}/${r.perturbedRuns}${r.deadEnds ? ` (${r.deadEnds} dead-end starts skipped)` : ''}`);
  for (const f of failures.slice(0, 20)) log(`FAIL ${f.game} ${f.check}: ${f.detail}`);
  return { rows: ordered, failures, ok: failures.length === 0 && games.length > 0, games: games.length, ms: performance.now() - t0 };
}

export interface ReplayOpts extends LoadOpts {
  /** a game id from the set, or a path to a game.tw-pddl file */
  game: string;
  grammar?: GrammarKind;
  actions: string[];
  protocol?: ResetOpts['protocol'];
}

/** JSONL: the initial observation, then {step, action, observation, reward, done} per action. */
export function replayAlfworld(opts: ReplayOpts): string[] {
  const g = /game\.tw-pddl$/.test(opts.game) ? loadGameFile(opts.game) : loadGames(opts).get(opts.game);
  const r0 = reset(g, { grammar: opts.grammar ?? 'legacy', protocol: opts.protocol ?? 'raw' });
  const lines = [JSON.stringify({ step: 0, game: g.id, observation: r0.observation, goal: g.goal, taskType: g.taskType })];
  let s = r0.state;
  opts.actions.forEach((a, i) => {
    const r = step(g, s, a);
    lines.push(JSON.stringify({ step: i + 1, action: a, observation: r.observation, reward: r.reward, done: r.done }));
    s = r.state;
  });
  return lines;
}

export interface BenchResult {
  resetsPerSec: number;
  resetMsP50: number;
  stepsPerSec: number;
  stepsPerSecWithAdmissible: number;
  games: number;
}

/** Direct (single-thread) rates: resets, steps (walkthrough + expert actions + invalid ones). */
export function benchAlfworld(opts: { seconds?: number } & LoadOpts = {}): BenchResult {
  const seconds = opts.seconds ?? 3;
  const games = loadGames(opts).games;
  // episodes to replay: expert actions from the start, plus two unknown commands
  const eps = games.map((g) => {
    let s = reset(g, { protocol: 'raw' }).state;
    const acts: string[] = ['look', 'inventory', 'examine nothing 1'];
    for (let i = 0; i < 40 && !s.won; i++) {
      const a = expert(g, s);
      if (a === null) break;
      acts.push(a);
      s = step(g, s, a).state;
    }
    return { g, acts };
  });
  const budget = (seconds * 1000) / 3;
  // resets
  const times: number[] = [];
  let t0 = performance.now();
  let nRes = 0;
  while (performance.now() - t0 < budget) {
    for (const { g } of eps) {
      const a = performance.now();
      reset(g, { protocol: 'raw' });
      times.push(performance.now() - a);
      nRes++;
    }
  }
  const resetsPerSec = nRes / ((performance.now() - t0) / 1000);
  times.sort((a, b) => a - b);
  // steps
  let nSteps = 0;
  let stepMs = 0;
  t0 = performance.now();
  while (performance.now() - t0 < budget) {
    for (const { g, acts } of eps) {
      let s = reset(g, { protocol: 'raw' }).state;
      const a = performance.now();
      for (const act of acts) s = step(g, s, act).state;
      stepMs += performance.now() - a;
      nSteps += acts.length;
    }
  }
  // steps with admissible commands every step (AgentBench's suffix)
  let nAdm = 0;
  let admMs = 0;
  t0 = performance.now();
  while (performance.now() - t0 < budget) {
    for (const { g, acts } of eps) {
      let s = reset(g, { protocol: { ...{ stepLimit: 0, snap: false, repeatLimit: 0 }, availableActions: true } }).state;
      const a = performance.now();
      for (const act of acts) s = step(g, s, act).state;
      admMs += performance.now() - a;
      nAdm += acts.length;
    }
  }
  return {
    resetsPerSec,
    resetMsP50: times[Math.floor(times.length / 2)] ?? 0,
    stepsPerSec: nSteps / (stepMs / 1000),
    stepsPerSecWithAdmissible: nAdm / (admMs / 1000),
    games: games.length,
  };
}
