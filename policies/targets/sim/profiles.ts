import { MODES, type Mode } from './modes.ts';

/**
 * A SIMULATED target profile: an expert corrupted by named failure modes. Rates are per
 * decision; a relevant hint removes `compliance` of a mode's rate; long context and irrelevant
 * hint text raise format violations, more so for small profiles.
 */
export interface SimProfile {
  name: string;
  family: string;
  /** parameters, in billions (nominal: these are simulated) */
  sizeB: number;
  rates: Record<Mode, number>;
  /** chance to stay in a loop once the last two actions were equal */
  loopPersist: number;
  /** fraction of a mode's rate a hint addressing it removes */
  compliance: number;
  /** when re-asked after a harness block, the chance it gives the same answer again */
  stubbornness: number;
  /** context characters before long-context format errors begin */
  contextBudget: number;
  /** extra format-violation rate per 1,000 characters over the budget */
  contextSensitivity: number;
  /** extra format-violation rate per 1,000 characters of hint text that addresses none of its active modes */
  noiseSensitivity: number;
}

interface Family {
  family: string;
  /** per-mode weights: where this family's failures concentrate */
  weights: Record<Mode, number>;
  compliance: number;
}

const FAMILIES: Family[] = [
  { family: 'qwen', compliance: 0.75, weights: { invalid_action: 1.0, format_violation: 0.6, loop: 1.2, state_loss: 0.8, skip_precondition: 1.0, premature_finish: 0.8, ignore_feedback: 1.0 } },
  { family: 'llama', compliance: 0.65, weights: { invalid_action: 1.2, format_violation: 1.0, loop: 1.0, state_loss: 1.0, skip_precondition: 0.8, premature_finish: 1.2, ignore_feedback: 0.9 } },
  { family: 'mistral', compliance: 0.6, weights: { invalid_action: 0.9, format_violation: 1.3, loop: 0.9, state_loss: 1.2, skip_precondition: 0.9, premature_finish: 1.0, ignore_feedback: 1.1 } },
  { family: 'gemma', compliance: 0.7, weights: { invalid_action: 1.1, format_violation: 0.8, loop: 1.4, state_loss: 0.9, skip_precondition: 1.2, premature_finish: 0.7, ignore_feedback: 1.2 } },
  { family: 'phi', compliance: 0.55, weights: { invalid_action: 1.0, format_violation: 1.2, loop: 1.1, state_loss: 1.1, skip_precondition: 1.1, premature_finish: 1.3, ignore_feedback: 0.8 } },
];

/** nominal sizes and how they scale the base failure rate, persistence and context tolerance */
const SIZES: { sizeB: number; scale: number; loopPersist: number; stubbornness: number; contextBudget: number; contextSensitivity: number; noiseSensitivity: number; complianceBoost: number }[] = [
  { sizeB: 1.5, scale: 2.6, loopPersist: 0.97, stubbornness: 0.6, contextBudget: 3000, contextSensitivity: 0.03, noiseSensitivity: 0.12, complianceBoost: -0.15 },
  { sizeB: 3, scale: 1.5, loopPersist: 0.95, stubbornness: 0.5, contextBudget: 5000, contextSensitivity: 0.02, noiseSensitivity: 0.07, complianceBoost: -0.05 },
  { sizeB: 8, scale: 0.9, loopPersist: 0.94, stubbornness: 0.4, contextBudget: 9000, contextSensitivity: 0.008, noiseSensitivity: 0.03, complianceBoost: 0.05 },
  { sizeB: 32, scale: 0.7, loopPersist: 0.93, stubbornness: 0.3, contextBudget: 16000, contextSensitivity: 0.003, noiseSensitivity: 0.01, complianceBoost: 0.15 },
];

/** per-mode base rate at scale 1 */
const BASE = 0.075;

function build(): SimProfile[] {
  const out: SimProfile[] = [];
  for (const f of FAMILIES) {
    for (const s of SIZES) {
      const rates = {} as Record<Mode, number>;
      for (const m of MODES) rates[m] = Math.min(0.6, Number((BASE * s.scale * f.weights[m]).toFixed(4)));
      out.push({
        name: `${f.family}-${s.sizeB}b`,
        family: f.family,
        sizeB: s.sizeB,
        rates,
        loopPersist: s.loopPersist,
        stubbornness: s.stubbornness,
        compliance: Math.max(0.2, Math.min(0.95, Number((f.compliance + s.complianceBoost).toFixed(2)))),
        contextBudget: s.contextBudget,
        contextSensitivity: s.contextSensitivity,
        noiseSensitivity: s.noiseSensitivity,
      });
    }
  }
  return out;
}

/** How hard each env is for the simulated agents: a multiplier on every mode's rate. */
export const ENV_SCALE: Record<string, number> = { alfworld: 2.1, dbbench: 1.6, webshop: 1.3 };

/** The 20 SIMULATED profiles: 5 families × 4 sizes. */
export const SIM_PROFILES: readonly SimProfile[] = build();

/** Look a profile up by name (`qwen-8b`), with a typed miss listing what exists. */
export function simProfile(name: string): SimProfile | undefined {
  return SIM_PROFILES.find((p) => p.name === name);
}
