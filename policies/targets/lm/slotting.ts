/**
 * Which slots an env's learned targets use when their config says `slots: true`: WebShop's
 * product ids (slots.ts), DBBench's table and column names (dbbench/slots.ts). ALFWorld has none
 * (its names are short words the vocabulary holds). `slots: 'values'` adds DBBench's value slots.
 */
import type { LmEnv } from './bc.ts';
import { NAME_SLOTS, NAME_VALUE_SLOTS } from './dbbench/slots.ts';
import { PRODUCT_SLOTS, type Slotting } from './slots.ts';

/** A config's `slots`: on (names) or `'values'` (DBBench: names and values). */
export type SlotsKind = true | 'values';

/** The env's slots, or null when it has none. */
export function slottingFor(env: string, kind: SlotsKind = true): Slotting | null {
  if (env === 'webshop') return PRODUCT_SLOTS as Slotting;
  if (env === 'dbbench') return (kind === 'values' ? NAME_VALUE_SLOTS : NAME_SLOTS) as Slotting;
  return null;
}

/** The slot words a model of these envs needs in its vocabulary. */
export function slotWords(envs: readonly LmEnv[], kind: SlotsKind = true): string[] {
  return envs.flatMap((e) => slottingFor(e, kind)?.words ?? []);
}
