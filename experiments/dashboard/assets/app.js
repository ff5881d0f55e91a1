// hr1 dashboard: cluster, runs (tables, plots, training curves) and an episode viewer.
// Plain ESM on preact + htm (no build step); uPlot draws the curves. Data: the server's /api/*.
import { h, render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import uPlot from 'uplot';

const html = htm.bind(h);

// --- data -------------------------------------------------------------------------------------
async function getJson(url) {
  const r = await fetch(url);
  const body = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
  if (!r.ok) throw new Error(body.error ?? `HTTP ${r.status}`);
  return body;
}

/** fetch `url` (again every `every` ms when given); {data, error} */
function useJson(url, every) {
  const [state, setState] = useState({ data: null, error: null });
  useEffect(() => {
    if (!url) return undefined;
    let live = true;
    const load = () => getJson(url).then((data) => live && setState({ data, error: null }), (e) => live && setState((s) => ({ data: s.data, error: e.message })));
    load();
    const t = every ? setInterval(load, every) : null;
    return () => {
      live = false;
      if (t) clearInterval(t);
    };
  }, [url, every]);
  return state;
}

function useRoute() {
  const [hash, setHash] = useState(location.hash || '#/cluster');
  useEffect(() => {
    const on = () => setHash(location.hash || '#/cluster');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  const [path, query = ''] = hash.slice(1).split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query) };
}

// --- formatting -------------------------------------------------------------------------------
const fmt = (v, d = 3) => (v === null || v === undefined ? '–' : typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(d)) : String(v));
const isInterval = (v) => v && typeof v === 'object' && 'mean' in v && 'lo' in v && 'hi' in v;
const cell = (v) => (isInterval(v) ? `${fmt(v.mean)} [${fmt(v.lo)}, ${fmt(v.hi)}]` : v && typeof v === 'object' ? JSON.stringify(v) : fmt(v));
const pct = (x) => `${(100 * x).toFixed(0)}%`;

function Progress({ done, total }) {
  if (!total) return html`<span class="muted">${fmt(done)}</span>`;
  const f = Math.max(0, Math.min(1, done / total));
  return html`<span class="progress"><span class="bar"><span style=${{ width: pct(f) }}></span></span>${done}/${total}</span>`;
}

function Table({ rows, cols, cls }) {
  if (!rows || rows.length === 0) return html`<p class="muted">none</p>`;
  const keys = cols ?? [...new Set(rows.flatMap((r) => Object.keys(r)))];
  return html`<table class=${cls ?? ''}><thead><tr>${keys.map((k) => html`<th>${k}</th>`)}</tr></thead>
    <tbody>${rows.map((r) => html`<tr>${keys.map((k) => html`<td class=${typeof r[k] === 'number' ? 'num' : ''}>${cell(r[k])}</td>`)}</tr>`)}</tbody></table>`;
}

/** any JSON: arrays of objects as tables, objects as headed sections */
function Json({ value, depth = 0 }) {
  if (Array.isArray(value)) {
    if (value.every((x) => x && typeof x === 'object' && !Array.isArray(x))) return html`<${Table} rows=${value} />`;
    return html`<span>${value.map(cell).join(', ')}</span>`;
  }
  if (value && typeof value === 'object' && !isInterval(value)) {
    const flat = Object.entries(value).every(([, v]) => v === null || typeof v !== 'object' || isInterval(v));
    if (flat) return html`<${Table} rows=${[value]} />`;
    return html`<div>${Object.entries(value).map(([k, v]) => html`<div><h3 style=${{ marginLeft: `${depth}rem` }}>${k}</h3><${Json} value=${v} depth=${depth + 1} /></div>`)}</div>`;
  }
  return html`<span>${cell(value)}</span>`;
}

const ivPct = (v) => (v ? `${(100 * v.mean).toFixed(1)} [${(100 * v.lo).toFixed(1)}, ${(100 * v.hi).toFixed(1)}]` : '–');
const ivPts = (v) => (v ? `${v.mean >= 0 ? '+' : ''}${(100 * v.mean).toFixed(1)} [${(100 * v.lo).toFixed(1)}, ${(100 * v.hi).toFixed(1)}]` : '–');

