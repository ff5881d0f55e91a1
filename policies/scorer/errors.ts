import { Hr1Error, type Hr1ErrorFields } from '../../cluster/errors.ts';

/** Codes of {@link ValidatorError}. */
export type ValidatorErrorCode =
  /** an option that is out of range; `field` names it */
  | 'VALIDATOR_BAD_OPTION'
  /** a model file or object that is not there: train it first */
  | 'VALIDATOR_MODEL_MISSING'
  /** a model whose feature width does not match this code's features */
  | 'VALIDATOR_MODEL_MISMATCH'
  /** the torch trainer failed */
  | 'VALIDATOR_TRAIN_FAILED'
  /** a dataset line that is not an outcome row */
  | 'VALIDATOR_BAD_ROW';

/** An error of the validator layer; `field` names the offending option where there is one. */
export class ValidatorError extends Hr1Error<ValidatorErrorCode> {
  readonly field: string | undefined;
  constructor(code: ValidatorErrorCode, message: string, fields: Hr1ErrorFields & { field?: string } = {}) {
    super(code, message, { retryable: false, ...fields, data: { ...(fields.field === undefined ? {} : { field: fields.field }), ...fields.data } });
    this.field = fields.field;
  }
}

/** How to produce the models; every "missing model" message ends with it. */
export const TRAIN_HINT = 'train them with trainValueModels() (or validatorReport(), which writes validation.onnx and reward.onnx into its out dir), then load by path or object name';

/** A validation or reward model that is not where it was asked for. */
export class ValidatorModelMissingError extends ValidatorError {
  /** `path:<file>` or `object:<name>` */
  readonly source: string;
  constructor(source: string, cause?: unknown) {
    super('VALIDATOR_MODEL_MISSING', `no validator model at ${source}; ${TRAIN_HINT}`, { cause, data: { source } });
    this.source = source;
  }
}
