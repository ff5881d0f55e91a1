/** The engineer's learning side: torch learner process, GRPO reference math, ONNX engineer. Public names only. */
export { groupAdvantages, ratio, tokenLoss, k3, tokenMean, grpoLoss, ADV_EPS, RATIO_CLAMP, KL_CLAMP, DEFAULT_EPS_LOW, DEFAULT_EPS_HIGH, DEFAULT_CLIP_C } from './grpo.ts';
export type { ClipOptions, TokenLoss, GrpoInput, GrpoOutput } from './grpo.ts';
export { LearnerProcess, reproducibleBlasEnv, DEFAULT_PYTHON, SERVER_SCRIPT, DEFAULT_START_TIMEOUT_MS, DEFAULT_OP_TIMEOUT_MS, MAX_FRAME_BYTES } from './process.ts';
export type { LearnerProcessOptions, EngineerModelConfig, OptimConfig, GrpoConfig, LearnerInfo, SequenceBatch, SftStepResult, GrpoIterMetrics, GrpoStepArgs, GrpoStepResult, FileResult, ExportWeights } from './process.ts';
export { OnnxEngineer, sampleFullPath, unconstrained, logSoftmaxAt, pick, DEFAULT_K, DEFAULT_TEMPERATURE, DEFAULT_TOP_P, DEFAULT_MAX_NEW_TOKENS } from './onnx.ts';
export type { GrammarConstraint, SampleOptions, Completion, EngineerMeta, DecodeOptions } from './onnx.ts';
export { Graph, KvSlab, onnxMetadata, DECODE_GRAPH_VERSION, type GraphInfo, type GraphExpect } from './graph.ts';
export { DecodeBatcher, DEFAULT_MAX_BATCH, DEFAULT_GATHER_MS, DEFAULT_PREFILL_ROWS, type BatcherOptions, type BatcherStats, type DecodeRequest, type Sample } from './batcher.ts';
export { LearnerDependencyError, LearnerDiedError, LearnerOpError, LearnerProtocolError, LearnerTimeoutError, SamplerError, LEARNER_APT_PACKAGES, type LearnerErrorCode, type SamplerErrorCode } from './errors.ts';
