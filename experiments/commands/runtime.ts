/**
 * The cluster a command runs on: the connection options every cluster command takes
 * (`--address`, `--cluster`, credentials, TLS files, `--in-process`) and one way to start it from them.
 */
import { init, type Runtime } from '../../cluster/init.ts';
import { formatLogRecord } from '../../cluster/logs.ts';

/** The connection options of a cluster command (see addClusterOptions in experiments/cli/options.ts). */
export interface ClusterCliOptions {
  address?: string | undefined;
  cluster: string;
  user?: string | undefined;
  pass?: string | undefined;
  token?: string | undefined;
  creds?: string | undefined;
  /** `--tls-ca`: the CA that signed the server's certificate (PEM). */
  tlsCa?: string | undefined;
  /** `--tls-cert`: this client's certificate (PEM), with `tlsKey`. */
  tlsCert?: string | undefined;
  /** `--tls-key`: the private key of `tlsCert` (PEM). */
  tlsKey?: string | undefined;
  inProcess?: boolean | undefined;
}

/** The credentials and TLS files of the options (undefined = not given: the HR1_NATS_* variables decide). */
export function authOf(o: Pick<ClusterCliOptions, 'user' | 'pass' | 'token' | 'creds' | 'tlsCa' | 'tlsCert' | 'tlsKey'>) {
  return { user: o.user, pass: o.pass, token: o.token, creds: o.creds, tlsCa: o.tlsCa, tlsCert: o.tlsCert, tlsKey: o.tlsKey };
}

/**
 * Start (or join) the cluster the options name: `address` joins an existing cluster; without it
 * an embedded one is started — or the in-process transport when `inProcess` is set, or when the
 * command's default is in-process (`defaultInProcess`, e.g. `hr1 packet show`).
 */
export async function startCluster(o: Partial<ClusterCliOptions>, { defaultInProcess = false } = {}): Promise<Runtime> {
  const rt = await init({
    ...authOf(o),
    ...(o.cluster !== undefined ? { cluster: o.cluster } : {}),
    ...(o.address ? { address: o.address } : {}),
    inProcess: o.inProcess ?? defaultInProcess,
  });
  // actors' warnings and errors on other processes' nodes show on stderr (a node here printed its own)
  rt.cluster.onLog((r) => process.stderr.write(`${formatLogRecord(r)}\n`), { level: 'warn', remoteOnly: true });
  return rt;
}

/** Run `fn` on the cluster the options name, and shut that cluster down whatever happens. */
export async function withCluster<T>(o: Partial<ClusterCliOptions>, fn: (rt: Runtime) => Promise<T>, opts: { defaultInProcess?: boolean } = {}): Promise<T> {
  const rt = await startCluster(o, opts);
  try {
    return await fn(rt);
  } finally {
    await rt.shutdown();
  }
}
