import type { Corruptor } from './sim.ts';

function asinsOf(obs: string): string[] {
  return [...obs.matchAll(/\b(B0[0-9A-Z]{8})\b/g)].map((m) => m[1]!.toLowerCase());
}

/** How a SIMULATED WebShop agent fails, per mode (null: not applicable now). */
export const webshopCorruptor: Corruptor = (mode, v) => {
  const a = v.oracle;
  const last = v.outputs[v.outputs.length - 1];
  const obs = v.feedback[v.feedback.length - 1] ?? v.messages[v.messages.length - 1]?.content ?? '';
  const click = /^click\[(.*)\]$/.exec(a)?.[1];
  const onItem = /\[SEP\] Buy Now/i.test(obs);
  switch (mode) {
    case 'invalid_action':
      // a clickable that is not on the page
      return click !== undefined ? `click[${click === 'buy now' ? 'add to cart' : `${click} 2`}]` : null;
    case 'format_violation':
      return a.startsWith('search[') ? `I will look for ${a.slice(7, -1)} in the store.` : 'This looks like the right product, I think.';
    case 'skip_precondition':
      // buys without choosing the options
      return onItem && click !== undefined && click !== 'buy now' ? 'click[buy now]' : null;
    case 'premature_finish': {
      // takes the first result instead of the one that fits
      const asins = asinsOf(obs);
      return click !== undefined && asins.includes(click) && asins[0] !== click ? `click[${asins[0]}]` : null;
    }
    case 'state_loss':
      return onItem ? 'click[back to search]' : null;
    case 'ignore_feedback':
      return last !== undefined && obs === (v.feedback[v.feedback.length - 2] ?? '') ? last : null;
    case 'loop':
      return last ?? null;
  }
};
