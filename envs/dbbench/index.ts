/**
 * DBBench: AgentBench's database tasks, on SQLite (embedded default) or MariaDB/MySQL.
 *
 * @example
 * import { loadTasks, reset, step, expert } from './envs/dbbench/index.ts';
 * const [task] = loadTasks({ file: 'v0.2/dev' });
 * let { state } = await reset(task!, { seed: 0 });
 * const r = await step(state, expert(state));
 */
export { loadTasks, getTask, SHIPPED_SETS, DEFAULT_SET, TASK_TYPES, isWriteType } from './tasks.ts';
export type { DbbenchTask, DbbenchVariant, LoadTasksOptions, TaskType, ShippedSet } from './tasks.ts';
export { reset, step, expert, expertActions, referenceSql, useBackend, closeEpisode, closeAll, liveEpisodes } from './env.ts';
export type { DbbenchState, DbbenchAction, ResetOptions, ResetResult, StepResult, StepInfo, EpisodeStatus } from './env.ts';
export {
  V02_PROMPT,
  FC_SYSTEM_PROMPT,
  FC_TOOLS,
  DEFAULT_MAX_ROUNDS,
  TRUNCATE_AT,
  computeMetrics,
  compareV02Read,
  compareFc,
  initialMessages,
  parseV02,
  tableHashRepr,
} from './protocol.ts';
export type { ChatMessage, FcAction, ToolCall, DbbenchMetrics, EpisodeOutcome } from './protocol.ts';
export { verifyDbbench, benchDbbench, VERIFY_THRESHOLDS } from './verify.ts';
export type { VerifyOptions, VerifyResult, VerifyRow, VerifyTaskResult, BenchOptions, BenchResult } from './verify.ts';
export { SqliteBackend } from './sqlite.ts';
export { MysqlBackend } from './mysql.ts';
export type { Backend, DbSession, ExecResult } from './backend.ts';
export { startMariadb, findMariadb } from './mariadb-launcher.ts';
export type { MariadbServer, StartMariadbOptions } from './mariadb-launcher.ts';
export { DbbenchError, isDbbenchError } from './errors.ts';
export type { DbbenchErrorCode } from './errors.ts';
export { dbbenchEnv, parseDbbenchAction, SQL_ERROR, type DbbenchEnvOptions } from './session.ts';
export { dbbench as descriptor } from './descriptor.ts';
