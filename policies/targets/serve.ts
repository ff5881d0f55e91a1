/**
 * `hr1 serve`: any local target behind an OpenAI-compatible HTTP API (`POST /v1/chat/completions`,
 * `GET /v1/models`), so the openai client is tested end to end against a real server, and local
 * targets can be driven by tools that speak OpenAI.
 *
 * @example
 * const srv = await startServer({ port: 0, backend: echoBackend() });
 * // ... new OpenAIClient({ baseUrl: srv.url }) ...
 * await srv.close();
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { systemClock, type Clock } from '../../cluster/clock.ts';
import { ConfigError, Hr1Error, type Hr1ErrorFields } from '../../cluster/errors.ts';
import { parseDuration } from '../../cluster/duration.ts';
import type { OpenAIMessage, ToolChoice, ToolSpec } from './openai.ts';
import { parseTargetSpec } from './spec.ts';

/** @default '127.0.0.1': only this machine can reach the server unless a host is given */
export const DEFAULT_SERVE_HOST = '127.0.0.1';
/** @default 500: the status of injected failures */
export const DEFAULT_FAIL_STATUS = 500;
/** @default 'hr1' when a request names no model */
export const DEFAULT_SERVED_MODEL = 'hr1';
/** requests larger than this are refused with 413 */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** What a backend gets: the request body, checked, with message content as text. */
export interface BackendRequest {
  model: string;
  messages: OpenAIMessage[];
  tools?: ToolSpec[] | undefined;
  tool_choice?: ToolChoice | undefined;
  temperature?: number | undefined;
  top_p?: number | undefined;
  max_tokens?: number | undefined;
  stop?: string | string[] | undefined;
  seed?: number | undefined;
  /** the body's other fields, as sent (e.g. an extraBody's `chat_template_kwargs`); absent when none */
  extra?: Record<string, unknown> | undefined;
}

/** A tool call a backend answers with; `arguments` may be an object (it is JSON-encoded). */
export interface BackendToolCall {
  id?: string;
  name: string;
  arguments: string | Record<string, unknown>;
}

export interface BackendReply {
  content?: string | null;
  toolCalls?: BackendToolCall[];
  /** @default 'tool_calls' when there are tool calls, else 'stop' */
  finishReason?: string;
  /** token counts; estimated from whitespace-separated words when absent */
  usage?: { promptTokens: number; completionTokens: number };
}

/** Anything that answers a chat request: a sim target, a local model, a script. */
export type ServeBackend = (req: BackendRequest) => Promise<BackendReply>;

export interface ServerOptions {
  /** 0 picks a free port. @default 0 */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  backend: ServeBackend;
  /** every Nth chat request (N, 2N, …) answers `failStatus` instead of calling the backend */
  failEvery?: number;
  /** @default 500 */
  failStatus?: number;
  /** `Retry-After` (seconds) sent with injected failures */
  failRetryAfterS?: number;
  /** delay before each chat answer (ms or e.g. "200ms") */
  delayMs?: number | string;
  /** when set, requests must carry `Authorization: Bearer <apiKey>` (else 401) */
  apiKey?: string;
  /** model ids listed by GET /v1/models. @default ['hr1'] */
  models?: string[];
  /** the wall clock for responses' `created`. @default systemClock */
  clock?: Clock;
}

/** Live counters of a running server. */
export interface ServerStats {
  /** HTTP requests of any kind */
  requests: number;
  /** chat requests answered 200 */
  completions: number;
  /** chat requests answered with an injected failure */
  injectedFailures: number;
  /** requests answered 4xx (bad JSON, bad body, auth, unknown route) */
  rejected: number;
  /** backend errors answered 500 */
  backendErrors: number;
  inFlight: number;
  maxInFlight: number;
}

export interface RunningServer {
  /** base URL for clients, ending in /v1 (e.g. http://127.0.0.1:41234/v1) */
  readonly url: string;
  readonly port: number;
  /** a copy of the counters */
  readonly stats: ServerStats;
  close(): Promise<void>;
}

/**
 * Codes of `hr1 serve` failures: {@link ServeError}'s, and the two serve-local.ts raises as a
 * plain Hr1Error (`SERVE_UNKNOWN_TASK`: a conversation that is no shipped task; `BAD_OPTION`: a
 * sim served without `--env`).
 */
export type ServeErrorCode = 'SERVE_UNSUPPORTED_TARGET' | 'SERVE_LISTEN' | 'SERVE_SCRIPT_EXHAUSTED' | 'SERVE_UNKNOWN_TASK' | 'BAD_OPTION';

