/**
 * The env registry: one descriptor per env, listed in one place. Every table that used to be
 * keyed by env name (splits and their roles, metrics, options, workers, titles) reads it.
 *
 * Adding an env is one folder (envs/<name>/ with a `descriptor.ts`) and one line in
 * {@link BUILTIN_ENVS}; code outside the project (a user's module, a test) calls
 * {@link registerEnv} instead.
 *
 * @example
 * const d = envDescriptor('alfworld');
 * const ids = listTasks('alfworld', d.splits.train);
 * const factory = envFactory('alfworld', ids[0]!);
 */
import { EnvError, type EnvDescriptor, type EnvFactory, type EnvOptions, type Stepper } from './contract.ts';
import { alfworld } from './alfworld/descriptor.ts';
import { dbbench } from './dbbench/descriptor.ts';
import { webshop } from './webshop/descriptor.ts';

export type { EnvDescriptor, EnvOptions, EnvSplits, EnvMetric } from './contract.ts';

/** The envs that ship with the project, in their canonical order (configs' default order). */
export const BUILTIN_ENVS = { alfworld, dbbench, webshop } as const;

/** The name of a shipped env. Envs registered at run time are plain strings (see {@link registerEnv}). */
export type EnvName = keyof typeof BUILTIN_ENVS;

/** The shipped envs' names, in canonical order. Feature layouts and vocabularies that must not change with registrations read this. */
export const ENV_NAMES = Object.keys(BUILTIN_ENVS) as readonly EnvName[];

const REGISTRY = new Map<string, EnvDescriptor>(Object.entries(BUILTIN_ENVS));

/**
 * Add an env at run time (a user's env module, a test's fake env). Every command that imports the
 * module (`hr1 eval --module FILE`, `hr1 node --module FILE`) sees it like a shipped env.
 */
export function registerEnv(d: EnvDescriptor): void {
  if (!/^[a-z][a-z0-9-]*$/.test(d.name)) throw new EnvError('ENV_BAD_OPTION', `an env name is lowercase letters, digits and "-", starting with a letter; got "${d.name}"`, { data: { env: d.name } });
  const had = REGISTRY.get(d.name);
  if (had && had !== d) throw new EnvError('ENV_EXISTS', `env "${d.name}" is already registered; pick another name`, { data: { env: d.name } });
  REGISTRY.set(d.name, d);
}

/** Every env known in this process: the shipped ones first, then registered ones, in order. */
export function envNames(): string[] {
  return [...REGISTRY.keys()];
}

/** Whether `name` is a known env. */
export function isEnvName(name: string): boolean {
  return REGISTRY.has(name);
}

/** The descriptor of an env; throws `UNKNOWN_ENV` naming the known ones. */
export function envDescriptor(name: string): EnvDescriptor {
  const d = REGISTRY.get(name);
  if (!d) throw new EnvError('UNKNOWN_ENV', `unknown env "${name}"; choose one of ${envNames().join(', ')}`, { data: { env: name } });
  return d;
}

/** Envs in report-table order (the paper's: ALFWorld, WebShop, DBBench), of those given. */
export function inReportOrder(envs: readonly string[]): string[] {
  return envs.filter(isEnvName).sort((a, b) => envDescriptor(a).column - envDescriptor(b).column || a.localeCompare(b));
}

/** Task ids of a split (default: the env's held-out split), in a stable order. */
export function listTasks(env: string, split?: string, opts: EnvOptions = {}): string[] {
  const d = envDescriptor(env);
  return d.listTasks(split ?? d.splits.heldout, opts);
}

/** A session factory for one task. With `pool` (and an env whose sessions can be pooled), steps run in the pool. */
export function envFactory(env: string, taskId: string, opts: EnvOptions = {}, pool?: Stepper): EnvFactory {
  const d = envDescriptor(env);
  return d.session(taskId, opts, d.pooled ? pool : undefined);
}
