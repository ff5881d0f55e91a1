/**
 * The `openai:<base-url>#<model>` target: a client for any OpenAI-compatible chat endpoint (vLLM,
 * SGLang, llama.cpp server, hosted APIs) and a harness {@link Model} on top of it.
 *
 * The client limits concurrency, retries 429/5xx/network errors/timeouts with exponential backoff
 * and seeded jitter, and never retries other 4xx. The API key comes from the environment only.
 *
 * @example
 * const client = new OpenAIClient({ baseUrl: 'http://127.0.0.1:8000/v1', concurrency: 16 });
 * const r = await client.chat({ model: 'Qwen/Qwen2.5-7B-Instruct', messages: [{ role: 'user', content: 'hi' }] });
 * r.content; client.stats().retries;
 */
import { z } from 'zod';
import { systemClock, type Clock } from '../../cluster/clock.ts';
import { ConfigError, Hr1Error, type Hr1ErrorFields } from '../../cluster/errors.ts';
import { parseDuration } from '../../cluster/duration.ts';
import { Rng } from '../../cluster/rng.ts';
import type { DecisionContext, Model } from '../../harness/types.ts';
import { parseTargetSpec, TargetSpecError } from './spec.ts';
import { DEFAULT_CONCURRENCY, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS } from './settings.ts';
import { LatencyHistogram, type LatencyCounts } from './latency.ts';

// ---------------------------------------------------------------- defaults

// concurrency 8, 4 retries and a 60 s timeout: shared with the target settings' table (settings.ts)
export { DEFAULT_CONCURRENCY, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS };

/** @default 500 ms: the first backoff; doubled per retry */
export const DEFAULT_BACKOFF_BASE_MS = 500;
/** @default 8 s: no backoff is longer */
export const DEFAULT_BACKOFF_CAP_MS = 8_000;
/** @default 60 s: a `Retry-After` longer than this is cut to it */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;
/** @default 'OPENAI_API_KEY' */
export const DEFAULT_API_KEY_ENV = 'OPENAI_API_KEY';
/** read when the variable named by `apiKeyEnv` is unset */
export const FALLBACK_API_KEY_ENV = 'HR1_OPENAI_API_KEY';
/** how much of an error body goes into an error message */
const BODY_EXCERPT = 300;

// ---------------------------------------------------------------- errors

/** Codes of {@link OpenAIError}. */
export type OpenAIErrorCode = 'OPENAI_HTTP' | 'OPENAI_TIMEOUT' | 'OPENAI_NETWORK' | 'OPENAI_BAD_RESPONSE' | 'OPENAI_RETRIES_EXHAUSTED' | 'OPENAI_FORMAT';

/** Any failure of the openai target; `code` says which. */
export class OpenAIError extends Hr1Error<OpenAIErrorCode> {}

/** The server answered a non-2xx status. Retryable for 429 and 5xx. */
export class OpenAIHttpError extends OpenAIError {
  readonly status: number;
  readonly url: string;
  /** the first characters of the response body (the API key, if echoed, is masked) */
  readonly bodyExcerpt: string;
  /** the server's `Retry-After`, in ms, when it sent one */
  readonly retryAfterMs: number | undefined;
  constructor(status: number, url: string, bodyExcerpt: string, message: string, retryAfterMs?: number, fields: Hr1ErrorFields = {}) {
    super('OPENAI_HTTP', message, { retryable: status === 429 || status >= 500, ...fields, data: { status, url, bodyExcerpt, retryAfterMs } });
    this.status = status;
    this.url = url;
    this.bodyExcerpt = bodyExcerpt;
    this.retryAfterMs = retryAfterMs;
  }
}

/** One attempt took longer than `timeoutMs`. */
export class OpenAITimeoutError extends OpenAIError {
  readonly timeoutMs: number;
  readonly url: string;
  constructor(url: string, timeoutMs: number, fields: Hr1ErrorFields = {}) {
    super('OPENAI_TIMEOUT', `no answer from ${url} within ${timeoutMs} ms; raise openai.timeoutMs or check that the server is not overloaded`, {
      retryable: true,
      ...fields,
      data: { url, timeoutMs },
    });
    this.timeoutMs = timeoutMs;
    this.url = url;
  }
}

