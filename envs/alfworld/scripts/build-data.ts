/**
 * Rebuild envs/alfworld/data/games.json.gz from any directory in ALFWorld's upstream layout.
 *
 *   node --import=tsx envs/alfworld/scripts/build-data.ts <dataDir> [--splits valid_seen,valid_train] [--out FILE]
 */
import { writeFileSync } from 'node:fs';
import { sourcesFromDir, toCompact, writeCompact, VENDORED_FILE } from '../data.ts';

const args = process.argv.slice(2);
const dataDir = args.find((a) => !a.startsWith('--'));
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
if (!dataDir) {
  console.error('usage: build-data.ts <dataDir> [--splits valid_seen,valid_train] [--out FILE]');
  process.exit(2);
}
const splits = (opt('--splits') ?? 'valid_seen,valid_train').split(',');
const out = opt('--out') ?? VENDORED_FILE;
const sources = splits.flatMap((s) => sourcesFromDir(dataDir, s));
const compact = toCompact(sources, `ALFWorld json_2.1.1 splits ${splits.join(', ')}; see LICENSE-DATA and NOTICE`);
const buf = writeCompact(compact);
writeFileSync(out, buf);
console.log(`${sources.length} games, ${compact.domains.length} domain(s), ${compact.grammars.length} grammar(s) -> ${out} (${buf.length} bytes)`);
