/** `hr1 zoo vendor` and `hr1 zoo verify`: the vendored zoo (policies/targets/lm/vendor.ts, vendor-build.ts). */
import { useZooConfig } from './zoo.ts';

const log = (l: string) => process.stderr.write(`${l}\n`);

export interface ZooVendorOptions {
  config?: string | undefined;
  only?: string[] | undefined;
  tiny?: boolean | undefined;
  /** tasks of each env's evaluation split fp16 is measured on against fp32 */
  tasks?: number | undefined;
  seeds?: number | undefined;
  allowDrift?: boolean | undefined;
  fp32OnDrift?: boolean | undefined;
}

/** `hr1 zoo vendor [--only NAME...] [--tiny] [--tasks N] [--allow-drift] [--fp32-on-drift]`: write vendored copies of built models. */
export async function zooVendor(o: ZooVendorOptions): Promise<void> {
  const mine = await useZooConfig(o.config);
  const { vendorModels } = await import('../../policies/targets/lm/vendor-build.ts');
  const { vendoredDir, DEFAULT_VENDORED_DIR } = await import('../../policies/targets/lm/vendor.ts');
  const only = o.only ?? mine;
  const r = await vendorModels({ ...(only ? { only } : {}), tiny: !!o.tiny, ...(o.tasks ? { tasks: o.tasks } : {}), ...(o.seeds ? { seeds: o.seeds } : {}), allowDrift: !!o.allowDrift, fp32OnDrift: !!o.fp32OnDrift, log });
  console.log(`${r.length} model(s) vendored into ${vendoredDir() ?? DEFAULT_VENDORED_DIR}`);
}

export interface ZooVerifyOptions {
  config?: string | undefined;
  only?: string[] | undefined;
  tiny?: boolean | undefined;
  /** commander's --no-rebuild */
  rebuild?: boolean | undefined;
  jobs?: number | undefined;
}

/** `hr1 zoo verify [--only NAME...] [--tiny] [--no-rebuild]`: one line per vendored model; LM_VERIFY_FAILED (exit 2) when any does not match. */
export async function zooVerify(o: ZooVerifyOptions): Promise<void> {
  await useZooConfig(o.config);
  const { verifyVendored, verifyPassed } = await import('../../policies/targets/lm/vendor-build.ts');
  const { LmTargetError } = await import('../../policies/targets/lm/errors.ts');
  const lines = await verifyVendored({ ...(o.only ? { only: o.only } : {}), tiny: !!o.tiny, rebuild: o.rebuild !== false, jobs: o.jobs ?? 1, log });
  for (const l of lines) console.log(`lm/${l.id}: ${l.status} ${l.detail}`);
  if (!lines.length) console.log('no vendored models to verify');
  if (!verifyPassed(lines)) {
    const bad = lines.filter((l) => l.status !== 'match' && l.status !== 'close' && l.status !== 'files ok');
    throw new LmTargetError('LM_VERIFY_FAILED', `${bad.length} of ${lines.length} vendored model(s) do not verify: ${bad.map((l) => `lm/${l.id} ${l.status}`).join(', ')}`, { data: { failed: bad.map((l) => l.id) } });
  }
}
