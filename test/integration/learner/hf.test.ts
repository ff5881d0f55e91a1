import test from 'ava';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LearnerOpError, LearnerProcess } from '../../../learner/index.ts';
import type { HfArch, HfLogitsResult } from '../../../learner/process.ts';

// Hugging Face-layout engineers (learner/hf.py) through the learner's hf_* ops: tiny random
// checkpoints (hidden 64, 2 layers, 4 heads sharing 2 kv heads, head_dim 16) over 300 tokens.
const V = 300;
const BOS = 1;
const EOS = 2;
const root = mkdtempSync(join(tmpdir(), 'hr1-hf-test-'));
test.after.always(() => rmSync(root, { recursive: true, force: true }));

let lp: LearnerProcess;
test.before(async () => {
  lp = await LearnerProcess.start();
});
test.after.always(async () => lp?.close());

let dirs = 0;
const fresh = (name: string): string => join(root, `${name}-${dirs++}`);

async function writeTiny(arch: HfArch, seed: number, extra: { tieWordEmbeddings?: boolean } = {}): Promise<string> {
  const dir = fresh(arch);
  await lp.hfWriteRandom({ dir, arch, size: 'tiny', vocabSize: V, bosTokenId: BOS, eosTokenId: EOS, seed, ...extra });
  return dir;
}

