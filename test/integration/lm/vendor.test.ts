/**
 * The vendored zoo (policies/targets/lm/vendor.ts, vendor-build.ts): one small model built by the
 * real torch learner, exported with fp16 weights (ONNX Runtime runs it, logits close to fp32),
 * vendored into a temporary folder and played from there with no build cache; a changed vendored
 * file is LM_BAD_HASH naming the entry and the file, a manifest of another config hash is stale,
 * and verify rebuilds the model to find a match for the deterministic rebuild and a MISMATCH for a
 * changed model.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runEpisode } from '../../../harness/index.ts';
import { Graph, onnxMetadata } from '../../../learner/graph.ts';
import { isDecodeGraph } from '../../../learner/onnx-meta.ts';
import { EVAL_SPLIT, envFactory, taskIds } from '../../../policies/targets/lm/bc.ts';
import { isLmTargetError, type LmTargetError } from '../../../policies/targets/lm/errors.ts';
import { lmModel } from '../../../policies/targets/lm/model.ts';
import { exportCompact, vendorModels, verifyPassed, verifyVendored } from '../../../policies/targets/lm/vendor-build.ts';
import { MANIFEST_FILE, playableMeta, readManifest, sha256File, vendoredState, type VendoredManifest } from '../../../policies/targets/lm/vendor.ts';
import { buildZoo, modelDir, resolveConfig, ZOO, type ZooConfig } from '../../../policies/targets/lm/zoo.ts';

const root = mkdtempSync(join(tmpdir(), 'hr1-vendor-test-'));
test.after.always(() => rmSync(root, { recursive: true, force: true }));
const buildDir = join(root, 'zoo');
const noBuild = join(root, 'no-build');
const vdir = join(root, 'vendored');

// a small model: the xs size on a few episodes and steps (its @tiny is the same config, so the same hash)
const entry: ZooConfig = { name: 'vend-tiny', envs: ['alfworld'], dModel: 64, nLayers: 1, nHeads: 2, dFf: 128, maxLen: 192, episodes: 4, steps: 12, seed: 1 };
const zoo: ZooConfig[] = [...ZOO, entry];

const built = buildZoo({ only: ['vend-tiny'], dir: buildDir, zoo });
const vendored = built.then(() => vendorModels({ only: ['vend-tiny'], dir: buildDir, vendored: vdir, zoo, tasks: 2, seeds: 1 }));

/** A copy of the vendored folder with `edit` applied to it. */
function variant(name: string, edit: (dir: string, m: VendoredManifest) => void): string {
  const d = join(root, name);
  cpSync(vdir, d, { recursive: true });
  const m = JSON.parse(readFileSync(join(d, MANIFEST_FILE), 'utf8')) as VendoredManifest;
  edit(d, m);
  writeFileSync(join(d, MANIFEST_FILE), `${JSON.stringify(m, null, 2)}\n`);
  return d;
}

