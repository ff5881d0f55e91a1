/** Typed errors of the learned targets. */
import { Hr1Error, type Hr1ErrorFields } from '../../../cluster/errors.ts';

/** Codes of {@link LmTargetError}. */
export type LmErrorCode = 'LM_NOT_BUILT' | 'LM_UNKNOWN' | 'LM_BAD_META' | 'LM_BAD_OPTION' | 'LM_BUILD_FAILED' | 'LM_STALE' | 'LM_BAD_CONFIG' | 'LM_BAD_HASH' | 'LM_VENDOR_DRIFT' | 'LM_VERIFY_FAILED';

/** A learned-target failure; `code` says which, `data` holds the values involved. */
export class LmTargetError extends Hr1Error<LmErrorCode> {
  constructor(code: LmErrorCode, message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, { retryable: false, ...fields });
  }
}

/** `lm/<name>` names a zoo model that has not been built on this machine. */
export class LmNotBuiltError extends LmTargetError {
  readonly target: string;
  readonly dir: string;
  readonly command: string;
  constructor(name: string, dir: string) {
    const command = `hr1 zoo build --only ${name}`;
    super('LM_NOT_BUILT', `target "lm/${name}" is not built (no model under ${dir}); run \`${command}\` first`, { data: { name, dir, command } });
    this.target = `lm/${name}`;
    this.dir = dir;
    this.command = command;
  }
}

/** Whether `e` is a learned-target error (works across realms: checks the code). */
export function isLmTargetError(e: unknown): e is LmTargetError {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'string' && (e as { code: string }).code.startsWith('LM_');
}
