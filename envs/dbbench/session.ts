/** DBBench as a harness env: async sessions over SQLite (default) or MariaDB/MySQL. */
import { DEFAULT_MAX_ROUNDS, closeEpisode, expert, parseV02, reset, step, type DbbenchState, type DbbenchTask } from './index.ts';
import type { ChatMessage as DbMessage } from './index.ts';
import { EnvError } from '../contract.ts';
import type { ChatMessage, EnvFactory, EnvFeedback, EnvSession, EnvStart, ParsedAction } from '../contract.ts';

export interface DbbenchEnvOptions {
  /** 'sqlite' or a mysql:// URL, @default 'sqlite' */
  db?: string;
  /** SQL rounds, @default the env's (15) */
  maxRounds?: number;
}

/** The most decisions of an episode: its SQL rounds, then the answer. */
export function dbbenchMaxSteps(maxRounds = DEFAULT_MAX_ROUNDS): number {
  return maxRounds + 1;
}

/** a MySQL error text as the env reports it: `1064 (42000): …` */
export const SQL_ERROR = /^\d{4} \([0-9A-Z]{5}\)/;

function toChat(m: DbMessage): ChatMessage {
  if (m.role === 'agent') return { role: 'assistant', content: m.content };
  if (m.role === 'tool') return { role: 'user', content: m.content };
  return { role: m.role, content: m.content };
}

/** v0.2: an Operation with a ```sql block, or a Final Answer; main-fc: JSON with tool_calls */
export function parseDbbenchAction(text: string, variant: 'v0.2' | 'main-fc'): ParsedAction {
  if (variant === 'main-fc') {
    try {
      const j = JSON.parse(text) as { tool_calls?: unknown };
      return { action: text, ok: Array.isArray(j.tool_calls) && j.tool_calls.length > 0 };
    } catch {
      return { action: text, ok: false };
    }
  }
  const k = parseV02(text, true).kind;
  return { action: text, ok: k === 'operation' || k === 'answer' };
}

class DbbenchSession implements EnvSession {
  readonly env = 'dbbench';
  readonly taskId: string;
  readonly maxSteps: number;
  private state: DbbenchState | null = null;
  constructor(private readonly task: DbbenchTask, private readonly seed: number, private readonly opts: DbbenchEnvOptions) {
    this.taskId = task.id;
    this.maxSteps = dbbenchMaxSteps(opts.maxRounds);
  }
  async reset(): Promise<EnvStart> {
    const r = await reset(this.task, { seed: this.seed, db: this.opts.db ?? 'sqlite', ...(this.opts.maxRounds !== undefined ? { maxRounds: this.opts.maxRounds } : {}) });
    this.state = r.state;
    return { messages: r.info.messages.map(toChat), observation: r.observation, goal: `${this.task.description}\n${this.task.addDescription}`.trim(), taskType: r.info.type };
  }
  async step(action: string): Promise<EnvFeedback> {
    const s = this.state;
    if (!s) throw new EnvError('ENV_NOT_RESET', 'dbbench: step() before reset(); call reset() first');
    const r = await step(s, action);
    this.state = r.state;
    const won = r.done && r.info.correct === true;
    return {
      observation: r.observation,
      messages: r.info.messages.filter((m) => m.role !== 'agent').map(toChat),
      reward: r.reward,
      done: r.done,
      won,
      signals: { sqlError: SQL_ERROR.test(r.observation) },
      end: r.done ? r.info.status : undefined,
    };
  }
  parse(text: string): ParsedAction {
    return parseDbbenchAction(text, this.task.variant);
  }
  render(action: string): string {
    return action;
  }
  expert(): Promise<string | null> {
    if (!this.state || this.state.done) return Promise.resolve(null);
    const a = expert(this.state);
    return Promise.resolve(typeof a === 'string' ? a : JSON.stringify(a));
  }
  async close(): Promise<void> {
    const s = this.state;
    this.state = null;
    if (s) await closeEpisode(s.episodeId);
  }
}

/**
 * @example
 * const [task] = loadTasks({ file: 'v0.2/dev' });
 * await runEpisode(dbbenchEnv(task!), { model: expertModel() });
 */
export function dbbenchEnv(task: DbbenchTask, opts: DbbenchEnvOptions = {}): EnvFactory {
  if (!task || typeof task.id !== 'string') throw new EnvError('ENV_BAD_OPTION', 'dbbenchEnv(task): pass a task from loadTasks()', { data: { option: 'task' } });
  return { env: 'dbbench', taskId: task.id, open: (seed) => new DbbenchSession(task, seed, opts) };
}
