/**
 * The episode runtime: init → loop [preDecision → model → preAction → env step → postFeedback],
 * with the effects each hook may have, per-entry accounting, and a plain-data episode record.
 */
import { Rng } from '../cluster/rng.ts';
import { baseHarness, harnessVersion, type Harness } from './canonical.ts';
import { HarnessError, errorText, isWallGuardError, wallGuardError } from './errors.ts';
import { RuleFault, evalCond, fillTemplate, usesRegex, type Scope } from './rules.ts';
import type { QuickJSWASMModule } from 'quickjs-emscripten';
import { CodeSandbox, RegexSandbox, resolveLimits, type SandboxLimits } from './sandbox.ts';
import {
  EffectSchema,
  MAX_ACTION_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_NOTE_CHARS,
  MAX_SKILLS,
  MAX_SKILL_CHARS,
  type CodeHook,
  type Rule,
} from './schema.ts';
import {
  EFFECTS_BY_HOOK,
  HOOKS,
  type ChatMessage,
  type Effect,
  type EnvFactory,
  type EnvFeedback,
  type EnvSession,
  type EpisodeRecord,
  type EpisodeStatus,
  type HistoryEntry,
  type HookAccount,
  type HookCounters,
  type HookCtx,
  type HookName,
  type Model,
  type Notebook,
  type Predicates,
  type StepEffect,
  type StepRecord,
} from './types.ts';

/** steps of history a hook sees, @default 16 */
export const DEFAULT_HISTORY_WINDOW = 16;
/** block_and_prompt re-prompts per step before the proposal goes through anyway, @default 2 */
export const DEFAULT_MAX_BLOCKS_PER_STEP = 2;
/** postFeedback force_action in a row before the model is asked again, @default 3 */
export const DEFAULT_MAX_FORCED_IN_A_ROW = 3;
/**
 * The most of an episode's executed actions a patch may choose instead of the model (forced or
 * rewritten): an intervention at the t-th action goes through while the episode's interventions
 * stay at most max(1, rate × t); beyond it, force_action and rewrite_action are clamped (counted)
 * and the model's own action is played. Half, so a patch can still rewrite every invalid action
 * of a target that errs at the learned zoo's rates (37–49 % of steps do nothing), but cannot
 * replace the agent with a scripted solver. @default 0.5
 */
export const DEFAULT_MAX_INTERVENTION_RATE = 0.5;
/** timeouts + out-of-memory faults after which a code hook is off for the episode, @default 3 */
export const DEFAULT_MAX_FAULTS = 3;
/** fault messages kept per entry, @default 5 */
export const DEFAULT_MAX_ERRORS_KEPT = 5;
/** serialised notebook size, @default 32000 */
export const MAX_NOTEBOOK_CHARS = MAX_NOTE_CHARS * 8;

export interface RunOptions {
  model: Model;
  /** @default baseHarness() (no patch) */
  harness?: Harness;
  /** @default 0 */
  seed?: number;
  /** cap the decisions below the env's own limit */
  maxSteps?: number;
  sandbox?: Partial<SandboxLimits>;
  /** @default DEFAULT_HISTORY_WINDOW */
  historyWindow?: number;
  /** @default DEFAULT_MAX_BLOCKS_PER_STEP */
  maxBlocksPerStep?: number;
  /** @default DEFAULT_MAX_FORCED_IN_A_ROW */
  maxForcedInARow?: number;
  /** @default DEFAULT_MAX_FAULTS */
  maxFaults?: number;
  /** 0–1: the share of executed actions a patch may force or rewrite. @default DEFAULT_MAX_INTERVENTION_RATE */
  maxInterventionRate?: number;
}

/** Words and symbols: the unit hint texts are counted in (a rough token count, the same for every model). */
export function textTokens(s: string | null): number {
  return s === null ? 0 : (s.match(/[A-Za-z0-9]+|[^\sA-Za-z0-9]/g) ?? []).length;
}

