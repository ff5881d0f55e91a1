/** Models for tests, validators and benches: scripted texts, a function, the env's expert. */
import { HarnessError } from './errors.ts';
import type { DecisionContext, Model } from './types.ts';

/**
 * Replies from a list (then repeats the last, or `fallback`), or from a function of the context.
 *
 * @example
 * scriptedModel(['go to desk 1', 'take pen 1 from desk 1'])
 * scriptedModel((ctx) => ctx.messages.some((m) => m.content.startsWith('Hint:')) ? 'look' : 'inventory')
 */
export function scriptedModel(script: readonly string[] | ((ctx: DecisionContext, call: number) => string), opts: { name?: string; fallback?: string } = {}): Model {
  let call = 0;
  if (typeof script !== 'function' && (!Array.isArray(script) || script.length === 0) && opts.fallback === undefined) {
    throw new HarnessError('HARNESS_BAD_OPTION', 'scriptedModel needs a non-empty list of replies, a function, or options.fallback', { option: 'script' });
  }
  return {
    name: opts.name ?? 'scripted',
    decide(ctx) {
      const i = call++;
      if (typeof script === 'function') return Promise.resolve(script(ctx, i));
      return Promise.resolve(script[i] ?? opts.fallback ?? script[script.length - 1] ?? '');
    },
  };
}

/** asks the session's oracle (ALFWorld/DBBench expert); `look` when there is none */
export function expertModel(opts: { name?: string; fallback?: string } = {}): Model {
  return {
    name: opts.name ?? 'expert',
    async decide(ctx) {
      if (!ctx.session.expert) throw new HarnessError('HARNESS_MODEL_FAILED', `env ${ctx.env} has no expert; use scriptedModel`);
      return (await ctx.session.expert()) ?? opts.fallback ?? 'look';
    },
  };
}
