-- berth's store, version 12: which process drives each agent. A driver
-- (`berth serve`) takes an agent's lease before a pass and renews it while
-- it lives; another driver takes it over only after `until_ms`, with the
-- next `token` (a fencing token: the old holder's effects check it and
-- stop). One row per agent that was ever driven under a lease.
CREATE TABLE agent_leases (
    agent      TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    token      BIGINT NOT NULL,
    until_ms   BIGINT NOT NULL,
    renewed_at BIGINT NOT NULL
);
