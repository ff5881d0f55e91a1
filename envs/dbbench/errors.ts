/**
 * Typed errors of the DBBench env. Each carries a stable `code`, the values involved, and a
 * message that says what to do.
 */
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
  | 'DBBENCH_MARIADB_START_FAILED';

export class DbbenchError extends Error {
  override readonly name = 'DbbenchError';
  readonly code: DbbenchErrorCode;
  readonly details: Record<string, unknown>;

  constructor(
    code: DbbenchErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = code;
    this.details = details;
  }
}

/** guard that works across realms, unlike instanceof */
export function isDbbenchError(e: unknown): e is DbbenchError {
  return typeof e === 'object' && e !== null && (e as { name?: unknown }).name === 'DbbenchError'
    && typeof (e as { code?: unknown }).code === 'string';
}
