/**
 * The `openai:` engineer backend: an LLM behind an OpenAI-compatible endpoint reads the packet's
 * text and the patch contract and answers one JSON patch. The answer is validated by the patch
 * schema (and any further check the caller gives); an answer that is not a valid patch may be
 * asked again once the caller allows it, with the validator's issues quoted, and is otherwise an
 * invalid candidate (reward 0), reported with its issues, and the run goes on. The K candidates
 * of a packet are asked in parallel, a bounded number at once.
 */
import { DEFAULT_CONCURRENCY, OpenAIClient, type ChatRequest, type OpenAIClientOptions, type OpenAIMessage } from '../targets/openai.ts';
import { parseTargetSpec } from '../targets/spec.ts';
import { readPatch, HOOKS, PREDICATES, EFFECTS_BY_HOOK, MAX_ENTRIES, MAX_SKILLS, type Patch, type PatchIssue } from '../../harness/index.ts';
import { EngineerError } from './errors.ts';
import { formatPacket, type Packet } from './packet.ts';

/** The patch contract as the engineer prompt states it. */
export const PATCH_CONTRACT = `You edit the runtime (harness) of a frozen agent, never its model. Answer with ONE JSON object, a patch:
{"description"?: string (≤500 chars), "skills"?: string[] (≤${MAX_SKILLS}, each ≤2000 chars; added to the system prompt),
 "rules"?: Rule[], "code"?: CodeHook[]}   (at most ${MAX_ENTRIES} rules and code hooks together)
Rule = {"name"?: string, "hook": one of ${HOOKS.join(' | ')}, "when"?: Cond, "effect": Effect}
Cond = {"all": Cond[]} | {"any": Cond[]} | {"not": Cond} | {"pred": one of ${PREDICATES.join(' | ')}}
     | {"path": "observation" | "last.action" | "proposed.action" | "step" | "limits.stepsLeft" | "task.type" | "nb.<key>" | ..., and one of "equals" | "contains" | "matches" (regex, + "flags": "i") | "gt" | "gte" | "lt" | "lte"}
Effects per hook: ${Object.entries(EFFECTS_BY_HOOK).map(([h, e]) => `${h}: ${e.join(', ')}`).join('; ')}.
  {"type": "skill" | "tool_hint", "text"} · {"type": "note", "key", "value"} · {"type": "hint" | "block_and_prompt" | "inject_hint", "message"} · {"type": "rewrite_action" | "force_action", "action"}
  Messages and actions may use {{path}} templates, e.g. {{proposed.action}}.
CodeHook = {"name"?: string, "hook": ..., "source": "function hook(ctx, nb) { ... }"} (≤8000 chars, sandboxed JS, 50 ms a call).
  It returns an effect, a string (a hint), or null; ctx = {hook, env, task {id, goal, type}, step, limits {maxSteps, stepsLeft}, history [{step, action, observation}], last {action, observation}, observation, proposed {text, action}, admissible, pred {...}}; nb is a per-episode notebook object it may write.
Write general fixes for the failures you see (no task ids, no instance-specific actions). Answer with the JSON object only.`;

/** The messages sent to the engineer LLM for one packet. */
export function engineerPrompt(p: Packet): { role: 'system' | 'user'; content: string }[] {
  return [
    { role: 'system', content: `You are a harness engineer.\n${PATCH_CONTRACT}` },
    { role: 'user', content: `${formatPacket(p)}\nWrite one patch that fixes the most important failures above.` },
  ];
}

/** One candidate from an LLM engineer: a valid patch, or the reason it is not one. */
export type LlmCandidate =
  | ({ ok: true; patch: Patch; hash: string; raw: string } & CandidateTrace)
  | ({ ok: false; issues: PatchIssue[]; raw: string } & CandidateTrace);

/** How a candidate of {@link OpenAIEngineer.propose} came about (absent on a bare {@link parseEngineerReply}). */
export interface CandidateTrace {
  /** the sampling seed it was asked with (`seed + i`) */
  seed?: number;
  /** chat calls it took: 1, or 2 when the first reply was invalid and it was asked again */
  attempts?: number;
  /** the validator's issues with the first reply, when it was asked again */
  firstIssues?: PatchIssue[];
}

