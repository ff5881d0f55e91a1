/**
 * Typed errors of the cluster, and {@link Hr1Error}, the base of every error the project throws.
 * Every error carries a literal `code` (one union per family), the values involved as fields, and
 * `cause` where it wraps another. Cluster errors that cross NATS or a worker boundary travel as
 * {@link WireError} data and are re-raised by {@link fromWire} as the same class, so
 * `err instanceof ActorDiedError` holds on the caller. Domain families that opt into
 * {@link Hr1Error.wireAs} `'task'` arrive as {@link ActorTaskError} with their code in `taskCode`.
 */

import { homedir } from 'node:os';
import { fileURLToPath } from 'node:url';

/**
 * The codes of the cluster's own errors: the classes below, the ad-hoc ones raised as a plain
 * {@link Hr1Error} (`CLUSTER_CLOSED`, `NATS_SERVER_*`, object store), and the bus signals.
 */
export type ClusterErrorCode =
  | 'ACTOR_DIED'
  | 'ACTOR_INIT'
  | 'ACTOR_TASK'
  | 'CALL_TIMEOUT'
  /** the connection to NATS dropped while the call was in flight ({@link CallLostError}) */
  | 'CALL_LOST'
  | 'BACKPRESSURE'
  | 'UNKNOWN_ACTOR'
  | 'UNKNOWN_METHOD'
  | CodecErrorCode
  | 'PLACEMENT'
  | 'CONFIG'
  | ConnectionErrorCode
  | 'POOL_TASK'
  | 'OBJECT_NOT_FOUND'
  /** a call on a {@link Cluster} client after `close()` */
  | 'CLUSTER_CLOSED'
  /** no nats-server binary to start an embedded cluster */
  | 'NATS_SERVER_MISSING'
  /** a nats-server that did not come up */
  | 'NATS_SERVER_START'
  /** an object name outside the allowed alphabet */
  | 'BAD_OBJECT_NAME'
  /** no JetStream object store on the server */
  | 'OBJECT_STORE_UNAVAILABLE'
  /** bus signals (cluster/bus.ts), mapped to the classes above before they reach a caller */
  | 'NO_RESPONDERS'
  | 'TIMEOUT'
  | 'BUS_CLOSED'
  | 'DISCONNECTED';

/** Codes of {@link CodecError}. */
export type CodecErrorCode = 'MALFORMED_MESSAGE' | 'SCHEMA_INVALID';

/** Codes of {@link ConnectionError}. */
export type ConnectionErrorCode =
  | 'CONNECTION_REFUSED'
  | 'AUTH_REFUSED'
  | 'CONNECTION_CLOSED'
  /** a TLS option that cannot be used: a missing or unreadable file, a cert without its key, `tls://` without a CA */
  | 'TLS_CONFIG'
  /** the TLS handshake failed, or the server offers no TLS where TLS was asked for */
  | 'TLS_REFUSED'
  /** credentials inside the NATS URL (`nats://user:pass@host`): refused, they belong in --user/--pass */
  | 'CREDENTIALS_IN_URL';

/** The tagged form of an error on the wire. */
export interface WireError {
  code: string;
  message: string;
  actor?: string | undefined;
  method?: string | undefined;
  node?: string | undefined;
  remoteStack?: string | undefined;
  retryable?: boolean | undefined;
  data?: Record<string, unknown> | undefined;
}

/** What every {@link Hr1Error} may carry besides its code and message. */
export interface Hr1ErrorFields {
  actor?: string | undefined;
  method?: string | undefined;
  node?: string | undefined;
  remoteStack?: string | undefined;
  retryable?: boolean | undefined;
  data?: Record<string, unknown> | undefined;
  cause?: unknown;
}

/**
 * How an error thrown by an actor handler crosses the wire: `'own'` travels under its own code
 * (re-raised as the cluster class of that code, or a plain {@link Hr1Error}); `'task'` travels
 * like any non-Hr1 error, as `ACTOR_TASK`, re-raised as {@link ActorTaskError} whose `taskCode`
 * keeps the original code.
 */
export type WirePolicy = 'own' | 'task';

/**
 * Base class of every error the project raises on purpose, generic over its family's code union.
 * A family is a subclass fixing `C`, e.g. `class EnvError extends Hr1Error<EnvErrorCode>`.
 */
