/**
 * `llm-editor`: the prompted LLM editor as an experiment method. An LLM behind an
 * OpenAI-compatible endpoint (`--engineer openai:<base-url>#<model>`: vLLM, SGLang, a hosted API)
 * reads the packet and the patch contract and proposes K patches, asked in parallel (at most
 * `concurrency` at once), candidate i with seed `seed + i`. Each reply is validated (the patch
 * schema, then compile in the sandbox and a smoke episode: the checks a reward applies); an
 * invalid one is asked again ONCE with the validator's issues quoted, and is an invalid candidate
 * if still invalid. The valid candidates are scored on the packet's own batch and the best by Δ
 * is kept (best-of-K, the prompted editor's scoring). No valid candidate: the row is invalid
 * (counted in the valid-patch rate) and its episodes run unpatched. Every unit's row records its
 * candidates (valid, invalid, retried, repaired, Δ each). An HTTP failure after the client's
 * retries is an infrastructure failure: the run stops with EXP_METHOD_FAILED and writes no row
 * (no score, no reward); running the same command again resumes.
 *
 * Settings (`llmEditor:` in the config, {@link LlmEditorSchema}) are checked before the run
 * starts, recorded in run.json (the method's `settings`), and those that decide the patches key
 * its units (the method's `version`).
 */
import { z } from 'zod';
import { checkCandidate } from '../../drivers/index.ts';
import { formatIssue, OpenAIEngineer, DEFAULT_ENGINEER_CONCURRENCY, DEFAULT_ENGINEER_MAX_TOKENS, DEFAULT_ENGINEER_TEMPERATURE, type LlmCandidate } from '../../policies/engineer/openai.ts';
import { OpenAIError, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS } from '../../policies/targets/openai.ts';
import { parseTargetSpec } from '../../policies/targets/spec.ts';
import type { Patch, PatchIssue } from '../../harness/index.ts';
import { configHash, resolveOptions } from './config.ts';
import { ExpError } from './errors.ts';
import { MethodProposal, scoreOnOwnBatch, type CandidateRecord, type CandidatesRecord } from './best-of-k.ts';
import type { Method, MethodOptions } from './methods.ts';

/** Bumped when the method's prompts, retry rule or selection change (old rows are not reused). */
export const LLM_EDITOR_VERSION = 'llm-editor-1';
/** An invalid reply is asked again this many times (once), with the validator's issues quoted. */
export const LLM_EDITOR_RETRIES = 1;
/** The spec an error message shows as the example. */
export const LLM_ENGINEER_EXAMPLE = 'openai:http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B-Instruct';
/** Why the llm-editor row is empty without an LLM engineer. */
export const LLM_EDITOR_MISSING = `not available (needs an LLM engineer: pass --engineer openai:<base-url>#<model>, e.g. --engineer ${LLM_ENGINEER_EXAMPLE})`;

/** The defaults of `llmEditor` (topP null: not sent, the server's default). */
export const DEFAULT_LLM_EDITOR = {
  k: 4,
  concurrency: DEFAULT_ENGINEER_CONCURRENCY,
  temperature: DEFAULT_ENGINEER_TEMPERATURE,
  topP: null as number | null,
  maxTokens: DEFAULT_ENGINEER_MAX_TOKENS,
  extraBody: {} as Record<string, unknown>,
  maxRetries: DEFAULT_MAX_RETRIES,
  timeoutMs: DEFAULT_TIMEOUT_MS,
};

/** request body fields the settings (or the client) set: extraBody may not set them */
const OWN_FIELDS: Record<string, string> = {
  model: 'the client sets it from --engineer',
  messages: 'the client sets it',
  stream: 'the client sets it',
  temperature: 'set llmEditor.temperature',
  top_p: 'set llmEditor.topP',
  max_tokens: 'set llmEditor.maxTokens',
  seed: 'candidate i is asked with seed seed + i',
};

const posInt = (max: number) => z.number({ error: 'must be a positive integer' }).int('must be a positive integer').positive('must be a positive integer').max(max, `must be at most ${max}`);

