import test from 'ava';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engineersDir, lmCopies } from '../../../experiments/exp/engineers.ts';
import { SKETCH_DECODE_VERSION } from '../../../policies/targets/lm/zoo.ts';
import { vendoredDir, vendoredModelDir } from '../../../policies/targets/lm/vendor.ts';
import { modelDir, resolveConfig } from '../../../policies/targets/lm/zoo.ts';

test('engineersDir - keyed by what the train config says, not its text: a comment keeps the folder, a value changes it', (t) => {
  const d = mkdtempSync(join(tmpdir(), 'hr1-engdir-'));
  const text = readFileSync('experiments/configs/train.zoo.yaml', 'utf8');
  const a = join(d, 'a.yaml');
  const b = join(d, 'b.yaml');
  const c = join(d, 'c.yaml');
  writeFileSync(a, text);
  writeFileSync(b, `# another comment\n${text.replace(/^#.*\n/gm, '')}`);
  writeFileSync(c, text.replace('heldoutTasks: 20', 'heldoutTasks: 12'));
  const targets = { alfworld: 'lm/alf-s-256-ecrt-xl', webshop: 'lm/ws-s-256-srt-hi' };
  t.is(engineersDir(targets, 0, a), engineersDir(targets, 0, b));
  t.not(engineersDir(targets, 0, a), engineersDir(targets, 0, c));
  t.not(engineersDir(targets, 0, a), engineersDir(targets, 1, a), 'the seed keys it');
  t.not(engineersDir(targets, 0, a), engineersDir(targets, 0, a, { alfworld: 'seen_dev' }), 'a train split override keys it');
  // a broken config is refused with the option it breaks, not hashed
  const bad = join(d, 'bad.yaml');
  writeFileSync(bad, 'grpo: { k: 1 }\n');
  t.throws(() => engineersDir(targets, 0, bad), { message: /config\.grpo\.k/ });
});

test.serial('engineersDir - a learned target keys the folder by the copy that plays: a build of the same config trains other engineers than the vendored copy', (t) => {
  const zoo = mkdtempSync(join(tmpdir(), 'hr1-engdir-zoo-'));
  const before = process.env['HR1_ZOO_DIR'];
  process.env['HR1_ZOO_DIR'] = zoo;
  try {
    const name = 'alf-xs-192-a@tiny';
    const targets = { alfworld: `lm/${name}` };
    const vendored = engineersDir(targets, 0);
    const joined = engineersDir(`lm/${name}+sim/qwen-3b`, 0);
    t.is(engineersDir(targets, 0), vendored);
    const c = resolveConfig(name);
    const dir = modelDir(c, zoo);
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(vendoredModelDir(c.id, vendoredDir()!), 'meta.json'), join(dir, 'meta.json'));
    writeFileSync(join(dir, 'model.onnx'), 'another build');
    t.not(engineersDir(targets, 0), vendored);
    t.not(engineersDir(`lm/${name}+sim/qwen-3b`, 0), joined, 'a target of several (+) too');
  } finally {
    if (before === undefined) delete process.env['HR1_ZOO_DIR'];
    else process.env['HR1_ZOO_DIR'] = before;
  }
});

test('engineersDir - a sketch parser\'s decoding version keys its engineers (they trained on its episodes); other learned targets\' keys stay', (t) => {
  const sketch = lmCopies(['lm/db-sketch-a']);
  t.true(sketch.startsWith('|mlm/db-sketch-a=') && sketch.endsWith(`-d${SKETCH_DECODE_VERSION}`), sketch);
  const seq = lmCopies(['lm/db-s-384-vrt']);
  t.true(seq.startsWith('|mlm/db-s-384-vrt=') && !seq.includes('-d'), seq);
});
