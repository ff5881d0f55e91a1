/**
 * Helpers of the TLS, permissions and signals tests: a throw-away PKI made with openssl, the
 * processes alive on the machine, polling.
 */
import { descendantPids } from '../../cluster/signals.ts';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const hasOpenssl = spawnSync('sh', ['-c', 'command -v openssl']).status === 0;

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
}

export interface TestPki {
  dir: string;
  /** the CA certificate */
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** a second CA that signed nothing here (a wrong --tls-ca) */
  otherCa: string;
}

/** A CA, a server certificate for 127.0.0.1/localhost and a client certificate (EC P-256, valid 2 days). */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'hr1-pki-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const ca = (name: string) =>
    openssl(['req', '-x509', ...ec, '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=hr1 test ${name}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  ca('ca');
  ca('other-ca');
  const leaf = (name: string, cn: string, ext: string) => {
    openssl(['req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`], dir);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`], dir);
  };
  leaf('server', 'localhost', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'hr1-client', 'extendedKeyUsage=clientAuth\n');
  const p = (f: string) => join(dir, f);
  return { dir, ca: p('ca.pem'), serverCert: p('server.pem'), serverKey: p('server.key'), clientCert: p('client.pem'), clientKey: p('client.key'), otherCa: p('other-ca.pem') };
}

/** nats-server `tls { … }` block for the PKI; `verify`: clients must present a certificate the CA signed. */
export function tlsServerConfig(pki: TestPki, verify: boolean): string {
  return `tls {\n  cert_file: "${pki.serverCert}"\n  key_file: "${pki.serverKey}"\n  ca_file: "${pki.ca}"\n  verify: ${verify}\n  timeout: 5\n}\n`;
}

/** `pid args` of every live process whose command line contains `needle` (ps -eo pid,args). */
export function processesMentioning(needle: string): string[] {
  const r = spawnSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.includes(needle) && !/^\d+\s+Z/.test(l) && !l.includes('ps -eo'))
    .map((l) => l.replace(/^(\d+)\s+\S+\s+/, '$1 '));
}

/** The live descendants of `pid` (children, their children, …), zombies left out. */
export function descendantsOf(pid: number): number[] {
  return descendantPids(pid);
}

/** Whether a process with that pid is alive (not a zombie). */
export function alive(pid: number): boolean {
  const r = spawnSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' });
  const st = r.stdout.trim();
  return r.status === 0 && st !== '' && !st.startsWith('Z');
}

/** Poll `check` until it returns true, at most `ms`; returns its last answer. */
export async function pollUntil(check: () => boolean | Promise<boolean>, ms: number, everyMs = 100): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
