/**
 * The DBBench env contract: reset / step / expert over plain-data state. Live database handles stay
 * in a per-process session registry keyed by episode id; a worker that lacks an episode's session
 * rebuilds it from the task and the state's SQL log, so any worker can serve any step.
 */
import type { Backend, DbSession } from './backend.ts';
import { DbbenchError, isDbbenchError } from './errors.ts';
import { MysqlBackend } from './mysql.ts';
import {
  compareFc,
  compareV02Read,
  DEFAULT_MAX_ROUNDS,
  FC_BAD_TOOL_CALL,
  FC_INVALID_FUNCTION,
  FC_NO_TOOL_CALLS,
  FC_TOOLS,
  fcHashValue,
  initialMessages,
  parseV02,
  truncate,
  type ChatMessage,
  type FcAction,
  type ToolCall,
} from './protocol.ts';
import { pyRowsRepr } from './python.ts';
import { SqliteBackend } from './sqlite.ts';
import { getTask, isWriteType, registerTask, type DbbenchTask, type DbbenchVariant, type TaskType } from './tasks.ts';

export type EpisodeStatus = 'running' | 'completed' | 'agent_validation_failed' | 'task_limit_reached';

/** plain, serialisable episode state */
export interface DbbenchState {
  readonly episodeId: string;
  readonly taskId: string;
  readonly variant: DbbenchVariant;
  /** backend key ('sqlite' or 'mysql://user@host:port', no password) */
  readonly backend: string;
  /** v0.2: SQL operations run so far; main-fc: agent turns so far */
  readonly rounds: number;
  readonly maxRounds: number;
  readonly done: boolean;
  readonly status: EpisodeStatus;
  /** every SQL text sent to the database, in order */
  readonly sqlLog: readonly string[];
}

/** v0.2: the agent's reply text. main-fc: a message with tool calls (or a JSON string of one). */
export type DbbenchAction = string | FcAction;

export interface StepInfo {
  type: TaskType;
  /** SQL run in this step */
  sql?: string[];
  /** when done: the answer as scored (writes: the table hash) */
  answer?: string;
  correct?: boolean;
  status: EpisodeStatus;
  /** messages the env adds to the conversation in this step */
  messages: ChatMessage[];
}

export interface StepResult {
  state: DbbenchState;
  observation: string;
  reward: number;
  done: boolean;
  info: StepInfo;
}

export interface ResetOptions {
  /** recorded in the episode id; the env itself draws nothing at random */
  seed?: number;
  /** 'sqlite' (default), a 'mysql://user:pass@host:port' URL, or a Backend instance */
  db?: string | Backend;
  /** @default 15 */
  maxRounds?: number;
  /** @default `<task id>#<seed>#<n>` */
  episodeId?: string;
}

export interface ResetResult {
  state: DbbenchState;
  /** the user turn that states the task */
  observation: string;
  info: {
    /** the whole opening conversation (prompt, pre-filled "Ok." turn, task) */
    messages: ChatMessage[];
    /** main-fc: the tool schemas to offer the model */
    tools?: typeof FC_TOOLS;
    type: TaskType;
  };
}

// ---------------------------------------------------------------- backends and sessions

const backends = new Map<string, Backend>();

/** the backend for a spec, created once per process */
export function useBackend(db: string | Backend = 'sqlite'): Backend {
  if (typeof db !== 'string') {
    backends.set(db.key, db);
    return db;
  }
  if (db === 'sqlite') {
    let b = backends.get('sqlite');
    if (!b) backends.set('sqlite', (b = new SqliteBackend()));
    return b;
  }
  if (db.startsWith('mysql://') || db.startsWith('mariadb://')) {
    const probe = MysqlBackend.keyOf(db);
    let b = backends.get(probe);
    if (!b) backends.set(probe, (b = new MysqlBackend({ url: db })));
    return b;
  }
  throw new DbbenchError('DBBENCH_BAD_OPTION', `options.db must be 'sqlite' or a 'mysql://user:password@host:port' URL, got ${JSON.stringify(db)}`, { db });
}

function backendByKey(key: string): Backend {
  const b = backends.get(key) ?? (key === 'sqlite' ? useBackend('sqlite') : undefined);
  if (!b) {
    throw new DbbenchError('DBBENCH_BACKEND_UNAVAILABLE', `backend '${key}' is not configured in this worker: call useBackend('<the same mysql:// URL>') before step()`, { key });
  }
  return b;
}

const sessions = new Map<string, DbSession>();
let episodeCounter = 0;

/** episodes whose database is open in this process */
export function liveEpisodes(): string[] {
  return [...sessions.keys()];
}

/** close one episode's database (a no-op for unknown ids) */
export async function closeEpisode(episodeId: string): Promise<void> {
  const s = sessions.get(episodeId);
  sessions.delete(episodeId);
  await s?.close();
}

/** close every open episode and shut the backends down (call on exit) */
export async function closeAll(): Promise<void> {
  const ids = [...sessions.keys()];
  await Promise.allSettled(ids.map(closeEpisode));
  const bs = [...backends.values()];
  backends.clear();
  await Promise.allSettled(bs.map((b) => b.shutdown()));
}

