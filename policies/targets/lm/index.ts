/**
 * Learned targets (`lm/<name>`): small causal LMs trained by behaviour cloning on expert
 * episodes (with random hint segments), served by onnxruntime-node. See docs/LMTARGETS.md.
 *
 * @example
 * import { buildZoo, lmModel } from './policies/targets/lm/index.ts';
 * await buildZoo({ only: ['alf-xs-192-a'], tiny: true });
 * const model = await lmModel('alf-xs-192-a@tiny');
 */
export { LmTargetError, LmNotBuiltError, isLmTargetError, type LmErrorCode } from './errors.ts';
export { LmTokenizer, normalizeText, LM_SPECIAL_TOKENS, PAD_ID, BOS_ID, EOS_ID } from './tokenizer.ts';
export { harvestWords, DEFAULT_MAX_WORDS } from './vocab.ts';
export { buildContext, segmentMessages, DEFAULT_MAX_NEW_TOKENS, type ContextBudget, type Segments } from './context.ts';
export { withHints, sampleHintText, SKILL_BANK, WARNING_BANK, TEMPLATE_BANK, type HintInputs, type HintRates } from './hints.ts';
export { collectDecisions, bcRows, taskIds, envFactory, EVAL_SPLIT, LM_ENVS, type AlfTeacher, type BcDecision, type BcRow, type CollectOptions, type LmEnv } from './bc.ts';
export { explorer, searchPrior, type Explorer, type SearchPrior } from './explorer.ts';
export { slotMap, toSlots, fromSlots, slotMessages, SLOT_WORD, MAX_SLOTS, type SlotMap } from './slots.ts';
export {
  ZOO,
  TINY_BUDGET,
  LM_TRAIN_VERSION,
  LM_SERVING_VERSION,
  SKETCH_DECODE_VERSION,
  servingTag,
  decodeTag,
  decodeTagOf,
  DEFAULT_ZOO_DIR,
  buildZoo,
  knownZoo,
  resolveConfig,
  readMeta,
  staleBuild,
  modelDir,
  zooDir,
  type ZooConfig,
  type ResolvedConfig,
  type LmMeta,
  type BuildOptions,
  type BuildResult,
} from './zoo.ts';
export { parseZooConfig, loadZooConfig, ZOO_CONFIG_ENV } from './user-zoo.ts';
export { lmModel, lmTarget, decisionRng, decisionSeed, lmBatchOptions, DEFAULT_LM_PREFIX_CACHE, type LmModel, type LmTarget, type LmModelOptions } from './model.ts';
export { zooTable, zooTableRows, zooTableMarkdown, zooTableJson, measureVanilla, noopStep, spliceZooTable, mergeZooTable, ZOO_TABLE_BEGIN, ZOO_TABLE_END, DEFAULT_TABLE_SEEDS, type ZooTableOptions, type ZooTableRow, type VanillaResult } from './table.ts';
export { locateModel, modelIdentity, type ModelIdentity, playableMeta, readManifest, vendoredDir, vendoredState, DEFAULT_VENDORED_DIR, VENDORED_ENV, MAX_SUCCESS_DRIFT, type ModelSource, type VendoredEntry, type VendoredManifest } from './vendor.ts';
export { vendorModels, verifyVendored, exportCompact, type VendorOptions, type VerifyOptions, type VerifyLine } from './vendor-build.ts';
export { probeSynthetic, probeTasks, PROBE_SEED, DEFAULT_PROBE_TASKS, type ProbeOptions, type ProbeResult } from './dbbench/probe.ts';
export { compareVanilla, compareEnv, pairedFigure, formatZooComparison, COMPARE_RESAMPLES, type CompareOptions, type PairedFigure, type ZooComparison } from './compare.ts';