/** The request did not reach the server (refused, reset, DNS). */
export class OpenAINetworkError extends OpenAIError {
  readonly url: string;
  constructor(url: string, reason: string, fields: Hr1ErrorFields = {}) {
    super('OPENAI_NETWORK', `could not reach ${url}: ${reason}; is the server running there? check openai.baseUrl`, { retryable: true, ...fields, data: { url, reason } });
    this.url = url;
  }
}

/** A 2xx answer that is not a chat completion. */
export class OpenAIBadResponseError extends OpenAIError {
  readonly url: string;
  constructor(url: string, problem: string, bodyExcerpt: string, fields: Hr1ErrorFields = {}) {
    super('OPENAI_BAD_RESPONSE', `${url} answered 2xx but not a chat completion (${problem}): ${bodyExcerpt}; is openai.baseUrl an OpenAI-compatible /v1 endpoint?`, {
      retryable: false,
      ...fields,
      data: { url, problem, bodyExcerpt },
    });
    this.url = url;
  }
}

/** Every attempt failed with a retryable error; `cause` is the last one. */
export class OpenAIRetriesExhaustedError extends OpenAIError {
  readonly attempts: number;
  /** the last attempt's error code, e.g. `OPENAI_TIMEOUT` */
  readonly lastCode: string;
  constructor(attempts: number, last: OpenAIError) {
    super('OPENAI_RETRIES_EXHAUSTED', `gave up after ${attempts} attempts; last: ${last.code}: ${last.message} (raise openai.maxRetries or fix the cause)`, {
      retryable: true,
      cause: last,
      data: { attempts, lastCode: last.code },
    });
    this.attempts = attempts;
    this.lastCode = last.code;
  }
}

/** A tools-mode model whose formatter threw or that was given no formatter. */
export class OpenAIModelError extends OpenAIError {}

// ---------------------------------------------------------------- options

/** Options of {@link OpenAIClient}. Durations are ms or strings like `"30s"`. */
export interface OpenAIClientOptions {
  /** the endpoint's base URL, ending in `/v1` (e.g. `http://127.0.0.1:8000/v1`) */
  baseUrl: string;
  /** requests in flight at once; more wait in FIFO order. @default 8 */
  concurrency?: number;
  /** retries after the first attempt, on 429, 5xx, network errors and timeouts. @default 4 */
  maxRetries?: number;
  /** first backoff; doubled per retry, with jitter in [d/2, d). @default 500 ms */
  backoffBaseMs?: number | string;
  /** longest backoff. @default 8 s */
  backoffCapMs?: number | string;
  /** longest `Retry-After` honoured. @default 60 s */
  maxRetryAfterMs?: number | string;
  /** per-attempt timeout. @default 60 s */
  timeoutMs?: number | string;
  /** the environment variable holding the API key (sent as `Authorization: Bearer`). @default 'OPENAI_API_KEY' */
  apiKeyEnv?: string;
  /** where environment variables are read from. @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /** seed of the backoff jitter. @default 0 */
  seed?: number;
  /** extra HTTP headers (not for the key: use the environment) */
  headers?: Record<string, string>;
  /** the wall clock, for `Retry-After` given as an HTTP date and for request latencies. @default systemClock */
  clock?: Clock;
}

export interface ResolvedOpenAIClientOptions {
  baseUrl: string;
  concurrency: number;
  maxRetries: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  maxRetryAfterMs: number;
  timeoutMs: number;
  apiKeyEnv: string;
  seed: number;
  headers: Record<string, string>;
}

const duration = z.union([z.number(), z.string()]).transform((v, ctx) => {
  try {
    return parseDuration(v);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'bad duration' });
    return z.NEVER;
  }
});