/** an experiment's summary.json (hr1-summary/1): one row per env × target × method, then the averages */
function ExpSummary({ s }) {
  const rows = s.groups.map((g) => ({
    env: g.env,
    target: g.target + (s.simulated?.includes(g.target) ? ' (SIMULATED)' : ''),
    method: g.label + (g.variant ? ` · ${g.variant}` : ''),
    'success %': ivPct(g.success),
    ...(s.groups.some((x) => x.env === 'webshop') ? { 'score %': g.env === 'webshop' ? ivPct(g.score) : '' } : {}),
    'Δ success (points)': g.method === 'vanilla' ? '' : ivPts(g.delta?.success),
    interventions: g.interventionRate === null ? '–' : `${(100 * g.interventionRate).toFixed(1)}%`,
    episodes: g.episodes,
  }));
  const avg = (s.averages ?? []).map((a) => ({ target: a.target, method: a.label + (a.variant ? ` · ${a.variant}` : ''), envs: a.envs.join(', '), 'average %': ivPct(a.value), 'Δ (points)': a.method === 'vanilla' ? '' : ivPts(a.delta) }));
  return html`<p class="muted">${s.exp}: ${(100 * s.level).toFixed(0)}% bootstrap intervals (${s.resamples} resamples)${s.simulated?.length ? `; SIMULATED targets: ${s.simulated.join(', ')}` : ''}</p>
    <${Table} cls="summary" rows=${rows} />${avg.length > 0 && html`<h3>Averages over envs</h3><${Table} cls="averages" rows=${avg} />`}`;
}

// --- views ------------------------------------------------------------------------------------
function ClusterView() {
  const { data, error } = useJson('/api/cluster', 2000);
  if (!data) return html`<section><p class=${error ? 'bad' : 'muted'}>${error ?? 'loading…'}</p></section>`;
  if (!data.connected)
    return html`<section id="cluster"><h2>Cluster</h2><p class="muted">No cluster: start the dashboard with <code>--address nats://host:4222</code> to see nodes, actors and their logs.</p></section>`;
  return html`<section id="cluster"><h2>Cluster ${data.cluster ? `"${data.cluster}"` : ''} at ${data.address}</h2>
      ${error && html`<p class="bad">${error}</p>`}
      <h3>Nodes (${data.nodes.length})</h3>
      <${Table} cls="nodes" cols=${['node', 'host', 'pid', 'resources (free/total)', 'labels', 'actors']}
        rows=${data.nodes.map((n) => ({ node: n.nodeId, host: n.host, pid: n.pid, 'resources (free/total)': Object.keys(n.total).map((k) => `${k} ${fmt(n.available[k] ?? 0, 1)}/${fmt(n.total[k], 1)}`).join(', '), labels: Object.entries(n.labels).map(([k, v]) => `${k}=${v}`).join(', ') || '–', actors: n.actors }))} />
      <h3>Actors (${data.actors.length})</h3>
      <${Table} cls="actors" cols=${['actor', 'class', 'name', 'node', 'restarts', 'mailbox', 'calls', 'calls/s']}
        rows=${data.actors.map((a) => ({ actor: a.actorId, class: a.cls, name: a.name ?? '–', node: a.node, restarts: a.restarts, mailbox: a.mailbox, calls: a.calls, 'calls/s': a.callRate === null ? null : Number(a.callRate.toFixed(1)) }))} />
    </section>
    <section id="logs"><h2>Logs (warnings and errors the nodes forwarded)</h2>
      ${data.logs.length === 0 ? html`<p class="muted">none yet</p>` : html`<${Table} cls="logs" rows=${data.logs.slice().reverse()} />`}
    </section>`;
}