/** Read a patch out of a model's reply: the JSON object (a ```json fence is allowed), then the schema. */
export function parseEngineerReply(raw: string): LlmCandidate {
  const fenced = /```(?:json)?\s*\n([\s\S]*?)\n?```/.exec(raw)?.[1];
  let text = (fenced ?? raw).trim();
  if (!text.startsWith('{')) {
    const a = text.indexOf('{');
    const b = text.lastIndexOf('}');
    text = a >= 0 && b > a ? text.slice(a, b + 1) : text;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, raw, issues: [{ code: 'PATCH_JSON', path: '', message: `the reply is not a JSON object (${(e as Error).message}); the engineer must answer one JSON patch` }] };
  }
  const r = readPatch(json);
  if (!r.ok) return { ok: false, raw, issues: r.issues };
  return { ok: true, patch: r.parsed.patch, hash: r.parsed.hash, raw };
}

/** issues quoted in a retry message, at most (the rest are counted) */
export const MAX_QUOTED_ISSUES = 12;
/** characters of one issue's message quoted in a retry message, at most */
const MAX_ISSUE_CHARS = 400;
/** characters of an invalid reply sent back as the assistant turn of a retry, at most */
const MAX_ECHO_CHARS = 16_000;

/** One issue as a retry message quotes it: `- CODE at path: message`. */
export function formatIssue(i: PatchIssue): string {
  const msg = i.message.length > MAX_ISSUE_CHARS ? `${i.message.slice(0, MAX_ISSUE_CHARS - 1)}…` : i.message;
  return `- ${i.code} at ${i.path || '(patch)'}${i.hook ? ` [${i.hook}]` : ''}: ${msg}`;
}

/**
 * The follow-up user message after an invalid reply: the validator's issues (code, path,
 * message), and the request for a corrected JSON patch.
 */
export function repairPrompt(issues: readonly PatchIssue[]): string {
  const shown = issues.slice(0, MAX_QUOTED_ISSUES).map(formatIssue);
  if (issues.length > MAX_QUOTED_ISSUES) shown.push(`- … and ${issues.length - MAX_QUOTED_ISSUES} more`);
  return `Your answer is not a valid patch. The patch validator reported:\n${shown.join('\n')}\nAnswer again with the corrected patch: ONE JSON object that follows the patch contract, with these issues fixed, and nothing else.`;
}

/** @default 0.7 */
export const DEFAULT_ENGINEER_TEMPERATURE = 0.7;
/** @default 2048 */
export const DEFAULT_ENGINEER_MAX_TOKENS = 2048;
/** @default 4: chat calls of one propose() in flight at once */
export const DEFAULT_ENGINEER_CONCURRENCY = 4;

export interface OpenAIEngineerOptions {
  /** sampling temperature. @default 0.7 */
  temperature?: number;
  /** nucleus sampling; not sent when unset (the server's default) */
  topP?: number;
  /** @default 2048 */
  maxTokens?: number;
  /** fields merged into every request body, e.g. `{chat_template_kwargs: {enable_thinking: false}}` (not model, messages, stream) */
  extraBody?: Record<string, unknown>;
  /** chat calls of one propose() in flight at once (candidates are asked in parallel). @default 4 */
  concurrency?: number;
  /** client options other than the base URL (retries, timeout, key variable…); its concurrency defaults to at least this engineer's */
  client?: Omit<OpenAIClientOptions, 'baseUrl'>;
}

/** Options of one {@link OpenAIEngineer.propose} call. */
export interface ProposeOptions {
  /** candidates. @default 4 */
  k?: number;
  /** candidate i is asked with seed `seed + i`. @default 0 */
  seed?: number;
  /**
   * times an invalid reply is asked again, in the same conversation, with a message quoting the
   * validator's issues ({@link repairPrompt}); 0: every reply is final. @default 0
   */
  retries?: number;
  /**
   * checks after the schema (e.g. compile in the sandbox and a smoke episode); the issues it
   * returns make the candidate invalid (and asked again, within `retries`). It must not throw for
   * a bad patch: an exception is a failure of the run, not of the candidate.
   */
  check?: (patch: Patch) => Promise<PatchIssue[]>;
}

