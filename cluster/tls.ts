/**
 * TLS to NATS: which files the connection uses (`--tls-ca`, `--tls-cert`, `--tls-key`, or
 * `HR1_NATS_TLS_CA`, `HR1_NATS_TLS_CERT`, `HR1_NATS_TLS_KEY`), checked before connecting, and
 * what a failed handshake means for the user.
 *
 * The rule: a `tls://` address, or any TLS file, means TLS is required. nats.js ignores the
 * scheme of a server URL, so without TLS options a `tls://` address would connect in plain text
 * to a server that offers none; here TLS options are always set then, and nats.js refuses a
 * server without TLS. TLS needs the CA that signed the server's certificate (`--tls-ca`); a
 * client certificate (`--tls-cert` with `--tls-key`) is needed when the server verifies clients.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { TlsOptions } from 'nats';
import { isTlsAddress, redactAddress, splitAddresses } from './address.ts';
import { ConnectionError } from './errors.ts';

/** The TLS files of a connection (paths to PEM files). */
export interface NatsTlsFiles {
  /** The CA certificate(s) that signed the server's certificate. */
  tlsCa?: string | undefined;
  /** This client's certificate, for servers that verify clients (`verify: true`). */
  tlsCert?: string | undefined;
  /** The private key of `tlsCert` (unencrypted PEM). */
  tlsKey?: string | undefined;
}

/** The TLS files named by `HR1_NATS_TLS_CA`, `HR1_NATS_TLS_CERT`, `HR1_NATS_TLS_KEY`. */
export function tlsFromEnv(env: NodeJS.ProcessEnv = process.env): NatsTlsFiles {
  return {
    tlsCa: env.HR1_NATS_TLS_CA || undefined,
    tlsCert: env.HR1_NATS_TLS_CERT || undefined,
    tlsKey: env.HR1_NATS_TLS_KEY || undefined,
  };
}

const OPTION = { tlsCa: '--tls-ca', tlsCert: '--tls-cert', tlsKey: '--tls-key' } as const;
const ENV = { tlsCa: 'HR1_NATS_TLS_CA', tlsCert: 'HR1_NATS_TLS_CERT', tlsKey: 'HR1_NATS_TLS_KEY' } as const;
const named = (k: keyof typeof OPTION) => `${OPTION[k]} (or ${ENV[k]})`;

function readPem(k: keyof typeof OPTION, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new ConnectionError('TLS_CONFIG', `${OPTION[k]} ${file}: cannot read it (${(e as Error).message}); pass a readable PEM file to ${named(k)}`, { cause: e, data: { option: OPTION[k], file } });
  }
}

function certOf(k: 'tlsCa' | 'tlsCert', file: string, pem: Buffer): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (e) {
    throw new ConnectionError('TLS_CONFIG', `${OPTION[k]} ${file}: not a PEM certificate (${(e as Error).message}); pass the certificate file (-----BEGIN CERTIFICATE-----) to ${named(k)}`, { cause: e, data: { option: OPTION[k], file } });
  }
}

function keyOf(file: string, pem: Buffer): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (e) {
    throw new ConnectionError('TLS_CONFIG', `--tls-key ${file}: not an unencrypted PEM private key (${(e as Error).message}); pass the key of --tls-cert to ${named('tlsKey')}`, { cause: e, data: { option: '--tls-key', file } });
  }
}

/**
 * The nats.js TLS options for `address` and the given files, or `undefined` for plain TCP (no
 * `tls://` server and no file). Throws {@link ConnectionError} `TLS_CONFIG` naming the option:
 * `tls://` (or a client certificate) without a CA, a certificate without its key or the other
 * way round, a file that cannot be read or parsed, a key that does not belong to the certificate.
 */
