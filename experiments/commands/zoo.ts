/** `hr1 zoo build` and `hr1 zoo table`. */
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

const log = (l: string) => process.stderr.write(`${l}\n`);

export interface ZooBuildOptions {
  only?: string[] | undefined;
  tiny?: boolean | undefined;
  force?: boolean | undefined;
  /** @default the CPU count, at most 4 */
  jobs?: number | undefined;
}

export async function zooBuild(o: ZooBuildOptions): Promise<void> {
  const lm = await import('../../policies/targets/lm/index.ts');
  const jobs = o.jobs ?? Math.min(4, availableParallelism());
  const r = await lm.buildZoo({ ...(o.only ? { only: o.only } : {}), tiny: !!o.tiny, force: !!o.force, jobs, progress: true, log });
  console.log(`${r.length} target(s) built or cached`);
}

export interface ZooTableOptions {
  tasks: number;
  seeds: number;
  only?: string[] | undefined;
  /** replace the generated block in this markdown file */
  write?: string | undefined;
  jobs?: number | undefined;
}

export async function zooTableCommand(o: ZooTableOptions): Promise<void> {
  const lm = await import('../../policies/targets/lm/index.ts');
  const md = await lm.zooTable({ tasks: o.tasks, seeds: o.seeds, jobs: o.jobs ?? Math.min(4, availableParallelism()), log, ...(o.only ? { only: o.only } : {}) });
  console.log(md);
  if (o.write) writeFileSync(o.write, lm.spliceZooTable(readFileSync(o.write, 'utf8'), md));
}