interface Entry {
  account: HookAccount;
  rule?: Rule;
  code?: CodeHook;
  sandbox?: CodeSandbox | null;
  seed?: number;
  faults: number;
}

function counters(): HookCounters {
  return { ran: 0, noEffect: 0, threw: 0, timedOut: 0, outOfMemory: 0, malformed: 0, clamped: 0, hinted: 0, blocked: 0, rewrote: 0, forced: 0, skipped: 0, disabled: false };
}

function positiveInt(name: string, v: number | undefined, dflt: number, min = 1): number {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < min) {
    throw new HarnessError('HARNESS_BAD_OPTION', `options.${name} must be an integer ≥ ${min} (got ${String(v)})`, { option: name, value: v });
  }
  return v;
}

function deepFreeze<T>(o: T): T {
  if (o !== null && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

const TEXT_FIELD: Record<string, 'message' | 'action' | 'text'> = {
  skill: 'text', tool_hint: 'text', hint: 'message', block_and_prompt: 'message', inject_hint: 'message', inject: 'message', rewrite_action: 'action', force_action: 'action',
};
const TEXT_LIMIT = { message: MAX_MESSAGE_CHARS, action: MAX_ACTION_CHARS, text: MAX_SKILL_CHARS } as const;

/**
 * Turn what a code hook returned into effects: null → none; a string → the hook's hint; an
 * effect object; init also takes an array of effects or `{skills, toolHint}`. Over-long texts are
 * cut (clamped); anything else is malformed.
 */
export function normalizeEffects(hook: HookName, value: unknown): { effects: Effect[]; clamped: number } | { error: string } {
  if (value === null || value === undefined || value === false) return { effects: [], clamped: 0 };
  let raw: unknown[];
  if (typeof value === 'string') {
    if (hook === 'preDecision') raw = [{ type: 'hint', message: value }];
    else if (hook === 'postFeedback') raw = [{ type: 'inject_hint', message: value }];
    else return { error: `${hook} returned a string; return an effect object {type: ${EFFECTS_BY_HOOK[hook].join(' | ')}, ...}` };
  } else if (Array.isArray(value)) {
    if (hook !== 'init') return { error: `${hook} returns one effect, not an array` };
    if (value.length > 8) return { error: `init returned ${value.length} effects; at most 8` };
    raw = value;
  } else if (isPlainObject(value) && hook === 'init' && !('type' in value)) {
    raw = [];
    const { skills, toolHint, ...rest } = value;
    if (Object.keys(rest).length > 0) return { error: `init returned unknown keys ${Object.keys(rest).join(', ')}; use {skills?, toolHint?} or effects` };
    if (skills !== undefined) {
      if (!Array.isArray(skills)) return { error: 'init: skills must be an array of strings' };
      for (const s of skills) raw.push({ type: 'skill', text: s });
    }
    if (toolHint !== undefined) raw.push({ type: 'tool_hint', text: toolHint });
  } else raw = [value];
  const out: Effect[] = [];
  let clamped = 0;
  for (const r0 of raw) {
    let r = r0;
    if (isPlainObject(r) && typeof r.type === 'string') {
      const f = TEXT_FIELD[r.type];
      const v = f ? r[f] : undefined;
      if (f && typeof v === 'string' && v.length > TEXT_LIMIT[f]) {
        r = { ...r, [f]: v.slice(0, TEXT_LIMIT[f]) };
        clamped++;
      }
    }
    const p = EffectSchema.safeParse(r);
    if (!p.success) return { error: `not an effect: ${p.error.issues.map((i) => `${i.path.join('.') || 'effect'}: ${i.message}`).join('; ')}` };
    const allowed: readonly string[] = EFFECTS_BY_HOOK[hook];
    if (!allowed.includes(p.data.type)) return { error: `${hook} may return ${allowed.join(', ')}, not ${p.data.type}` };
    out.push(p.data as Effect);
  }
  return { effects: out, clamped };
}

/** a hook point's verdict for preAction */
type ActionVerdict = { kind: 'pass'; action: string; rewritten: boolean } | { kind: 'block'; message: string } | { kind: 'force'; action: string };

class Episode {
  private readonly entries: Record<HookName, Entry[]> = { init: [], preDecision: [], preAction: [], postFeedback: [] };
  private readonly all: Entry[] = [];
  private regex: RegexSandbox | null = null;
  private module: QuickJSWASMModule | null = null;
  private nb: Notebook = {};
  private readonly history: HistoryEntry[] = [];
  private messages: ChatMessage[] = [];
  private skills: string[] = [];
  private toolHint: string | null = null;
  private goal = '';
  private taskType = '';
  private observation = '';
  private admissible: readonly string[] | null = null;
  private lastFeedback: EnvFeedback | null = null;
  private step = 0;
  private readonly limits: SandboxLimits;
  private readonly historyWindow: number;
  private readonly maxBlocks: number;
  private readonly maxForced: number;
  private readonly maxFaults: number;
  private readonly maxInterventionRate: number;
  /** executed actions the model did not choose (forced or rewritten), and interventions clamped by the cap */
  private interventions = 0;
  private interventionsClamped = 0;
  private decisions = 0;
  private hintTokens = 0;
  /** the effects that took hold in the current step (StepRecord.effects) */
  private stepEffects: StepEffect[] = [];
  private readonly seed: number;
  private readonly harness: Harness;
  private maxSteps = 0;

  constructor(private readonly session: EnvSession, private readonly opts: RunOptions) {
    this.harness = opts.harness ?? baseHarness();
    this.seed = opts.seed ?? 0;
    if (!Number.isInteger(this.seed)) throw new HarnessError('HARNESS_BAD_OPTION', `options.seed must be an integer (got ${String(opts.seed)})`, { option: 'seed' });
    this.limits = resolveLimits(opts.sandbox);
    this.historyWindow = positiveInt('historyWindow', opts.historyWindow, DEFAULT_HISTORY_WINDOW);
    this.maxBlocks = positiveInt('maxBlocksPerStep', opts.maxBlocksPerStep, DEFAULT_MAX_BLOCKS_PER_STEP, 0);
    this.maxForced = positiveInt('maxForcedInARow', opts.maxForcedInARow, DEFAULT_MAX_FORCED_IN_A_ROW, 0);
    this.maxFaults = positiveInt('maxFaults', opts.maxFaults, DEFAULT_MAX_FAULTS);
    const rate = opts.maxInterventionRate ?? DEFAULT_MAX_INTERVENTION_RATE;
    if (typeof rate !== 'number' || !(rate >= 0 && rate <= 1)) throw new HarnessError('HARNESS_BAD_OPTION', `options.maxInterventionRate must be a number from 0 to 1 (got ${String(opts.maxInterventionRate)})`, { option: 'maxInterventionRate', value: opts.maxInterventionRate });
    this.maxInterventionRate = rate;
    if (opts.maxSteps !== undefined) positiveInt('maxSteps', opts.maxSteps, 1);
  }

  private async compile(): Promise<void> {
    let needRegex = false;
    this.harness.layers.forEach((layer, li) => {
      (layer.patch.rules ?? []).forEach((rule, i) => {
        const e: Entry = { account: { id: `L${li}.${rule.name ?? `rule[${i}]`}`, layer: li, hook: rule.hook, kind: 'rule', counters: counters(), errors: [] }, rule, faults: 0 };
        needRegex ||= usesRegex(rule.when);
        this.entries[rule.hook].push(e);
        this.all.push(e);
      });
      (layer.patch.code ?? []).forEach((code, i) => {
        const e: Entry = { account: { id: `L${li}.${code.name ?? `code[${i}]`}`, layer: li, hook: code.hook, kind: 'code', counters: counters(), errors: [] }, code, sandbox: null, faults: 0 };
        this.entries[code.hook].push(e);
        this.all.push(e);
      });
    });
    // rules then code within a layer, layers in order
    for (const h of HOOKS) this.entries[h].sort((a, b) => a.account.layer - b.account.layer || (a.account.kind === b.account.kind ? 0 : a.account.kind === 'rule' ? -1 : 1));
    for (const e of this.all) {
      if (!e.code) continue;
      e.seed = new Rng(`${this.seed}:${e.account.id}`).nextU32();
      const r = await CodeSandbox.compile(e.code.source, { seed: e.seed, limits: this.limits });
      if (r.wallclock) throw wallGuardError(`compiling ${e.account.id}: ${r.error ?? ''}`);
      if (r.ok && r.sandbox) {
        e.sandbox = r.sandbox;
        this.module ??= r.sandbox.moduleRef;
      }
      else {
        e.account.counters.disabled = true;
        this.fault(e, `compile: ${r.error ?? '?'}`);
      }
    }
    if (needRegex) {
      this.regex = new RegexSandbox(this.limits);
      await this.regex.init();
    }
  }

  private fault(e: Entry, msg: string): void {
    if (e.account.errors.length < DEFAULT_MAX_ERRORS_KEPT) e.account.errors.push(`step ${this.step}: ${msg}`);
  }

  dispose(): void {
    for (const e of this.all) e.sandbox?.dispose();
    this.regex?.dispose();
  }

  // ---------------------------------------------------------------- ctx

  private predicates(hook: HookName, proposed: { action: string; ok: boolean } | null): Predicates {
    const h = this.history;
    const a = h[h.length - 1];
    const b = h[h.length - 2];
    const stepsLeft = this.maxSteps - this.step;
    return {
      repeatedAction: !!a && !!b && a.action === b.action,
      repeatedObservation: !!a && !!b && a.observation === b.observation,
      nothingHappens: this.lastFeedback?.signals?.nothingHappens === true,
      invalidFormat: hook === 'preAction' && proposed ? !proposed.ok : (a?.invalidFormat ?? false),
      sqlError: this.lastFeedback?.signals?.sqlError === true,
      stepLimitNear: stepsLeft <= Math.max(3, Math.ceil(this.maxSteps * 0.1)),
      proposedRepeatsLast: hook === 'preAction' && !!proposed && !!a && proposed.action === a.action,
      proposedInadmissible: hook === 'preAction' && !!proposed && this.admissible !== null && !this.admissible.includes(proposed.action),
    };
  }

  private ctx(hook: HookName, proposed: { text: string; action: string; ok: boolean } | null = null, blocks = 0): HookCtx {
    const last = this.history[this.history.length - 1];
    return deepFreeze({
      hook,
      env: this.session.env,
      task: { id: this.session.taskId, goal: this.goal, type: this.taskType },
      seed: this.seed,
      step: this.step,
      limits: { maxSteps: this.maxSteps, stepsLeft: this.maxSteps - this.step, historyWindow: this.historyWindow },
      history: this.history.slice(-this.historyWindow).map((x) => ({ ...x })),
      last: last ? { action: last.action, observation: last.observation } : null,
      observation: this.observation,
      proposed: proposed ? { text: proposed.text, action: proposed.action } : null,
      admissible: this.admissible ? [...this.admissible] : null,
      pred: this.predicates(hook, proposed),
      blocks,
      skills: [...this.skills],
    });
  }

  /** run every entry of a hook point; `onEffect` applies one effect and says whether to stop */
  private runHook(hook: HookName, mkCtx: () => HookCtx, onEffect: (e: Entry, eff: Effect) => 'stop' | 'continue' | 'refresh'): void {
    let ctx: HookCtx | null = null;
    let ctxJson: string | null = null;
    for (const e of this.entries[hook]) {
      const c = e.account.counters;
      if (c.disabled) {
        c.skipped++;
        continue;
      }
      ctx ??= mkCtx();
      c.ran++;
      let effects: Effect[] = [];
      if (e.rule) {
        const scope: Scope = { ...ctx, nb: this.nb };
        try {
          if (e.rule.when && !evalCond(e.rule.when, scope, this.regex)) {
            c.noEffect++;
            continue;
          }
        } catch (err) {
          if (isWallGuardError(err)) throw err;
          const kind = err instanceof RuleFault ? err.kind : 'threw';
          if (kind === 'timeout') c.timedOut++;
          else if (kind === 'oom') c.outOfMemory++;
          else c.threw++;
          this.fault(e, errorText(err));
          if (kind !== 'threw' && ++e.faults >= this.maxFaults) c.disabled = true;
          continue;
        }
        effects = [this.fillEffect(e.rule.effect, scope, e)];
      } else if (e.code) {
        if (!e.sandbox?.alive) {
          // restarted after a timeout or out-of-memory: a fresh runtime, the same source and seed
          const r = this.module ? CodeSandbox.compileWith(this.module, e.code.source, { seed: e.seed ?? 0, limits: this.limits }) : null;
          if (r?.wallclock) throw wallGuardError(`restarting ${e.account.id}: ${r.error ?? ''}`);
          if (!r?.ok || !r.sandbox) {
            c.threw++;
            c.disabled = true;
            this.fault(e, `restart failed: ${r?.error ?? 'no sandbox module'}`);
            continue;
          }
          e.sandbox = r.sandbox;
        }
        ctxJson ??= JSON.stringify(ctx);
        const out = e.sandbox.call(ctxJson, JSON.stringify(this.nb));
        if (out.kind === 'wallclock') throw wallGuardError(`${e.account.id} at step ${this.step}: ${out.error}`);
        if (out.kind !== 'ok') {
          if (out.kind === 'timeout') c.timedOut++;
          else if (out.kind === 'oom') c.outOfMemory++;
          else if (out.kind === 'malformed') c.malformed++;
          else c.threw++;
          this.fault(e, `${out.kind}: ${out.error}`);
          // a runaway or bloated runtime is thrown away (its memory freed) and restarted on the next call
          if (out.kind === 'timeout' || out.kind === 'oom') e.sandbox?.dispose();
          if (out.kind === 'crashed' || ((out.kind === 'timeout' || out.kind === 'oom') && ++e.faults >= this.maxFaults)) c.disabled = true;
          continue;
        }
        if (!this.takeNotebook(out.nb)) {
          c.clamped++;
          this.fault(e, `notebook rejected: a plain JSON object of at most ${MAX_NOTEBOOK_CHARS} characters`);
        }
        const n = normalizeEffects(hook, out.value);
        if ('error' in n) {
          c.malformed++;
          this.fault(e, `malformed: ${n.error}`);
          continue;
        }
        c.clamped += n.clamped;
        effects = n.effects;
      }
      if (effects.length === 0) {
        c.noEffect++;
        continue;
      }
      let stop = false;
      for (const eff of effects) {
        const r = onEffect(e, eff);
        if (r === 'stop') {
          stop = true;
          break;
        }
        if (r === 'refresh') {
          ctx = null;
          ctxJson = null;
        }
      }
      if (stop) break;
    }
  }

  private fillEffect(eff: Effect, scope: Scope, e: Entry): Effect {
    const f = TEXT_FIELD[eff.type];
    if (!f) return eff;
    const v = (eff as Record<string, unknown>)[f];
    if (typeof v !== 'string' || !v.includes('{{')) return eff;
    let s = fillTemplate(v, scope);
    if (s.length > TEXT_LIMIT[f]) {
      s = s.slice(0, TEXT_LIMIT[f]);
      e.account.counters.clamped++;
    }
    return { ...eff, [f]: s } as Effect;
  }

  private takeNotebook(nb: unknown): boolean {
    if (!isPlainObject(nb)) return false;
    const s = JSON.stringify(nb);
    if (s.length > MAX_NOTEBOOK_CHARS) return false;
    this.nb = JSON.parse(s) as Notebook;
    return true;
  }

  /** whether one more executed action may be the patch's (the intervention cap; see DEFAULT_MAX_INTERVENTION_RATE) */
  private interventionAllowed(): boolean {
    const t = this.step + 1;
    return this.maxInterventionRate > 0 && this.interventions + 1 <= Math.max(1, this.maxInterventionRate * t);
  }

  /** an action from a hook is usable when it is text and admissible where that is known */
  private usable(action: string): boolean {
    const a = action.trim();
    return a.length > 0 && (this.admissible === null || this.admissible.includes(a) || this.session.admits?.(a) === true);
  }

  // ---------------------------------------------------------------- the loop

  async run(): Promise<EpisodeRecord> {
    const record: EpisodeRecord = {
      v: 1,
      env: this.session.env,
      taskId: this.session.taskId,
      seed: this.seed,
      goal: '',
      taskType: '',
      model: this.opts.model.name,
      harness: { version: harnessVersion(this.harness), layers: this.harness.layers.map((l) => l.hash) },
      skills: [],
      toolHint: null,
      steps: [],
      outcome: { status: 'lost', won: false, reward: 0, steps: 0, end: null, error: null },
      hooks: [],
      notebook: {},
    };
    const finish = (status: EpisodeStatus, fb: EnvFeedback | null, error: string | null): EpisodeRecord => {
      record.outcome = { status, won: status === 'won', reward: fb?.reward ?? 0, steps: this.step, end: fb?.end ?? null, error };
      record.hooks = this.all.map((e) => e.account);
      record.notebook = this.nb;
      record.skills = this.skills;
      record.toolHint = this.toolHint;
      record.interventions = {
        executed: this.interventions,
        rate: this.step > 0 ? this.interventions / this.step : 0,
        clamped: this.interventionsClamped,
        cap: this.maxInterventionRate,
        hintTokens: this.hintTokens,
        hintTokensPerDecision: this.decisions > 0 ? this.hintTokens / this.decisions : 0,
      };
      return record;
    };
    try {
      return await this.play(record, finish);
    } catch (e) {
      // the wall-clock guard of a sandbox fired: an infra error, never a different episode
      if (isWallGuardError(e)) return finish('sandbox_error', this.lastFeedback ?? null, e.message);
      throw e;
    }
  }

  private async play(record: EpisodeRecord, finish: (status: EpisodeStatus, fb: EnvFeedback | null, error: string | null) => EpisodeRecord): Promise<EpisodeRecord> {
    await this.compile();
    let start;
    try {
      start = await this.session.reset();
    } catch (e) {
      return finish('env_error', null, `reset: ${errorText(e)}`);
    }
    this.maxSteps = Math.min(this.session.maxSteps, this.opts.maxSteps ?? Infinity);
    this.goal = start.goal;
    this.taskType = start.taskType;
    record.goal = start.goal;
    record.taskType = start.taskType;
    this.observation = start.observation;
    this.admissible = start.admissible ?? null;
    this.messages = start.messages.map((m) => ({ ...m }));

    // init: skills (patch texts first, then effects), tool hint, notebook
    for (const l of this.harness.layers) for (const s of l.patch.skills ?? []) if (this.skills.length < MAX_SKILLS) this.skills.push(s);
    this.runHook('init', () => this.ctx('init'), (e, eff) => {
      const c = e.account.counters;
      if (eff.type === 'skill') {
        if (this.skills.length < MAX_SKILLS) {
          this.skills.push(eff.text);
          c.hinted++;
        } else c.clamped++;
      } else if (eff.type === 'tool_hint') {
        if (this.toolHint === null) {
          this.toolHint = eff.text;
          c.hinted++;
        } else c.clamped++;
      } else if (eff.type === 'note') {
        const next = { ...this.nb, [eff.key]: eff.value };
        if (!this.takeNotebook(next)) c.clamped++;
      }
      return 'continue';
    });
    this.addSkills();

    let last: EnvFeedback | null = null;
    let pendingForce: string | null = null;
    let pendingForceBy: StepEffect | null = null;
    let forcedInARow = 0;
    while (this.step < this.maxSteps) {
      this.stepEffects = [];
      let proposal: string | null = null;
      let action: string;
      let hint: string | null = null;
      let blocks = 0;
      let forced = false;
      let rewritten = false;
      let invalid = false;
      if (pendingForce !== null) {
        action = pendingForce;
        pendingForce = null;
        if (pendingForceBy) this.stepEffects.push(pendingForceBy);
        pendingForceBy = null;
        forced = true;
        forcedInARow++;
      } else {
        forcedInARow = 0;
        // preDecision: one hint
        this.runHook('preDecision', () => this.ctx('preDecision'), (e, eff) => {
          if (eff.type !== 'hint') return 'continue';
          if (hint === null) {
            hint = eff.message;
            e.account.counters.hinted++;
            this.stepEffects.push({ entry: e.account.id, effect: 'hint', text: eff.message });
          } else e.account.counters.clamped++;
          return 'continue';
        });
        this.hintTokens += textTokens(hint);
        let verdict: ActionVerdict;
        for (;;) {
          const context = hint === null ? [...this.messages] : [...this.messages, { role: 'user' as const, content: `Hint: ${hint}` }];
          try {
            proposal = await this.opts.model.decide({ messages: context, step: this.step, env: this.session.env, taskId: this.session.taskId, session: this.session, seed: this.opts.seed ?? 0 });
            if (typeof proposal !== 'string') throw new TypeError(`model returned ${typeof proposal}, not text`);
          } catch (e) {
            return finish('model_error', last, `model ${this.opts.model.name} at step ${this.step}: ${errorText(e)}`);
          }
          this.decisions++;
          const parsed = this.session.parse(proposal);
          invalid = !parsed.ok;
          verdict = this.preAction(proposal, parsed.action, parsed.ok, blocks);
          if (verdict.kind !== 'block') break;
          blocks++;
          this.hintTokens += textTokens(verdict.message);
          this.messages.push({ role: 'assistant', content: proposal }, { role: 'user', content: verdict.message });
        }
        if (verdict.kind === 'force') {
          action = verdict.action;
          forced = true;
        } else {
          action = verdict.action;
          rewritten = verdict.rewritten;
        }
      }

      // env step
      let fb: EnvFeedback;
      try {
        fb = await this.session.step(action);
      } catch (e) {
        return finish('env_error', last, `step ${this.step} (${JSON.stringify(action)}): ${errorText(e)}`);
      }
      this.step++;
      last = fb;
      this.lastFeedback = fb;
      this.observation = fb.observation;
      if (fb.admissible !== undefined) this.admissible = fb.admissible;
      const shown = proposal !== null && !forced && !rewritten ? proposal : this.session.render(action);
      this.messages.push({ role: 'assistant', content: shown }, ...fb.messages.map((m) => ({ ...m })));
      this.history.push({ step: this.step, action, observation: fb.observation, reward: fb.reward, forced, rewritten, invalidFormat: invalid });
      if (forced || rewritten) this.interventions++;

      // postFeedback: one injected hint, one force
      let injected: string | null = null;
      if (!fb.done) {
        this.runHook('postFeedback', () => this.ctx('postFeedback'), (e, eff) => {
          const c = e.account.counters;
          if (eff.type === 'inject_hint') {
            if (injected === null) {
              injected = eff.message;
              c.hinted++;
              this.stepEffects.push({ entry: e.account.id, effect: 'inject', text: eff.message });
            } else c.clamped++;
          } else if (eff.type === 'force_action') {
            const wouldForce = pendingForce === null && forcedInARow < this.maxForced && this.usable(eff.action);
            if (wouldForce && this.interventionAllowed()) {
              pendingForce = eff.action.trim();
              pendingForceBy = { entry: e.account.id, effect: 'force', text: pendingForce };
              c.forced++;
            } else {
              c.clamped++;
              if (wouldForce) this.interventionsClamped++;
            }
          }
          return 'continue';
        });
        if (injected !== null) {
          this.messages.push({ role: 'user', content: injected });
          this.hintTokens += textTokens(injected);
        }
      }
      const rec: StepRecord = {
        step: this.step,
        proposal,
        action,
        observation: fb.observation,
        reward: fb.reward,
        done: fb.done,
        forced,
        rewritten,
        invalidFormat: invalid,
        blocked: blocks,
        hint,
        injected,
        pred: this.predicates('postFeedback', null),
        ...(this.stepEffects.length ? { effects: this.stepEffects } : {}),
      };
      record.steps.push(rec);
      if (fb.done) return finish(fb.won ? 'won' : fb.end === 'step_limit' ? 'step_limit' : 'lost', fb, null);
    }
    return finish('step_limit', last, null);
  }

  private preAction(text: string, action: string, ok: boolean, blocks: number): ActionVerdict {
    let cur = action;
    let rewritten = false;
    let verdict: ActionVerdict | null = null;
    this.runHook('preAction', () => this.ctx('preAction', { text, action: cur, ok }, blocks), (e, eff) => {
      const c = e.account.counters;
      if (eff.type === 'block_and_prompt') {
        if (blocks < this.maxBlocks) {
          c.blocked++;
          this.stepEffects.push({ entry: e.account.id, effect: 'block', text: eff.message });
          verdict = { kind: 'block', message: eff.message };
          return 'stop';
        }
        c.clamped++;
        return 'continue';
      }
      if (eff.type === 'rewrite_action' || eff.type === 'force_action') {
        if (!this.usable(eff.action)) {
          c.clamped++;
          this.fault(e, `${eff.type} ${JSON.stringify(eff.action)} is not an admissible action; ignored`);
          return 'continue';
        }
        // the cap: the first change to this step's action counts (a second rewrite of a rewritten action is the same intervention)
        if (!rewritten && !this.interventionAllowed()) {
          c.clamped++;
          this.interventionsClamped++;
          return 'continue';
        }
        if (eff.type === 'force_action') {
          c.forced++;
          this.stepEffects.push({ entry: e.account.id, effect: 'force', text: eff.action.trim() });
          verdict = { kind: 'force', action: eff.action.trim() };
          return 'stop';
        }
        c.rewrote++;
        cur = eff.action.trim();
        this.stepEffects.push({ entry: e.account.id, effect: 'rewrite', text: cur });
        rewritten = true;
        return 'refresh';
      }
      return 'continue';
    });
    return verdict ?? { kind: 'pass', action: cur, rewritten };
  }

  private addSkills(): void {
    if (this.skills.length === 0 && this.toolHint === null) return;
    const parts: string[] = [];
    if (this.skills.length > 0) parts.push(`Skills:\n${this.skills.map((s, i) => `${i + 1}. ${s}`).join('\n')}`);
    if (this.toolHint !== null) parts.push(`Tool hint: ${this.toolHint}`);
    const text = parts.join('\n\n');
    const first = this.messages[0];
    if (first && first.role === 'system') this.messages[0] = { role: 'system', content: `${first.content}\n\n${text}` };
    else this.messages.unshift({ role: 'system', content: text });
  }
}

/**
 * Run one episode of `factory`'s task with a model and a harness. Never throws for what a patch
 * does; bad options throw HARNESS_BAD_OPTION; model and env failures end the episode with
 * status `model_error` / `env_error`.
 *
 * @example
 * const rec = await runEpisode(alfworldEnv(game), { model: expertModel(), harness: composeHarness(baseHarness(), patch), seed: 0 });
 */
export async function runEpisode(factory: EnvFactory, opts: RunOptions): Promise<EpisodeRecord> {
  if (!opts || typeof opts.model?.decide !== 'function') {
    throw new HarnessError('HARNESS_BAD_OPTION', 'options.model must be a Model ({name, decide(context) → Promise<string>}); for tests use scriptedModel([...])', { option: 'model' });
  }
  const session = factory.open(opts.seed ?? 0);
  let ep: Episode | null = null;
  try {
    ep = new Episode(session, opts);
    return await ep.run();
  } finally {
    ep?.dispose();
    await session.close().catch(() => undefined);
  }
}