test('fp16 export - half the bytes, a decode graph ONNX Runtime loads, logits close to fp32, deterministic', async (t) => {
  const [r] = await built;
  const fp32File = join(r!.dir, 'model.onnx');
  const fp16File = join(root, 'fp16.onnx');
  await exportCompact(join(r!.dir, 'model.pt'), fp16File);
  const a = readFileSync(fp32File);
  const b = readFileSync(fp16File);
  t.true(isDecodeGraph(b));
  const props = onnxMetadata(b);
  t.is(props['hr1_weights'], 'fp16');
  t.deepEqual({ ...props, hr1_weights: undefined }, { ...onnxMetadata(a), hr1_weights: undefined }, 'the other metadata as the fp32 export');
  t.true(b.byteLength < a.byteLength * 0.55, `${b.byteLength} vs ${a.byteLength} bytes`);
  const c = resolveConfig('vend-tiny', zoo);
  const expect = { maxLen: c.maxLen, nLayers: c.nLayers, dModel: c.dModel, nHeads: c.nHeads };
  const g32 = await Graph.load(a, expect);
  const g16 = await Graph.load(b, expect);
  try {
    const rows = [[1, 5, 9, 30, 31, 7], [1, 44, 12, 100, 3], [1, 200, 201, 202, 203, 204, 205, 206, 207]];
    const x = await g32.prefill(rows);
    const y = await g16.prefill(rows);
    t.is(y.logits.length, x.logits.length);
    let maxDiff = 0;
    let range = 0;
    for (let i = 0; i < x.logits.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(x.logits[i]! - y.logits[i]!));
      range = Math.max(range, Math.abs(x.logits[i]!));
    }
    const v = x.logits.length / rows.length;
    const argmax = (l: Float32Array, r: number): number => {
      let best = 0;
      for (let j = 1; j < v; j++) if (l[r * v + j]! > l[r * v + best]!) best = j;
      return best;
    };
    t.log(`max |logit fp16 − fp32| ${maxDiff.toExponential(2)} (logits up to ${range.toFixed(2)}); ${b.byteLength} vs ${a.byteLength} bytes`);
    t.true(maxDiff < 0.01, `max logit difference ${maxDiff}`);
    t.deepEqual(rows.map((_, r) => argmax(y.logits, r)), rows.map((_, r) => argmax(x.logits, r)));
  } finally {
    await g32.release();
    await g16.release();
  }
  // the same checkpoint gives the same compact bytes
  await exportCompact(join(r!.dir, 'model.pt'), join(root, 'fp16-again.onnx'));
  t.deepEqual(readFileSync(join(root, 'fp16-again.onnx')), b);
});

test('vendored lookup - a vendored model plays from a folder with no build cache; the manifest holds hash, sha256, bytes and fp16-vs-fp32 success', async (t) => {
  const [e] = await vendored;
  const c = resolveConfig('vend-tiny', zoo);
  const m = readManifest(vdir).models['vend-tiny']!;
  t.deepEqual(m, e);
  t.is(m.hash, c.hash);
  t.is(m.weights, 'fp16');
  t.is(m.files['model.onnx'].sha256, sha256File(join(vdir, 'vend-tiny', 'model.onnx')));
  t.is(m.files['meta.json'].bytes, readFileSync(join(vdir, 'vend-tiny', 'meta.json')).byteLength);
  t.true(m.files['model.onnx'].bytes < m.fp32Bytes * 0.55);
  t.like(m.success[0], { env: 'alfworld', tasks: 2, seeds: 1, episodes: 2 });
  t.true(Math.abs(m.success[0]!.fp16 - m.success[0]!.fp32) <= 0.01);
  t.is(vendoredState(c, vdir), 'yes');
  t.truthy(playableMeta(c, noBuild, vdir));
  t.is(playableMeta(c, noBuild, false), null, 'not built there');
  const model = await lmModel('vend-tiny', { dir: noBuild, vendored: vdir, zoo });
  try {
    t.is(model.file, join(vdir, 'vend-tiny', 'model.onnx'));
    const rec = await runEpisode(envFactory('alfworld', taskIds('alfworld', EVAL_SPLIT.alfworld)[0]!), { model, seed: 1 });
    // a few steps of training: the episode is played, whatever the model writes
    t.true(rec.steps.length > 0);
    t.is(rec.outcome.won, false);
  } finally {
    await model.release();
  }
  // built: the build cache comes first
  const fromBuild = await lmModel('vend-tiny', { dir: buildDir, vendored: vdir, zoo });
  t.is(fromBuild.file, join(modelDir(c, buildDir), 'model.onnx'));
  await fromBuild.release();
});

