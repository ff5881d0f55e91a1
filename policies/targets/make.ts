/** Models from target spec strings: `sim/<profile>` (SIMULATED), `openai:<url>#<model>`, `lm/<name>`. */
import { Hr1Error } from '../../cluster/errors.ts';
import type { DecisionContext, Model } from '../../harness/index.ts';
import { parseTargetSpec, type TargetErrorCode } from './spec.ts';
import { resolveTargetOptions, type TargetOptions } from './options.ts';
import { simModel } from './sim/sim.ts';
import type { OpenAIClient, OpenAIClientStats, OpenAIModel, OpenAIModelOptions } from './openai.ts';

/**
 * The model for a target spec. `options` are the target's settings (policies/targets/options.ts:
 * checked here against the schema and the target's kind, a TargetOptionsError otherwise); they
 * are part of the episode cache key (drivers/rollout.ts).
 *
 * @example
 * await makeModel('openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B', { temperature: 0, maxTokens: 512, extraBody: { chat_template_kwargs: { enable_thinking: false } } });
 */
export async function makeModel(spec: string, options: Record<string, unknown> = {}): Promise<Model> {
  const t = parseTargetSpec(spec);
  const o = resolveTargetOptions(t, options);
  if (t.kind === 'sim') return simModel(t.profile);
  if (t.kind === 'openai') {
    const { OpenAIClient, OpenAIModel } = await import('./openai.ts');
    const client = new OpenAIClient({
      baseUrl: t.baseUrl,
      ...(o.timeout !== undefined ? { timeoutMs: o.timeout } : {}),
      ...(o.retries !== undefined ? { maxRetries: o.retries } : {}),
      ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
    });
    const base = openAIModelOptions(t.model, client, o);
    if (!o.tools) return new OpenAIModel(base);
    const { envTools } = await import('./tools.ts');
    return new EnvToolsModel(base, (env) => {
      const tools = envTools(env);
      return tools ? new OpenAIModel({ ...base, mode: 'tools', tools: tools.tools, formatToolCalls: (calls, content, ctx) => tools.format(calls, content, ctx) }) : undefined;
    }, `openai:${client.baseUrl}#${t.model}`);
  }
  if (t.kind === 'lm') {
    const { lmTarget } = await import('./lm/index.ts');
    return lmTarget(t.name, { ...(o.temperature !== undefined ? { temperature: o.temperature } : {}), ...(o.topP !== undefined ? { topP: o.topP } : {}) });
  }
  throw new Hr1Error<TargetErrorCode>('TARGET_NOT_AVAILABLE', `target "${spec}" is not available`, { data: { spec } });
}

/**
 * The counters of a model's endpoint client (requests, tokens, retries, latencies), or null for a
 * model that calls no endpoint (sim/, lm/).
 */
export function clientStatsOf(model: Model): OpenAIClientStats | null {
  const f = (model as { clientStats?: unknown }).clientStats;
  return typeof f === 'function' ? (f.call(model) as OpenAIClientStats) : null;
}

/** What the settings ask of an OpenAIModel (sampling, extra body fields, reasoning stripping). */
export function openAIModelOptions(model: string, client: OpenAIClient, o: TargetOptions): OpenAIModelOptions {
  return {
    model,
    client,
    ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
    ...(o.topP !== undefined ? { topP: o.topP } : {}),
    ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}),
    ...(o.stop !== undefined ? { stop: o.stop } : {}),
    ...(o.extraBody !== undefined ? { extraBody: o.extraBody } : {}),
    ...(o.stripReasoning !== undefined ? { stripReasoning: o.stripReasoning } : {}),
  };
}

/** Tools mode over several envs: one tools-mode model per env (one shared client), made on first use. */
class EnvToolsModel implements Model {
  readonly #byEnv = new Map<string, OpenAIModel>();
  constructor(
    readonly options: OpenAIModelOptions,
    private readonly make: (env: string) => OpenAIModel | undefined,
    readonly name: string,
  ) {}
  /** the shared client's counters (every env's model uses it) */
  clientStats(): OpenAIClientStats {
    return (this.options.client as OpenAIClient).stats();
  }
  async decide(ctx: DecisionContext): Promise<string> {
    let m = this.#byEnv.get(ctx.env);
    if (!m) {
      m = this.make(ctx.env);
      if (!m) throw new Hr1Error<TargetErrorCode>('TARGET_NOT_AVAILABLE', `${this.name} runs in tools mode, but ${ctx.env} has no function tools; drop the tools setting (--tools) for this env`, { data: { env: ctx.env } });
      this.#byEnv.set(ctx.env, m);
    }
    return m.decide(ctx);
  }
}