export class Hr1Error<C extends string = string> extends Error {
  /**
   * The wire policy of this class (see {@link WirePolicy}). Families that were plain `Error`s
   * before they joined Hr1Error say `'task'`, so callers keep catching {@link ActorTaskError}.
   */
  static readonly wireAs: WirePolicy = 'own';
  /** Stable machine-readable code, e.g. `ACTOR_DIED`. */
  readonly code: C;
  readonly actor: string | undefined;
  readonly method: string | undefined;
  readonly node: string | undefined;
  /** The stack where the error happened, when that was another process or thread. */
  readonly remoteStack: string | undefined;
  /** Whether the same call may succeed when tried again. */
  readonly retryable: boolean;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: C, message: string, fields: Hr1ErrorFields = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = new.target.name;
    this.code = code;
    this.actor = fields.actor;
    this.method = fields.method;
    this.node = fields.node;
    this.remoteStack = fields.remoteStack;
    this.retryable = fields.retryable ?? false;
    this.data = fields.data;
  }

  /** This error as wire data under its own code (what an `'own'` family sends). */
  toWire(): WireError {
    return {
      code: this.code,
      message: this.message,
      actor: this.actor,
      method: this.method,
      node: this.node,
      remoteStack: relativeStack(this.remoteStack ?? this.stack),
      retryable: this.retryable,
      data: this.data,
    };
  }
}

/** The actor's process or node died (or it was killed) while the call was pending or before it. */
export class ActorDiedError extends Hr1Error<'ACTOR_DIED'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('ACTOR_DIED', message, { retryable: true, ...fields });
  }
}

/** The actor's constructor (`create`) threw; the actor never started. Not a death. */
export class ActorInitError extends Hr1Error<'ACTOR_INIT'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('ACTOR_INIT', message, { retryable: false, ...fields });
  }
}

/** The handler ran and threw; the actor is alive. */
export class ActorTaskError extends Hr1Error<'ACTOR_TASK'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('ACTOR_TASK', message, { retryable: false, ...fields });
  }

  /** The code of the domain error the handler threw (a `'task'` family), when it had one. */
  get taskCode(): string | undefined {
    return taskCodeOf(this.data);
  }
}

/** No reply within the call's timeout. */
export class CallTimeoutError extends Hr1Error<'CALL_TIMEOUT'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('CALL_TIMEOUT', message, { retryable: true, ...fields });
  }
}

/**
 * The connection to NATS dropped while the call was in flight: its reply, if any, is lost. The
 * call may or may not have run on the actor; the client reconnects by itself, so the call may
 * be sent again (`Cluster.call` re-sends it when the actor's `maxTaskRetries` allow).
 */
export class CallLostError extends Hr1Error<'CALL_LOST'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('CALL_LOST', message, { retryable: true, ...fields });
  }
}

/** A mailbox or a caller's pending-call limit is full. Back off and try again. */
export class BackpressureError extends Hr1Error<'BACKPRESSURE'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('BACKPRESSURE', message, { retryable: true, ...fields });
  }
}

/** No actor with that id or name exists in the cluster. */
export class UnknownActorError extends Hr1Error<'UNKNOWN_ACTOR'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('UNKNOWN_ACTOR', message, { retryable: false, ...fields });
  }
}

/** The actor exists but has no such method. */
export class UnknownMethodError extends Hr1Error<'UNKNOWN_METHOD'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('UNKNOWN_METHOD', message, { retryable: false, ...fields });
  }
}

/** Bytes that are not valid msgpack, or a value that does not fit the method's schema. */
export class CodecError extends Hr1Error<CodecErrorCode> {
  constructor(code: CodecErrorCode, message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, { retryable: false, ...fields });
  }
}

/** No node satisfies an actor's resources and labels. */
export class PlacementError extends Hr1Error<'PLACEMENT'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('PLACEMENT', message, { retryable: true, ...fields });
  }
}

/** A bad option or config value; the message names the option path and the fix. */
export class ConfigError extends Hr1Error<'CONFIG'> {
  readonly path: string;
  constructor(path: string, message: string, fields: Hr1ErrorFields = {}) {
    super('CONFIG', path ? `${path}: ${message}` : message, fields);
    this.path = path;
  }
}

/** Could not reach or authenticate with the NATS server. */
export class ConnectionError extends Hr1Error<ConnectionErrorCode> {
  constructor(code: ConnectionErrorCode, message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, fields);
  }
}

/** A worker-pool task threw inside its worker thread. */
export class PoolTaskError extends Hr1Error<'POOL_TASK'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('POOL_TASK', message, fields);
  }

  /** The code of the error the task threw in its worker thread (`POOL_TASK` for a plain Error). */
  get taskCode(): string | undefined {
    return taskCodeOf(this.data);
  }
}

