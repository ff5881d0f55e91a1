import type { Corruptor } from './sim.ts';

const RAMBLE =
  'I need to think carefully about where the object could be. It is probably in one of the cabinets or drawers, or maybe on a countertop, so I will consider each place in turn and remember what I have seen before deciding where to go next in this room.';

function goalOf(v: { messages: readonly { content: string }[] }): { obj: string | null; target: string | null } {
  for (const m of v.messages) {
    const g = /Your task is to: (.*)/.exec(m.content);
    if (g) {
      const text = g[1]!;
      const target = /\b(?:in|on|under)\s+(?:the\s+)?(\w+)\.?$/.exec(text)?.[1] ?? null;
      const obj = /\b(?:a|an|some|two)\s+(?:clean |hot |cool |cold )?(\w+)/.exec(text)?.[1] ?? null;
      return { obj, target };
    }
  }
  return { obj: null, target: null };
}

/** How a SIMULATED ALFWorld agent fails, per mode (null: not applicable now). */
export const alfworldCorruptor: Corruptor = (mode, v) => {
  const a = v.oracle;
  const last = v.outputs[v.outputs.length - 1];
  const lastObs = v.feedback[v.feedback.length - 1] ?? '';
  switch (mode) {
    case 'invalid_action': {
      // a hallucinated instance: the right verb and object with a number that is not there
      const m = /^(.*?)(\d+)(\D*)$/.exec(a);
      if (m) return `${m[1]}${Number(m[2]) + 2 + v.rng.int(4)}${m[3]}`;
      return a.startsWith('take ') ? a.replace(/^take /, 'pick up ') : null;
    }
    case 'format_violation':
      return RAMBLE;
    case 'state_loss': {
      // goes back to somewhere it already looked
      const visited = v.outputs.filter((o) => o.startsWith('go to ')).filter((o) => o !== last);
      return visited.length > 0 ? v.rng.pick(visited) : null;
    }
    case 'skip_precondition': {
      const g = goalOf(v);
      const open = /^open (.+)$/.exec(a);
      if (open && g.obj) return `take ${g.obj} 1 from ${open[1]}`;
      if (/^(heat|cool|clean) /.test(a) && g.target) return `go to ${g.target} 1`;
      if (/^use /.test(a) && g.obj) return `examine ${g.obj} 1`;
      return null;
    }
    case 'premature_finish': {
      // puts the object down where it stands instead of finishing the task properly
      const g = goalOf(v);
      const held = /^(?:put|move) (.+?) (?:in\/on|to) /.exec(a);
      if (held || !g.target) return null;
      return /^(heat|cool|clean|use) /.test(a) && g.obj ? `put ${g.obj} 1 in/on ${g.target} 1` : null;
    }
    case 'ignore_feedback':
      return last !== undefined && lastObs.startsWith('Nothing happens.') ? last : null;
    case 'loop':
      return last ?? null;
  }
};