test('vendored lookup - a changed vendored file is LM_BAD_HASH naming the entry and the file; a manifest of another config hash is stale', async (t) => {
  await vendored;
  const c = resolveConfig('vend-tiny', zoo);
  const metaEdited = variant('bad-meta', (d) => writeFileSync(join(d, 'vend-tiny', 'meta.json'), `${readFileSync(join(d, 'vend-tiny', 'meta.json'), 'utf8')} `));
  const onnxEdited = variant('bad-onnx', (d) => {
    const b = readFileSync(join(d, 'vend-tiny', 'model.onnx'));
    b[b.length - 100] = b[b.length - 100]! ^ 1;
    writeFileSync(join(d, 'vend-tiny', 'model.onnx'), b);
  });
  for (const [d, file] of [[metaEdited, 'meta.json'], [onnxEdited, 'model.onnx']] as const) {
    const e = await t.throwsAsync(lmModel('vend-tiny', { dir: noBuild, vendored: d, zoo }));
    t.true(isLmTargetError(e));
    t.is((e as LmTargetError).code, 'LM_BAD_HASH');
    t.like((e as LmTargetError).data, { name: 'vend-tiny', file });
    t.regex(e!.message, new RegExp(`vendored lm/vend-tiny's ${file.replace('.', '\\.')} .* has sha256 [0-9a-f]{64}, the manifest says [0-9a-f]{64}`));
    t.regex(e!.message, /hr1 zoo vendor --only vend-tiny/);
    t.is(vendoredState(c, d), 'bad hash');
  }
  const stale = variant('stale', (_d, m) => {
    m.models['vend-tiny']!.hash = '0123456789abcdef';
  });
  const e = await t.throwsAsync(lmModel('vend-tiny', { dir: noBuild, vendored: stale, zoo }));
  t.is((e as LmTargetError).code, 'LM_STALE');
  t.regex(e!.message, new RegExp(`vendored copy of lm/vend-tiny .* is stale: it was built from config hash 0123456789abcdef .* now hashes to ${c.hash}.*hr1 zoo build --only vend-tiny`));
  t.is(vendoredState(c, stale), 'stale');
  t.is(playableMeta(c, noBuild, stale), null);
  // not vendored at all: not built
  t.is((await t.throwsAsync(lmModel('vend-tiny', { dir: noBuild, vendored: join(root, 'nothing'), zoo })) as LmTargetError).code, 'LM_NOT_BUILT');
});

test('verify - the deterministic rebuild matches; a vendored model that is not its config\'s build is a MISMATCH with both hashes; files are checked first', async (t) => {
  await vendored;
  // vend-tiny@tiny is the same config (its budget is under the tiny one): one rebuild serves both
  // entries; its vendored model.onnx is changed, with the manifest's sha256 made to fit
  const d = variant('verify', (dir, m) => {
    cpSync(join(dir, 'vend-tiny'), join(dir, 'vend-tiny@tiny'), { recursive: true });
    const f = join(dir, 'vend-tiny@tiny', 'model.onnx');
    const b = readFileSync(f);
    b[b.length - 100] = b[b.length - 100]! ^ 1;
    writeFileSync(f, b);
    m.models['vend-tiny@tiny'] = { ...m.models['vend-tiny']!, id: 'vend-tiny@tiny', files: { ...m.models['vend-tiny']!.files, 'model.onnx': { sha256: sha256File(f), bytes: b.byteLength } } };
  });
  const lines = await verifyVendored({ vendored: d, zoo });
  t.deepEqual(lines.map((l) => [l.id, l.status]), [['vend-tiny', 'match'], ['vend-tiny@tiny', 'MISMATCH']]);
  const bad = lines[1]!;
  t.not(bad.vendored, bad.rebuilt);
  t.is(bad.rebuilt, lines[0]!.vendored);
  t.regex(bad.detail, new RegExp(`model\\.onnx: vendored ${bad.vendored}, rebuilt ${bad.rebuilt}`));
  t.false(verifyPassed(lines));
  // --tiny: the @tiny entries only; without a rebuild, the files against the manifest
  const quick = await verifyVendored({ vendored: d, zoo, tiny: true, rebuild: false });
  t.deepEqual(quick.map((l) => [l.id, l.status]), [['vend-tiny@tiny', 'files ok']]);
  const metaEdited = variant('verify-bad', (dir) => writeFileSync(join(dir, 'vend-tiny', 'meta.json'), '{}\n'));
  const files = await verifyVendored({ vendored: metaEdited, zoo, rebuild: false });
  t.deepEqual(files.map((l) => [l.id, l.status]), [['vend-tiny', 'BAD FILE']]);
  t.regex(files[0]!.detail, /^meta\.json: sha256 [0-9a-f]{64}, the manifest says/);
});