function taskCodeOf(data: Record<string, unknown> | undefined): string | undefined {
  return typeof data?.taskCode === 'string' ? data.taskCode : undefined;
}

/** An object store lookup missed. */
export class ObjectNotFoundError extends Hr1Error<'OBJECT_NOT_FOUND'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('OBJECT_NOT_FOUND', message, fields);
  }
}

const byCode: Partial<Record<ClusterErrorCode, new (message: string, fields: Hr1ErrorFields) => Hr1Error>> = {
  ACTOR_DIED: ActorDiedError,
  ACTOR_INIT: ActorInitError,
  ACTOR_TASK: ActorTaskError,
  CALL_TIMEOUT: CallTimeoutError,
  CALL_LOST: CallLostError,
  BACKPRESSURE: BackpressureError,
  UNKNOWN_ACTOR: UnknownActorError,
  UNKNOWN_METHOD: UnknownMethodError,
  PLACEMENT: PlacementError,
  POOL_TASK: PoolTaskError,
  OBJECT_NOT_FOUND: ObjectNotFoundError,
};

/** Re-raise a wire error as its typed class (unknown codes become a plain {@link Hr1Error}). */
export function fromWire(w: WireError): Hr1Error {
  const fields: Hr1ErrorFields = {
    actor: w.actor,
    method: w.method,
    node: w.node,
    remoteStack: w.remoteStack,
    retryable: w.retryable,
    data: w.data,
  };
  if (w.code === 'MALFORMED_MESSAGE' || w.code === 'SCHEMA_INVALID') return new CodecError(w.code, w.message, fields);
  const Cls = byCode[w.code as ClusterErrorCode];
  return Cls ? new Cls(w.message, fields) : new Hr1Error(w.code, w.message, fields);
}

/**
 * The wire form of any thrown value. An `'own'` Hr1Error keeps its code; a `'task'` Hr1Error and
 * any other value travel under `fallbackCode` (e.g. `ACTOR_TASK`), a `'task'` error's own code
 * in `data.taskCode` (what {@link ActorTaskError.taskCode} reads).
 */
export function toWire(err: unknown, fallbackCode: string, fields: Hr1ErrorFields = {}): WireError {
  if (err instanceof Hr1Error) {
    if ((err.constructor as typeof Hr1Error).wireAs === 'own') {
      const w = err.toWire();
      return { ...w, actor: w.actor ?? fields.actor, method: w.method ?? fields.method, node: w.node ?? fields.node };
    }
    // exactly what a plain Error sent before its family joined Hr1Error, plus its code
    return { ...plainWire(err, fallbackCode, fields), data: { ...fields.data, taskCode: err.code } };
  }
  return plainWire(err instanceof Error ? err : new Error(String(err)), fallbackCode, fields);
}

function plainWire(e: Error, fallbackCode: string, fields: Hr1ErrorFields): WireError {
  return {
    code: fallbackCode,
    message: e.message,
    actor: fields.actor,
    method: fields.method,
    node: fields.node,
    remoteStack: relativeStack(e.stack),
    retryable: fields.retryable ?? false,
    data: fields.data,
  };
}

// the project root (this file is <root>/cluster/errors.ts), with and without the file:// form
const PROJECT_ROOT = fileURLToPath(new URL('../', import.meta.url));
const HOME = (() => {
  try {
    const h = homedir().replace(/\/+$/, '');
    return h.length > 1 ? `${h}/` : undefined;
  } catch {
    return undefined;
  }
})();

/**
 * A stack as it may leave this machine: paths under the project root become relative to it
 * (`cluster/node.ts:123:9`), paths under the home directory start with `~/`. What crosses the
 * wire (a {@link WireError}'s `remoteStack`) names no absolute local path.
 */
export function relativeStack(stack: string | undefined): string | undefined {
  if (!stack) return stack;
  let out = stack.split(`file://${PROJECT_ROOT}`).join('').split(PROJECT_ROOT).join('');
  if (HOME !== undefined && HOME !== PROJECT_ROOT) out = out.split(`file://${HOME}`).join('~/').split(HOME).join('~/');
  return out;
}

/** Guard that works across realms (worker threads), where `instanceof` does not. */
export function isHr1Error(x: unknown): x is Hr1Error {
  return typeof x === 'object' && x !== null && typeof (x as { code?: unknown }).code === 'string' && x instanceof Error;
}
