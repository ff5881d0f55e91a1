/**
 * The target agent's harness: the episode runtime with four hooks (init, preDecision, preAction,
 * postFeedback), the patch language (skills, typed rules, sandboxed code hooks) and its checker.
 * Envs reach it only through the env contract (envs/contract.ts); their sessions live under envs/.
 *
 * @example
 * import { baseHarness, composeHarness, expertModel, runEpisode } from './harness/index.ts';
 * import { alfworldEnv } from './envs/alfworld/index.ts';
 * const h = composeHarness(baseHarness(), { rules: [{ hook: 'preDecision', when: { pred: 'nothingHappens' }, effect: { type: 'hint', message: 'Try another action.' } }] });
 * const rec = await runEpisode(alfworldEnv(game), { model: expertModel(), harness: h, seed: 0 });
 */
export { HarnessError, isHarnessError, isWallGuardError, wallGuardError, type HarnessErrorCode } from './errors.ts';
export {
  HOOKS,
  PREDICATES,
  CTX_ROOTS,
  EFFECTS_BY_HOOK,
  type HookName,
  type Json,
  type ChatMessage,
  type EnvStart,
  type EnvFeedback,
  type ParsedAction,
  type EnvSession,
  type EnvFactory,
  type DecisionContext,
  type Model,
  type HistoryEntry,
  type Predicates,
  type PredicateName,
  type HookCtx,
  type Notebook,
  type Effect,
  type InitEffect,
  type PreDecisionEffect,
  type PreActionEffect,
  type PostFeedbackEffect,
  type HookCounters,
  type HookAccount,
  type StepRecord,
  type StepEffect,
  type EpisodeStatus,
  type EpisodeRecord,
} from './types.ts';
export {
  PatchSchema,
  RuleSchema,
  CodeHookSchema,
  EffectSchema,
  CondSchema,
  parsePatch,
  formatPath,
  MAX_ENTRIES,
  MAX_SKILLS,
  MAX_SKILL_CHARS,
  MAX_SOURCE_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_ACTION_CHARS,
  MAX_COND_NODES,
  MAX_COND_DEPTH,
  MAX_PATTERN_CHARS,
  MAX_NOTE_CHARS,
  type Patch,
  type Rule,
  type CodeHook,
  type Cond,
  type Comparison,
  type PatchIssue,
} from './schema.ts';
export {
  canonicalJson,
  canonicalPatch,
  patchHash,
  toPatch,
  parsedPatch,
  readPatch,
  isParsedPatch,
  patchFromCanonical,
  baseHarness,
  composeHarness,
  removePatch,
  harnessVersion,
  EMPTY_PATCH,
  HARNESS_RUNTIME_VERSION,
  type Harness,
  type Layer,
  type ParsedPatch,
} from './canonical.ts';
export {
  EpisodeRecordSchema,
  InterventionsSchema,
  type Interventions,
  StepRecordSchema,
  StepEffectSchema,
  STEP_EFFECTS,
  HookAccountSchema,
  HookCountersSchema,
  PredicatesSchema,
  OutcomeSchema,
  NotebookSchema,
  EpisodeStatusSchema,
  EPISODE_STATUSES,
  INFRA_STATUSES,
  isInfraStatus,
} from './record.ts';
export {
  CodeSandbox,
  RegexSandbox,
  sandboxModule,
  resolveLimits,
  DEFAULT_LIMITS,
  DEFAULT_WALL_GUARD_MS,
  STARVED_GUARD_FACTOR,
  HOST_CLOCK,
  type SandboxClock,
  DEFAULT_FUEL_TICKS,
  DEFAULT_MEMORY_BYTES,
  DEFAULT_STACK_BYTES,
  DEFAULT_MAX_RESULT_CHARS,
  type SandboxLimits,
  type CallOutcome,
  type CompileResult,
} from './sandbox.ts';
export { getPath, evalCond, fillTemplate } from './rules.ts';
export {
  runEpisode,
  normalizeEffects,
  DEFAULT_HISTORY_WINDOW,
  DEFAULT_MAX_BLOCKS_PER_STEP,
  DEFAULT_MAX_FORCED_IN_A_ROW,
  DEFAULT_MAX_FAULTS,
  DEFAULT_MAX_INTERVENTION_RATE,
  MAX_NOTEBOOK_CHARS,
  textTokens,
  type RunOptions,
} from './runtime.ts';
export { scriptedModel, expertModel } from './models.ts';
export {
  validatePatch,
  checkPatchFile,
  showPatchFile,
  DEFAULT_SMOKE_GAME,
  DEFAULT_SMOKE_STEPS,
  type ValidateOptions,
  type ValidationReport,
} from './check.ts';
export { benchHarness, BENCH_PATCH, type HarnessBench } from './bench.ts';
export { HOSTILE_CORPUS, type HostileCase, type HostileCategory } from './hostile/corpus.ts';
export { DEFAULT_MODULE_MEMORY_BYTES, MAX_MATCH_INPUT } from './sandbox.ts';
