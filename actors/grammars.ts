/** Grammar constraints the EngineerSampler can use by name (functions cannot travel in messages). */
import { allowedNext } from '../policies/engineer/patch-lang.ts';
import { registerGrammar } from './sampler.ts';

/** `patch`: every sample decodes into a valid patch of library components. */
registerGrammar('patch', (prefix, prompt) => allowedNext(prefix, prompt));