export function resolveTls(address: string, files: NatsTlsFiles): TlsOptions | undefined {
  const tlsServers = splitAddresses(address).filter(isTlsAddress);
  const { tlsCa, tlsCert, tlsKey } = files;
  if (!tlsServers.length && !tlsCa && !tlsCert && !tlsKey) return undefined;
  if (!tlsCa) {
    const why = tlsServers.length ? `the address ${redactAddress(tlsServers.join(','))} asks for TLS` : 'a client certificate was given';
    throw new ConnectionError('TLS_CONFIG', `${why} but no CA to check the server's certificate with; pass the CA certificate that signed it with ${named('tlsCa')} (hr1 never falls back to plain text)`, { data: { option: '--tls-ca' } });
  }
  if (!tlsCert !== !tlsKey) {
    const [have, miss] = tlsCert ? (['tlsCert', 'tlsKey'] as const) : (['tlsKey', 'tlsCert'] as const);
    throw new ConnectionError('TLS_CONFIG', `${OPTION[have]} was given without ${OPTION[miss]}; a client certificate needs both: pass ${named(miss)} too`, { data: { option: OPTION[miss] } });
  }
  certOf('tlsCa', tlsCa, readPem('tlsCa', tlsCa));
  const out: TlsOptions = { caFile: tlsCa };
  if (tlsCert && tlsKey) {
    const cert = certOf('tlsCert', tlsCert, readPem('tlsCert', tlsCert));
    const key = keyOf(tlsKey, readPem('tlsKey', tlsKey));
    if (!cert.checkPrivateKey(key)) throw new ConnectionError('TLS_CONFIG', `--tls-key ${tlsKey} is not the key of --tls-cert ${tlsCert}; pass the key the certificate was issued for`, { data: { option: '--tls-key', file: tlsKey } });
    out.certFile = tlsCert;
    out.keyFile = tlsKey;
  }
  return out;
}

// Node's certificate verification codes (tls.TLSSocket#authorizationError) and OpenSSL alerts
const VERIFY_CODES = /^(SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_[A-Z_]+|ERR_TLS_CERT_ALTNAME_INVALID|HOSTNAME_MISMATCH)$/;

const CLIENT_CERT_HINT = 'if the server verifies clients (verify: true), pass a certificate it trusts with --tls-cert and --tls-key (or HR1_NATS_TLS_CERT, HR1_NATS_TLS_KEY)';

/**
 * What a failed connection says about TLS, as the words after "NATS server at X", or
 * `undefined` when the failure is not about TLS. `tls`: the TLS options the connection used.
 */
export function tlsFailure(e: unknown, tls: TlsOptions | undefined): string | undefined {
  const err = e as { code?: unknown; message?: unknown } | null;
  const code = typeof err?.code === 'string' ? err.code : '';
  const message = typeof err?.message === 'string' ? err.message : String(e);
  if (VERIFY_CODES.test(code)) {
    const hint =
      code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code === 'HOSTNAME_MISMATCH'
        ? 'connect by a host name or IP the certificate lists (its subjectAltName)'
        : tls
          ? 'pass the CA that signed it with --tls-ca (or HR1_NATS_TLS_CA)'
          : 'the server requires TLS: pass the CA that signed its certificate with --tls-ca (or HR1_NATS_TLS_CA)';
    return `presented a TLS certificate that hr1 cannot verify (${code}: ${message}); ${hint}`;
  }
  if (code === 'SERVER_OPT_NA' && /tls/i.test(message)) {
    return "offers no TLS, and TLS was asked for (a tls:// address or --tls-* options); hr1 never falls back to plain text: use the server's TLS port, or a nats:// address without TLS options";
  }
  if (/^ERR_SSL_|^EPROTO$/.test(code) || /alert|handshake|certificate required/i.test(message)) {
    return `refused the TLS handshake (${code || 'TLS'}: ${message}); ${CLIENT_CERT_HINT}`;
  }
  // a server that verifies clients drops one without a certificate after the handshake: nats.js then waits for its timeout
  if (tls && !tls.certFile && (code === 'TIMEOUT' || code === 'ECONNRESET')) {
    return `did not complete the TLS connection (${code}) and no client certificate was given; ${CLIENT_CERT_HINT}`;
  }
  if (tls && code === 'ECONNRESET') return `closed the connection during the TLS handshake (${code}); ${CLIENT_CERT_HINT}`;
  return undefined;
}
