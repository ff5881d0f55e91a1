/**
 * The validator: a validation model (will this candidate patch be non-regressive?) and a reward
 * model (its Δ_B), small MLPs over packet and patch features, trained in torch on logged
 * candidate outcomes, exported to ONNX and served by the Scorer actor (actors/scorer.ts).
 * See docs/VALIDATOR.md.
 */
export { ValidatorError, ValidatorModelMissingError, TRAIN_HINT, type ValidatorErrorCode } from './errors.ts';
export { FEATURE_VERSION, FEATURE_DIM, FEATURE_NAMES, PACKET_FEATURE_NAMES, PATCH_FEATURE_NAMES, packetFeatures, patchFeatures, candidateFeatures } from './features.ts';
export { trainValueModels, VALUENET_SCRIPT, DEFAULT_HIDDEN, DEFAULT_EPOCHS, DEFAULT_LR, DEFAULT_WEIGHT_DECAY, type TrainOptions, type TrainResult, type TrainedModel } from './train.ts';
export { ValueModel } from './model.ts';
export { rankCandidates, rankOrder, scoreFeatures, DEFAULT_RANK_BY, type ValidatorModels, type RankBy, type CandidateScore } from './rank.ts';
export { auc, spearman, bootstrapCI, mean } from './metrics.ts';
