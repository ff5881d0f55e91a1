// Worker-thread entry of cluster/pool.ts. Plain JS so that it loads without a TypeScript loader;
// it registers tsx itself so task modules may be .ts.
import { Packr } from 'msgpackr';
import { move } from 'piscina';
import { pathToFileURL } from 'node:url';

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });
const modules = new Map();
let tsxReady;

async function load(path) {
  let m = modules.get(path);
  if (m) return m;
  if (/\.[cm]?tsx?$/.test(path)) {
    tsxReady ??= import('tsx/esm/api').then((t) => t.register());
    await tsxReady;
  }
  const mod = await import(path.startsWith('file:') ? path : pathToFileURL(path).href);
  const tasks = mod.tasks ?? mod.default;
  if (!tasks || typeof tasks !== 'object') throw new Error(`worker module ${path} must export \`tasks\`: an object of task name → function`);
  if (typeof mod.setup === 'function') await mod.setup();
  modules.set(path, tasks);
  return tasks;
}

function wire(e) {
  return { code: e?.code ?? 'POOL_TASK', message: String(e?.message ?? e), remoteStack: e?.stack, data: e?.data };
}

/** One message = one batch: `{module, task, data: msgpack([input, …])}` → msgpack([[0, out] | [1, err], …]). */
export default async function run({ module, task, data }) {
  const tasks = await load(module);
  const fn = tasks[task];
  const inputs = packr.unpack(data);
  const out = new Array(inputs.length);
  if (typeof fn !== 'function') {
    const err = { code: 'UNKNOWN_TASK', message: `worker module ${module} has no task "${task}"; it has ${Object.keys(tasks).join(', ')}` };
    for (let i = 0; i < inputs.length; i++) out[i] = [1, err];
  } else {
    for (let i = 0; i < inputs.length; i++) {
      try {
        let r = fn(inputs[i]);
        if (r instanceof Promise) r = await r;
        out[i] = [0, r];
      } catch (e) {
        out[i] = [1, wire(e)];
      }
    }
  }
  // a copy: msgpackr packs into a shared buffer that must not be transferred away
  const bytes = new Uint8Array(packr.pack(out));
  return move(bytes);
}
