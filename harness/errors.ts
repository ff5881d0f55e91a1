/**
 * Typed errors of the harness. Each carries a stable `code`, the values involved in `details`,
 * and a message that says what to do.
 */
import { Hr1Error } from '../cluster/errors.ts';

/** Codes of {@link HarnessError}. */
export type HarnessErrorCode =
  | 'HARNESS_BAD_OPTION'
  | 'HARNESS_BAD_PATCH'
  | 'HARNESS_BAD_JSON'
  | 'HARNESS_PATCH_NOT_FOUND'
  | 'HARNESS_COMPILE_FAILED'
  | 'HARNESS_SANDBOX_UNAVAILABLE'
  | 'HARNESS_UNKNOWN_LAYER'
  | 'HARNESS_MODEL_FAILED'
  | 'HARNESS_ENV_FAILED'
  /** a sandbox's wall-clock guard fired (an overloaded host): the episode is an infra error */
  | 'HARNESS_WALL_GUARD';

/** An error of the harness layer; `details` holds the values involved. */
export class HarnessError extends Hr1Error<HarnessErrorCode> {
  /** thrown in an actor handler, it still arrives as ActorTaskError (code in `taskCode`) */
  static override readonly wireAs = 'task';
  override readonly name = 'HarnessError';
  readonly details: Record<string, unknown>;

  constructor(code: HarnessErrorCode, message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(code, message, { cause: options?.cause });
    this.details = details;
  }
}

/** guard that works across realms, unlike instanceof */
export function isHarnessError(e: unknown): e is HarnessError {
  return typeof e === 'object' && e !== null && (e as { name?: unknown }).name === 'HarnessError'
    && typeof (e as { code?: unknown }).code === 'string';
}

/** the message of anything thrown, one line, bounded */
export function errorText(e: unknown, max = 300): string {
  let s: string;
  if (e instanceof Error) s = `${e.name}: ${e.message}`;
  else if (typeof e === 'object' && e !== null && 'message' in e) s = `${String((e as { name?: unknown }).name ?? 'Error')}: ${String((e as { message: unknown }).message)}`;
  else s = String(e);
  s = s.replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** the wall-clock guard of a hook's sandbox fired: not the hook's fault, so not a result */
export function wallGuardError(message: string): HarnessError {
  return new HarnessError('HARNESS_WALL_GUARD', `${message}; the episode is an infra error (sandbox_error) and is run again, never scored`);
}

export function isWallGuardError(e: unknown): e is HarnessError {
  return isHarnessError(e) && e.code === 'HARNESS_WALL_GUARD';
}
