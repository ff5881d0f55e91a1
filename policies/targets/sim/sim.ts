import { Hr1Error } from '../../../cluster/errors.ts';
import { Rng, hashString } from '../../../cluster/rng.ts';
import type { ChatMessage, DecisionContext, Model } from '../../../harness/types.ts';
import type { TargetErrorCode } from '../spec.ts';
import { MODES, modesAddressed, type Mode } from './modes.ts';
import { ENV_SCALE, SIM_PROFILES, simProfile, type SimProfile } from './profiles.ts';
import { alfworldCorruptor } from './alfworld.ts';
import { dbbenchCorruptor } from './dbbench.ts';
import { webshopCorruptor } from './webshop.ts';

/** Bumped whenever a SIMULATED target's behaviour changes; part of every episode cache key. */
export const SIM_VERSION = 'sim-2';

/** What a corruptor knows at a decision: only what a model would see, plus the oracle's action. */
export interface SimView {
  env: string;
  messages: readonly ChatMessage[];
  /** the oracle's next action (what a perfect agent would do now) */
  oracle: string;
  /** the agent's earlier outputs, oldest first (assistant turns after the fixed prompt) */
  outputs: string[];
  /** the env's answers to them, aligned with `outputs` */
  feedback: string[];
  rng: Rng;
}

/** Env-specific failure behaviours; null = this mode does not apply here, act normally. */
export type Corruptor = (mode: Mode, v: SimView) => string | null;

const CORRUPTORS: Record<string, Corruptor> = { alfworld: alfworldCorruptor, dbbench: dbbenchCorruptor, webshop: webshopCorruptor };

/** Register a corruptor for another env (WebShop lands with its env). */
export function registerCorruptor(env: string, c: Corruptor): void {
  CORRUPTORS[env] = c;
}

/** The parts of the context that came from a harness rather than the env: skills, tool hints, hints. */
export function hintTexts(messages: readonly ChatMessage[]): string[] {
  const out: string[] = [];
  const sys = messages[0];
  if (sys && sys.role === 'system') {
    const i = sys.content.search(/(^|\n\n)(Skills:|Tool hint:)/);
    if (i >= 0) out.push(sys.content.slice(i));
  }
  for (let i = 1; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role !== 'user') continue;
    // a preDecision hint, or a postFeedback hint injected right after the env's answer
    if (m.content.startsWith('Hint:') || (messages[i - 1]!.role === 'user' && i - 1 > firstTurn(messages))) out.push(m.content);
  }
  return out;
}

// index of the first task turn (the env's own opening messages are not hints)
function firstTurn(messages: readonly ChatMessage[]): number {
  let i = 0;
  while (i < messages.length && messages[i]!.role !== 'assistant') i++;
  // DBBench opens with user prompt, assistant "Ok.", user task
  if (i < messages.length && messages[i]!.content === 'Ok.') return i + 1;
  return Math.max(1, i - 1);
}

/** Effective per-decision rates after hints and context length. Exported for the docs and tests. */
export function effectiveRates(p: SimProfile, messages: readonly ChatMessage[], env = ''): { rates: Record<Mode, number>; addressed: Set<Mode>; hintChars: number; noiseChars: number; contextChars: number } {
  const hints = hintTexts(messages);
  const addressed = new Set<Mode>();
  let noiseChars = 0;
  let hintChars = 0;
  for (const h of hints) {
    hintChars += h.length;
    const ms = modesAddressed(h);
    let useful = false;
    for (const m of ms) {
      addressed.add(m);
      if (p.rates[m] > 0) useful = true;
    }
    if (!useful) noiseChars += h.length;
  }
  const contextChars = messages.reduce((n, m) => n + m.content.length, 0);
  const scale = ENV_SCALE[env] ?? 1;
  const rates = {} as Record<Mode, number>;
  for (const m of MODES) rates[m] = Math.min(0.9, p.rates[m] * scale);
  for (const m of addressed) rates[m] = rates[m] * (1 - p.compliance);
  const over = Math.max(0, contextChars - p.contextBudget);
  rates.format_violation = Math.min(0.9, rates.format_violation + (p.contextSensitivity * over) / 1000 + (p.noiseSensitivity * noiseChars) / 1000);
  return { rates, addressed, hintChars, noiseChars, contextChars };
}

