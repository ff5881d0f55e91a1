/** Typed errors of the ALFWorld engine. */

export type AlfworldErrorCode =
  | 'ALFWORLD_BAD_GAME'
  | 'ALFWORLD_BAD_DATA'
  | 'ALFWORLD_UNKNOWN_GAME'
  | 'ALFWORLD_BAD_STATE';

export class AlfworldError extends Error {
  readonly code: AlfworldErrorCode;
  readonly file: string | undefined;
  readonly field: string | undefined;
  constructor(code: AlfworldErrorCode, message: string, opts: { file?: string; field?: string } = {}) {
    const where = [opts.file ? `file ${opts.file}` : '', opts.field ? `field ${opts.field}` : '']
      .filter(Boolean)
      .join(', ');
    super(where ? `${message} (${where})` : message);
    this.name = 'AlfworldError';
    this.code = code;
    this.file = opts.file;
    this.field = opts.field;
  }
}

/** A game file that cannot be parsed: names the file and the field. */
export class AlfworldBadGameError extends AlfworldError {
  constructor(message: string, file: string, field: string) {
    super('ALFWORLD_BAD_GAME', message, { file, field });
    this.name = 'AlfworldBadGameError';
  }
}
