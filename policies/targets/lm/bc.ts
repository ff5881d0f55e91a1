/**
 * Behaviour-cloning data: expert episodes played through the harness (`runEpisode`), so every
 * recorded context is exactly what a model sees, labelled with the expert's next action.
 *
 * With probability `noise` the played action is a random admissible one instead of the expert's
 * (the label stays the expert's action from that state): the data then shows how to recover from
 * a detour, which an always-right expert never shows. ALFWorld's teacher is the explorer
 * (explorer.ts): it searches for what it cannot see, where the env's oracle walks straight to
 * hidden objects (a model cloned from the oracle learns to `take` things that are not there).
 */
import { Rng } from '../../../cluster/rng.ts';
import { admissible as alfAdmissible, expert as alfExpert, loadGames, reset as alfReset, step as alfStep, type AlfState, type Game } from '../../../envs/alfworld/index.ts';
import { expert as wsExpert, loadWebshop, reset as wsReset, step as wsStep, webshopEnv, type WebshopEnv, type WebshopState } from '../../../envs/webshop/index.ts';
import { synthGoals, withGoals } from './ws-goals.ts';
import type { SynthInsertColumns, SynthPhrasing } from './dbbench/synth.ts';
import { renumbering } from './renumber.ts';
import { envDescriptor, envFactory as registryFactory, listTasks } from '../../../envs/registry.ts';
import { runEpisode, type ChatMessage, type EnvFactory, type Model } from '../../../harness/index.ts';
import { explorer, type SearchOrder } from './explorer.ts';
import { shopper, type QueryStyle } from './shopper.ts';
import { collectDbbench } from './dbbench/teacher.ts';
import { slottingFor } from './slotting.ts';
import { buildContext, type ContextBudget } from './context.ts';
import { withHints, type HintRates } from './hints.ts';
import { EOS_ID, type LmTokenizer } from './tokenizer.ts';

export type LmEnv = 'alfworld' | 'webshop' | 'dbbench';
/**
 * Who labels decisions (see {@link CollectOptions.teacher}): 'explorer' is each env's honest
 * teacher (ALFWorld's searching explorer, WebShop's shopper), 'oracle' its all-knowing expert.
 */
export type Teacher = 'explorer' | 'oracle';
/** the name before WebShop had an honest teacher too */
export type AlfTeacher = Teacher;
export const LM_ENVS: readonly LmEnv[] = ['alfworld', 'webshop', 'dbbench'];

/** the split vanilla success is measured on */
export const EVAL_SPLIT: Record<LmEnv, string> = { alfworld: 'valid_seen', webshop: 'test', dbbench: 'v0.2/dev' };

/** One decision of an expert episode: the context the model saw and the expert's action. */
export interface BcDecision {
  env: LmEnv;
  taskId: string;
  messages: ChatMessage[];
  /** the label: the expert's next action from this state */
  action: string;
  admissible: string[];
  /** actions executed before this decision */
  actions: string[];
  /** the teacher's action at each of those steps (a played action that differs was noise) */
  labels: string[];
}

export interface CollectOptions {
  env: LmEnv;
  episodes: number;
  seed: number;
  /** chance of playing a random admissible action instead of the expert's. @default 0.15 */
  noise?: number;
  /**
   * 'explorer': the env's honest teacher, which acts on what an agent sees (ALFWorld's explorer
   * searches the room, explorer.ts; WebShop's shopper ranks the results by the instruction,
   * shopper.ts); 'oracle': the env's all-knowing expert. @default 'explorer'
   */
  teacher?: Teacher;
  /** WebShop: how the shopper writes its search (shopper.ts QueryStyle). @default 'content' */
  query?: QueryStyle;
  /** ids to draw from. @default the env's training split */
  tasks?: readonly string[];
  /**
   * WebShop: synthetic training goals added to the pool (ws-goals.ts: instructions written from
   * products no test or dev goal targets), so the model copies instructions instead of
   * memorising the 91 training goals. @default 0
   */
  synthGoals?: number;
  /**
   * DBBench: the share of synthetic tasks whose table, columns and string values are renamed
   * (dbbench/synth.ts), so names are copied from the prompt instead of memorised. @default 0
   */
  rename?: number;
  /** DBBench: the synthetic tasks' question templates (dbbench/synth.ts SynthOptions.phrasing). @default 'base' */
  phrasing?: SynthPhrasing;
  /** DBBench: how the synthetic INSERTs name their columns (dbbench/synth.ts SynthOptions.insertColumns). @default none */
  insertColumns?: SynthInsertColumns;
  /**
   * ALFWorld: the share of episodes recorded with renumbered instances (renumber.ts: each kind's
   * numbers redrawn, increasing), so numbers are copied from the observations. @default 0
   */
  renumber?: number;
  /** ALFWorld: the explorer's order within a receptacle kind (explorer.ts SearchOrder). @default 'up' */
  searchOrder?: SearchOrder;
  /**
   * DAgger (Ross et al. 2011; every env's teacher labels any state): after the teacher's `episodes`, `studentEpisodes` more
   * where `student` (a built model) plays and the teacher labels every state the student reaches,
   * its own mistakes included (an object it made up, a place it goes to again and again), so the
   * data shows the way back from them. @default 0
   */
  studentEpisodes?: number;
  student?: Model;
}