function safetensorsHeader(path: string): Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }> {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  t0(n % 8 === 0, `header length ${n} is padded to a multiple of 8`);
  const head = JSON.parse(buf.subarray(8, 8 + n).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  delete head.__metadata__;
  return head;
}
function t0(ok: boolean, msg: string): void {
  if (!ok) throw new Error(msg);
}

/** The tensor names transformers gives a tiny 2-layer model of the architecture. */
function hfNames(arch: HfArch, tied: boolean): string[] {
  const names = ['model.embed_tokens.weight', 'model.norm.weight'];
  for (let i = 0; i < 2; i++) {
    const p = `model.layers.${i}.`;
    for (const m of ['q_proj', 'k_proj', 'v_proj', 'o_proj']) names.push(`${p}self_attn.${m}.weight`);
    if (arch === 'qwen2') for (const m of ['q_proj', 'k_proj', 'v_proj']) names.push(`${p}self_attn.${m}.bias`);
    if (arch === 'qwen3') names.push(`${p}self_attn.q_norm.weight`, `${p}self_attn.k_norm.weight`);
    for (const m of ['gate_proj', 'up_proj', 'down_proj']) names.push(`${p}mlp.${m}.weight`);
    names.push(`${p}input_layernorm.weight`, `${p}post_attention_layernorm.weight`);
  }
  if (!tied) names.push('lm_head.weight');
  return names.sort();
}

const IDS = [
  [BOS, 17, 42, 99, 5, 250, 7, 3],
  [BOS, 8, 8, 8, 120, 299, 0, 64],
];
const same = (a: HfLogitsResult, b: HfLogitsResult): boolean => Buffer.from(a.logits).equals(Buffer.from(b.logits));
const floats = (r: HfLogitsResult): Float32Array => new Float32Array(Uint8Array.from(r.logits).buffer);
const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

for (const arch of ['llama', 'qwen2', 'qwen3'] as const) {
  test.serial(`hf - ${arch}: random checkpoint in HF layout loads; a full hf_save reloads to bitwise-identical logits`, async (t) => {
    const tied = arch !== 'llama'; // llama with its own lm_head, the qwens tied
    const dir = await writeTiny(arch, 11, { tieWordEmbeddings: tied });
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    t.deepEqual(cfg.architectures, [{ llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM' }[arch]]);
    t.is(cfg.model_type, arch);
    t.is(cfg.torch_dtype, 'float32');
    t.like(cfg, { hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16, rope_theta: 10000, max_position_embeddings: 2048, tie_word_embeddings: tied, vocab_size: V, bos_token_id: BOS, eos_token_id: EOS, rope_scaling: null, hidden_act: 'silu' });
    t.is(typeof cfg.rms_norm_eps, 'number');
    const head = safetensorsHeader(join(dir, 'model.safetensors'));
    t.deepEqual(Object.keys(head).sort(), hfNames(arch, tied));
    t.deepEqual(head['model.layers.0.self_attn.k_proj.weight']!.shape, [32, 64]);
    t.is(head['model.embed_tokens.weight']!.dtype, 'F32');

    const info = await lp.hfLoad({ dir, full: true, device: 'cpu', seed: 1 });
    t.is(info.arch, arch);
    t.is(info.hf.dtype, 'float32');
    t.is(info.lora, null);
    t.is(info.trainableParams, info.params);
    t.is(info.config.vocabSize, V);
    t.is(info.config.maxLen, 2048);
    const a = await lp.hfLogits({ ids: IDS });
    t.deepEqual(a.shape, [2, 8, V]);
    const f = floats(a);
    t.true(f.every(Number.isFinite));
    t.true(f.some((x) => x !== 0));

    const out = fresh(`${arch}-saved`);
    const saved = await lp.hfSave({ dir: out });
    t.deepEqual(saved.files, ['config.json', 'model.safetensors']);
    t.deepEqual(Object.keys(safetensorsHeader(join(out, 'model.safetensors'))).sort(), hfNames(arch, tied));
    await lp.hfLoad({ dir: out, full: true, device: 'cpu', seed: 2 });
    t.true(same(a, await lp.hfLogits({ ids: IDS })), 'logits after hf_save and hf_load are bit for bit those before');
  });
}

test.serial('hf - rmsnorm, rope (default, linear, llama3) and grouped-query attention match hand-computed values', async (t) => {
  const close = (got: number[], want: number[], tol: number, what: string): void => {
    t.is(got.length, want.length, what);
    const worst = Math.max(...got.map((g, i) => Math.abs(g - want[i]!)));
    t.true(worst < tol, `${what}: max |diff| ${worst}`);
  };
  // RMSNorm: w * x / sqrt(mean(x^2) + eps)
  const x = [
    [1, 2, 3, 4],
    [0.5, -1, 2, 0],
  ];
  const w = [1, 0.5, 2, 1];
  const eps = 1e-6;
  const rms = x.map((row) => {
    const s = Math.sqrt(sum(row.map((v) => v * v)) / row.length + eps);
    return row.map((v, i) => (w[i]! * v) / s);
  });
  const gotRms = (await lp.hfProbe({ fn: 'rmsnorm', x, weight: w, eps })).out as number[][];
  close(gotRms.flat(), rms.flat(), 1e-6, 'rmsnorm');

  // RoPE, rotate-half: inv_freq_j = 1 / theta^(2j / d); angle = pos * inv_freq[i mod d/2];
  // out = x cos + rotate_half(x) sin, rotate_half(x) = [-x[d/2:], x[:d/2]]
  const d = 8;
  const theta = 10000;
  const positions = [0, 1, 5];
  const xr = positions.map((_p, ti) => [0, 1].map((h) => Array.from({ length: d }, (_v, i) => Math.sin(1 + ti * 3 + h * 7 + i) * 2)));
  const base = Array.from({ length: d / 2 }, (_v, j) => 1 / theta ** ((2 * j) / d));
  const rope = (inv: number[], scale = 1): number[] =>
    xr.flatMap((heads, ti) =>
      heads.flatMap((v) =>
        v.map((xi, i) => {
          const ang = positions[ti]! * inv[i % (d / 2)]!;
          const rot = i < d / 2 ? -v[i + d / 2]! : v[i - d / 2]!;
          return xi * Math.cos(ang) * scale + rot * Math.sin(ang) * scale;
        }),
      ),
    );
  const probeRope = async (scaling?: Record<string, unknown>): Promise<number[]> => ((await lp.hfProbe({ fn: 'rope', x: xr, positions, theta, scaling: scaling ?? null })).out as number[][][]).flat(2);
  close(await probeRope(), rope(base), 1e-5, 'rope default');
  close(await probeRope({ ropeType: 'linear', factor: 4 }), rope(base.map((f) => f / 4)), 1e-5, 'rope linear');
  // llama3: wavelength 2π/f; above original/low_freq_factor divide by factor, below original/high_freq_factor keep,
  // between: (1 - s) f / factor + s f with s = (original / wavelength - low) / (high - low)
  const l3 = { factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 64 };
  const llama3 = base.map((f) => {
    const wl = (2 * Math.PI) / f;
    if (wl < l3.originalMaxPositionEmbeddings / l3.highFreqFactor) return f;
    if (wl > l3.originalMaxPositionEmbeddings / l3.lowFreqFactor) return f / l3.factor;
    const s = (l3.originalMaxPositionEmbeddings / wl - l3.lowFreqFactor) / (l3.highFreqFactor - l3.lowFreqFactor);
    return ((1 - s) * f) / l3.factor + s * f;
  });
  t.true(llama3.some((f, j) => f !== base[j]) && llama3.some((f, j) => f === base[j]), 'the llama3 case touches some frequencies and keeps others');
  t.true(llama3.some((f, j) => f !== base[j] && f !== base[j]! / l3.factor), 'and smooths at least one');
  close(await probeRope({ ropeType: 'llama3', ...l3 }), rope(llama3), 1e-5, 'rope llama3');

  // GQA: 2 query heads share 1 kv head; causal softmax(q·k / sqrt(d)) v
  const T = 3;
  const q = [0, 1, 2].map((ti) => [0, 1].map((h) => [Math.cos(ti + h), Math.sin(2 * ti - h)]));
  const k = [0, 1, 2].map((ti) => [[0.5 * ti - 0.3, Math.cos(ti)]]);
  const v = [0, 1, 2].map((ti) => [[ti + 1, -ti * 0.5]]);
  const want = q.flatMap((heads, ti) =>
    heads.flatMap((qh) => {
      const s = Array.from({ length: ti + 1 }, (_v, j) => (qh[0]! * k[j]![0]![0]! + qh[1]! * k[j]![0]![1]!) / Math.sqrt(2));
      const m = Math.max(...s);
      const e = s.map((z) => Math.exp(z - m));
      const z = sum(e);
      return [0, 1].map((c) => sum(e.map((ej, j) => (ej / z) * v[j]![0]![c]!)));
    }),
  );
  const got = (await lp.hfProbe({ fn: 'gqa', q, k, v, causal: true })).out as number[][][];
  t.deepEqual([got.length, got[0]!.length, got[0]![0]!.length], [T, 2, 2]);
  close(got.flat(2), want, 1e-6, 'gqa');
});

test.serial('hf - LoRA at init is the base exactly; one SFT step changes only the adapters (base logits unchanged)', async (t) => {
  const dir = await writeTiny('qwen2', 5);
  const info = await lp.hfLoad({ dir, lora: { r: 4, alpha: 8 }, device: 'cpu', seed: 3 });
  t.deepEqual(info.lora, { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] });
  // r (in + out) per adapted Linear: q 64→64, k/v 64→32, o 64→64, gate/up 64→128, down 128→64; two layers
  const perLayer = 4 * (128 + 96 + 96 + 128 + 192 + 192 + 192);
  t.is(info.trainableParams, 2 * perLayer);
  t.true(info.trainableParams < info.params);
  const on0 = await lp.hfLogits({ ids: IDS });
  const off0 = await lp.hfLogits({ ids: IDS, adapter: false });
  t.true(same(on0, off0), 'B = 0: the adapted model is the base bit for bit');
  const batch = { prompts: [[BOS, 10, 11, 12]], completions: [[13, 14, EOS]] };
  const r = await lp.sftStep({ ...batch, lr: 1e-2 });
  t.is(r.step, 1);
  const on1 = await lp.hfLogits({ ids: IDS });
  const off1 = await lp.hfLogits({ ids: IDS, adapter: false });
  t.false(same(on1, on0), 'the adapters moved the logits');
  t.true(same(off1, off0), 'the base weights did not move');
});

test.serial('hf - SFT lowers the loss on a fixed batch; with LoRA the reference is the base (KL 0 until the adapters move)', async (t) => {
  const dir = await writeTiny('llama', 6);
  await lp.hfLoad({ dir, device: 'cpu', seed: 4, lora: { r: 8, alpha: 16 } });
  await lp.setReference();
  const batch = { prompts: [[BOS, 20, 21, 22], [BOS, 30, 31]], completions: [[23, 24, EOS], [32, EOS]] };
  const g = await lp.grpoStep({ ...batch, rewards: [1, 0], groupIds: [0, 0], config: { klCoef: 0.5, lr: 0 } });
  t.is(g.iters[0]!.kl, 0, 'adapters at init: the policy is its reference');
  const before = sum((await lp.logprobs(batch)).logprobs.flat());
  const s1 = await lp.sftStep({ ...batch, lr: 1e-2 });
  const s2 = await lp.sftStep({ ...batch, lr: 1e-2 });
  const after = sum((await lp.logprobs(batch)).logprobs.flat());
  t.true(Math.abs(-before / 5 - s1.loss) < 1e-5, `the first step's loss ${s1.loss} is the mean NLL before it ${-before / 5}`);
  t.true(s2.loss < s1.loss, `loss ${s1.loss} → ${s2.loss}`);
  t.true(after > before + 0.5, `log p ${before} → ${after}`);
  const g2 = await lp.grpoStep({ ...batch, rewards: [1, 0], groupIds: [0, 0], config: { klCoef: 0.5, lr: 0 } });
  t.true(g2.iters[0]!.kl > 0, `kl ${g2.iters[0]!.kl} once the adapters moved`);
});

test.serial('hf - hf_weights into a second process (same dir + hf_set_weights) gives identical logits; .pt save/load resumes', async (t) => {
  const dir = await writeTiny('qwen3', 7);
  await lp.hfLoad({ dir, device: 'cpu', seed: 8, lora: { r: 4, alpha: 8 } });
  const batch = { prompts: [[BOS, 40, 41]], completions: [[42, 43, EOS]] };
  await lp.sftStep({ ...batch, lr: 1e-2 });
  const w = await lp.hfWeights();
  t.is(w.step, 1);
  t.true(w.bytes instanceof Uint8Array);
  const keys = Object.keys(JSON.parse(Buffer.from(w.bytes).subarray(8, 8 + Number(Buffer.from(w.bytes).readBigUInt64LE(0))).toString()) as object);
  t.true(keys.includes('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight'), keys.slice(0, 3).join(' '));
  const mine = await lp.hfLogits({ ids: IDS });

  const other = await LearnerProcess.start();
  try {
    await other.hfLoad({ dir, device: 'cpu', seed: 99, lora: { r: 4, alpha: 8 } });
    t.false(same(await other.hfLogits({ ids: IDS }), mine), 'before the transfer the sampler is the base');
    const set = await other.hfSetWeights({ bytes: w.bytes });
    t.is(set.kind, 'lora');
    t.is(set.step, 1);
    t.true(same(await other.hfLogits({ ids: IDS }), mine), 'after it, bit for bit the learner');
    const bad = await t.throwsAsync(other.hfSetWeights({ bytes: w.bytes.subarray(0, 20) }), { instanceOf: LearnerOpError });
    t.regex(bad!.message, /args\.bytes/);
  } finally {
    await other.close();
  }

  // the .pt checkpoint of an hf run: adapters + optimizer + step; the next step is the same
  const ck = join(root, 'hf.pt');
  t.is((await lp.save({ path: ck })).step, 1);
  const ref = (await lp.logprobs(batch)).logprobs;
  const next = await lp.sftStep({ ...batch, lr: 1e-2 });
  const info = await lp.load({ path: ck });
  t.is(info.step, 1);
  t.is(info.hf?.arch, 'qwen3');
  t.deepEqual((await lp.logprobs(batch)).logprobs, ref);
  t.is((await lp.sftStep({ ...batch, lr: 1e-2 })).loss, next.loss);
  const e = await t.throwsAsync(lp.export({ path: join(root, 'x.onnx') }), { instanceOf: LearnerOpError });
  t.regex(e!.message, /hf engineers are sampled by the learner's hf sampler/);
  // the base directory gone: the checkpoint says which
  renameSync(dir, `${dir}-moved`);
  const gone = await t.throwsAsync(lp.load({ path: ck }), { instanceOf: LearnerOpError });
  t.is(gone!.code, 'LEARNER_CHECKPOINT');
  t.regex(gone!.message, /which is gone/);
  renameSync(`${dir}-moved`, dir);
});

test.serial('hf - decode: tokens stay in the allowed sets, repeat under the same seed, do not depend on other rows, and carry the learner\'s log-probs', async (t) => {
  const dir = await writeTiny('qwen2', 9);
  await lp.hfLoad({ dir, device: 'cpu', seed: 1, lora: { r: 4, alpha: 8 } });
  await lp.sftStep({ prompts: [[BOS, 50, 51]], completions: [[52, EOS]], lr: 1e-2 }); // adapters not zero
  const prompts = [
    [BOS, 60, 61, 62],
    [BOS, 70],
  ];
  const temperature = 0.8;
  const allowedAt = (step: number, row: number): number[] | null => (row === 3 ? null : step % 3 === 0 ? [EOS] : [3 + row, 10 + step, 100 + 7 * row, 299]);
  const run = async (rows: number[], steps: number): Promise<{ tokens: number[][]; lps: number[][]; masked: number[][] }> => {
    const s = await lp.hfDecodeStart({ prompts, k: 2, seed: 42, temperature, topP: 0.95 });
    t.is(s.rows, 4);
    const tokens: number[][] = [[], [], [], []];
    const lps: number[][] = [[], [], [], []];
    const masked: number[][] = [[], [], [], []];
    for (let i = 0; i < steps; i++) {
      const r = await lp.hfDecodeStep({ session: s.session, rows, allowed: rows.map((row) => allowedAt(i, row)) });
      rows.forEach((row, j) => {
        tokens[row]!.push(r.tokens[j]!);
        lps[row]!.push(r.logprobs[j]!);
        masked[row]!.push(r.maskedLogprobs[j]!);
      });
    }
    await lp.hfDecodeEnd({ session: s.session });
    return { tokens, lps, masked };
  };
  const a = await run([0, 1, 2, 3], 5);
  for (const row of [0, 1, 2]) a.tokens[row]!.forEach((tok, i) => t.true(allowedAt(i, row)!.includes(tok), `row ${row} step ${i}: ${tok}`));
  a.masked[0]!.forEach((m, i) => (i % 3 === 0 ? t.is(m, 0) : t.true(m < 0 && m > Math.log(1e-9))));
  t.true(a.tokens[3]!.every((tok) => tok >= 0 && tok < V));
  const b = await run([0, 1, 2, 3], 5);
  t.deepEqual(b.tokens, a.tokens, 'same seed, same tokens');
  const c = await run([1, 3], 5);
  t.deepEqual([c.tokens[1], c.tokens[3]], [a.tokens[1], a.tokens[3]], 'rows 1 and 3 alone draw what they drew beside rows 0 and 2');
  // the sampler's log-probs are the learner's (logprobs op, same temperature)
  const lp2 = await lp.logprobs({ prompts: [0, 1, 2, 3].map((r) => prompts[Math.floor(r / 2)]!), completions: a.tokens, temperature });
  const worst = Math.max(...lp2.logprobs.flatMap((row, r) => row.map((x, i) => Math.abs(x - a.lps[r]![i]!))));
  t.true(worst < 1e-5, `max |sampler - learner| log-prob ${worst}`);

  const s = await lp.hfDecodeStart({ prompts, k: 1, seed: 1 });
  const e1 = await t.throwsAsync(lp.hfDecodeStep({ session: s.session, rows: [0], allowed: [[5, V]] }), { instanceOf: LearnerOpError });
  t.regex(e1!.message, /args\.allowed\[0\] holds 300, not a token id in \[0, 300\)/);
  const e2 = await t.throwsAsync(lp.hfDecodeStep({ session: 999, rows: [0], allowed: [null] }), { instanceOf: LearnerOpError });
  t.regex(e2!.message, /args\.session 999 is not an open decode session/);
  t.is((await lp.hfDecodeStep({ session: s.session, rows: [0, 1], allowed: [null, null] })).tokens.length, 2, 'the session survived the bad steps');
  await lp.hfDecodeEnd({ session: s.session });
});

test.serial('hf - bad checkpoints: a missing dir, an unknown model_type, a missing tensor are errors naming the file and field; the learner keeps its model', async (t) => {
  const dir = await writeTiny('llama', 12);
  await lp.hfLoad({ dir, device: 'cpu', seed: 1 });
  const before = await lp.hfLogits({ ids: IDS });

  const missing = join(root, 'no-such-model');
  const e1 = await t.throwsAsync(lp.hfLoad({ dir: missing, device: 'cpu' }), { instanceOf: LearnerOpError });
  t.regex(e1!.message, /no model directory at '.*no-such-model'/);

  const odd = fresh('gpt2');
  mkdirSync(odd);
  writeFileSync(join(odd, 'config.json'), JSON.stringify({ ...JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')), model_type: 'gpt2' }));
  const e2 = await t.throwsAsync(lp.hfLoad({ dir: odd, device: 'cpu' }), { instanceOf: LearnerOpError });
  t.regex(e2!.message, /gpt2-\d+\/config\.json: model_type 'gpt2' is not supported \(one of llama, qwen2, qwen3\)/);

  // a copy of the checkpoint without model.norm.weight (the other tensors' data re-laid out)
  const cut = fresh('cut');
  mkdirSync(cut);
  writeFileSync(join(cut, 'config.json'), readFileSync(join(dir, 'config.json')));
  const buf = readFileSync(join(dir, 'model.safetensors'));
  const n = Number(buf.readBigUInt64LE(0));
  const head = JSON.parse(buf.subarray(8, 8 + n).toString()) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  delete head.__metadata__;
  delete head['model.norm.weight'];
  const parts: Buffer[] = [];
  let off = 0;
  for (const e of Object.values(head)) {
    const [b, en] = e.data_offsets;
    parts.push(buf.subarray(8 + n + b, 8 + n + en));
    e.data_offsets = [off, off + en - b];
    off += en - b;
  }
  let json = JSON.stringify(head);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(join(cut, 'model.safetensors'), Buffer.concat([len, Buffer.from(json), ...parts]));
  const e3 = await t.throwsAsync(lp.hfLoad({ dir: cut, device: 'cpu' }), { instanceOf: LearnerOpError });
  t.is(e3!.code, 'LEARNER_CHECKPOINT');
  t.regex(e3!.message, /cut-\d+\/model\.safetensors lacks tensor 'model\.norm\.weight'/);

  const e4 = await t.throwsAsync(lp.hfLoad({ dir, device: 'cpu', lora: { r: 0 } }), { instanceOf: LearnerOpError });
  t.regex(e4!.message, /args\.lora\.r must be an integer >= 1/);

  t.true(same(await lp.hfLogits({ ids: IDS }), before), 'the learner still holds the model it had');
  t.true((await lp.info()).initialized);
});