/** A failure of `hr1 serve` itself (bad options, a target it cannot serve, a port in use). */
export class ServeError extends Hr1Error<ServeErrorCode> {
  constructor(code: ServeErrorCode, message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, { retryable: false, ...fields });
  }
}

// ---------------------------------------------------------------- request checking

const ContentSchema = z.union([
  z.string(),
  z.null(),
  // content parts: only text is understood; other parts are dropped
  z.array(z.object({ type: z.string(), text: z.string().optional() }).loose()).transform((parts) => parts.map((p) => (p.type === 'text' ? (p.text ?? '') : '')).join('')),
]);

const RequestSchema = z
  .object({
    model: z.string().optional(),
    messages: z
      .array(
        z
          .object({
            role: z.enum(['system', 'user', 'assistant', 'tool', 'developer']),
            content: ContentSchema.optional(),
            tool_calls: z.array(z.object({ id: z.string(), type: z.literal('function'), function: z.object({ name: z.string(), arguments: z.string() }) })).optional(),
            tool_call_id: z.string().optional(),
            name: z.string().optional(),
          })
          .loose(),
      )
      .min(1),
    stream: z.boolean().nullish(),
    tools: z.array(z.object({ type: z.literal('function'), function: z.object({ name: z.string(), description: z.string().optional(), parameters: z.unknown().optional() }).loose() })).optional(),
    tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) })]).optional(),
    temperature: z.number().optional(),
    top_p: z.number().optional(),
    max_tokens: z.number().int().optional(),
    stop: z.union([z.string(), z.array(z.string())]).nullish(),
    seed: z.number().int().optional(),
  })
  .loose();

/** the body fields the server reads; the others reach the backend as `extra` */
const READ_FIELDS = new Set(['model', 'messages', 'stream', 'tools', 'tool_choice', 'temperature', 'top_p', 'max_tokens', 'stop', 'seed']);

const ServerOptionsSchema = z.object({
  port: z.number().int().min(0).max(65535).optional(),
  host: z.string().min(1).optional(),
  backend: z.custom<ServeBackend>((v) => typeof v === 'function'),
  failEvery: z.number().int().min(1).optional(),
  failStatus: z.number().int().min(400).max(599).optional(),
  failRetryAfterS: z.number().min(0).optional(),
  delayMs: z.union([z.number().min(0), z.string()]).optional(),
  apiKey: z.string().min(1).optional(),
  models: z.array(z.string().min(1)).min(1).optional(),
  clock: z.custom<Clock>((v) => typeof v === 'object' && v !== null && typeof (v as Clock).nowMs === 'function').optional(),
});

const OPTION_RULES: Record<keyof ServerOptions, string> = {
  port: 'must be an integer port in 0..65535 (0 picks a free one)',
  host: 'must be a host name or address, e.g. 127.0.0.1',
  backend: 'must be a function (request) => Promise<{ content?, toolCalls? }>, e.g. echoBackend()',
  failEvery: 'must be a positive integer N (every Nth request fails)',
  failStatus: 'must be an HTTP error status in 400..599',
  failRetryAfterS: 'must be a non-negative number of seconds',
  delayMs: 'must be a non-negative duration: ms as a number or a string like "200ms"',
  apiKey: 'must be a non-empty string',
  models: 'must be a non-empty list of model ids',
  clock: 'must be a Clock ({nowMs(): number}), e.g. systemClock from cluster/clock.ts',
};

// ---------------------------------------------------------------- server

function words(s: string | null | undefined): number {
  return s ? s.split(/\s+/).filter(Boolean).length : 0;
}

function errorBody(message: string, type: string, code: string | null, param: string | null = null): string {
  return JSON.stringify({ error: { message, type, param, code } });
}