const ClientSchema = z
  .object({
    baseUrl: z.string().refine((s) => /^https?:\/\/[^/]/.test(s) && URL.canParse(s)),
    concurrency: z.number().int().min(1).max(4096).optional(),
    maxRetries: z.number().int().min(0).max(100).optional(),
    backoffBaseMs: duration.optional(),
    backoffCapMs: duration.optional(),
    maxRetryAfterMs: duration.optional(),
    timeoutMs: duration.pipe(z.number().positive()).optional(),
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional(),
    env: z.record(z.string(), z.string().optional()).optional(),
    seed: z.number().int().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    clock: z.custom<Clock>((v) => typeof v === 'object' && v !== null && typeof (v as Clock).nowMs === 'function').optional(),
  })
  .strict();

/** what each option must be; the error says `openai.<option>: <this>, got <value>` */
const OPTION_RULES: Record<keyof OpenAIClientOptions, string> = {
  baseUrl: 'must be an http(s) URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1',
  concurrency: 'must be a positive integer (requests in flight at once)',
  maxRetries: 'must be a non-negative integer (0 = no retries)',
  backoffBaseMs: 'must be a non-negative duration: ms as a number or a string like "500ms"',
  backoffCapMs: 'must be a non-negative duration: ms as a number or a string like "8s"',
  maxRetryAfterMs: 'must be a non-negative duration: ms as a number or a string like "60s"',
  timeoutMs: 'must be a positive duration: ms as a number or a string like "60s"',
  apiKeyEnv: 'must name an environment variable (letters, digits, _), e.g. OPENAI_API_KEY',
  env: 'must be an object of strings (e.g. process.env)',
  seed: 'must be an integer',
  clock: 'must be a Clock ({nowMs(): number}), e.g. systemClock from cluster/clock.ts',
  headers: 'must be an object of header names to strings',
};

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'object' && v !== null) return Array.isArray(v) ? 'an array' : 'an object';
  return String(v);
}

/**
 * Check and fill in client options. Throws {@link ConfigError} with the path `openai.<option>`.
 */
export function resolveOpenAIClientOptions(opts: OpenAIClientOptions): ResolvedOpenAIClientOptions {
  if (typeof opts !== 'object' || opts === null) throw new ConfigError('openai', 'options must be an object with at least baseUrl');
  const r = ClientSchema.safeParse(opts);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    if (issue.code === 'unrecognized_keys') {
      throw new ConfigError('openai', `unknown option ${issue.keys.map((k) => `"${k}"`).join(', ')}; known options are ${Object.keys(OPTION_RULES).join(', ')}`);
    }
    const key = String(issue.path[0] ?? '') as keyof OpenAIClientOptions;
    const rule = OPTION_RULES[key] ?? issue.message;
    throw new ConfigError(`openai.${key}`, `${rule}, got ${describe((opts as unknown as Record<string, unknown>)[key])}`);
  }
  const o = r.data;
  return {
    baseUrl: o.baseUrl.replace(/\/+$/, ''),
    concurrency: o.concurrency ?? DEFAULT_CONCURRENCY,
    maxRetries: o.maxRetries ?? DEFAULT_MAX_RETRIES,
    backoffBaseMs: o.backoffBaseMs ?? DEFAULT_BACKOFF_BASE_MS,
    backoffCapMs: o.backoffCapMs ?? DEFAULT_BACKOFF_CAP_MS,
    maxRetryAfterMs: o.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
    timeoutMs: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    apiKeyEnv: o.apiKeyEnv ?? DEFAULT_API_KEY_ENV,
    seed: o.seed ?? 0,
    headers: o.headers ?? {},
  };
}

// ---------------------------------------------------------------- wire types

/** A chat message as the OpenAI API takes it (the harness's ChatMessage is one). */
export interface OpenAIMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | 'developer';
  content: string | null;
  tool_calls?: WireToolCall[];
  tool_call_id?: string;
  name?: string;
}

export interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** An OpenAI function tool (the shape of DBBench's `FC_TOOLS`). */
export interface ToolSpec {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown; strict?: boolean };
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** Sampling parameters (sent as temperature, top_p, max_tokens, stop, seed). */
export interface SamplingOptions {
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string | string[];
  seed?: number;
}

export interface ChatRequest extends SamplingOptions {
  model: string;
  messages: readonly OpenAIMessage[];
  tools?: readonly ToolSpec[];
  toolChoice?: ToolChoice;
  /**
   * fields merged into the request body after the ones above (e.g.
   * `{chat_template_kwargs: {enable_thinking: false}}`, or `tool_choice`); `model`, `messages`
   * and `stream` are the client's and cannot be set here
   */
  extraBody?: Record<string, unknown>;
}

export interface ToolCall {
  id: string;
  name: string;
  /** the raw JSON text the model wrote */
  arguments: string;
  /** `arguments` parsed, when it is a JSON object; null otherwise */
  args: Record<string, unknown> | null;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ChatResult {
  /** the message text ('' when the model only called tools), as the server sent it */
  content: string;
  /** the message's separate reasoning (`reasoning_content`, or `reasoning`), '' when none */
  reasoning: string;
  toolCalls: ToolCall[];
  usage: Usage;
  /** `stop`, `length`, `tool_calls`, … ('' when the server gave none) */
  finishReason: string;
  /** the model the server says answered */
  model: string;
  /** attempts this call took (1 = no retry) */
  attempts: number;
}

/** Counters for reports; read with `client.stats()`. */
export interface OpenAIClientStats {
  /** calls to chat() */
  calls: number;
  /** HTTP attempts sent (calls + retries) */
  requests: number;
  retries: number;
  /** calls that threw in the end */
  failures: number;
  /** attempts that timed out */
  timeouts: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  inFlight: number;
  maxInFlight: number;
  /**
   * wall-clock latency of each attempt the server answered (any status), from sending it to the
   * end of the body: not the wait for a concurrency slot, not timeouts or network errors
   * (policies/targets/latency.ts: latencyQuantile for p50/p99)
   */
  latency: LatencyCounts;
}

const CompletionSchema = z.object({
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          reasoning_content: z.string().nullish(),
          reasoning: z.string().nullish(),
          tool_calls: z
            .array(z.object({ id: z.string().optional(), function: z.object({ name: z.string(), arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).optional() }) }))
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: z.object({ prompt_tokens: z.number().optional(), completion_tokens: z.number().optional(), total_tokens: z.number().optional() }).nullish(),
});

// ---------------------------------------------------------------- client

/** body fields only the client sets (extraBody cannot override them) */
const CLIENT_FIELDS = new Set(['model', 'messages', 'stream']);

/** FIFO counting semaphore. */
class Semaphore {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    // hand the slot straight to the next waiter so that a late acquire() cannot jump the queue
    if (next) next();
    else this.free++;
  }
}

function sleep(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}

/** `Retry-After` as ms (seconds or an HTTP date); undefined when absent or unreadable. */
function retryAfterMs(header: string | null, clock: Clock): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const s = Number(header);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const t = Date.parse(header);
  return Number.isNaN(t) ? undefined : Math.max(0, t - clock.nowMs());
}

