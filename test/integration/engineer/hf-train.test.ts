import test from 'ava';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { init } from '../../../cluster/init.ts';
import { ConfigError } from '../../../cluster/errors.ts';
import { resolveTrainConfig, trainEngineer } from '../../../experiments/train.ts';
import { engineerBackend, parseEngineerSpec } from '../../../experiments/train-engineer.ts';
import { engineerInit } from '../../../experiments/commands/engineer.ts';
import { parseLoraOption } from '../../../experiments/commands/train.ts';
import { readPatch } from '../../../harness/index.ts';
import { parsePacket } from '../../../policies/engineer/index.ts';
import { hfRunFile, proposeFromHfRun } from '../../../policies/engineer/hf/index.ts';

const root = mkdtempSync(join(tmpdir(), 'hr1-hf-train-'));
test.after.always(() => rmSync(root, { recursive: true, force: true }));

function safetensorsKeys(file: string): string[] {
  const b = readFileSync(file);
  const n = Number(b.readBigUInt64LE(0));
  return Object.keys(JSON.parse(b.subarray(8, 8 + n).toString('utf8')) as Record<string, unknown>).filter((k) => k !== '__metadata__');
}

test.serial('engineer init - a tiny llama checkpoint in the Hugging Face layout with a real tokenizer', async (t) => {
  const dir = join(root, 'llama');
  const r = await engineerInit({ arch: 'llama', size: 'tiny', out: dir, seed: 3 });
  for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'NOTICE.md']) t.true(existsSync(join(dir, f)), f);
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  t.is(cfg.model_type, 'llama');
  t.deepEqual(cfg.architectures, ['LlamaForCausalLM']);
  t.is(cfg.vocab_size, r.vocabSize);
  t.true(r.vocabSize >= 32_000 && r.vocabSize % 64 === 0);
  t.true(cfg.num_key_value_heads < cfg.num_attention_heads, 'grouped-query attention');
  const keys = safetensorsKeys(join(dir, 'model.safetensors'));
  t.true(keys.includes('model.embed_tokens.weight'));
  t.true(keys.includes('model.layers.0.self_attn.q_proj.weight'));
  t.true(keys.includes('model.layers.0.mlp.gate_proj.weight'));
  t.true(keys.includes('model.norm.weight'));
  // a non-empty folder is refused without --force
  await t.throwsAsync(() => engineerInit({ arch: 'llama', size: 'tiny', out: dir }), { instanceOf: ConfigError, message: /--force/ });
});

test.serial('train --engineer hf: - bad specs and LoRA options are typed errors naming the option', (t) => {
  t.throws(() => parseEngineerSpec(`hf:${join(root, 'nope')}`), { instanceOf: ConfigError, message: /no config\.json.*hr1 engineer init/ });
  t.throws(() => parseEngineerSpec('gpt:foo'), { instanceOf: ConfigError, message: /builtin.*hf:DIR/ });
  t.throws(() => parseLoraOption('r=x'), { instanceOf: ConfigError, message: /rank/ });
  t.throws(() => parseLoraOption('rank=4'), { instanceOf: ConfigError, message: /unknown LoRA option/ });
  t.deepEqual(parseLoraOption('r=8,alpha=16,targets=q_proj+v_proj'), { lora: { r: 8, alpha: 16, dropout: 0, targets: ['q_proj', 'v_proj'] }, full: false });
  t.deepEqual(parseLoraOption('full'), { lora: null, full: true });
});

test.serial('train --engineer hf: - SFT then two GRPO iterations on a learned target; every sample is a valid patch', async (t) => {
  t.timeout(900_000);
  const dir = join(root, 'llama');
  const out = join(root, 'run');
  const cfg = resolveTrainConfig(undefined, {
    engineer: `hf:${dir}`,
    env: 'alfworld',
    target: 'lm/alf-xs-192-a@tiny',
    batchSize: 4,
    // the tiny target wins nothing, so no teacher patch has Δ > 0: keep them all (the machinery, not the data)
    sft: { batches: 1, k: 3, epochs: 2, batchSize: 4, lr: 3e-3, minDelta: -1 },
    grpo: { iterations: 2, k: 2, updateIters: 1, lr: 1e-3 },
    hf: { lora: { r: 4, alpha: 8 }, promptTokens: 1400, maxNewTokens: 160 },
    device: 'cpu',
    out,
  });
  // the SFT rows are the teacher's patches spelled in the tokenizer's ids
  const backend = engineerBackend(cfg);
  t.is(backend.kind, 'hf');
  const rt = await init({ inProcess: true });
  try {
    const r = await trainEngineer(rt.cluster, cfg, (l) => t.log(l));
    const g = r.iterations.filter((x) => x.phase === 'grpo');
    t.is(g.length, 2);
    for (const it of g) {
      if (it.validRate === undefined) continue; // a batch without failures is skipped
      t.is(it.validRate, 1, 'grammar-constrained decoding over the tokenizer: every sample a valid patch');
      t.true(Number.isFinite(it.meanDelta!) && Number.isFinite(it.entropy!));
    }
    const cands = readFileSync(join(out, 'candidates.jsonl'), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { valid?: boolean; patch?: unknown; missing?: string });
    for (const c of cands.filter((x) => !x.missing)) {
      t.true(c.valid);
      t.true(readPatch(c.patch).ok);
    }
    // the adapter in PEFT's layout, the SFT-only one apart
    for (const d of ['engineer-hf', 'engineer-sft-hf']) {
      const ac = JSON.parse(readFileSync(join(out, d, 'adapter_config.json'), 'utf8'));
      t.is(ac.peft_type, 'LORA');
      t.is(ac.r, 4);
      t.true(safetensorsKeys(join(out, d, 'adapter_model.safetensors')).some((k) => k.endsWith('lora_A.weight')));
    }
    t.true(existsSync(r.onnx) && r.onnx.endsWith('engineer.safetensors'));
    // hr1 exp's engineer rows read the run: the greedy patch for a packet, through the torch sampler
    const packet = parsePacket(JSON.parse(readFileSync('test/fixtures/packets/alfworld-lm.json', 'utf8')));
    t.is(hfRunFile(out, 'engineer.onnx'), r.onnx);
    const a = await proposeFromHfRun(out, r.onnx, packet);
    const b = await proposeFromHfRun(out, r.onnx, packet);
    t.true(readPatch(a).ok, 'the greedy patch is valid');
    t.deepEqual(a, b, 'greedy decoding is deterministic');
  } finally {
    await rt.shutdown();
  }
});
