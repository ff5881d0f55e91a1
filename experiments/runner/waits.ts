/**
 * How long an experiment's rollout keeps re-sending a chunk whose target actor was lost (its node
 * died, or stalled past the cluster's dead-after limit and was counted as lost), waiting for the
 * replica to be restarted elsewhere, before the run stops with NO_WORKERS: as `hr1 train`'s
 * `workers.waitMs`. A loaded node can miss heartbeats for a few seconds; the five quick re-sends
 * alone (about 3 s of back-off) can run out before the lost replica is back.
 */
export const LOST_ACTOR_WAIT_MS = 60_000;
