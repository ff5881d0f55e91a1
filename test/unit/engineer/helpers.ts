import type { EpisodeRecord, Predicates, StepRecord } from '../../../harness/index.ts';

const NO_PRED: Predicates = { repeatedAction: false, repeatedObservation: false, nothingHappens: false, invalidFormat: false, sqlError: false, stepLimitNear: false, proposedRepeatsLast: false, proposedInadmissible: false };

/** A step list from [action, observation] pairs; "Nothing happens." sets the predicate as the runtime does. */
export function steps(pairs: [string, string][], o: { invalid?: number[]; sql?: number[] } = {}): StepRecord[] {
  return pairs.map(([action, observation], i) => ({
    step: i + 1,
    proposal: action,
    action,
    observation,
    reward: 0,
    done: i === pairs.length - 1,
    forced: false,
    rewritten: false,
    invalidFormat: o.invalid?.includes(i + 1) ?? false,
    blocked: 0,
    hint: null,
    injected: null,
    pred: {
      ...NO_PRED,
      nothingHappens: observation.startsWith('Nothing happens'),
      sqlError: o.sql?.includes(i + 1) ?? false,
      repeatedAction: i > 0 && pairs[i - 1]![0] === action,
      repeatedObservation: i > 0 && pairs[i - 1]![1] === observation,
    },
  }));
}

export function record(taskId: string, taskType: string, o: { seed?: number; reward?: number; status?: EpisodeRecord['outcome']['status']; end?: string | null; env?: string; goal?: string; steps?: StepRecord[] } = {}): EpisodeRecord {
  const st = o.steps ?? steps([['go to cabinet 1', 'On the cabinet 1, you see nothing.']]);
  const reward = o.reward ?? 0;
  return {
    v: 1,
    env: o.env ?? 'alfworld',
    taskId,
    seed: o.seed ?? 1,
    goal: o.goal ?? `put a mug in cabinet. (${taskId})`,
    taskType,
    model: 'sim/test',
    harness: { version: 'v', layers: ['l'] },
    skills: [],
    toolHint: null,
    steps: st,
    outcome: { status: o.status ?? (reward >= 1 ? 'won' : 'lost'), won: reward >= 1, reward, steps: st.length, end: o.end ?? null, error: null },
    hooks: [],
    notebook: {},
  };
}