/** The env's pure state next to the harness's session, to know admissible actions and the oracle. */
interface Mirror {
  admissible(): string[];
  expert(): string | null;
  /** the env's answer to the action */
  step(action: string): string;
}

function alfMirror(game: Game, teacher: AlfTeacher, order: SearchOrder): Mirror {
  let s: AlfState = alfReset(game, { grammar: 'legacy', protocol: 'react' }).state;
  const ex = teacher === 'explorer' ? explorer(game, undefined, { order }) : null;
  return {
    admissible: () => alfAdmissible(game, s),
    expert: () => (ex ? ex.next(s) : alfExpert(game, s)),
    step: (a) => {
      const r = alfStep(game, s, a);
      s = r.state;
      ex?.played(a, r.observation);
      return r.observation;
    },
  };
}

function wsMirror(ws: WebshopEnv, goalId: string, teacher: Teacher, query: QueryStyle): Mirror {
  const r = wsReset(ws, goalId, { protocol: 'react' });
  let s: WebshopState = r.state;
  let clickables = r.info.clickables;
  return {
    admissible: () => clickables.filter((c) => c !== 'search').map((c) => `click[${c}]`),
    expert: () => (teacher === 'explorer' ? shopper(ws, s, query) : wsExpert(ws, s)),
    step: (a) => {
      const x = wsStep(ws, s, a);
      s = x.state;
      clickables = x.info.clickables;
      return x.observation;
    },
  };
}

/** Task ids of a split, in the data's order (the env registry's). */
export function taskIds(env: LmEnv, split: string): string[] {
  return listTasks(env, split);
}

/** An env factory for a task id (the env registry's, default options). */
export function envFactory(env: LmEnv, taskId: string): EnvFactory {
  return registryFactory(env, taskId);
}

/**
 * Expert decisions of `episodes` episodes (tasks drawn without replacement from a seeded
 * shuffle, again when they run out). Deterministic for the options.
 */
export async function collectDecisions(o: CollectOptions): Promise<BcDecision[]> {
  // DBBench: synthetic tasks over the training split's tables, taught by the SQL-knowing teacher (dbbench/teacher.ts)
  if (o.env === 'dbbench') return collectDbbench({ episodes: o.episodes, seed: o.seed, noise: o.noise ?? 0.15, rename: o.rename ?? 0, ...(o.phrasing ? { phrasing: o.phrasing } : {}), ...(o.insertColumns ? { insertColumns: o.insertColumns } : {}), ...(o.student ? { student: o.student, studentEpisodes: o.studentEpisodes ?? 0 } : {}) });
  const rng = new Rng(`lm-bc:${o.env}:${o.seed}`);
  // WebShop with synthetic goals plays a copy of the vendored env that knows them
  const synth = o.env === 'webshop' && o.synthGoals ? synthGoals(loadWebshop(), new Rng(`lm-bc:webshop-goals:${o.seed}`), o.synthGoals) : [];
  const ws = o.env === 'webshop' ? (synth.length ? withGoals(loadWebshop(), synth) : loadWebshop()) : null;
  const pool = [...(o.tasks ?? taskIds(o.env, envDescriptor(o.env).splits.train)), ...synth.map((g) => g.id)];
  const studentEpisodes = o.student ? (o.studentEpisodes ?? 0) : 0;
  const order: string[] = [];
  while (order.length < o.episodes + studentEpisodes) order.push(...rng.shuffle(pool));
  const episode = async (e: number): Promise<BcDecision[]> => {
    const out: BcDecision[] = [];
    const taskId = order[e]!;
    const erng = rng.fork(`episode-${e}`);
    // DAgger: the student plays, the teacher labels
    const student = e >= o.episodes ? o.student! : null;
    const mirror = o.env === 'alfworld' ? alfMirror(loadGames().get(taskId)!, o.teacher ?? 'explorer', o.searchOrder ?? 'up') : wsMirror(ws!, taskId, o.teacher ?? 'explorer', o.query ?? 'content');
    const actions: string[] = [];
    const labels: string[] = [];
    /** the mirror's last answer, and whether a student's episode left it (then nothing more is recorded) */
    let mirrored = '';
    let lost = false;
    // the episode's texts as recorded: renumbered for a share of ALFWorld episodes
    const rn = o.env === 'alfworld' && o.renumber && erng.chance(o.renumber) ? renumbering(loadGames().get(taskId)!, erng.fork('renumber')) : null;
    const model: Model = {
      name: 'bc-expert',
      async decide(ctx) {
        // a student's action the harness played differently (or not at all) leaves the mirror behind: stop recording there
        if (student && actions.length > 0 && !lost && !(ctx.messages[ctx.messages.length - 1]?.content ?? '').includes(mirrored.trim())) lost = true;
        if (lost) return student!.decide(ctx);
        const label = mirror.expert() ?? 'look';
        const adm = mirror.admissible();
        const d: BcDecision = { env: o.env, taskId, messages: ctx.messages.map((m) => ({ ...m })), action: label, admissible: adm, actions: actions.slice(), labels: labels.slice() };
        out.push(rn ? { ...d, messages: d.messages.map((m) => ({ ...m, content: rn(m.content) })), action: rn(d.action), admissible: d.admissible.map(rn), actions: d.actions.map(rn), labels: d.labels.map(rn) } : d);
        const play = student ? (await student.decide(ctx)).trim() : adm.length > 0 && actions.length > 0 && erng.chance(o.noise ?? 0.15) ? erng.pick(adm) : label;
        try {
          mirrored = mirror.step(play);
        } catch (e) {
          // a student's action the mirror cannot play (the env answers it its own way): stop recording; the teacher's never throw
          if (!student) throw e;
          lost = true;
        }
        actions.push(play);
        labels.push(label);
        return play;
      },
    };
    await runEpisode(ws && synth.length ? webshopEnv(taskId, { loaded: ws }) : envFactory(o.env, taskId), { model, seed: e });
    return out;
  };
  const out: BcDecision[] = [];
  for (let e = 0; e < o.episodes; e++) out.push(...(await episode(e)));
  // the student's episodes 32 at a time (its decisions batched), recorded in episode order
  for (let e = o.episodes; e < o.episodes + studentEpisodes; e += 32) {
    const chunk = Array.from({ length: Math.min(32, o.episodes + studentEpisodes - e) }, (_, i) => episode(e + i));
    for (const ds of await Promise.all(chunk)) out.push(...ds);
  }
  return out;
}

