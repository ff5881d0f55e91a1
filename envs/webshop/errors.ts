/** Typed errors of the WebShop env: each carries a `code`, the file/field involved, and a fix. */
import { Hr1Error } from '../../cluster/errors.ts';

/** Codes of {@link WebshopError}. */
export type WebshopErrorCode =
  | 'WEBSHOP_BAD_DATA'
  | 'WEBSHOP_MISSING_FILE'
  | 'WEBSHOP_UNKNOWN_GOAL'
  | 'WEBSHOP_UNKNOWN_PRODUCT'
  | 'WEBSHOP_BAD_STATE'
  | 'WEBSHOP_BAD_OPTION';

/** An error of the WebShop env; the message ends with the `file` and `field` involved. */
export class WebshopError extends Hr1Error<WebshopErrorCode> {
  /** thrown in an actor handler, it still arrives as ActorTaskError (code in `taskCode`) */
  static override readonly wireAs = 'task';
  readonly file: string | undefined;
  readonly field: string | undefined;
  constructor(code: WebshopErrorCode, message: string, opts: { file?: string; field?: string; cause?: unknown } = {}) {
    const where = [opts.file ? `file ${opts.file}` : '', opts.field ? `field ${opts.field}` : ''].filter(Boolean).join(', ');
    super(code, where ? `${message} (${where})` : message, { cause: opts.cause });
    this.name = 'WebshopError';
    this.file = opts.file;
    this.field = opts.field;
  }
}

/** A data file that cannot be read as WebShop's format: names the file, the field and the fix. */
export class WebshopBadDataError extends WebshopError {
  constructor(message: string, file: string, field: string, cause?: unknown) {
    super('WEBSHOP_BAD_DATA', message, { file, field, cause });
    this.name = 'WebshopBadDataError';
  }
}

/** A data directory that lacks a file the loader needs. */
export class WebshopMissingFileError extends WebshopError {
  constructor(message: string, file: string) {
    super('WEBSHOP_MISSING_FILE', message, { file });
    this.name = 'WebshopMissingFileError';
  }
}

/** An env option or state that is not valid (unknown goal id, malformed state, bad protocol). */
export class WebshopOptionError extends WebshopError {
  constructor(code: 'WEBSHOP_UNKNOWN_GOAL' | 'WEBSHOP_UNKNOWN_PRODUCT' | 'WEBSHOP_BAD_STATE' | 'WEBSHOP_BAD_OPTION', message: string, field: string) {
    super(code, message, { field });
    this.name = 'WebshopOptionError';
  }
}
