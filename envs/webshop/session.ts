/** WebShop as a harness env: one session per episode over the pure text-mode step function. */
import { expert, goalOf, loadWebshop, reset, step, type ProtocolName, type WebshopEnv, type WebshopState } from './index.ts';
import { EnvError } from '../contract.ts';
import type { EnvFactory, EnvFeedback, EnvSession, EnvStart, ParsedAction } from '../contract.ts';

/** ReAct's WebShop framing, without few-shot examples. */
export const WEBSHOP_INSTRUCTIONS =
  'You are shopping on a web store to buy the product the instruction describes. Each turn, reply with exactly one action: ' +
  'search[keywords] on a page with a search bar, or click[text] naming a clickable on the page (a product id, an option, "buy now", "back to search", "next >", "< prev").';

/** Read a model's text as a WebShop action: the first `search[...]` or `click[...]` in it. */
export function parseWebshopAction(text: string): ParsedAction {
  const m = /(search|click)\[[^\]\n]*\]/i.exec(text);
  if (!m) return { action: text.trim().split('\n')[0]?.slice(0, 200) ?? '', ok: false };
  return { action: m[0].replace(/^(search|click)/i, (v) => v.toLowerCase()), ok: true };
}

export interface WebshopEnvOptions {
  /** @default 'react' (15 steps) */
  protocol?: ProtocolName;
  /** a user's own WebShop data dir */
  dataDir?: string;
  /** an already loaded env to play (e.g. the vendored one with extra training goals); overrides dataDir */
  loaded?: WebshopEnv;
}

/** The step limit of each protocol. */
export const WEBSHOP_MAX_STEPS: Record<ProtocolName, number> = { react: 15, 'agentbench-v0.2': 10, 'agentbench-main': 20 };

class WebshopSession implements EnvSession {
  readonly env = 'webshop';
  readonly maxSteps: number;
  private state: WebshopState | null = null;
  constructor(private readonly ws: WebshopEnv, readonly taskId: string, private readonly opts: WebshopEnvOptions) {
    this.maxSteps = WEBSHOP_MAX_STEPS[opts.protocol ?? 'react'];
  }
  reset(): Promise<EnvStart> {
    const r = reset(this.ws, this.taskId, { protocol: this.opts.protocol ?? 'react' });
    this.state = r.state;
    return Promise.resolve({
      messages: [
        { role: 'system', content: WEBSHOP_INSTRUCTIONS },
        { role: 'user', content: r.observation },
      ],
      observation: r.observation,
      // the instruction (what the agent is asked), not the session name `fixed_<index>`
      goal: goalOf(this.ws, r.info.goal).instruction,
      taskType: 'shop',
      admissible: r.info.clickables.map((c) => `click[${c}]`),
    });
  }
  step(action: string): Promise<EnvFeedback> {
    const s = this.state;
    if (!s) return Promise.reject(new EnvError('ENV_NOT_RESET', 'webshop: step() before reset(); call reset() first'));
    const r = step(this.ws, s, action);
    this.state = r.state;
    return Promise.resolve({
      observation: r.observation,
      messages: [{ role: 'user', content: r.observation }],
      reward: r.reward,
      done: r.done,
      won: r.info.success,
      admissible: r.done ? undefined : r.info.clickables.map((c) => `click[${c}]`),
      signals: { nothingHappens: !r.info.valid },
      end: r.done ? (r.info.limit ? 'step_limit' : 'bought') : undefined,
    });
  }
  /** a search with a non-empty query on the search page (the only free-form action WebShop has) */
  admits(action: string): boolean {
    return this.state !== null && !this.state.done && this.state.page === 'search' && /^search\[[^\]\n]*\S[^\]\n]*\]$/.test(action) && action.length <= 300;
  }
  parse(text: string): ParsedAction {
    return parseWebshopAction(text);
  }
  render(action: string): string {
    return action;
  }
  expert(): Promise<string | null> {
    return Promise.resolve(this.state && !this.state.done ? expert(this.ws, this.state) : null);
  }
  close(): Promise<void> {
    this.state = null;
    return Promise.resolve();
  }
}

/**
 * @example
 * const ws = loadWebshop();
 * await runEpisode(webshopEnv(ws.goals[0]!.id), { model: expertModel() });
 */
export function webshopEnv(goalId: string, opts: WebshopEnvOptions = {}): EnvFactory {
  const ws = opts.loaded ?? loadWebshop(opts.dataDir ? { dataDir: opts.dataDir } : {});
  if (!ws.goalsById.has(goalId)) throw new EnvError('ENV_BAD_OPTION', `webshop has no goal "${goalId}"; use ids from loadWebshop().goals`, { data: { option: 'goalId' } });
  return { env: 'webshop', taskId: goalId, open: () => new WebshopSession(ws, goalId, opts) };
}
