/** ALFWorld as a harness env: one session per episode over the pure step function. */
import { admissible, expert, reset, resolveProtocol, step, type AlfState, type Game, type ProtocolName, type Protocol, type ResetOpts } from './index.ts';
import { EnvError } from '../contract.ts';
import type { EnvFactory, EnvFeedback, EnvSession, EnvStart, ParsedAction } from '../contract.ts';

/** the instruction the model starts from (ReAct's task framing, without few-shot examples) */
export const ALFWORLD_INSTRUCTIONS =
  'Interact with a household to solve a task. Each turn, reply with exactly one action, such as "go to desk 1", ' +
  '"take mug 1 from desk 1", "put mug 1 in/on shelf 2", "open drawer 1", "heat mug 1 with microwave 1", or ' +
  '"think: <your reasoning>".';

/** longest action text that still reads as an action, @default 200 */
export const MAX_ALFWORLD_ACTION_CHARS = 200;

export interface AlfworldEnvOptions {
  /** @default 'react' */
  protocol?: ProtocolName | Partial<Protocol>;
  /** @default 'legacy' */
  grammar?: ResetOpts['grammar'];
  /** compute admissible commands for ctx.admissible after every step, @default true */
  admissible?: boolean;
  /** @default ALFWORLD_INSTRUCTIONS */
  instructions?: string;
}

/**
 * Read a model's text as an ALFWorld action: the text after an `Action:` line if there is one,
 * else the first non-empty line, without a leading `>`. Invalid: empty, or longer than 200 chars.
 */
export function parseAlfworldAction(text: string): ParsedAction {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l.length > 0);
  const act = lines.find((l) => /^action\s*:/i.test(l));
  let a = (act ?? lines[0] ?? '').replace(/^action\s*:\s*/i, '').replace(/^>\s*/, '').trim();
  const ok = a.length > 0 && a.length <= MAX_ALFWORLD_ACTION_CHARS;
  if (a.length > MAX_ALFWORLD_ACTION_CHARS) a = a.slice(0, MAX_ALFWORLD_ACTION_CHARS);
  return { action: a, ok };
}

/** The most decisions of an episode under a protocol: its step limit, 50 when it has none. */
export function alfworldMaxSteps(protocol?: ProtocolName | Partial<Protocol>): number {
  const limit = resolveProtocol(protocol).stepLimit;
  return limit > 0 ? limit : 50;
}

class AlfworldSession implements EnvSession {
  readonly env = 'alfworld';
  readonly taskId: string;
  readonly maxSteps: number;
  private state: AlfState | null = null;
  constructor(private readonly game: Game, private readonly opts: AlfworldEnvOptions) {
    this.taskId = game.id;
    this.maxSteps = alfworldMaxSteps(opts.protocol);
  }
  private adm(): string[] | undefined {
    return this.opts.admissible === false || !this.state ? undefined : admissible(this.game, this.state);
  }
  reset(): Promise<EnvStart> {
    const r = reset(this.game, { grammar: this.opts.grammar ?? 'legacy', protocol: this.opts.protocol ?? 'react' });
    this.state = r.state;
    return Promise.resolve({
      messages: [
        { role: 'system', content: this.opts.instructions ?? ALFWORLD_INSTRUCTIONS },
        { role: 'user', content: r.observation },
      ],
      observation: r.observation,
      goal: r.info.goal,
      taskType: r.info.taskType,
      admissible: this.adm(),
    });
  }
  step(action: string): Promise<EnvFeedback> {
    const s = this.state;
    if (!s) return Promise.reject(new EnvError('ENV_NOT_RESET', 'alfworld: step() before reset(); call reset() first'));
    if (/^think\s*:/i.test(action)) {
      // ReAct's thoughts are not env steps; the harness answers as ReAct does
      return Promise.resolve({ observation: 'OK.', messages: [{ role: 'user', content: 'OK.' }], reward: 0, done: false, won: false, admissible: this.adm() });
    }
    const r = step(this.game, s, action);
    this.state = r.state;
    return Promise.resolve({
      observation: r.observation,
      messages: [{ role: 'user', content: r.observation }],
      reward: r.reward,
      done: r.done,
      won: r.info.won,
      admissible: r.done ? undefined : this.adm(),
      signals: { nothingHappens: r.info.pddl === null && r.observation.startsWith('Nothing happens.') },
      end: r.info.end,
    });
  }
  parse(text: string): ParsedAction {
    return parseAlfworldAction(text);
  }
  render(action: string): string {
    return action;
  }
  expert(): Promise<string | null> {
    return Promise.resolve(this.state ? expert(this.game, this.state) : null);
  }
  close(): Promise<void> {
    this.state = null;
    return Promise.resolve();
  }
}

/**
 * @example
 * const game = loadGames().games[0]!;
 * await runEpisode(alfworldEnv(game, { protocol: 'react' }), { model: expertModel() });
 */
export function alfworldEnv(game: Game, opts: AlfworldEnvOptions = {}): EnvFactory {
  if (!game || typeof game.id !== 'string') throw new EnvError('ENV_BAD_OPTION', 'alfworldEnv(game): pass a Game from loadGames().get(id)', { data: { option: 'game' } });
  resolveProtocol(opts.protocol);
  return { env: 'alfworld', taskId: game.id, open: () => new AlfworldSession(game, opts) };
}
