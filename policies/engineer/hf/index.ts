/**
 * An engineer in the Hugging Face layout (config.json, *.safetensors, tokenizer.json,
 * tokenizer_config.json), Node side: its tokenizer and chat template (tokenizer.ts), the patch
 * language written in its ids with grammar-constrained decoding rows (spelling.ts), and its prompt
 * (prompt.ts). The model itself runs in the torch process (learner/hf.py, actors/hf-sampler.ts).
 *
 * @example
 * const tok = loadHfTokenizer(dir);
 * const ids = hfPromptIds(tok, packet);
 * const row = new ConstrainedRow(hfSpelling(dir), engineerPromptTokens(packet), 1024);
 * while (!row.done) row.push(pickFrom(row.allowed()));
 * const patch = tokensToPatch(row.grammar, packetNames(packet));
 */
export { loadHfTokenizer, TURN_END_TOKENS, type HfTokenizer, type ChatTurn } from './tokenizer.ts';
export { HfSpelling, ConstrainedRow, hfSpelling, type SpellingTokenizer, type SpellingStats } from './spelling.ts';
export { hfEngineerMessages, hfPromptIds, HF_SYSTEM_PROMPT, DEFAULT_HF_PROMPT_TOKENS } from './prompt.ts';
export { sampleConstrained, type HfCompletion } from './sample.ts';
export { proposeFromHfRun, hfRunFile } from './engineer.ts';
