/**
 * ALFWorld sessions whose steps run in a worker pool: the state travels with each step (it is
 * plain data), so any thread serves any episode and steps of many episodes batch into one message.
 */
import { type AlfState, type Game, type ProtocolName, type StepResult } from './index.ts';
import { ALFWORLD_INSTRUCTIONS, alfworldMaxSteps, parseAlfworldAction } from './session.ts';
import { EnvError, type EnvFactory, type EnvFeedback, type EnvSession, type EnvStart, type ParsedAction, type Stepper } from '../contract.ts';

interface PooledStep {
  result: StepResult;
  admissible: string[] | null;
  expert: string | null;
}

class PooledAlfworldSession implements EnvSession {
  readonly env = 'alfworld';
  readonly taskId: string;
  readonly maxSteps: number;
  private state: AlfState | null = null;
  private nextExpert: string | null = null;
  constructor(private readonly game: Game, private readonly pool: Stepper, private readonly protocol: ProtocolName) {
    this.taskId = game.id;
    this.maxSteps = alfworldMaxSteps(protocol);
  }
  async reset(): Promise<EnvStart> {
    const r = await this.pool.run<{ state: AlfState; observation: string; info: { goal: string; taskType: string }; admissible: string[]; expert: string | null }>('resetFull', { game: this.game.id, protocol: this.protocol });
    this.state = r.state;
    this.nextExpert = r.expert;
    return {
      messages: [
        { role: 'system', content: ALFWORLD_INSTRUCTIONS },
        { role: 'user', content: r.observation },
      ],
      observation: r.observation,
      goal: r.info.goal,
      taskType: r.info.taskType,
      admissible: r.admissible,
    };
  }
  async step(action: string): Promise<EnvFeedback> {
    const s = this.state;
    if (!s) throw new EnvError('ENV_NOT_RESET', 'alfworld: step() before reset(); call reset() first');
    if (/^think\s*:/i.test(action)) return { observation: 'OK.', messages: [{ role: 'user', content: 'OK.' }], reward: 0, done: false, won: false };
    const r = await this.pool.run<PooledStep>('stepFull', { game: this.game.id, state: s, action });
    this.state = r.result.state;
    this.nextExpert = r.expert;
    return {
      observation: r.result.observation,
      messages: [{ role: 'user', content: r.result.observation }],
      reward: r.result.reward,
      done: r.result.done,
      won: r.result.info.won,
      admissible: r.admissible ?? undefined,
      signals: { nothingHappens: r.result.info.pddl === null && r.result.observation.startsWith('Nothing happens.') },
      end: r.result.info.end,
    };
  }
  parse(text: string): ParsedAction {
    return parseAlfworldAction(text);
  }
  render(action: string): string {
    return action;
  }
  expert(): Promise<string | null> {
    // computed by the worker with the step, so the oracle costs no extra trip
    return Promise.resolve(this.nextExpert);
  }
  close(): Promise<void> {
    this.state = null;
    return Promise.resolve();
  }
}

export function pooledAlfworldEnv(game: Game, pool: Stepper, opts: { protocol?: ProtocolName } = {}): EnvFactory {
  const protocol = opts.protocol ?? 'react';
  return { env: 'alfworld', taskId: game.id, open: () => new PooledAlfworldSession(game, pool, protocol) };
}
