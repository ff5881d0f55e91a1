import { Hr1Error, type Hr1ErrorFields } from '../../cluster/errors.ts';

/** Codes of {@link EngineerError}. */
export type EngineerErrorCode =
  /** an episode record or a packet that does not have the documented shape */
  | 'ENGINEER_BAD_RECORD'
  | 'ENGINEER_BAD_PACKET'
  | 'ENGINEER_BAD_OPTION'
  /** an env or target failure during a reward rollout: a missing evaluation, never a score */
  | 'ENGINEER_EVAL_FAILED'
  | 'ENGINEER_UNKNOWN_BACKEND'
  /** a built-in engineer completion that is not a patch in the component language */
  | 'ENGINEER_BAD_TOKENS';

/** An error of the engineer layer; `field` names the offending path where there is one. */
export class EngineerError extends Hr1Error<EngineerErrorCode> {
  /** e.g. `records[3].outcome.reward` */
  readonly field: string | undefined;
  constructor(code: EngineerErrorCode, message: string, fields: Hr1ErrorFields & { field?: string } = {}) {
    super(code, message, { retryable: false, ...fields, data: { ...(fields.field === undefined ? {} : { field: fields.field }), ...fields.data } });
    this.field = fields.field;
  }
}

/**
 * A reward rollout that could not be evaluated (the env or the target failed). The candidate has
 * no reward: report it and leave it out of the group, never score it 0.
 */
export class MissingEvaluationError extends EngineerError {
  /** which rollout failed */
  readonly side: 'base' | 'patched';
  /** the episodes that failed, when the records came back with an error status */
  readonly episodes: { taskId: string; seed: number; status: string; error: string | null }[];
  constructor(side: 'base' | 'patched', message: string, episodes: MissingEvaluationError['episodes'], cause?: unknown) {
    super('ENGINEER_EVAL_FAILED', message, { cause, retryable: true, data: { side, episodes } });
    this.side = side;
    this.episodes = episodes;
  }
}
