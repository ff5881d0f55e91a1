/** What the training driver needs from the engineer layer, in one place. */
export { buildSftDataset, makeBatches } from './sft.ts';
export { extractPacket } from './packet.ts';
export { rewardGroup } from './reward.ts';
export { canonicalJson } from '../harness/index.ts';
