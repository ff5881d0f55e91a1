/** `hr1 serve <target>`: a local target behind an OpenAI-compatible endpoint until SIGINT/SIGTERM. */

export interface ServeOptions {
  port: number;
  host: string;
  env?: string | undefined;
  apiKey?: string | undefined;
}

export async function serveCommand(target: string, o: ServeOptions): Promise<void> {
  const { serveLocal } = await import('../../policies/targets/serve-local.ts');
  const apiKey = o.apiKey ?? process.env.HR1_SERVE_API_KEY;
  const s = await serveLocal(target, { port: o.port, host: o.host, ...(o.env ? { env: o.env } : {}), ...(apiKey ? { apiKey } : {}) });
  console.log(`hr1 serve: ${target}${target.startsWith('sim/') ? ' (SIMULATED target)' : ''} at ${s.url} (OpenAI-compatible: POST ${s.url}/chat/completions); Ctrl-C stops`);
  await new Promise<void>((resolve) => {
    const stop = () => void s.close().then(resolve);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
