import { Hr1Error, type Hr1ErrorFields } from '../../cluster/errors.ts';

export type CommandErrorCode = 'BAD_OPTION' | 'BAD_ENV' | 'BAD_TARGET' | 'BAD_FILE' | 'BAD_MODULE';

/** A command given a bad option or input; the message names the option and the fix. */
export class CommandError extends Hr1Error {
  constructor(code: CommandErrorCode, message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, { retryable: false, ...fields });
  }
}
