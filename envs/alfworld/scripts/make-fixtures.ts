/**
 * Turn ReAct's ALFWorld prompts (real transcripts of the environment) into test fixtures.
 *
 *   node --import=tsx envs/alfworld/scripts/make-fixtures.ts <prompts/react/alfworld_3prompts.json> [out]
 *
 * Output: test/unit/alfworld/fixtures/react-transcripts.json with, per transcript, the initial
 * observation and the (action, observation) pairs that went to the env ("think:" lines dropped).
 */
import { readFileSync, writeFileSync } from 'node:fs';

const [src, out = 'test/unit/alfworld/fixtures/react-transcripts.json'] = process.argv.slice(2);
if (!src) {
  console.error('usage: make-fixtures.ts <alfworld_3prompts.json> [out]');
  process.exit(2);
}
const d = JSON.parse(readFileSync(src, 'utf8')) as Record<string, string>;
const fixtures = Object.entries(d)
  .filter(([k]) => k.startsWith('react_'))
  .map(([key, text]) => {
    const lines = text.trim().split('\n');
    const steps: { action: string; observation: string }[] = [];
    for (let i = 2; i < lines.length; i++) {
      if (!lines[i]!.startsWith('>')) continue;
      const action = lines[i]!.replace(/^>\s*/, '');
      const obs: string[] = [];
      while (i + 1 < lines.length && !lines[i + 1]!.startsWith('>')) obs.push(lines[++i]!);
      if (action.startsWith('think:')) {
        // hand-edited prompts sometimes put an env reply after a think's "OK."
        const extra = obs.filter((o) => o !== 'OK.');
        const prev = steps[steps.length - 1];
        if (extra.length && prev && prev.observation === '') prev.observation = extra.join('\n');
        continue;
      }
      steps.push({ action, observation: obs.join('\n') });
    }
    return { key, initial: `${lines[0]}\n${lines[1]}`, steps };
  });
writeFileSync(out, `${JSON.stringify({ source: 'ReAct (ysymyth/ReAct) prompts/alfworld_3prompts.json, MIT', fixtures }, null, 1)}\n`);
console.log(`${fixtures.length} transcripts -> ${out}`);
