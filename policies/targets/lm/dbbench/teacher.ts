/**
 * The DBBench teacher for behaviour cloning, and its episodes as BC decisions.
 *
 * On a synthetic task (synth.ts) the teacher knows the SQL: it runs it (`Action: Operation` with a
 * ```sql block) and then answers from what the env returned (`Action: Answer` / `Final Answer:
 * [...]`, the result's cells), so a model cloned from it learns to copy the answer from the SQL
 * output, not to know it. After anything else (a failed or a wrong SQL) it runs its SQL again.
 *
 * Noise (`noise` per SQL decision, at most two per episode): the played action is a perturbed SQL
 * (another column, an unknown column, a broken statement; writes only get the ones that fail, so
 * the table stays as it was) while the label stays the teacher's, so the data shows recovery
 * from an SQL error or a wrong result.
 */
import { Rng } from '../../../../cluster/rng.ts';
import { dbbenchEnv, isWriteType, SQL_ERROR, type DbbenchTask } from '../../../../envs/dbbench/index.ts';
import { runEpisode, type Model } from '../../../../harness/index.ts';
import type { BcDecision } from '../bc.ts';
import { answerText, DEFAULT_RENAME, operationText, resultCells, synthSql, synthTasks, type SynthInsertColumns, type SynthPhrasing } from './synth.ts';

/** The teacher's next reply, from the last action played and the env's last reply. */
export function teacherAction(task: DbbenchTask, lastAction: string | null, lastObservation: string | null): string {
  const op = operationText(synthSql(task));
  // its own SQL, or the same up to case and spacing (a student's, DAgger)
  const norm = (s: string): string => s.toLowerCase().replace(/\s+/g, ' ').trim();
  if (lastAction !== null && norm(lastAction) === norm(op) && lastObservation !== null && !SQL_ERROR.test(lastObservation)) {
    return answerText(resultCells(lastObservation) ?? []);
  }
  return op;
}

/** A perturbed operation for `task` (a wrong or an unknown column, or broken SQL), drawn from `rng`. */
export function perturbSql(task: DbbenchTask, rng: Rng): string {
  const sql = synthSql(task);
  const cols = [...sql.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((c) => c !== task.tableName);
  const kinds = isWriteType(task.type) ? ['unknown', 'broken'] : ['column', 'column', 'unknown', 'broken'];
  const kind = rng.pick(kinds);
  if (kind === 'column' && cols.length > 0) {
    const from = rng.pick(cols);
    const others = task.columns.filter((c) => c !== from);
    if (others.length > 0) return operationText(sql.replace(`\`${from}\``, `\`${rng.pick(others)}\``));
  }
  if ((kind === 'unknown' || kind === 'column') && cols.length > 0) {
    const from = rng.pick(cols);
    const words = from.split(' ');
    const bad = words.length > 1 ? words.slice(0, -1).join(' ') : `${from}s`;
    return operationText(sql.replace(`\`${from}\``, `\`${bad}\``));
  }
  const broken = [
    (s: string) => s.replace(/^(\w+)/, (w) => w.slice(0, -1)),
    (s: string) => s.replace(/ FROM /, ' '),
    (s: string) => s.replace(/'([^']*)';$/, "'$1;"),
  ];
  return operationText(rng.pick(broken)(sql));
}

/** A model that plays the teacher on one task (its episode's actions go through `onDecision`). */
export function teacherModel(task: DbbenchTask, o: { noise?: number; rng?: Rng; onDecision?: (d: { messages: BcDecision['messages']; label: string; played: string }) => void; render?: (action: string, messages: readonly BcDecision['messages'][number][]) => string; student?: Model } = {}): Model {
  let last: string | null = null;
  let noisy = 0;
  return {
    name: 'dbbench-teacher',
    async decide(ctx) {
      const obs = last === null ? null : (ctx.messages[ctx.messages.length - 1]?.content ?? null);
      const label = teacherAction(task, last, obs);
      let played = label;
      // DAgger: the student plays, the teacher's label is recorded
      if (o.student) played = await o.student.decide(ctx);
      else if (o.rng && noisy < 2 && label.startsWith('Action: Operation') && o.rng.chance(o.noise ?? 0)) {
        played = perturbSql(task, o.rng);
        noisy++;
      }
      o.onDecision?.({ messages: ctx.messages.map((m) => ({ ...m })), label, played });
      last = played;
      return o.render ? o.render(played, ctx.messages) : played;
    },
  };
}

/**
 * Teacher decisions on `episodes` synthetic tasks (one task per episode, drawn with
 * `Rng('lm-dbsynth:<seed>')`, with the entity-name augmentation at `rename`, default
 * DEFAULT_RENAME, and the question templates of `phrasing`), played through `runEpisode` and the real env, so each context is what a model
 * sees. Deterministic for the options.
 */
export async function collectDbbench(o: { episodes: number; seed: number; noise?: number; rename?: number; phrasing?: SynthPhrasing; insertColumns?: SynthInsertColumns; student?: Model; studentEpisodes?: number }): Promise<BcDecision[]> {
  const rng = new Rng(`lm-bc:dbbench:${o.seed}`);
  const synth = { rename: o.rename ?? DEFAULT_RENAME, ...(o.phrasing ? { phrasing: o.phrasing } : {}), ...(o.insertColumns ? { insertColumns: o.insertColumns } : {}) };
  const tasks = await synthTasks(new Rng(`lm-dbsynth:${o.seed}`), o.episodes, synth);
  const episode = async (task: DbbenchTask, e: number, student: Model | null): Promise<BcDecision[]> => {
    const out: BcDecision[] = [];
    const erng = rng.fork(`episode-${e}`);
    const actions: string[] = [];
    const labels: string[] = [];
    const model = teacherModel(task, {
      noise: o.noise ?? 0.15,
      rng: erng,
      ...(student ? { student } : {}),
      onDecision: (d) => {
        out.push({ env: 'dbbench', taskId: task.id, messages: d.messages, action: d.label, admissible: [], actions: actions.slice(), labels: labels.slice() });
        actions.push(d.played);
        labels.push(d.label);
      },
    });
    await runEpisode(dbbenchEnv(task), { model, seed: e });
    return out;
  };
  const out: BcDecision[] = [];
  for (let e = 0; e < tasks.length; e++) out.push(...(await episode(tasks[e]!, e, null)));
  // DAgger: the student plays other synthetic tasks (never a dev one), 16 at a time, recorded in order
  const n = o.student ? (o.studentEpisodes ?? 0) : 0;
  if (n > 0) {
    const more = await synthTasks(new Rng(`lm-dbsynth-student:${o.seed}`), n, synth);
    for (let e = 0; e < more.length; e += 16) {
      const chunk = more.slice(e, e + 16).map((task, i) => episode(task, tasks.length + e + i, o.student!));
      for (const ds of await Promise.all(chunk)) out.push(...ds);
    }
  }
  return out;
}