async function sessionFor(state: DbbenchState, task: DbbenchTask): Promise<DbSession> {
  const live = sessions.get(state.episodeId);
  if (live) return live;
  // another worker ran the earlier steps: rebuild the database from the SQL log
  const s = await backendByKey(state.backend).open(task, state.episodeId);
  sessions.set(state.episodeId, s);
  for (const sql of state.sqlLog) await s.exec(sql);
  return s;
}

// ---------------------------------------------------------------- reset / step

/** start an episode: a fresh database holding the task's table */
export async function reset(task: DbbenchTask, opts: ResetOptions = {}): Promise<ResetResult> {
  const maxRounds = opts.maxRounds ?? DEFAULT_MAX_ROUNDS;
  if (!Number.isInteger(maxRounds) || maxRounds < 1) {
    throw new DbbenchError('DBBENCH_BAD_OPTION', `options.maxRounds must be a positive integer, got ${String(opts.maxRounds)}`, { maxRounds });
  }
  registerTask(task);
  const backend = useBackend(opts.db ?? 'sqlite');
  const episodeId = opts.episodeId ?? `${task.id}#${opts.seed ?? 0}#${++episodeCounter}`;
  if (sessions.has(episodeId)) {
    throw new DbbenchError('DBBENCH_BAD_OPTION', `episode '${episodeId}' is already running: pass another episodeId or close it first`, { episodeId });
  }
  let session: DbSession;
  try {
    session = await backend.open(task, episodeId);
  } catch (e) {
    if (isDbbenchError(e)) throw e;
    throw new DbbenchError('DBBENCH_SETUP_FAILED', `could not create the database for task ${task.id} on ${backend.key}: ${(e as Error).message}`, { taskId: task.id }, { cause: e });
  }
  sessions.set(episodeId, session);
  const messages = initialMessages(task);
  const state: DbbenchState = {
    episodeId,
    taskId: task.id,
    variant: task.variant,
    backend: backend.key,
    rounds: 0,
    maxRounds,
    done: false,
    status: 'running',
    sqlLog: [],
  };
  const info: ResetResult['info'] = { messages, type: task.type };
  if (task.variant === 'main-fc') info.tools = FC_TOOLS;
  return { state, observation: messages[messages.length - 1]?.content ?? '', info };
}

async function runSql(session: DbSession, sql: string): Promise<string> {
  const r = await session.exec(sql);
  return truncate(r.ok ? pyRowsRepr(r.rows, 900) : r.error);
}

/** advance an episode by one agent turn */
export async function step(state: DbbenchState, action: DbbenchAction): Promise<StepResult> {
  if (state.done) {
    throw new DbbenchError('DBBENCH_EPISODE_DONE', `episode '${state.episodeId}' is over: call reset() for a new one`, { episodeId: state.episodeId });
  }
  const task = getTask(state.taskId);
  try {
    return state.variant === 'main-fc' ? await stepFc(state, task, action) : await stepV02(state, task, action);
  } catch (e) {
    // a crashed episode still drops its database
    await closeEpisode(state.episodeId).catch(() => undefined);
    throw e;
  }
}

async function finish(state: DbbenchState, status: EpisodeStatus, correct: boolean, answer: string, task: DbbenchTask, messages: ChatMessage[], sql?: string[]): Promise<StepResult> {
  await closeEpisode(state.episodeId);
  const info: StepInfo = { type: task.type, answer, correct, status, messages };
  if (sql) info.sql = sql;
  return { state: { ...state, done: true, status }, observation: '', reward: correct ? 1 : 0, done: true, info };
}

async function stepV02(state: DbbenchState, task: DbbenchTask, action: DbbenchAction): Promise<StepResult> {
  if (typeof action !== 'string') {
    throw new DbbenchError('DBBENCH_BAD_ACTION', `the v0.2 protocol takes the agent's reply text as the action; got ${typeof action} (tool calls belong to the main-fc variant)`, {});
  }
  const session = await sessionFor(state, task);
  const parsed = parseV02(action, state.rounds < state.maxRounds);
  if (parsed.kind === 'operation') {
    const observation = await runSql(session, parsed.sql);
    return {
      state: { ...state, rounds: state.rounds + 1, sqlLog: [...state.sqlLog, parsed.sql] },
      observation,
      reward: 0,
      done: false,
      info: { type: task.type, sql: [parsed.sql], status: 'running', messages: [{ role: 'user', content: observation }] },
    };
  }
  let status: EpisodeStatus = 'completed';
  let answer = '';
  if (parsed.kind === 'answer') answer = parsed.answer;
  else status = 'agent_validation_failed';
  if (parsed.kind !== 'invalid-operation' && state.rounds >= state.maxRounds && answer === '') status = 'task_limit_reached';
  let correct: boolean;
  if (isWriteType(task.type)) {
    // v0.2 scores a write by the table, whatever the agent answered
    answer = await session.tableHash(task);
    correct = answer === task.answerMd5;
  } else {
    correct = compareV02Read(answer, task.label);
  }
  return finish(state, status, correct, answer, task, []);
}

