import { readFileSync } from 'node:fs';
import { connect, createInbox, credsAuthenticator, type ConnectionOptions, type NatsConnection, type NatsError } from 'nats';
import { BusClosedError, BusDisconnectedError, BusNoRespondersError, BusTimeoutError, collectReplies, type Bus, type BusMsg, type BusStatus, type BusSubscription } from './bus.ts';
import { ConnectionError } from './errors.ts';
import { PendingRequests } from './pending.ts';
import { redactAddress, refuseCredentialsInUrl, splitAddresses } from './address.ts';
import { resolveTls, tlsFailure, tlsFromEnv, type NatsTlsFiles } from './tls.ts';

/**
 * How to get into a secured NATS cluster: credentials and TLS files; every command passes them
 * through (flags `--user/--pass`, `--token`, `--creds`, `--tls-ca/--tls-cert/--tls-key`, or the
 * `HR1_NATS_*` variables, see {@link authFromEnv}).
 */
export interface NatsAuth extends NatsTlsFiles {
  user?: string | undefined;
  pass?: string | undefined;
  token?: string | undefined;
  /** Path to a `.creds` file (JWT + nkey seed). */
  creds?: string | undefined;
}

export interface NatsBusOptions extends NatsAuth {
  /**
   * `nats://host:port` or `tls://host:port`, or several separated by commas. `tls://` (or any TLS
   * file) makes TLS required (cluster/tls.ts). No credentials inside: `user:pass@` is refused.
   */
  address: string;
  /** Connection name shown by the server's monitoring. */
  name?: string;
  /** @default 250 */
  reconnectWaitMs?: number;
}

/**
 * Read credentials from `HR1_NATS_USER`, `HR1_NATS_PASS`, `HR1_NATS_TOKEN`, `HR1_NATS_CREDS`, and
 * TLS files from `HR1_NATS_TLS_CA`, `HR1_NATS_TLS_CERT`, `HR1_NATS_TLS_KEY`.
 */
export function authFromEnv(env: NodeJS.ProcessEnv = process.env): NatsAuth {
  return {
    user: env.HR1_NATS_USER || undefined,
    pass: env.HR1_NATS_PASS || undefined,
    token: env.HR1_NATS_TOKEN || undefined,
    creds: env.HR1_NATS_CREDS || undefined,
    ...tlsFromEnv(env),
  };
}

const CREDENTIAL_HELP = 'pass --user/--pass, --token or --creds (or HR1_NATS_USER/HR1_NATS_PASS, HR1_NATS_TOKEN, HR1_NATS_CREDS)';

function mapRequestError(e: unknown, subject: string, timeoutMs: number): Error {
  const code = (e as NatsError)?.code;
  if (code === '503') return new BusNoRespondersError(subject);
  if (code === 'TIMEOUT') return new BusTimeoutError(subject, timeoutMs);
  if (code === 'CONNECTION_CLOSED' || code === 'CONNECTION_DRAINING' || code === 'DISCONNECT') return new BusClosedError(subject, String(code));
  return e instanceof Error ? e : new Error(String(e));
}

/** The bus over a real NATS connection (nats.js). Reconnects forever; subscriptions survive it. */
export class NatsBus implements Bus {
  readonly kind = 'nats' as const;
  private statusCbs: ((s: BusStatus) => void)[] = [];
  // our own request mux: one inbox subscription, a map of pending replies, one coarse timer.
  // nats.js's request() builds an Error per call (even with noAsyncTraces) and a timer per call.
  private readonly inbox: string;
  private pending = new PendingRequests();
  // nats.js drops what is published while disconnected (each reconnect attempt resets its outbound
  // buffer), so a request made then would be lost without a trace: it waits here for the reconnect
  private up = true;
  private deferred: (() => void)[] = [];

  private constructor(readonly nc: NatsConnection, readonly address: string) {
    this.inbox = createInbox();
    const cut = this.inbox.length + 1;
    nc.subscribe(`${this.inbox}.*`, {
      callback: (err, m) => {
        if (err) return;
        const id = Number(m.subject.slice(cut));
        // the server answers a request nobody listens to with a 503 status message
        if (m.headers && m.headers.code === 503) this.pending.settle(id, new BusNoRespondersError(this.pending.subjectOf(id) ?? m.subject));
        else this.pending.settle(id, m.data);
      },
    });
    void (async () => {
      for await (const s of nc.status()) {
        const t = String(s.type);
        // a request in flight when the connection drops may never get its reply (the responder
        // may answer before our inbox is resubscribed, or the request died with the socket): fail
        // them all now, retryable, rather than let each wait for its timeout. Requests made while
        // disconnected are held (see request()) and sent after the reconnect.
        if (t === 'disconnect') {
          this.up = false;
          this.pending.failAll((subject) => new BusDisconnectedError(subject, this.address));
        }
        if (t === 'reconnect') {
          this.up = true;
          const held = this.deferred;
          this.deferred = [];
          for (const send of held) send();
        }
        if (t === 'disconnect' || t === 'reconnect') for (const cb of this.statusCbs) cb(t);
      }
    })();
    void nc.closed().then(() => {
      for (const cb of this.statusCbs) cb('closed');
    });
  }

