import test from 'ava';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engineersDir } from '../../../experiments/exp/engineers.ts';

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
