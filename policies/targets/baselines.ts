/**
 * Baselines as patches, so they run through the same harness and rollouts as learned patches.
 * - vanilla: no patch.
 * - selfRefine: a fixed, generic reflect-and-retry patch, as in the paper's comparison (Self-Refine
 *   asks the agent to critique and refine itself; it does not target any failure).
 * - react: a ReAct-style reasoning prompt (think, then act).
 */
export const BASELINES = {
  vanilla: null,
  selfRefine: {
    description: 'Self-Refine baseline: generic reflection before each decision and after each feedback',
    skills: ['Before every action, critique your previous step and refine your plan.'],
    rules: [
      { hook: 'preDecision', effect: { type: 'hint', message: 'Reflect on your last step: what went well, what could be better? Refine your plan, then give your next action.' } },
      { hook: 'postFeedback', effect: { type: 'inject_hint', message: 'Critique: consider whether this result moves you toward the goal, and refine your approach.' } },
    ],
  },
  react: {
    description: 'ReAct-style reasoning prompt',
    skills: ['Reason about the task step by step: you may write "think: <reasoning>" to plan before you act, then give one action.'],
  },
} as const;

export type BaselineName = keyof typeof BASELINES;
export const BASELINE_NAMES = Object.keys(BASELINES) as BaselineName[];
