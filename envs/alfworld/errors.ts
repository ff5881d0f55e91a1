/** Typed errors of the ALFWorld engine. */
import { Hr1Error } from '../../cluster/errors.ts';

/** Codes of {@link AlfworldError}. */
export type AlfworldErrorCode =
  | 'ALFWORLD_BAD_GAME'
  | 'ALFWORLD_BAD_DATA'
  | 'ALFWORLD_UNKNOWN_GAME'
  | 'ALFWORLD_BAD_STATE'
  /** an engine option that is not valid (an unknown protocol name) */
  | 'ALFWORLD_BAD_OPTION';

/** An error of the ALFWorld engine; the message ends with the `file` and `field` involved. */
export class AlfworldError extends Hr1Error<AlfworldErrorCode> {
  /** thrown in an actor handler, it still arrives as ActorTaskError (code in `taskCode`) */
  static override readonly wireAs = 'task';
  readonly file: string | undefined;
  readonly field: string | undefined;
  constructor(code: AlfworldErrorCode, message: string, opts: { file?: string; field?: string; cause?: unknown } = {}) {
    const where = [opts.file ? `file ${opts.file}` : '', opts.field ? `field ${opts.field}` : '']
      .filter(Boolean)
      .join(', ');
    super(code, where ? `${message} (${where})` : message, { cause: opts.cause });
    this.name = 'AlfworldError';
    this.file = opts.file;
    this.field = opts.field;
  }
}

/** A game file that cannot be parsed: names the file and the field. */
export class AlfworldBadGameError extends AlfworldError {
  constructor(message: string, file: string, field: string, cause?: unknown) {
    super('ALFWORLD_BAD_GAME', message, { file, field, cause });
    this.name = 'AlfworldBadGameError';
  }
}