test('vendor - where fp16 moves success by more than the bound the model is refused with the fix named; --fp32-on-drift ships the build\'s fp32 weights, which play and verify', async (t) => {
  await vendored;
  // a bound no model can meet (-1) stands in for a model whose fp16 copy moves its success
  const refusedDir = join(root, 'refused');
  const e = await t.throwsAsync(vendorModels({ only: ['vend-tiny'], dir: buildDir, vendored: refusedDir, zoo, tasks: 2, seeds: 1, maxDrift: -1 }));
  t.is((e as LmTargetError).code, 'LM_VENDOR_DRIFT');
  t.regex(e!.message, /lm\/vend-tiny: alfworld fp16 .* vs fp32 .*--fp32-on-drift/);
  const d = join(root, 'fp32');
  const [m] = await vendorModels({ only: ['vend-tiny'], dir: buildDir, vendored: d, zoo, tasks: 2, seeds: 1, maxDrift: -1, fp32OnDrift: true });
  const c = resolveConfig('vend-tiny', zoo);
  t.is(m!.weights, 'fp32');
  t.is(m!.files['model.onnx'].sha256, sha256File(join(modelDir(c, buildDir), 'model.onnx')), 'the build\'s own fp32 graph');
  t.is(m!.files['model.onnx'].bytes, m!.fp32Bytes);
  t.deepEqual(readManifest(d).models['vend-tiny'], m);
  const model = await lmModel('vend-tiny', { dir: noBuild, vendored: d, zoo });
  t.is(model.file, join(d, 'vend-tiny', 'model.onnx'));
  await model.release();
  // verify compares the rebuild's fp32 graph (the build folder holds it already)
  const lines = await verifyVendored({ vendored: d, zoo, dir: buildDir });
  t.deepEqual(lines.map((l) => [l.id, l.status]), [['vend-tiny', 'match']]);
});

test('hr1 zoo verify --no-rebuild / zoo list - a line per model and a non-zero exit on a bad file, no stack; list shows the vendored state', async (t) => {
  await vendored;
  const yaml = join(root, 'my-zoo.yaml');
  const { name: _n, ...rest } = entry;
  writeFileSync(yaml, `zoo:\n  - ${JSON.stringify({ name: 'vend-tiny', ...rest })}\n`);
  const bad = variant('cli-bad', (dir) => writeFileSync(join(dir, 'vend-tiny', 'meta.json'), '{}\n'));
  const run = promisify(execFile);
  const cli = ['--import=tsx', 'experiments/cli/main.ts'];
  const env = { ...process.env, HR1_ZOO_DIR: noBuild };
  const e = await t.throwsAsync(run('node', [...cli, 'zoo', 'verify', '--no-rebuild', '--config', yaml], { env: { ...env, HR1_ZOO_VENDORED: bad } }));
  const r = e as unknown as { code: number; stdout: string; stderr: string };
  t.is(r.code, 2);
  t.regex(r.stdout, /^lm\/vend-tiny: BAD FILE meta\.json: sha256/m);
  t.regex(r.stderr, /\[LM_VERIFY_FAILED\]: 1 of 1 vendored model\(s\) do not verify: lm\/vend-tiny BAD FILE/);
  t.notRegex(r.stderr, /\n\s+at /, 'no stack');
  const list = await run('node', [...cli, 'zoo', 'list', '--json', '--config', yaml], { env: { ...env, HR1_ZOO_VENDORED: vdir } });
  const rows = JSON.parse(list.stdout.trim().split('\n').at(-1)!) as { name: string; built: string; vendored: string; plays: string | null }[];
  t.like(rows.find((x) => x.name === 'vend-tiny'), { built: 'no', vendored: 'yes', plays: 'vendored' });
  t.false(rows.some((x) => x.name === 'vend-tiny@tiny'), 'an @tiny row only where it is built or vendored');
});