/** `llmEditor:` in an experiment's config: the LLM editor's sampling and request settings. */
export const LlmEditorSchema = z.strictObject({
  /** candidates per packet */
  k: posInt(64).default(DEFAULT_LLM_EDITOR.k),
  /** chat calls in flight at once */
  concurrency: posInt(256).default(DEFAULT_LLM_EDITOR.concurrency),
  temperature: z.number({ error: 'must be a number in [0, 2]' }).min(0, 'must be a number in [0, 2]').max(2, 'must be a number in [0, 2]').default(DEFAULT_LLM_EDITOR.temperature),
  /** null: not sent (the server's default) */
  topP: z.number({ error: 'must be a number in (0, 1] or null' }).gt(0, 'must be a number in (0, 1] or null').max(1, 'must be a number in (0, 1] or null').nullable().default(DEFAULT_LLM_EDITOR.topP),
  maxTokens: posInt(1_000_000).default(DEFAULT_LLM_EDITOR.maxTokens),
  /** merged into every request body, e.g. {chat_template_kwargs: {enable_thinking: false}} */
  extraBody: z
    .record(z.string(), z.unknown(), { error: 'must be a mapping of request body fields, e.g. {chat_template_kwargs: {enable_thinking: false}}' })
    .superRefine((b, ctx) => {
      for (const k of Object.keys(b)) if (k in OWN_FIELDS) ctx.addIssue({ code: 'custom', path: [k], message: `may not be set in extraBody (${OWN_FIELDS[k]})` });
    })
    .default(DEFAULT_LLM_EDITOR.extraBody),
  /** the client's retries of 429, 5xx, network errors and timeouts */
  maxRetries: z.number({ error: 'must be an integer in 0..20' }).int('must be an integer in 0..20').min(0, 'must be an integer in 0..20').max(20, 'must be an integer in 0..20').default(DEFAULT_LLM_EDITOR.maxRetries),
  /** per-call timeout, ms */
  timeoutMs: posInt(3_600_000).default(DEFAULT_LLM_EDITOR.timeoutMs),
});

export type LlmEditorInput = z.input<typeof LlmEditorSchema>;
export type LlmEditorOptions = z.output<typeof LlmEditorSchema>;

/** The resolved settings of a run's llm-editor, as run.json records them. */
export interface LlmEditorSettings extends LlmEditorOptions {
  /** the engineer spec, `openai:<base-url>#<model>` */
  engineer: string;
  baseUrl: string;
  model: string;
  /** times an invalid reply is asked again */
  retries: number;
  /** what makes a candidate valid: the patch schema, compile in the sandbox, a smoke episode */
  check: 'full';
  select: 'best-of-k';
}

/** Whether an `engineer` option names an LLM engineer (rather than a trained engineer's folder). */
export function isLlmEngineerSpec(engineer: string | undefined): engineer is string {
  return typeof engineer === 'string' && engineer.trim().startsWith('openai:');
}

/**
 * The llm-editor settings of a run's method options; an ExpError (EXP_CONFIG) naming the option
 * when there is no `openai:` engineer or a setting is bad.
 */
export function llmEditorSettings(o: Pick<MethodOptions, 'engineer' | 'llmEditor'>): LlmEditorSettings {
  if (!isLlmEngineerSpec(o.engineer)) {
    const got = o.engineer === undefined ? 'none was given' : `got ${JSON.stringify(o.engineer)} (a trained engineer's folder, for engineer-sft/engineer-grpo)`;
    throw new ExpError('EXP_CONFIG', `engineer: the llm-editor method needs an LLM engineer, --engineer openai:<base-url>#<model> (or engineer: in the config), e.g. --engineer ${LLM_ENGINEER_EXAMPLE}; ${got}`, { path: 'engineer', data: { method: 'llm-editor', engineer: o.engineer ?? null } });
  }
  let spec;
  try {
    spec = parseTargetSpec(o.engineer);
  } catch (e) {
    throw new ExpError('EXP_CONFIG', `engineer: ${(e as Error).message}`, { path: 'engineer', cause: e, data: { engineer: o.engineer } });
  }
  if (spec.kind !== 'openai') throw new ExpError('EXP_CONFIG', `engineer: must be openai:<base-url>#<model>, e.g. ${LLM_ENGINEER_EXAMPLE}`, { path: 'engineer' });
  const s = resolveOptions(LlmEditorSchema, o.llmEditor ?? {}, 'llmEditor');
  return { engineer: o.engineer.trim(), baseUrl: spec.baseUrl, model: spec.model, ...s, retries: LLM_EDITOR_RETRIES, check: 'full', select: 'best-of-k' };
}

/** The settings that decide the patches (and so key the units): not concurrency, timeouts, client retries. */
function keyedSettings(s: LlmEditorSettings): Record<string, unknown> {
  return { engineer: s.engineer, k: s.k, temperature: s.temperature, topP: s.topP, maxTokens: s.maxTokens, extraBody: s.extraBody, retries: s.retries, check: s.check };
}

// one engineer (one client: its concurrency limit and counters) per endpoint and settings
const engineers = new Map<string, OpenAIEngineer>();