  /**
   * Connect; a refused or unauthenticated connection, a TLS problem or credentials inside the
   * address become a typed {@link ConnectionError} whose message never shows a password.
   */
  static async connect(opts: NatsBusOptions): Promise<NatsBus> {
    refuseCredentialsInUrl(opts.address);
    const servers = splitAddresses(opts.address);
    const shown = redactAddress(opts.address);
    const tls = resolveTls(opts.address, opts);
    const co: ConnectionOptions = {
      servers,
      name: opts.name ?? 'hr1',
      maxReconnectAttempts: -1,
      reconnectTimeWait: opts.reconnectWaitMs ?? 250,
      pingInterval: 5_000,
      // no Error (stack capture) per request: it was a third of the client's CPU per call
      noAsyncTraces: true,
    };
    // set for every tls:// address: nats.js ignores the scheme, and with TLS options it refuses a server without TLS
    if (tls) co.tls = tls;
    if (opts.user !== undefined) co.user = opts.user;
    if (opts.pass !== undefined) co.pass = opts.pass;
    if (opts.token !== undefined) co.token = opts.token;
    if (opts.creds !== undefined) {
      let text: Uint8Array;
      try {
        text = readFileSync(opts.creds);
      } catch (e) {
        throw new ConnectionError('AUTH_REFUSED', `cannot read NATS creds file ${opts.creds}: ${(e as Error).message}; pass --creds with a readable .creds file`, { cause: e });
      }
      co.authenticator = credsAuthenticator(text);
    }
    try {
      const nc = await connect(co);
      return new NatsBus(nc, servers.join(','));
    } catch (e) {
      const code = (e as NatsError)?.code;
      if (code === 'AUTHORIZATION_VIOLATION' || code === 'BAD_AUTHENTICATION' || code === 'AUTHENTICATION_EXPIRED') {
        const given = [opts.user, opts.pass, opts.token, opts.creds].some((v) => v !== undefined && v !== '');
        throw new ConnectionError(
          'AUTH_REFUSED',
          given ? `NATS server at ${shown} refused the credentials (${code}); check them: ${CREDENTIAL_HELP}` : `NATS server at ${shown} requires credentials; ${CREDENTIAL_HELP}`,
          { cause: e, data: { credentialsGiven: given } },
        );
      }
      const tlsWhy = tlsFailure(e, tls);
      if (tlsWhy) throw new ConnectionError('TLS_REFUSED', `NATS server at ${shown} ${tlsWhy}`, { cause: e });
      throw new ConnectionError('CONNECTION_REFUSED', `cannot connect to NATS at ${shown} (${code ?? (e as Error).message}); is nats-server running there? Without --address, hr1 starts a private one`, { cause: e });
    }
  }

  publish(subject: string, data: Uint8Array): void {
    this.nc.publish(subject, data);
  }

  request(subject: string, data: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    return this.pending.open(
      subject,
      timeoutMs,
      (id) => {
        if (this.up) this.nc.publish(subject, data, { reply: `${this.inbox}.${id}` });
        else {
          // sent on reconnect, unless it timed out or failed meanwhile
          this.deferred.push(() => {
            if (this.pending.subjectOf(id) !== undefined) this.nc.publish(subject, data, { reply: `${this.inbox}.${id}` });
          });
        }
      },
      (e) => mapRequestError(e, subject, timeoutMs),
    );
  }

  failPending(prefix: string, err: (subject: string) => Error): number {
    return this.pending.failPending(prefix, err);
  }

  /** nats.js's own request(), kept for the benchmark's raw baseline. */
  async natsRequest(subject: string, data: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    try {
      const m = await this.nc.request(subject, data, { timeout: timeoutMs });
      return m.data;
    } catch (e) {
      throw mapRequestError(e, subject, timeoutMs);
    }
  }

  subscribe(subject: string, handler: (msg: BusMsg) => void, opts: { queue?: string } = {}): BusSubscription {
    const sub = this.nc.subscribe(subject, {
      ...(opts.queue !== undefined ? { queue: opts.queue } : {}),
      callback: (err, m) => {
        if (err) return;
        handler({
          subject: m.subject,
          data: m.data,
          respond: (d) => {
            if (m.reply) m.respond(d);
          },
        });
      },
    });
    return { unsubscribe: () => sub.unsubscribe() };
  }

  gather(subject: string, data: Uint8Array, windowMs: number, expected = Infinity): Promise<Uint8Array[]> {
    const inbox = createInbox();
    let sub: { unsubscribe(): void } | undefined;
    const c = collectReplies(windowMs, expected, () => sub?.unsubscribe());
    try {
      sub = this.nc.subscribe(inbox, { callback: (err, m) => { if (!err) c.add(m.data); } });
      this.nc.publish(subject, data, { reply: inbox });
    } catch {
      // the connection is closing or closed: nobody can answer (the window's timer ends the gather with no replies)
    }
    return c.done;
  }

  async flush(): Promise<void> {
    await this.nc.flush();
  }

  onStatus(cb: (s: BusStatus) => void): void {
    this.statusCbs.push(cb);
  }

  async close(): Promise<void> {
    this.pending.close('the connection was closed');
    if (this.nc.isClosed()) return;
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close();
    }
  }
}
