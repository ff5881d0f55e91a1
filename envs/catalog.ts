/**
 * The shipped envs' names and split names as plain data, without loading the envs: what the
 * CLI's help text needs (`hr1 … --help` then starts without the env engines, their data and
 * drivers). test/unit/structure/env-catalog.test.ts checks it against the registry's descriptors.
 */
export const BUILTIN_ENV_SPLITS = {
  alfworld: ['valid_seen', 'valid_train', 'all', 'seen_dev', 'seen_test'],
  dbbench: ['v0.2/dev', 'v0.2/standard', 'main-fc/standard'],
  webshop: ['train', 'dev', 'test', 'all'],
} as const;

/** The shipped envs' names, in the registry's canonical order. */
export const BUILTIN_ENV_NAMES = Object.keys(BUILTIN_ENV_SPLITS) as readonly (keyof typeof BUILTIN_ENV_SPLITS)[];