export interface SimModelOptions {
  /** the episode seed when the context does not carry one */
  seed?: number;
}

/**
 * A SIMULATED target: the env's expert corrupted by the profile's failure modes. It sees the
 * context messages (hints included) and the oracle's next action, never the patch. Draws are
 * keyed by (profile, task, seed, step, decision), so a patched and an unpatched episode meet the
 * same luck until their paths part (paired comparisons).
 */
export function simModel(profileName: string, opts: SimModelOptions = {}): Model {
  const p = simProfile(profileName);
  if (!p) throw new Hr1Error<TargetErrorCode>('UNKNOWN_SIM_PROFILE', `no simulated profile "${profileName}"; choose one of ${SIM_PROFILES.map((x) => x.name).join(', ')}`, { data: { profile: profileName } });
  // proposals the harness blocked so far, per episode: a rise since the last decision means this
  // decision is a re-ask after a block (executed actions = ctx.step; every other output was blocked)
  // keyed by the episode's session object: no state leaks between episodes, even concurrent ones
  const blockedSeen = new WeakMap<object, number>();
  return {
    name: `sim/${p.name}`,
    async decide(ctx: DecisionContext): Promise<string> {
      if (!ctx.session.expert) throw new Hr1Error<TargetErrorCode>('SIM_NO_ORACLE', `simulated targets need an env with an expert; ${ctx.env} has none`, { data: { env: ctx.env } });
      const oracle = (await ctx.session.expert()) ?? '';
      const corrupt = CORRUPTORS[ctx.env];
      if (!corrupt) return oracle;
      const msgs = ctx.messages;
      const start = firstTurn(msgs);
      const outputs: string[] = [];
      const feedback: string[] = [];
      for (let i = start; i < msgs.length; i++) {
        const m = msgs[i]!;
        if (m.role === 'assistant') {
          outputs.push(m.content);
          const next = msgs[i + 1];
          feedback.push(next && next.role === 'user' ? next.content : '');
        }
      }
      const seed = ctx.seed ?? opts.seed ?? 0;
      // keyed by decisions made (assistant turns), which hints do not change
      const rng = new Rng(hashString(`${p.name}|${ctx.env}|${ctx.taskId}|${seed}|${ctx.step}|${outputs.length}`));
      const draws = {} as Record<Mode, number>;
      for (const m of MODES) draws[m] = rng.next();
      const { rates } = effectiveRates(p, msgs, ctx.env);
      const view: SimView = { env: ctx.env, messages: msgs, oracle, outputs, feedback, rng: rng.fork('act') };
      const last = outputs[outputs.length - 1];
      const prev = outputs[outputs.length - 2];
      const blocked = outputs.length - ctx.step;
      const reasked = blocked > (blockedSeen.get(ctx.session) ?? 0);
      blockedSeen.set(ctx.session, blocked);
      // a block is not a free re-roll: a stubborn model gives the same answer again
      if (reasked && last !== undefined && rng.fork('stubborn').next() < p.stubbornness) return last;
      // an ongoing loop holds on with the profile's persistence (scaled down by a loop hint)
      if (last !== undefined && last === prev) {
        const persist = p.loopPersist * (rates.loop / Math.max(1e-9, Math.min(0.9, p.rates.loop * (ENV_SCALE[ctx.env] ?? 1))));
        if (draws.loop < persist) return last;
      }
      for (const m of MODES) {
        if (draws[m] >= rates[m]) continue;
        const out = m === 'loop' ? (last ?? null) : corrupt(m, view);
        if (out !== null && out !== oracle) return out;
      }
      return oracle;
    },
  };
}