function parseArgs(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * A client of one OpenAI-compatible endpoint. Share one per endpoint: its concurrency limit and
 * counters cover every model and episode that uses it.
 */
export class OpenAIClient {
  readonly options: ResolvedOpenAIClientOptions;
  // private (#) so that util.inspect and JSON never show the key
  readonly #apiKey: string | undefined;
  readonly #keySource: string | undefined;
  readonly #sem: Semaphore;
  readonly #rng: Rng;
  readonly #latency = new LatencyHistogram();
  readonly #stats: Omit<OpenAIClientStats, 'latency'> = {
    calls: 0,
    requests: 0,
    retries: 0,
    failures: 0,
    timeouts: 0,
    promptTokens: 0,
    completionTokens: 0,
    totalTokens: 0,
    inFlight: 0,
    maxInFlight: 0,
  };

  readonly #clock: Clock;

  constructor(opts: OpenAIClientOptions) {
    this.options = resolveOpenAIClientOptions(opts);
    this.#clock = opts.clock ?? systemClock;
    const env = opts.env ?? process.env;
    const primary = env[this.options.apiKeyEnv];
    const fallback = env[FALLBACK_API_KEY_ENV];
    if (primary !== undefined && primary !== '') {
      this.#apiKey = primary;
      this.#keySource = this.options.apiKeyEnv;
    } else if (fallback !== undefined && fallback !== '') {
      this.#apiKey = fallback;
      this.#keySource = FALLBACK_API_KEY_ENV;
    }
    this.#sem = new Semaphore(this.options.concurrency);
    this.#rng = new Rng(`openai-backoff:${this.options.seed}`);
  }

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  /** which environment variable the key came from (never the key); undefined when none is set */
  get apiKeySource(): string | undefined {
    return this.#keySource;
  }

  /** a copy of the counters */
  stats(): OpenAIClientStats {
    return { ...this.#stats, latency: this.#latency.snapshot() };
  }

  /** One chat completion (non-streaming), with the concurrency limit, timeout and retries. */
  async chat(req: ChatRequest): Promise<ChatResult> {
    this.#stats.calls++;
    const body = JSON.stringify(this.#wireBody(req));
    const { maxRetries } = this.options;
    for (let attempt = 0; ; attempt++) {
      let wait = 0;
      try {
        const r = await this.#attempt(body, req.model);
        r.attempts = attempt + 1;
        return r;
      } catch (e) {
        const err = e instanceof OpenAIError ? e : new OpenAINetworkError(this.#url(), String(e), { cause: e });
        if (!err.retryable) {
          this.#stats.failures++;
          throw err;
        }
        if (attempt >= maxRetries) {
          this.#stats.failures++;
          throw maxRetries === 0 ? err : new OpenAIRetriesExhaustedError(attempt + 1, err);
        }
        wait = this.#backoff(attempt, err);
      }
      this.#stats.retries++;
      await sleep(wait);
    }
  }

  #url(): string {
    return `${this.options.baseUrl}/chat/completions`;
  }

  #wireBody(req: ChatRequest): Record<string, unknown> {
    const b: Record<string, unknown> = { model: req.model, messages: req.messages, stream: false };
    if (req.temperature !== undefined) b.temperature = req.temperature;
    if (req.topP !== undefined) b.top_p = req.topP;
    if (req.maxTokens !== undefined) b.max_tokens = req.maxTokens;
    if (req.stop !== undefined) b.stop = req.stop;
    if (req.seed !== undefined) b.seed = req.seed;
    if (req.tools !== undefined && req.tools.length > 0) {
      b.tools = req.tools;
      b.tool_choice = req.toolChoice ?? 'auto';
    }
    if (req.extraBody) for (const [k, v] of Object.entries(req.extraBody)) if (!CLIENT_FIELDS.has(k)) b[k] = v;
    return b;
  }

  /** equal jitter over an exponential backoff; a Retry-After from the server wins when longer */
  #backoff(attempt: number, err: OpenAIError): number {
    const { backoffBaseMs, backoffCapMs, maxRetryAfterMs } = this.options;
    const d = Math.min(backoffCapMs, backoffBaseMs * 2 ** attempt);
    const jittered = d / 2 + this.#rng.next() * (d / 2);
    const after = err instanceof OpenAIHttpError ? err.retryAfterMs : undefined;
    return after !== undefined ? Math.max(jittered, Math.min(after, maxRetryAfterMs)) : jittered;
  }

  #mask(text: string): string {
    const key = this.#apiKey;
    return key !== undefined && key.length >= 4 ? text.split(key).join('***') : text;
  }

  #keyHint(): string {
    const { apiKeyEnv } = this.options;
    if (this.#keySource === undefined) {
      return `no API key was sent: set ${apiKeyEnv}${apiKeyEnv === FALLBACK_API_KEY_ENV ? '' : ` (or ${FALLBACK_API_KEY_ENV})`} to the server's key, or point openai.apiKeyEnv at the variable that holds it`;
    }
    return `the key in ${this.#keySource} was refused: set ${this.#keySource} to the server's key, or point openai.apiKeyEnv at the variable that holds it`;
  }

  #httpError(status: number, statusText: string, text: string, retryAfter: number | undefined): OpenAIHttpError {
    const url = this.#url();
    const excerpt = this.#mask(text.slice(0, BODY_EXCERPT)).replace(/\s+/g, ' ').trim();
    let fix: string;
    if (status === 401 || status === 403) fix = this.#keyHint();
    else if (status === 404) fix = 'check openai.baseUrl (it should end in /v1) and the model name after # in the target spec';
    else if (status === 429) fix = 'the server is rate limiting; lower openai.concurrency or raise openai.maxRetries';
    else if (status >= 500) fix = 'the server failed; retried per openai.maxRetries';
    else fix = 'the server refused the request; check the model name and the sampling/tools options';
    return new OpenAIHttpError(status, url, excerpt, `HTTP ${status}${statusText ? ` ${statusText}` : ''} from ${url}: ${excerpt || '(empty body)'}; ${fix}`, retryAfter);
  }

  async #attempt(body: string, model: string): Promise<ChatResult> {
    await this.#sem.acquire();
    const s = this.#stats;
    s.requests++;
    s.inFlight++;
    if (s.inFlight > s.maxInFlight) s.maxInFlight = s.inFlight;
    const url = this.#url();
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, this.options.timeoutMs);
    try {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...this.options.headers };
      if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
      let res: Response;
      let text: string;
      const sent = this.#clock.nowMs();
      try {
        res = await fetch(url, { method: 'POST', headers, body, signal: ac.signal });
        text = await res.text();
        this.#latency.record(this.#clock.nowMs() - sent);
      } catch (e) {
        if (timedOut) {
          s.timeouts++;
          throw new OpenAITimeoutError(url, this.options.timeoutMs);
        }
        const c = (e as { cause?: { code?: string; message?: string } }).cause;
        throw new OpenAINetworkError(url, c?.code ?? c?.message ?? (e as Error).message, { cause: e });
      }
      if (!res.ok) throw this.#httpError(res.status, res.statusText, text, retryAfterMs(res.headers.get('retry-after'), this.#clock));
      return this.#read(url, text, model);
    } finally {
      clearTimeout(timer);
      s.inFlight--;
      this.#sem.release();
    }
  }

  #read(url: string, text: string, model: string): ChatResult {
    const excerpt = this.#mask(text.slice(0, BODY_EXCERPT));
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new OpenAIBadResponseError(url, 'not JSON', excerpt);
    }
    const r = CompletionSchema.safeParse(json);
    if (!r.success) {
      const i = r.error.issues[0]!;
      throw new OpenAIBadResponseError(url, `${i.path.join('.') || 'body'}: ${i.message}`, excerpt);
    }
    const choice = r.data.choices[0]!;
    const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).map((c, i) => {
      const raw = c.function.arguments;
      const args = typeof raw === 'string' ? raw : JSON.stringify(raw ?? {});
      return { id: c.id ?? `call_${i}`, name: c.function.name, arguments: args, args: parseArgs(args) };
    });
    const u = r.data.usage ?? {};
    const usage: Usage = {
      promptTokens: u.prompt_tokens ?? 0,
      completionTokens: u.completion_tokens ?? 0,
      totalTokens: u.total_tokens ?? (u.prompt_tokens ?? 0) + (u.completion_tokens ?? 0),
    };
    this.#stats.promptTokens += usage.promptTokens;
    this.#stats.completionTokens += usage.completionTokens;
    this.#stats.totalTokens += usage.totalTokens;
    const reasoning = choice.message.reasoning_content ?? choice.message.reasoning ?? '';
    return { content: choice.message.content ?? '', reasoning, toolCalls, usage, finishReason: choice.finish_reason ?? '', model: r.data.model ?? model, attempts: 1 };
  }
}