function RunsView() {
  const { data, error } = useJson('/api/runs', 5000);
  if (!data) return html`<section><p class=${error ? 'bad' : 'muted'}>${error ?? 'loading…'}</p></section>`;
  return html`<section id="runs"><h2>Runs in ${data.runsDir}</h2>
    ${data.runs.length === 0 ? html`<p class="muted">no run folders yet (hr1 exp …, hr1 train write them)</p>` : html`<table class="runs"><thead><tr><th>run</th><th>kind</th><th>targets</th><th>methods</th><th>progress</th><th>modified</th></tr></thead><tbody>
      ${data.runs.map((r) => html`<tr><td><a href=${`#/run/${encodeURIComponent(r.name)}`}>${r.name}</a></td><td>${r.kind}${r.exp ? ` ${r.exp}` : ''}</td><td>${(r.targets ?? []).join(', ')}</td>
        <td>${(r.methods ?? []).map((m) => (typeof m === 'string' ? m : m.name)).join(', ')}</td><td><${Progress} ...${r.progress ?? {}} /></td><td class="muted">${r.mtime ? new Date(r.mtime).toLocaleString() : ''}</td></tr>`)}
    </tbody></table>`}</section>`;
}

const CURVE_KEYS = ['meanDelta', 'bestDelta', 'validRate', 'baseSuccess', 'entropy', 'clipFrac', 'kl', 'loss'];

function Chart({ title, x, series }) {
  const el = useRef(null);
  useEffect(() => {
    if (!el.current) return undefined;
    const colours = ['#2f6fb3', '#d9822b', '#2f8a4f', '#b3402f', '#7a52b3', '#6b7580'];
    const plot = new uPlot({ title, width: 380, height: 200, scales: { x: { time: false } }, series: [{ label: 'iteration' }, ...series.map((s, i) => ({ label: s.label, stroke: colours[i % colours.length], width: 1.5, points: { show: x.length < 40 } }))] }, [x, ...series.map((s) => s.values)], el.current);
    return () => plot.destroy();
  }, [title, x, series]);
  return html`<div class="curve" data-title=${title} ref=${el}></div>`;
}

function Curves({ curves }) {
  const grpo = curves.filter((c) => c.phase === 'grpo');
  const sft = curves.filter((c) => c.phase === 'sft');
  const charts = [];
  if (sft.length) charts.push({ title: 'SFT loss', x: sft.map((c, i) => c.iteration ?? i), series: [{ label: 'loss', values: sft.map((c) => c.loss ?? null) }] });
  if (grpo.length) {
    const x = grpo.map((c, i) => c.iteration ?? i);
    for (const group of [['meanDelta', 'bestDelta'], ['validRate', 'baseSuccess'], ['entropy'], ['clipFrac', 'kl'], ['loss']]) {
      const keys = group.filter((k) => grpo.some((c) => typeof c[k] === 'number'));
      if (keys.length) charts.push({ title: keys.join(', '), x, series: keys.map((k) => ({ label: k, values: grpo.map((c) => c[k] ?? null) })) });
    }
    const parts = [...new Set(grpo.flatMap((c) => Object.keys(c.ms ?? {})))].filter((k) => k !== 'total');
    if (parts.length) charts.push({ title: 'time split (s per iteration)', x, series: parts.map((k) => ({ label: k, values: grpo.map((c) => (c.ms?.[k] ?? 0) / 1000) })) });
  }
  if (!charts.length) return html`<p class="muted">no iterations logged yet</p>`;
  return html`<div class="curves">${charts.map((c) => html`<${Chart} key=${c.title} ...${c} />`)}</div>`;
}

function RunView({ name }) {
  const { data, error } = useJson(`/api/runs/${encodeURIComponent(name)}`, 5000);
  if (!data) return html`<section><p class=${error ? 'bad' : 'muted'}>${error ?? 'loading…'}</p></section>`;
  const plots = (data.plots ?? []).filter((p) => p.endsWith('.svg'));
  return html`<section id="run"><h2>${name} <span class="muted">(${data.kind ?? ''}${data.exp ? ` ${data.exp}` : ''})</span></h2>
      ${data.progress && html`<p>progress <${Progress} ...${data.progress} /></p>`}
      <p><a href=${`#/episodes/${encodeURIComponent(name)}`}>episodes of this run →</a></p>
    </section>
    ${data.curves && data.curves.length > 0 && html`<section id="curves"><h2>Training curves</h2><${Curves} curves=${data.curves} /></section>`}
    ${data.summary && html`<section id="summary"><h2>${data.summary.kind === 'hr1-summary/1' ? 'Tables (summary.json)' : 'Summary'}</h2>${data.summary.kind === 'hr1-summary/1' ? html`<${ExpSummary} s=${data.summary} />` : html`<${Json} value=${data.summary} />`}</section>`}
    ${plots.length > 0 && html`<section id="plots" class="plots"><h2>Plots</h2>${plots.map((p) => html`<div><img alt=${p} src=${`/files/${encodeURIComponent(name)}/plots/${encodeURIComponent(p)}`} /></div>`)}</section>`}`;
}

function Effects({ effects }) {
  return (effects ?? []).map((e) => html`<span class=${`effect ${e.effect}`} title=${e.text}>${e.effect} · ${e.entry}</span>`);
}

function Steps({ record, divergence, side }) {
  if (!record) return html`<p class="muted">no ${side} episode in the cache</p>`;
  return html`<table class=${`steps ${side}`}><thead><tr><th>#</th><th>proposal</th><th>hooks</th><th>action</th><th>observation</th></tr></thead><tbody>
    ${record.steps.map((s, i) => html`<tr class=${i === divergence ? 'diverge' : ''} data-step=${i}><td class="num">${s.step}</td><td>${s.proposal ?? html`<span class="muted">(forced)</span>`}</td>
      <td><${Effects} effects=${s.effects} />${s.hint && html`<div class="muted">hint: ${s.hint}</div>`}${s.injected && html`<div class="muted">injected: ${s.injected}</div>`}</td>
      <td>${s.rewritten || s.forced ? html`<b>${s.action}</b>` : s.action}</td><td>${s.observation}</td></tr>`)}
  </tbody></table>`;
}

function EpisodeView({ name, query }) {
  const list = useJson(`/api/runs/${encodeURIComponent(name)}/episodes`);
  const [sel, setSel] = useState(() => Object.fromEntries(['method', 'taskId', 'seed'].map((k) => [k, query.get(k) ?? ''])));
  const eps = list.data?.episodes ?? [];
  const methods = [...new Set(eps.map((e) => e.method))];
  const method = sel.method || methods.find((m) => m !== 'vanilla') || methods[0] || '';
  const ofMethod = eps.filter((e) => e.method === method);
  const tasks = [...new Set(ofMethod.map((e) => e.taskId))];
  const taskId = sel.taskId && tasks.includes(sel.taskId) ? sel.taskId : tasks[0] ?? '';
  const seeds = [...new Set(ofMethod.filter((e) => e.taskId === taskId).map((e) => e.seed))];
  const seed = sel.seed !== '' && seeds.includes(Number(sel.seed)) ? Number(sel.seed) : seeds[0];
  const ref = ofMethod.find((e) => e.taskId === taskId && e.seed === seed);
  const q = ref ? new URLSearchParams({ env: ref.env, target: ref.target, method: ref.method, taskId: ref.taskId, seed: String(ref.seed), packet: String(ref.packet) }) : null;
  const ep = useJson(q ? `/api/runs/${encodeURIComponent(name)}/episode?${q}` : null);
  const set = (k) => (e) => setSel({ ...sel, [k]: e.target.value, ...(k === 'method' ? { taskId: '', seed: '' } : k === 'taskId' ? { seed: '' } : {}) });
  if (list.error) return html`<section><p class="bad">${list.error}</p></section>`;
  if (!list.data) return html`<section><p class="muted">loading…</p></section>`;
  const d = ep.data;
  return html`<section id="episode-picker"><h2>Episodes of <a href=${`#/run/${encodeURIComponent(name)}`}>${name}</a> <span class="muted">(${list.data.total})</span></h2>
      <label>method <select name="method" value=${method} onChange=${set('method')}>${methods.map((m) => html`<option value=${m}>${m}</option>`)}</select></label>
      <label>task <select name="task" value=${taskId} onChange=${set('taskId')}>${tasks.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
      <label>seed <select name="seed" value=${seed} onChange=${set('seed')}>${seeds.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
    </section>
    ${ep.error && html`<section><p class="bad">${ep.error}</p></section>`}
    ${d && html`<section id="episode"><h2>${d.ref.method} on ${d.ref.taskId}, seed ${d.ref.seed} <span class="muted">(${d.ref.env}, ${d.ref.target})</span></h2>
      <p>with the patch: <b class=${d.record.outcome.won ? 'good' : 'bad'}>${d.record.outcome.status}</b> in ${d.record.outcome.steps} steps;
         without: ${d.vanilla ? html`<b class=${d.vanilla.outcome.won ? 'good' : 'bad'}>${d.vanilla.outcome.status}</b> in ${d.vanilla.outcome.steps} steps` : html`<span class="muted">not in the cache</span>`};
         ${d.divergence === null ? html` <span class="muted">the two never part</span>` : html` they part at step <b class="divergence">${d.record.steps[d.divergence]?.step ?? d.divergence + 1}</b>`}</p>
      <div class="pair"><div><h3>with the patch</h3><${Steps} record=${d.record} divergence=${d.divergence} side="patched" /></div>
        <div><h3>without the patch</h3><${Steps} record=${d.vanilla} divergence=${d.divergence} side="vanilla" /></div></div>
      <h3>The patch (canonical form)</h3>${d.patch ? html`<pre class="patch">${JSON.stringify(d.patch, null, 2)}</pre>` : html`<p class="muted">no patch (vanilla)</p>`}
    </section>`}`;
}

function App() {
  const { parts, query } = useRoute();
  const view = parts[0] ?? 'cluster';
  const nav = [['cluster', 'Cluster'], ['runs', 'Runs']];
  return html`<header><h1>hr1 dashboard</h1><nav>${nav.map(([k, l]) => html`<a class=${view === k || (k === 'runs' && (view === 'run' || view === 'episodes')) ? 'active' : ''} href=${`#/${k}`}>${l}</a>`)}</nav></header>
    <main>${view === 'runs' ? html`<${RunsView} />` : view === 'run' ? html`<${RunView} name=${parts[1]} />` : view === 'episodes' ? html`<${EpisodeView} name=${parts[1]} query=${query} />` : html`<${ClusterView} />`}</main>`;
}

const mount = document.getElementById('app');
mount.textContent = ''; // the static "loading…" goes; preact owns the container from here
render(html`<${App} />`, mount);
