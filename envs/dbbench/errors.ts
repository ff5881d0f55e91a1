/**
 * Typed errors of the DBBench env. Each carries a stable `code`, the values involved, and a
 * message that says what to do.
 */
import { Hr1Error } from '../../cluster/errors.ts';

/** Codes of {@link DbbenchError}. */
export type DbbenchErrorCode =
  | 'DBBENCH_BAD_OPTION'
  | 'DBBENCH_BAD_DATA'
  | 'DBBENCH_DATA_NOT_FOUND'
  | 'DBBENCH_UNKNOWN_TASK'
  | 'DBBENCH_UNKNOWN_EPISODE'
  | 'DBBENCH_EPISODE_DONE'
  | 'DBBENCH_BAD_ACTION'
  | 'DBBENCH_BACKEND_UNAVAILABLE'
  | 'DBBENCH_MYSQL_PRIVILEGES'
  | 'DBBENCH_SETUP_FAILED'
  | 'DBBENCH_MARIADB_NOT_INSTALLED'
  | 'DBBENCH_MARIADB_START_FAILED'
  /** a SQLite session used after `close()` */
  | 'DBBENCH_SESSION_CLOSED';

/** An error of the DBBench env; `details` holds the values involved (file, task id, SQL, …). */
export class DbbenchError extends Hr1Error<DbbenchErrorCode> {
  /** thrown in an actor handler, it still arrives as ActorTaskError (code in `taskCode`) */
  static override readonly wireAs = 'task';
  override readonly name = 'DbbenchError';
  readonly details: Record<string, unknown>;

  constructor(
    code: DbbenchErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, { cause: options?.cause });
    this.details = details;
  }
}

/** guard that works across realms, unlike instanceof */
export function isDbbenchError(e: unknown): e is DbbenchError {
  return typeof e === 'object' && e !== null && (e as { name?: unknown }).name === 'DbbenchError'
    && typeof (e as { code?: unknown }).code === 'string';
}
