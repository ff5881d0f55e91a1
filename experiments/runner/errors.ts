import { Hr1Error } from '../../cluster/errors.ts';

/** Codes of {@link ExpError}. */
export type ExpErrorCode = 'EXP_CONFIG' | 'EXP_CONFIG_FILE' | 'EXP_RUN_DIR' | 'EXP_UNKNOWN_METHOD' | 'EXP_METHOD_FAILED' | 'EXP_NO_RESULTS';

/** An experiment error: a `code`, the option `path` where one is at fault, and the values involved. */
export class ExpError extends Hr1Error<ExpErrorCode> {
  /** option path such as `test.tasks` ('' when no single option is at fault) */
  readonly path: string;
  constructor(code: ExpErrorCode, message: string, fields: { path?: string; data?: Record<string, unknown>; cause?: unknown } = {}) {
    super(code, message, { data: fields.data, cause: fields.cause });
    this.path = fields.path ?? '';
  }
}