/** A training row: the context window and the action tokens (ending in EOS). */
export interface BcRow {
  prompt: number[];
  completion: number[];
  /**
   * positions in `prompt` that are labels too: the tokens of the earlier actions in the window
   * that were the teacher's own (not noise), so one window teaches several decisions
   */
  targets: number[];
}

/**
 * Prompt positions of the earlier actions in a window that the teacher chose: the k-th `<act>`
 * turn before the final `<act>` is the k-th newest played action; its tokens (up to the next
 * segment token) are labels when the played action was the teacher's.
 */
export function earlierActionTargets(prompt: readonly number[], tok: LmTokenizer, actions: readonly string[], labels: readonly string[]): number[] {
  const act = tok.special('<act>');
  const bounds = new Set((['<bos>', '<eos>', '<sys>', '<skill>', '<goal>', '<obs>', '<act>', '<hint>', '<cut>'] as const).map((t) => tok.special(t)));
  const acts: number[] = [];
  for (let i = 0; i < prompt.length - 1; i++) if (prompt[i] === act) acts.push(i);
  const out: number[] = [];
  for (let k = 0; k < acts.length; k++) {
    const step = actions.length - acts.length + k;
    if (step < 0 || actions[step] !== labels[step]) continue;
    for (let j = acts[k]! + 1; j < prompt.length && !bounds.has(prompt[j]!); j++) out.push(j);
  }
  return out;
}

/**
 * Training rows from decisions, each with random hint segments (see hints.ts); the same RNG seed
 * gives the same rows. `slots`: product ids written as `pslot K` (WebShop, slots.ts), table and
 * column names as `tslot` and `cslot K` (DBBench, dbbench/slots.ts); `'values'` adds DBBench's
 * value slots (`vslot K`).
 */
export function bcRows(decisions: readonly BcDecision[], tok: LmTokenizer, budget: ContextBudget, rates: HintRates, seed: number, o: { slots?: boolean | 'values' } = {}): BcRow[] {
  const rng = new Rng(`lm-bc-rows:${seed}`);
  return decisions.map((d) => {
    let msgs = withHints(d.messages, rng, { admissible: d.admissible, target: d.action, actions: d.actions }, rates);
    let action = d.action;
    const sl = o.slots ? slottingFor(d.env, o.slots) : null;
    if (sl) {
      // product ids (WebShop) or table and column names (DBBench) as slots, in the context and the label alike
      const map = sl.map(msgs, (w) => tok.has(w));
      msgs = sl.messages(msgs, map);
      action = sl.to(action, map);
    }
    const completion = [...tok.encode(action).slice(0, (budget.maxNewTokens ?? 20) - 1), EOS_ID];
    const prompt = buildContext(msgs, tok, budget);
    return { prompt, completion, targets: earlierActionTargets(prompt, tok, d.actions, d.labels) };
  });
}
