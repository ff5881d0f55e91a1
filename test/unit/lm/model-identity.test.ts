/**
 * Which copy of a learned target plays (policies/targets/lm/vendor.ts modelIdentity): a build in
 * the zoo folder plays before the vendored copy of the same config, and the two are other weights
 * (fp32 against fp16), so the episode cache keys of a rollout (drivers/rollout.ts) and a run's
 * run.json (experiments/runner/run-dir.ts) say which one played.
 */
import test from 'ava';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rolloutKeys } from '../../../drivers/rollout.ts';
import { RunDir } from '../../../experiments/runner/run-dir.ts';
import { VENDORED_ENV, modelIdentity, sha256File, vendoredDir, vendoredModelDir } from '../../../policies/targets/lm/vendor.ts';
import { modelDir, resolveConfig } from '../../../policies/targets/lm/zoo.ts';

const NAME = 'alf-xs-192-a@tiny';
const root = mkdtempSync(join(tmpdir(), 'hr1-identity-test-'));
test.after.always(() => rmSync(root, { recursive: true, force: true }));

test.serial('a build plays before the vendored copy, and the cache keys and run.json tell them apart', (t) => {
  const c = resolveConfig(NAME);
  const zoo = join(root, 'zoo');
  const before = process.env['HR1_ZOO_DIR'];
  process.env['HR1_ZOO_DIR'] = zoo;
  try {
    const spec = { env: 'alfworld', target: `lm/${NAME}`, episodes: [{ taskId: 'valid_seen/x', seed: 1 }] };
    const vendored = modelIdentity(c);
    t.is(vendored?.source, 'vendored');
    t.is(vendored?.sha256, sha256File(join(vendoredModelDir(c.id, vendoredDir()!), 'model.onnx')));
    const kv = rolloutKeys(spec);
    t.regex(kv.keys[0]!.target, new RegExp(`^lm/${NAME}@${c.hash}/s\\d+/vendored:${vendored!.sha256.slice(0, 16)}$`));
    // a build of the same config (other bytes: one byte of the weights changed)
    const dir = modelDir(c, zoo);
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(vendoredModelDir(c.id, vendoredDir()!), 'meta.json'), join(dir, 'meta.json'));
    const bytes = readFileSync(join(vendoredModelDir(c.id, vendoredDir()!), 'model.onnx'));
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
    writeFileSync(join(dir, 'model.onnx'), bytes);
    const built = modelIdentity(c);
    t.is(built?.source, 'built');
    t.not(built?.sha256, vendored?.sha256);
    const kb = rolloutKeys(spec);
    t.not(kb.hashes[0], kv.hashes[0], 'a built and a vendored copy never share a cache entry');
    t.regex(kb.keys[0]!.target, /\/built:[0-9a-f]{16}$/);
    // run.json records the copy that played
    const run = new RunDir(join(root, 'run'));
    run.writeMeta({ kind: 'hr1-exp/1', exp: 'main', config: {}, targets: [`lm/${NAME}`, 'sim/qwen-3b'], simulated: ['sim/qwen-3b'], methods: [], splits: {} });
    const meta = JSON.parse(readFileSync(join(root, 'run', 'run.json'), 'utf8'));
    t.deepEqual(meta.models, { [`lm/${NAME}`]: { source: 'built', sha256: built!.sha256 } });
  } finally {
    if (before === undefined) delete process.env['HR1_ZOO_DIR'];
    else process.env['HR1_ZOO_DIR'] = before;
  }
});

test.serial('a target with no copy on this machine is keyed by its config alone, and run.json says null', (t) => {
  const c = resolveConfig(NAME);
  const saved = { zoo: process.env['HR1_ZOO_DIR'], vendored: process.env[VENDORED_ENV] };
  process.env['HR1_ZOO_DIR'] = join(root, 'empty');
  process.env[VENDORED_ENV] = 'none';
  try {
    t.is(modelIdentity(c), null);
    const k = rolloutKeys({ env: 'alfworld', target: `lm/${NAME}`, episodes: [{ taskId: 'valid_seen/x', seed: 1 }] });
    t.regex(k.keys[0]!.target, new RegExp(`@${c.hash}/s\\d+$`));
    const run = new RunDir(join(root, 'run-none'));
    run.writeMeta({ kind: 'hr1-exp/1', exp: 'main', config: {}, targets: [`lm/${NAME}`], simulated: [], methods: [], splits: {} });
    t.deepEqual(JSON.parse(readFileSync(join(root, 'run-none', 'run.json'), 'utf8')).models, { [`lm/${NAME}`]: null });
  } finally {
    for (const [k, v] of [['HR1_ZOO_DIR', saved.zoo], [VENDORED_ENV, saved.vendored]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
});