// ---------------------------------------------------------------- model

/** Turns a tools-mode answer with tool calls into the action text the env parses (`content` has its reasoning stripped when stripReasoning is on). */
export type ToolCallFormatter = (calls: readonly ToolCall[], content: string, context: DecisionContext) => string;

/**
 * The answer without its reasoning: every `<think>…</think>` block, a leading `…</think>` whose
 * `<think>` was in the prompt (chat templates that open the block themselves), and an
 * unterminated `<think>…` (an answer cut off while thinking) are removed; the rest is trimmed.
 *
 * @example
 * stripReasoningText('<think>look first</think>\nAction: Answer'); // 'Action: Answer'
 */
export function stripReasoningText(text: string): string {
  let s = text.replace(/<think>[\s\S]*?<\/think>/g, '');
  const close = s.indexOf('</think>');
  if (close >= 0) s = s.slice(close + '</think>'.length);
  const open = s.indexOf('<think>');
  if (open >= 0) s = s.slice(0, open);
  return s === text ? text : s.trim();
}

export interface OpenAIModelOptions extends SamplingOptions {
  /** the served model's name (what goes after # in the spec) */
  model: string;
  /** a client to share (its concurrency limit and counters), or options to make one */
  client: OpenAIClient | OpenAIClientOptions;
  /**
   * `text`: the model's text is the action (AgentBench's text protocols).
   * `tools`: `tools` are offered; a tool call is turned back into text by `formatToolCalls`, and
   * an answer without a tool call is returned as its text (the env's parser judges it).
   * @default 'text'
   */
  mode?: 'text' | 'tools';
  tools?: readonly ToolSpec[];
  /** @default 'auto' */
  toolChoice?: ToolChoice;
  formatToolCalls?: ToolCallFormatter;
  /** fields merged into every request body (see {@link ChatRequest.extraBody}) */
  extraBody?: Record<string, unknown>;
  /**
   * Remove reasoning before the env parses the answer: `<think>…</think>` blocks in the text (see
   * {@link stripReasoningText}) and the separate `reasoning_content`. When false, the text goes
   * as it came, after the reasoning field (if any) as a `<think>…</think>` block.
   * @default true
   */
  stripReasoning?: boolean;
}

