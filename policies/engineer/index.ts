/**
 * The harness engineer's side: failure packets (text and tokens), the teacher ("prompted
 * editor"), the `openai:` engineer backend, the reward Δ_B, and the cold-start SFT dataset.
 *
 * @example
 * import { extractPacket, formatPacket, teacherPropose, rewardOf } from './policies/engineer/index.ts';
 * const packet = extractPacket(records);
 * const [p] = teacherPropose(packet, { k: 4, seed: 1 });
 * const r = await rewardOf(cluster, { env, target, episodes, patch: p!.patch, cache });
 */
export { EngineerError, MissingEvaluationError, type EngineerErrorCode } from './errors.ts';
export {
  extractPacket,
  formatPacket,
  packetHash,
  parsePacket,
  selectFailed,
  excerptOf,
  alfGoalObject,
  alfGoalText,
  alfSighting,
  excerptLineText,
  Sanitizer,
  PacketSchema,
  PACKET_VERSION,
  SELECTION_RULE,
  DEFAULT_MAX_EPISODES,
  DEFAULT_EXCERPT_CHARS,
  MAX_ACTION_CHARS,
  MAX_OBSERVATION_CHARS,
  MAX_GOAL_CHARS,
  type Packet,
  type PacketEpisode,
  type PacketSignals,
  type PacketStatus,
  type PacketOptions,
  type ExcerptLine,
} from './packet.ts';
export {
  packetTokens,
  encodeText,
  decodeTokens,
  tokenId,
  VOCAB,
  VOCAB_SIZE,
  VOCAB_VERSION,
  SPECIAL_TOKENS,
  COUNT_TOKENS,
  WORD_TOKENS,
  NUMBER_TOKENS,
  SPELL_TOKENS,
  SYMBOL_TOKENS,
  PAD_ID,
  BOS_ID,
  EOS_ID,
  UNK_ID,
  DEFAULT_MAX_PACKET_TOKENS,
} from './tokens.ts';
export { teacherPropose, teacherForFinding, diagnose, componentsFor, DEFAULT_K, FINDING_KINDS, type Finding, type Proposal } from './teacher.ts';
export { OpenAIEngineer, openAIEngineerFromSpec, parseEngineerReply, engineerPrompt, PATCH_CONTRACT, type LlmCandidate, type OpenAIEngineerOptions } from './openai.ts';
export {
  ENGINEER_VOCAB,
  ENGINEER_VOCAB_SIZE,
  PATCH_LANG_VERSION,
  grammarSpaceLog10,
  PATCH_OPEN_ID,
  MAX_COMPLETION_TOKENS,
  DEFAULT_PROMPT_TOKENS,
  STRUCTURE_TOKENS,
  PHRASES,
  NAMES,
  NOTE_KEYS,
  STRING_PATHS,
  NUMBER_PATHS,
  ARRAY_PATHS,
  TEMPLATE_PATHS,
  PatchGrammar,
  allowedNext,
  patchToTokens,
  tokensToPatch,
  engineerPromptTokens,
  engineerToken,
  packetNames,
  promptRefs,
} from './patch-lang.ts';
export { BLOCKS, BLOCK_INDEX, composeSource, parseComposed, checkBlocks, type Block, type BlockUse, type BlockParam } from './blocks.ts';
export { loadBuiltinEngineer, type BuiltinEngineer } from './builtin.ts';
