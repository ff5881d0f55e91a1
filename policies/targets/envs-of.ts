import { parseTargetSpec } from './spec.ts';
import { resolveConfig } from './lm/zoo.ts';

/**
 * The envs a target can play, or null for every env: an `lm/` zoo model plays only the envs it
 * was trained on (an ALFWorld model has never seen a SQL prompt).
 */
export function targetEnvs(target: string): readonly string[] | null {
  const t = parseTargetSpec(target);
  if (t.kind !== 'lm') return null;
  return resolveConfig(t.name).envs;
}
