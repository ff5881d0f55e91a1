/**
 * Typed errors of the cluster. Every error carries a `code` and the values involved as fields.
 * Errors that cross NATS or a worker boundary travel as {@link WireError} data and are re-raised
 * by {@link fromWire} as the same class, so `err instanceof ActorDiedError` holds on the caller.
 */

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

export interface Hr1ErrorFields {
  actor?: string | undefined;
  method?: string | undefined;
  node?: string | undefined;
  remoteStack?: string | undefined;
  retryable?: boolean | undefined;
  data?: Record<string, unknown> | undefined;
  cause?: unknown;
}

/** Base class of every error the project raises on purpose. */
export class Hr1Error extends Error {
  /** Stable machine-readable code, e.g. `ACTOR_DIED`. */
  readonly code: string;
  readonly actor: string | undefined;
  readonly method: string | undefined;
  readonly node: string | undefined;
  /** The stack where the error happened, when that was another process or thread. */
  readonly remoteStack: string | undefined;
  /** Whether the same call may succeed when tried again. */
  readonly retryable: boolean;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: string, message: string, fields: Hr1ErrorFields = {}) {
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

  toWire(): WireError {
    return {
      code: this.code,
      message: this.message,
      actor: this.actor,
      method: this.method,
      node: this.node,
      remoteStack: this.remoteStack ?? this.stack,
      retryable: this.retryable,
      data: this.data,
    };
  }
}

/** The actor's process or node died (or it was killed) while the call was pending or before it. */
export class ActorDiedError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('ACTOR_DIED', message, { retryable: true, ...fields });
  }
}

/** The actor's constructor (`create`) threw; the actor never started. Not a death. */
export class ActorInitError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('ACTOR_INIT', message, { retryable: false, ...fields });
  }
}

/** The handler ran and threw; the actor is alive. */
export class ActorTaskError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('ACTOR_TASK', message, { retryable: false, ...fields });
  }
}

/** No reply within the call's timeout. */
export class CallTimeoutError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('CALL_TIMEOUT', message, { retryable: true, ...fields });
  }
}

/** A mailbox or a caller's pending-call limit is full. Back off and try again. */
export class BackpressureError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('BACKPRESSURE', message, { retryable: true, ...fields });
  }
}

/** No actor with that id or name exists in the cluster. */
export class UnknownActorError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('UNKNOWN_ACTOR', message, { retryable: false, ...fields });
  }
}

/** The actor exists but has no such method. */
export class UnknownMethodError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('UNKNOWN_METHOD', message, { retryable: false, ...fields });
  }
}

/** Bytes that are not valid msgpack, or a value that does not fit the method's schema. */
export class CodecError extends Hr1Error {
  constructor(code: 'MALFORMED_MESSAGE' | 'SCHEMA_INVALID', message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, { retryable: false, ...fields });
  }
}

/** No node satisfies an actor's resources and labels. */
export class PlacementError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('PLACEMENT', message, { retryable: true, ...fields });
  }
}

/** A bad option or config value; the message names the option path and the fix. */
export class ConfigError extends Hr1Error {
  readonly path: string;
  constructor(path: string, message: string, fields: Hr1ErrorFields = {}) {
    super('CONFIG', path ? `${path}: ${message}` : message, fields);
    this.path = path;
  }
}

/** Could not reach or authenticate with the NATS server. */
export class ConnectionError extends Hr1Error {
  constructor(code: 'CONNECTION_REFUSED' | 'AUTH_REFUSED' | 'CONNECTION_CLOSED', message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, fields);
  }
}

/** A worker-pool task threw inside its worker thread. */
export class PoolTaskError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('POOL_TASK', message, fields);
  }
}

/** An object store lookup missed. */
export class ObjectNotFoundError extends Hr1Error {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('OBJECT_NOT_FOUND', message, fields);
  }
}

const byCode: Record<string, new (message: string, fields: Hr1ErrorFields) => Hr1Error> = {
  ACTOR_DIED: ActorDiedError,
  ACTOR_INIT: ActorInitError,
  ACTOR_TASK: ActorTaskError,
  CALL_TIMEOUT: CallTimeoutError,
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
  const Cls = byCode[w.code];
  return Cls ? new Cls(w.message, fields) : new Hr1Error(w.code, w.message, fields);
}

/** The wire form of any thrown value; non-Hr1 errors become `ACTOR_TASK`-style data under `code`. */
export function toWire(err: unknown, fallbackCode: string, fields: Hr1ErrorFields = {}): WireError {
  if (err instanceof Hr1Error) {
    const w = err.toWire();
    return { ...w, actor: w.actor ?? fields.actor, method: w.method ?? fields.method, node: w.node ?? fields.node };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  return {
    code: fallbackCode,
    message: e.message,
    actor: fields.actor,
    method: fields.method,
    node: fields.node,
    remoteStack: e.stack,
    retryable: fields.retryable ?? false,
    data: fields.data,
  };
}

/** Guard that works across realms (worker threads), where `instanceof` does not. */
export function isHr1Error(x: unknown): x is Hr1Error {
  return typeof x === 'object' && x !== null && typeof (x as { code?: unknown }).code === 'string' && x instanceof Error;
}
