import { Hr1Error } from '../../cluster/errors.ts';
import { parseTargetSpec, type TargetSpec } from '../../policies/targets/spec.ts';
import { SIM_PROFILES, simProfile } from '../../policies/targets/sim/profiles.ts';
import { resolveConfig } from '../../policies/targets/lm/zoo.ts';

/**
 * Check a target spec before any work starts: its form, a sim profile that exists, an lm/ name
 * the zoo knows (built or not). The same errors the target actor would raise, only at once.
 */
export function checkTarget(spec: string): TargetSpec {
  const t = parseTargetSpec(spec);
  if (t.kind === 'sim' && !simProfile(t.profile)) {
    throw new Hr1Error('UNKNOWN_SIM_PROFILE', `no simulated profile "${t.profile}"; choose one of ${SIM_PROFILES.map((x) => x.name).join(', ')}`, { data: { profile: t.profile } });
  }
  if (t.kind === 'lm') resolveConfig(t.name);
  return t;
}