/**
 * Start an OpenAI-compatible server for `backend`. Resolves once it listens.
 * Throws {@link ConfigError} (`serve.<option>`) on bad options, {@link ServeError} when it cannot listen.
 */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const r = ServerOptionsSchema.safeParse(opts);
  if (!r.success) {
    const key = String(r.error.issues[0]!.path[0] ?? '') as keyof ServerOptions;
    throw new ConfigError(`serve.${key}`, OPTION_RULES[key] ?? r.error.issues[0]!.message);
  }
  const clock = opts.clock ?? systemClock;
  let delay = 0;
  if (opts.delayMs !== undefined) {
    try {
      delay = parseDuration(opts.delayMs);
    } catch {
      throw new ConfigError('serve.delayMs', OPTION_RULES.delayMs);
    }
  }
  const host = opts.host ?? DEFAULT_SERVE_HOST;
  const failStatus = opts.failStatus ?? DEFAULT_FAIL_STATUS;
  const models = opts.models ?? [DEFAULT_SERVED_MODEL];
  const stats: ServerStats = { requests: 0, completions: 0, injectedFailures: 0, rejected: 0, backendErrors: 0, inFlight: 0, maxInFlight: 0 };
  const timers = new Set<NodeJS.Timeout>();
  let chatCount = 0;
  let closed = false;

  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void => {
    if (res.writableEnded || res.destroyed) return;
    if (status >= 400 && status < 500) stats.rejected++;
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers });
    res.end(body);
  };
  const wait = (ms: number): Promise<void> =>
    ms <= 0
      ? Promise.resolve()
      : new Promise((resolve) => {
          const t = setTimeout(() => {
            timers.delete(t);
            resolve();
          }, ms);
          timers.add(t);
        });

  const readBody = (req: IncomingMessage): Promise<string | null> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY_BYTES) {
          resolve(null);
          req.removeAllListeners('data');
          req.resume();
          return;
        }
        chunks.push(c);
      });
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });

  const chat = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const n = ++chatCount;
    const text = await readBody(req);
    if (text === null) return send(res, 413, errorBody(`request body is larger than ${MAX_BODY_BYTES} bytes`, 'invalid_request_error', 'request_too_large'));
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (e) {
      return send(res, 400, errorBody(`the request body is not valid JSON: ${(e as Error).message}`, 'invalid_request_error', 'invalid_json'));
    }
    const parsed = RequestSchema.safeParse(json);
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      const param = i.path.join('.') || null;
      const what = param === 'messages' || param === null ? "'messages' must be a non-empty array of {role, content}" : `'${param}': ${i.message}`;
      return send(res, 400, errorBody(`invalid request: ${what}`, 'invalid_request_error', 'invalid_request', param));
    }
    const b = parsed.data;
    if (b.stream === true) {
      return send(res, 400, errorBody('stream: true is not supported by hr1 serve; send stream: false (or leave it out)', 'invalid_request_error', 'stream_unsupported', 'stream'));
    }
    stats.inFlight++;
    if (stats.inFlight > stats.maxInFlight) stats.maxInFlight = stats.inFlight;
    try {
      await wait(delay);
      if (closed) return;
      if (opts.failEvery !== undefined && n % opts.failEvery === 0) {
        stats.injectedFailures++;
        const headers: Record<string, string> = opts.failRetryAfterS !== undefined ? { 'retry-after': String(opts.failRetryAfterS) } : {};
        return send(res, failStatus, errorBody(`injected failure (request ${n}, failEvery ${opts.failEvery})`, failStatus >= 500 ? 'server_error' : 'invalid_request_error', 'injected_failure'), headers);
      }
      const model = b.model ?? models[0] ?? DEFAULT_SERVED_MODEL;
      const breq: BackendRequest = {
        model,
        messages: b.messages.map((m) => {
          const out: OpenAIMessage = { role: m.role, content: m.content ?? null };
          if (m.tool_calls) out.tool_calls = m.tool_calls;
          if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
          if (m.name !== undefined) out.name = m.name;
          return out;
        }),
        tools: b.tools as ToolSpec[] | undefined,
        tool_choice: b.tool_choice,
        temperature: b.temperature,
        top_p: b.top_p,
        max_tokens: b.max_tokens,
        stop: b.stop ?? undefined,
        seed: b.seed,
      };
      const extra = Object.fromEntries(Object.entries(b).filter(([k]) => !READ_FIELDS.has(k)));
      if (Object.keys(extra).length > 0) breq.extra = extra;
      let reply: BackendReply;
      try {
        reply = await opts.backend(breq);
      } catch (e) {
        stats.backendErrors++;
        return send(res, 500, errorBody(`backend failed: ${(e as Error).message}`, 'server_error', 'backend_error'));
      }
      const calls = (reply.toolCalls ?? []).map((c, i) => ({
        id: c.id ?? `call_${n}_${i}`,
        type: 'function' as const,
        function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
      }));
      const content = reply.content ?? (calls.length > 0 ? null : '');
      const promptTokens = reply.usage?.promptTokens ?? breq.messages.reduce((a, m) => a + words(m.content), 0);
      const completionTokens = reply.usage?.completionTokens ?? words(content) + calls.reduce((a, c) => a + words(c.function.arguments) + 1, 0);
      const message: Record<string, unknown> = { role: 'assistant', content };
      if (calls.length > 0) message.tool_calls = calls;
      stats.completions++;
      send(
        res,
        200,
        JSON.stringify({
          id: `chatcmpl-hr1-${n}`,
          object: 'chat.completion',
          created: Math.floor(clock.nowMs() / 1000),
          model,
          choices: [{ index: 0, message, finish_reason: reply.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop'), logprobs: null }],
          usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
        }),
      );
    } finally {
      stats.inFlight--;
    }
  };

  const server = createServer((req, res) => {
    stats.requests++;
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    if (opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      req.resume();
      const sent = req.headers.authorization === undefined ? 'no Authorization header was sent' : 'the Bearer token does not match';
      return send(res, 401, errorBody(`Incorrect API key provided: ${sent}`, 'invalid_request_error', 'invalid_api_key'));
    }
    if (path === '/v1/chat/completions') {
      if (req.method !== 'POST') {
        req.resume();
        return send(res, 405, errorBody('use POST for /v1/chat/completions', 'invalid_request_error', 'method_not_allowed'), { allow: 'POST' });
      }
      chat(req, res).catch((e: unknown) => send(res, 500, errorBody(`hr1 serve failed: ${(e as Error).message}`, 'server_error', null)));
      return;
    }
    if (path === '/v1/models' && req.method === 'GET') {
      req.resume();
      return send(res, 200, JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'hr1' })) }));
    }
    req.resume();
    send(res, 404, errorBody(`no route ${req.method} ${path}; hr1 serve answers POST /v1/chat/completions and GET /v1/models`, 'invalid_request_error', 'unknown_url'));
  });

  // an idle keep-alive socket stays open a minute (Node's default is 5 s): a client that reuses one
  // just as the server closes it gets ECONNRESET, which a busy machine made happen between calls
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(new ServeError('SERVE_LISTEN', `cannot listen on ${host}:${opts.port ?? 0}: ${e.code ?? e.message}; choose another --port`, { cause: e })),
    );
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}/v1`,
    port,
    get stats() {
      return { ...stats };
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (closed) return resolve();
        closed = true;
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        // keep-alive sockets would hold close() open; answered or not, they go now
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------- built-in backends

/** Answers the last user message's text (or '' when there is none). */
export function echoBackend(): ServeBackend {
  return (req) => {
    for (let i = req.messages.length - 1; i >= 0; i--) {
      const m = req.messages[i]!;
      if (m.role === 'user') return Promise.resolve({ content: m.content ?? '' });
    }
    return Promise.resolve({ content: '' });
  };
}

/** A queued answer: text, or a reply with tool calls. */
export type ScriptedAnswer = string | BackendReply;

/**
 * Answers from a queue, in order; when it runs out, the server answers 500 (or `fallback` is used).
 * `push()` adds answers while the server runs; `requests` keeps what was asked.
 *
 * @example
 * const b = scriptedBackend([{ toolCalls: [{ name: 'execute_sql', arguments: { query: 'SELECT 1' } }] }, 'done']);
 */
export function scriptedBackend(answers: readonly ScriptedAnswer[] = [], opts: { fallback?: ScriptedAnswer } = {}): ServeBackend & { push(...a: ScriptedAnswer[]): void; readonly requests: BackendRequest[] } {
  const queue = [...answers];
  const requests: BackendRequest[] = [];
  const fn = (req: BackendRequest): Promise<BackendReply> => {
    requests.push(req);
    const a = queue.shift() ?? opts.fallback;
    if (a === undefined) return Promise.reject(new ServeError('SERVE_SCRIPT_EXHAUSTED', `scripted backend has no answers left (${requests.length} requests); push() more or give a fallback`, { data: { requests: requests.length } }));
    return Promise.resolve(typeof a === 'string' ? { content: a } : a);
  };
  return Object.assign(fn, { push: (...a: ScriptedAnswer[]) => void queue.push(...a), requests });
}

/** the targets `hr1 serve` can put behind the API */
export const SERVABLE_TARGETS = ['echo'] as const;

/**
 * Serve a target named by a spec (for `hr1 serve <target> --port N`). Only `echo` for now;
 * other valid specs throw {@link ServeError} `SERVE_UNSUPPORTED_TARGET` naming the supported ones.
 */
export async function serveTarget(spec: string, opts: Omit<ServerOptions, 'backend'> = {}): Promise<RunningServer & { target: string }> {
  if (spec === 'echo') return Object.assign(await startServer({ ...opts, backend: echoBackend(), models: opts.models ?? ['echo'] }), { target: 'echo' });
  // a malformed spec gets the spec error (which lists the forms); a valid one is not servable yet
  const t = parseTargetSpec(spec);
  throw new ServeError('SERVE_UNSUPPORTED_TARGET', `hr1 serve cannot serve ${t.kind} target "${spec}" yet; it serves: ${SERVABLE_TARGETS.join(', ')}`, { data: { spec, kind: t.kind, supported: [...SERVABLE_TARGETS] } });
}
