/**
 * ALFWorld env (Env contract): a PDDL-faithful TypeScript engine for the real game files.
 *
 *   const games = loadGames();                       // vendored valid_seen + valid_train
 *   const g = games.get('valid_seen/pick_and_place_simple-Pencil-None-Dresser-330/trial_T20190909_071128_012892');
 *   let {state, observation} = reset(g, {grammar: 'legacy', protocol: 'react'});
 *   const r = step(g, state, 'go to dresser 1');     // pure: state in, new state out
 *   expert(g, r.state);                              // next oracle action from any state
 */
export { loadGames, loadGameFile, type GameSet, type LoadOpts, VENDORED_FILE } from './data.ts';
export {
  reset,
  step,
  admissible,
  PROTOCOLS,
  resolveProtocol,
  snapBleu,
  bleu,
  type AlfState,
  type Protocol,
  type ProtocolName,
  type ResetOpts,
  type ResetResult,
  type StepResult,
  type StepInfo,
} from './engine.ts';
export { expert, isDeadEnd, taskSpec, type TaskSpec } from './expert.ts';
export { TASK_TYPES, type Game, type GrammarKind, type TaskType } from './game.ts';
export { AlfworldError, AlfworldBadGameError, type AlfworldErrorCode } from './errors.ts';
export { stepMany, type PoolRequest, type PoolResponse } from './pool.ts';
export {
  verifyAlfworld,
  replayAlfworld,
  benchAlfworld,
  translateAction,
  perturb,
  type VerifyOpts,
  type VerifyResult,
  type VerifyRow,
  type ReplayOpts,
  type BenchResult,
} from './tools.ts';

export { alfworldEnv, parseAlfworldAction, ALFWORLD_INSTRUCTIONS, MAX_ALFWORLD_ACTION_CHARS, type AlfworldEnvOptions } from './session.ts';
export { pooledAlfworldEnv } from './pooled-session.ts';
export { alfworld as descriptor } from './descriptor.ts';
import { worldOf, isWon } from './engine.ts';
import type { AlfState } from './engine.ts';
import type { Game } from './game.ts';

/** Goal check on any state (all six task types: the game's PDDL goal). */
export function isGoalMet(game: Game, state: AlfState): boolean {
  return isWon(game, worldOf(game, state.facts));
}