function parseFcAction(action: DbbenchAction): FcAction {
  if (typeof action !== 'string') return action;
  const t = action.trim();
  if (t.startsWith('{')) {
    try {
      return JSON.parse(t) as FcAction;
    } catch {
      // plain content without tool calls
    }
  }
  return { content: action };
}

async function stepFc(state: DbbenchState, task: DbbenchTask, action: DbbenchAction): Promise<StepResult> {
  const session = await sessionFor(state, task);
  const msg = parseFcAction(action);
  const calls: ToolCall[] = Array.isArray(msg.tool_calls) ? msg.tool_calls : [];
  const messages: ChatMessage[] = [];
  const sqlRun: string[] = [];
  const log = [...state.sqlLog];
  if (calls.length === 0) messages.push({ role: 'user', content: FC_NO_TOOL_CALLS });
  for (const call of calls) {
    const id = call.id ?? '';
    let name: string;
    let args: Record<string, unknown>;
    try {
      name = call.function?.name ?? '';
      const parsed: unknown = JSON.parse(call.function?.arguments ?? '{}');
      if (typeof parsed !== 'object' || parsed === null) throw new Error('arguments must be an object');
      args = parsed as Record<string, unknown>;
    } catch {
      messages.push({ role: 'tool', toolCallId: id, content: FC_BAD_TOOL_CALL });
      continue;
    }
    const first = Object.values(args)[0];
    if (name === 'execute_sql') {
      const sql = typeof first === 'string' ? first : JSON.stringify(first ?? '');
      sqlRun.push(sql);
      log.push(sql);
      const out = await runSql(session, sql);
      messages.push({ role: 'tool', toolCallId: id, content: out === '' ? 'No response from database.' : out });
    } else if (name === 'commit_final_answer') {
      const answers = Array.isArray(first) ? (first as unknown[]) : first === undefined ? [] : [first];
      let answer: string;
      let correct: boolean;
      if (isWriteType(task.type)) {
        answer = fcHashValue(await session.tableHash(task));
        correct = compareFc(answer, task.answerMd5, task.type);
      } else {
        answer = JSON.stringify(answers);
        correct = compareFc(answers, task.label, task.type);
      }
      return finish({ ...state, rounds: state.rounds + 1, sqlLog: log }, 'completed', correct, answer, task, messages, sqlRun);
    } else {
      messages.push({ role: 'tool', toolCallId: id, content: FC_INVALID_FUNCTION });
    }
  }
  const next: DbbenchState = { ...state, rounds: state.rounds + 1, sqlLog: log };
  if (next.rounds >= next.maxRounds) {
    // main-fc does not score an episode that never commits
    const r = await finish(next, 'task_limit_reached', false, '', task, messages, sqlRun);
    return { ...r, observation: messages.map((m) => m.content).join('\n\n') };
  }
  return {
    state: next,
    observation: messages.map((m) => m.content).join('\n\n'),
    reward: 0,
    done: false,
    info: { type: task.type, sql: sqlRun, status: 'running', messages },
  };
}

// ---------------------------------------------------------------- expert

function sqlBlock(sql: string): string {
  return `I will run the reference SQL.\nAction: Operation\n\`\`\`sql\n${sql}\n\`\`\``;
}

/** the reference SQL the expert replays: the label for writes, sql.query for reads */
export function referenceSql(task: DbbenchTask): string | null {
  return isWriteType(task.type) ? (task.label[0] ?? null) : task.sqlQuery;
}

/** every action the expert takes on a task, in order */
export function expertActions(task: DbbenchTask): DbbenchAction[] {
  const sql = referenceSql(task);
  const answers = isWriteType(task.type) ? [] : [...task.label];
  if (task.variant === 'main-fc') {
    const out: DbbenchAction[] = [];
    if (sql) out.push({ tool_calls: [{ id: 'call_0', function: { name: 'execute_sql', arguments: JSON.stringify({ query: sql }) } }] });
    out.push({ tool_calls: [{ id: 'call_1', function: { name: 'commit_final_answer', arguments: JSON.stringify({ answers }) } }] });
    return out;
  }
  const out: DbbenchAction[] = [];
  if (sql) out.push(sqlBlock(sql));
  out.push(`The reference query has run.\nAction: Answer\nFinal Answer: ${JSON.stringify(answers)}`);
  return out;
}

/** the expert's next action for an episode (or its first action for a task) */
export function expert(x: DbbenchState | DbbenchTask): DbbenchAction {
  if ('taskId' in x) {
    const task = getTask(x.taskId);
    const acts = expertActions(task);
    const sql = referenceSql(task);
    // replay the reference SQL once (unless rounds ran out), then answer
    const flat = (q: string): string => q.trim().replace(/\n/g, ' ');
    const replayed = sql === null || x.sqlLog.some((q) => flat(q) === flat(sql)) || x.rounds >= x.maxRounds;
    return (replayed ? acts[acts.length - 1] : acts[0]) as DbbenchAction;
  }
  return expertActions(x)[0] as DbbenchAction;
}