/**
 * A harness {@link Model} backed by an OpenAI-compatible endpoint; named `openai:<base>#<model>`.
 *
 * @example
 * // DBBench's function-calling variant: map the two tools back to the text actions
 * new OpenAIModel({
 *   model: 'Qwen/Qwen2.5-7B-Instruct', client: { baseUrl: 'http://127.0.0.1:8000/v1' },
 *   mode: 'tools', tools: FC_TOOLS,
 *   formatToolCalls: ([c]) => c!.name === 'execute_sql' ? `Action: Operation\n\`\`\`sql\n${c!.args?.query}\n\`\`\`` : `Action: Answer\nFinal Answer: ${JSON.stringify(c!.args?.answers)}`,
 * });
 */
export class OpenAIModel implements Model {
  readonly name: string;
  readonly client: OpenAIClient;
  readonly model: string;
  readonly mode: 'text' | 'tools';
  /** whether reasoning is removed before the answer goes to the env (see {@link OpenAIModelOptions.stripReasoning}) */
  readonly stripReasoning: boolean;
  readonly #opts: OpenAIModelOptions;
  /** the last result, for callers that want usage or finish reasons */
  lastResult: ChatResult | null = null;

  /** the counters of this model's client (shared with every model that uses the client) */
  clientStats(): OpenAIClientStats {
    return this.client.stats();
  }

