/**
 * WebShop env (Env contract): WebShop's text mode, BM25 search and reward, on a catalog built from
 * ReAct's real episodes (or WebShop's own files via `dataDir`).
 *
 *   const env = loadWebshop();                         // vendored: 1,468 products, 179 goals
 *   let {state, observation} = reset(env, 'fixed_1', {protocol: 'react'});
 *   const r = step(env, state, 'search[usb microphone]');   // pure: state in, new state out
 *   expert(env, r.state);                              // next oracle action from any state
 */
export { loadWebshop, loadVendored, loadUpstream, productsFromUpstream, goalsFromUpstream, upstreamSplit, goalOf, VENDORED_DIR, type LoadOpts } from './data.ts';
export {
  reset,
  step,
  available,
  observe,
  pageTexts,
  parseAction,
  PROTOCOLS,
  DEFAULT_PROTOCOL,
  PRODUCT_WINDOW,
  SEP,
  type WebshopState,
  type PageKind,
  type ProtocolName,
  type ResetOpts,
  type ResetResult,
  type StepResult,
  type StepInfo,
  type Available,
  type SubPage,
} from './engine.ts';
export { expert, expertQueries } from './expert.ts';
export { buildIndex, analyze, indexedText, SEARCH_RETURN_N, BM25_PARAMS, type SearchIndex } from './search.ts';
export {
  getReward,
  getTypeReward,
  getAttributeReward,
  getOptionReward,
  normalizeColor,
  titleNouns,
  tokenSetRatio,
  type RewardInfo,
  type RewardGoal,
  type RewardProduct,
  type TypeReward,
} from './reward.ts';
export { deriveFromEpisodes, parseReactItem, parseReactResults, splitOf, priceLimitOf, type Episode, type DeriveStats } from './derive.ts';
export { PyRandom } from './pyrandom.ts';
export { pyFloat, parsePriceTag, priceTagOf } from './text.ts';
export type { Product, Goal, Split, WebshopEnv } from './types.ts';
export { WebshopError, WebshopBadDataError, WebshopMissingFileError, WebshopOptionError, type WebshopErrorCode } from './errors.ts';
export { stepMany, type PoolRequest, type PoolResponse } from './pool.ts';
export { verifyWebshop, benchWebshop, summarize, type VerifyOpts, type VerifyResult, type VerifyRow, type BenchResult } from './tools.ts';
export { webshopEnv, parseWebshopAction, WEBSHOP_INSTRUCTIONS, type WebshopEnvOptions } from './session.ts';
export { webshop as descriptor } from './descriptor.ts';
