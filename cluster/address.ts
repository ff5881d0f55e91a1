/**
 * NATS addresses as the user writes them: `nats://host:port`, `tls://host:port`, `host:port`,
 * several separated by commas. Credentials never travel inside one: an address with user info
 * (`nats://user:pass@host`) is refused before anything connects, and what an error message
 * shows of an address is {@link redactAddress}'s form.
 */
import { ConnectionError } from './errors.ts';

/** The servers of a comma-separated address list, trimmed, empty parts dropped. */
export function splitAddresses(address: string): string[] {
  return address.split(',').map((s) => s.trim()).filter(Boolean);
}

// `scheme://userinfo@` or a scheme-less `userinfo@host`
const USERINFO = /^((?:[a-z][a-z0-9+.-]*:\/\/)?)([^@/\s]*)@/i;

/** Whether one server address carries user info (`user:pass@`, `token@`). */
export function hasCredentials(server: string): boolean {
  return USERINFO.test(server.trim());
}

/** The address with any user info replaced by `***`: `nats://u:secret@h:4222` → `nats://***@h:4222`. */
export function redactAddress(address: string): string {
  return splitAddresses(address).map((s) => s.replace(USERINFO, '$1***@')).join(',');
}

/** Whether a server address asks for TLS by its scheme. */
export function isTlsAddress(server: string): boolean {
  return /^tls:\/\//i.test(server.trim());
}

/**
 * Refuse credentials inside the address: they would show in `ps`, shell history, logs and error
 * messages. The error shows the address redacted, never the password.
 */
export function refuseCredentialsInUrl(address: string): void {
  if (!splitAddresses(address).some(hasCredentials)) return;
  throw new ConnectionError(
    'CREDENTIALS_IN_URL',
    `the NATS address ${redactAddress(address)} carries credentials in the URL; give the bare address (e.g. nats://host:4222) and pass the credentials with --user/--pass or --token (or HR1_NATS_USER/HR1_NATS_PASS, HR1_NATS_TOKEN), which stay out of ps, shell history and logs`,
  );
}