  constructor(opts: OpenAIModelOptions) {
    if (typeof opts.model !== 'string' || opts.model.trim() === '') throw new ConfigError('openai.model', `must name the served model (what goes after # in openai:<base-url>#<model>), got ${describe(opts.model)}`);
    this.client = opts.client instanceof OpenAIClient ? opts.client : new OpenAIClient(opts.client);
    this.model = opts.model;
    this.mode = opts.mode ?? 'text';
    if (this.mode !== 'text' && this.mode !== 'tools') throw new ConfigError('openai.mode', `must be "text" or "tools", got ${describe(opts.mode)}`);
    if (this.mode === 'tools') {
      if (!opts.tools || opts.tools.length === 0) throw new ConfigError('openai.tools', 'tools mode needs at least one function tool (e.g. DBBench FC_TOOLS)');
      if (typeof opts.formatToolCalls !== 'function') throw new ConfigError('openai.formatToolCalls', 'tools mode needs a function that turns tool calls into the action text the env parses');
    }
    if (opts.extraBody !== undefined) {
      if (typeof opts.extraBody !== 'object' || opts.extraBody === null || Array.isArray(opts.extraBody)) throw new ConfigError('openai.extraBody', `must be an object of request body fields, got ${describe(opts.extraBody)}`);
      const bad = Object.keys(opts.extraBody).filter((k) => CLIENT_FIELDS.has(k));
      if (bad.length) throw new ConfigError('openai.extraBody', `may not set ${bad.map((k) => `"${k}"`).join(', ')} (the client sets model, messages and stream)`);
    }
    this.#opts = opts;
    this.stripReasoning = opts.stripReasoning ?? true;
    this.name = `openai:${this.client.baseUrl}#${opts.model}`;
  }

  /** the answer text the env gets from a result, with or without its reasoning */
  #text(r: ChatResult): string {
    if (this.stripReasoning) return stripReasoningText(r.content);
    return r.reasoning ? `<think>${r.reasoning}</think>\n${r.content}` : r.content;
  }

  async decide(context: DecisionContext): Promise<string> {
    const o = this.#opts;
    const req: ChatRequest = { model: this.model, messages: context.messages };
    if (o.temperature !== undefined) req.temperature = o.temperature;
    if (o.topP !== undefined) req.topP = o.topP;
    if (o.maxTokens !== undefined) req.maxTokens = o.maxTokens;
    if (o.stop !== undefined) req.stop = o.stop;
    // a fixed sampling seed if one was given, else the episode's: reproducible where the server honours seeds
    req.seed = o.seed ?? context.seed;
    if (this.mode === 'tools' && o.tools) {
      req.tools = o.tools;
      if (o.toolChoice !== undefined) req.toolChoice = o.toolChoice;
    }
    if (o.extraBody !== undefined) req.extraBody = o.extraBody;
    const r = await this.client.chat(req);
    this.lastResult = r;
    const text = this.#text(r);
    if (this.mode === 'tools' && r.toolCalls.length > 0) {
      try {
        return o.formatToolCalls!(r.toolCalls, text, context);
      } catch (e) {
        throw new OpenAIModelError('OPENAI_FORMAT', `formatToolCalls threw on ${r.toolCalls.map((c) => c.name).join(', ')}: ${(e as Error).message}`, { cause: e });
      }
    }
    return text;
  }
}

/**
 * An {@link OpenAIModel} from a spec string `openai:<base-url>#<model>`; `opts.client` may be
 * a shared client (its base URL must match) or client options without `baseUrl`.
 */
export function openAIModelFromSpec(spec: string, opts: Omit<OpenAIModelOptions, 'model' | 'client'> & { client?: OpenAIClient | Omit<OpenAIClientOptions, 'baseUrl'> } = {}): OpenAIModel {
  const t = parseTargetSpec(spec);
  if (t.kind !== 'openai') throw new TargetSpecError(spec, `target "${spec}" is not an openai target; write openai:<base-url>#<model>`);
  let client: OpenAIClient | OpenAIClientOptions;
  if (opts.client instanceof OpenAIClient) {
    if (opts.client.baseUrl !== t.baseUrl) throw new ConfigError('openai.client', `the shared client talks to ${opts.client.baseUrl} but the spec names ${t.baseUrl}`);
    client = opts.client;
  } else {
    client = { ...opts.client, baseUrl: t.baseUrl };
  }
  return new OpenAIModel({ ...opts, model: t.model, client });
}
