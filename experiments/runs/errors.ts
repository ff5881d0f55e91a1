import { Hr1Error } from '../../cluster/errors.ts';

/** Codes of {@link RunsError}. */
export type RunsErrorCode =
  /** a folder that neither hr1 exp nor hr1 train wrote */
  | 'RUNS_NOT_A_RUN'
  /** a `--filter key=value` with an unknown key or a value of the wrong kind */
  | 'RUNS_BAD_FILTER'
  /** an export format this hr1 does not write */
  | 'RUNS_BAD_FORMAT'
  /** an episode the run folder does not hold */
  | 'RUNS_NO_EPISODE';

/** A run folder or episode query that cannot be served; the message names the value and the fix. */
export class RunsError extends Hr1Error<RunsErrorCode> {
  constructor(code: RunsErrorCode, message: string, data: Record<string, unknown> = {}, cause?: unknown) {
    super(code, message, { data, retryable: false, ...(cause === undefined ? {} : { cause }) });
  }
}