function engineerOf(s: LlmEditorSettings): OpenAIEngineer {
  const key = configHash({ ...keyedSettings(s), concurrency: s.concurrency, maxRetries: s.maxRetries, timeoutMs: s.timeoutMs }, 16);
  let e = engineers.get(key);
  if (!e) {
    e = new OpenAIEngineer(s.baseUrl, s.model, {
      temperature: s.temperature,
      ...(s.topP !== null ? { topP: s.topP } : {}),
      maxTokens: s.maxTokens,
      ...(Object.keys(s.extraBody).length ? { extraBody: s.extraBody } : {}),
      concurrency: s.concurrency,
      client: { maxRetries: s.maxRetries, timeoutMs: s.timeoutMs },
    });
    engineers.set(key, e);
  }
  return e;
}

/** Compile in the sandbox and a smoke episode, as a reward checks a candidate (a hostile hook fails here). */
async function fullCheck(patch: Patch): Promise<PatchIssue[]> {
  const r = await checkCandidate(patch, 'full');
  return r.ok ? [] : r.issues;
}

const MAX_RECORDED_ISSUES = 5;
const issueLines = (issues: readonly PatchIssue[]) => issues.slice(0, MAX_RECORDED_ISSUES).map((i) => formatIssue(i).slice(2));

/**
 * The prompted LLM editor. Run-bound by `configure` (which refuses a run without an `openai:`
 * engineer); its `propose` also resolves the settings itself, so a copy from `getMethod` works.
 */
export const LLM_EDITOR: Method = {
  name: 'llm-editor',
  label: 'prompted LLM editor',
  kind: 'editor',
  version: LLM_EDITOR_VERSION,
  available: (o) => (isLlmEngineerSpec(o.engineer) ? true : LLM_EDITOR_MISSING),
  configure(o) {
    const s = llmEditorSettings(o);
    return { ...LLM_EDITOR, version: `${LLM_EDITOR_VERSION}+${configHash(keyedSettings(s), 12)}`, settings: { ...s } };
  },
  async propose(ctx) {
    const s = llmEditorSettings(ctx.options);
    let cands: LlmCandidate[];
    try {
      cands = await engineerOf(s).propose(ctx.packet, { k: s.k, seed: ctx.seed, retries: s.retries, check: fullCheck });
    } catch (e) {
      if (!(e instanceof OpenAIError)) throw e;
      throw new ExpError('EXP_METHOD_FAILED', `llm-editor: the engineer endpoint ${s.baseUrl} (${s.model}) failed for ${ctx.env} (${ctx.target}): ${e.message}. This is an infrastructure failure, not an invalid candidate: no row was written; run the same command again to resume`, {
        path: 'engineer',
        cause: e,
        data: { method: 'llm-editor', env: ctx.env, engineer: s.engineer, code: e.code },
      });
    }
    const valid = cands.flatMap((c, i) => (c.ok ? [i] : []));
    const { best, results } = await scoreOnOwnBatch(ctx, valid.map((i) => (cands[i] as Extract<LlmCandidate, { ok: true }>).patch));
    const list: CandidateRecord[] = cands.map((c, i) => {
      const base = { seed: c.seed ?? ctx.seed + i, attempts: c.attempts ?? 1 };
      const first = c.firstIssues ? issueLines(c.firstIssues).map((l) => `first: ${l}`) : [];
      if (!c.ok) return { ...base, valid: false, delta: null, hash: '', issues: [...first, ...issueLines(c.issues)] };
      const r = results[valid.indexOf(i)]!;
      // the reward's own check agrees with the one above unless the patch behaves differently on a second run
      if (!r.valid) return { ...base, valid: false, delta: null, hash: c.hash, issues: [...first, ...issueLines(r.issues ?? [])] };
      return { ...base, valid: true, delta: r.delta, hash: c.hash, ...(first.length ? { issues: first } : {}) };
    });
    const chosen = best === null ? null : valid[best]!;
    const retried = list.filter((c) => c.attempts > 1);
    const candidates: CandidatesRecord = { k: s.k, valid: list.filter((c) => c.valid).length, invalid: list.filter((c) => !c.valid).length, retried: retried.length, repaired: retried.filter((c) => c.valid).length, chosen, list };
    if (chosen === null) {
      const why = list.map((c, i) => `candidate ${i}: ${c.issues?.find((l) => !l.startsWith('first: ')) ?? 'invalid'}`).join('; ');
      return new MethodProposal(null, { invalid: `llm-editor: none of the ${s.k} candidates is a valid patch (each invalid reply was asked again ${s.retries}×): ${why}`.slice(0, 500), candidates });
    }
    return new MethodProposal((cands[chosen] as Extract<LlmCandidate, { ok: true }>).patch, { candidates });
  },
};
