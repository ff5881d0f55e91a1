/**
 * The `openai:` engineer backend: an LLM behind an OpenAI-compatible endpoint reads the packet's
 * text and the patch contract and answers one JSON patch. The answer is validated by the patch
 * schema; an answer that is not a valid patch is an invalid candidate (reward 0), reported with
 * its issues, and the run goes on.
 */
import { OpenAIClient, type OpenAIClientOptions } from '../targets/openai.ts';
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
  | { ok: true; patch: Patch; hash: string; raw: string }
  | { ok: false; issues: PatchIssue[]; raw: string };

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

export interface OpenAIEngineerOptions {
  /** sampling temperature. @default 0.7 */
  temperature?: number;
  /** @default 2048 */
  maxTokens?: number;
  /** client options other than the base URL (retries, timeout, key variable…) */
  client?: Omit<OpenAIClientOptions, 'baseUrl'>;
}

/** An engineer backed by an OpenAI-compatible endpoint. */
export class OpenAIEngineer {
  readonly client: OpenAIClient;
  constructor(
    readonly baseUrl: string,
    readonly model: string,
    readonly opts: OpenAIEngineerOptions = {},
  ) {
    this.client = new OpenAIClient({ ...opts.client, baseUrl });
  }

  /**
   * K candidates for a packet; candidate i is asked with seed `seed + i`. A reply that is not a
   * valid patch is an invalid candidate; an HTTP failure after the client's retries throws.
   */
  async propose(p: Packet, o: { k?: number; seed?: number } = {}): Promise<LlmCandidate[]> {
    const messages = engineerPrompt(p);
    const k = o.k ?? 4;
    const out: LlmCandidate[] = [];
    for (let i = 0; i < k; i++) {
      const r = await this.client.chat({ model: this.model, messages, temperature: this.opts.temperature ?? 0.7, maxTokens: this.opts.maxTokens ?? 2048, seed: (o.seed ?? 0) + i });
      out.push(parseEngineerReply(r.content));
    }
    return out;
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