/** Run `fn` over `0..n-1`, at most `limit` at once; every call ends before this returns; the first error (by index) is thrown. */
async function mapLimit<T>(n: number, limit: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  const errors: { i: number; e: unknown }[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    // after a failure no new call starts; the ones in flight finish
    while (next < n && errors.length === 0) {
      const i = next++;
      try {
        out[i] = await fn(i);
      } catch (e) {
        errors.push({ i, e });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));
  if (errors.length) throw errors.sort((a, b) => a.i - b.i)[0]!.e;
  return out;
}

/** An engineer backed by an OpenAI-compatible endpoint. */
export class OpenAIEngineer {
  readonly client: OpenAIClient;
  readonly concurrency: number;
  constructor(
    readonly baseUrl: string,
    readonly model: string,
    readonly opts: OpenAIEngineerOptions = {},
  ) {
    const c = opts.concurrency ?? DEFAULT_ENGINEER_CONCURRENCY;
    if (!Number.isInteger(c) || c < 1) throw new EngineerError('ENGINEER_BAD_OPTION', `engineer concurrency must be a positive integer (chat calls in flight at once), got ${String(c)}`, { field: 'concurrency' });
    if (opts.extraBody !== undefined && (typeof opts.extraBody !== 'object' || opts.extraBody === null || Array.isArray(opts.extraBody))) {
      throw new EngineerError('ENGINEER_BAD_OPTION', 'engineer extraBody must be an object of request body fields, e.g. {"chat_template_kwargs": {"enable_thinking": false}}', { field: 'extraBody' });
    }
    this.concurrency = c;
    this.client = new OpenAIClient({ ...opts.client, concurrency: opts.client?.concurrency ?? Math.max(DEFAULT_CONCURRENCY, c), baseUrl });
  }

  /** One chat call with this engineer's sampling settings. */
  async #ask(messages: OpenAIMessage[], seed: number): Promise<string> {
    const o = this.opts;
    const req: ChatRequest = { model: this.model, messages, temperature: o.temperature ?? DEFAULT_ENGINEER_TEMPERATURE, maxTokens: o.maxTokens ?? DEFAULT_ENGINEER_MAX_TOKENS, seed };
    if (o.topP !== undefined) req.topP = o.topP;
    if (o.extraBody !== undefined) req.extraBody = o.extraBody;
    return (await this.client.chat(req)).content;
  }

  /** One candidate: ask, validate, and ask again with the issues while `retries` allow. */
  async #candidate(p: Packet, seed: number, retries: number, check: ProposeOptions['check']): Promise<LlmCandidate> {
    const messages: OpenAIMessage[] = engineerPrompt(p);
    let firstIssues: PatchIssue[] | undefined;
    for (let attempt = 1; ; attempt++) {
      const raw = await this.#ask(messages, seed);
      let c = parseEngineerReply(raw);
      if (c.ok && check) {
        const issues = await check(c.patch);
        if (issues.length > 0) c = { ok: false, raw, issues };
      }
      const trace: CandidateTrace = { seed, attempts: attempt, ...(firstIssues ? { firstIssues } : {}) };
      if (c.ok || attempt > retries) return { ...c, ...trace };
      firstIssues ??= c.issues;
      messages.push({ role: 'assistant', content: raw.length > MAX_ECHO_CHARS ? `${raw.slice(0, MAX_ECHO_CHARS)}…` : raw }, { role: 'user', content: repairPrompt(c.issues) });
    }
  }

  /**
   * K candidates for a packet, asked in parallel (at most `concurrency` calls in flight), in
   * candidate order; candidate i is asked with seed `seed + i`. A reply that is not a valid patch
   * is asked again up to `retries` times, then it is an invalid candidate (never dropped). An HTTP
   * failure after the client's retries throws (once the calls in flight have ended): an
   * infrastructure failure, not a candidate.
   */
  async propose(p: Packet, o: ProposeOptions = {}): Promise<LlmCandidate[]> {
    const k = o.k ?? 4;
    const retries = o.retries ?? 0;
    if (!Number.isInteger(k) || k < 1) throw new EngineerError('ENGINEER_BAD_OPTION', `k must be a positive integer (candidates per packet), got ${String(k)}`, { field: 'k' });
    if (!Number.isInteger(retries) || retries < 0) throw new EngineerError('ENGINEER_BAD_OPTION', `retries must be a non-negative integer, got ${String(retries)}`, { field: 'retries' });
    const seed = o.seed ?? 0;
    return mapLimit(k, this.concurrency, (i) => this.#candidate(p, seed + i, retries, o.check));
  }
}

/**
 * An engineer from a spec: `openai:<base-url>#<model>` (the `teacher` engineer is
 * {@link teacherPropose}, with no endpoint).
 */
export function openAIEngineerFromSpec(spec: string, opts: OpenAIEngineerOptions = {}): OpenAIEngineer {
  const t = parseTargetSpec(spec);
  if (t.kind !== 'openai') throw new EngineerError('ENGINEER_UNKNOWN_BACKEND', `engineer "${spec}": an LLM engineer is openai:<base-url>#<model> (e.g. openai:http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B-Instruct); use "teacher" for the built-in prompted editor`, { field: 'engineer' });
  return new OpenAIEngineer(t.baseUrl, t.model, opts);
}
