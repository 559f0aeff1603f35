-- berth's store, version 1.
--
-- Portable DDL kept close to what Postgres accepts: ids are TEXT (random uuids)
-- except the two append-only logs, whose INTEGER PRIMARY KEY is an ordered
-- cursor (Postgres: BIGINT GENERATED ALWAYS AS IDENTITY); timestamps are
-- milliseconds since the Unix epoch (BIGINT); JSON is TEXT.

CREATE TABLE projects (
    name        TEXT PRIMARY KEY,
    source      TEXT NOT NULL,
    base_branch TEXT NOT NULL,
    forge       TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

-- One row per agent: its durable implementation, its loop state and its berth.
CREATE TABLE agents (
    name        TEXT PRIMARY KEY,
    project     TEXT NOT NULL REFERENCES projects (name),
    impl        TEXT NOT NULL DEFAULT 'real',
    status      TEXT NOT NULL DEFAULT 'idle',
    task_id     TEXT,
    berth_mode  TEXT,
    worktree    TEXT,
    branch      TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE TABLE autonomy (
    agent       TEXT NOT NULL REFERENCES agents (name),
    action_type TEXT NOT NULL,
    mode        TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (agent, action_type)
);

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL REFERENCES projects (name),
    title       TEXT NOT NULL,
    status      TEXT NOT NULL,
    agent       TEXT,
    diagnosis   TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX tasks_claimable ON tasks (project, status, created_at);

CREATE TABLE proposed_actions (
    id              TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    agent           TEXT NOT NULL REFERENCES agents (name),
    project         TEXT NOT NULL,
    task_id         TEXT,
    action_type     TEXT NOT NULL,
    action          TEXT NOT NULL,
    params          TEXT NOT NULL,
    decision        TEXT NOT NULL,
    verdict         TEXT NOT NULL,
    stage           TEXT NOT NULL,
    created_status  TEXT NOT NULL,
    status          TEXT NOT NULL,
    hold_reason     TEXT,
    proposer_kind   TEXT NOT NULL,
    proposer_id     TEXT NOT NULL,
    decided_by      TEXT,
    decided_at      BIGINT,
    executor        TEXT,
    result          TEXT,
    diagnostic      TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX proposed_actions_status ON proposed_actions (status, created_at);
CREATE INDEX proposed_actions_agent ON proposed_actions (agent, created_at);

-- The log: append-only, read by UIs and metrics.
CREATE TABLE session_events (
    id          INTEGER PRIMARY KEY,
    at          BIGINT NOT NULL,
    type        TEXT NOT NULL,
    actor_kind  TEXT NOT NULL,
    actor_id    TEXT NOT NULL,
    project     TEXT,
    agent       TEXT,
    task_id     TEXT,
    action_id   TEXT,
    payload     TEXT NOT NULL
);
CREATE INDEX session_events_type ON session_events (type, id);
CREATE INDEX session_events_agent ON session_events (agent, id);

-- The transport: the same facts, drained by consumers, pruned once processed.
CREATE TABLE outbox (
    id             INTEGER PRIMARY KEY,
    at             BIGINT NOT NULL,
    type           TEXT NOT NULL,
    aggregate_type TEXT NOT NULL,
    aggregate_id   TEXT NOT NULL,
    payload        TEXT NOT NULL,
    processed_at   BIGINT
);
CREATE INDEX outbox_pending ON outbox (processed_at, id);

CREATE TABLE prs (
    id           TEXT PRIMARY KEY,
    number       BIGINT NOT NULL UNIQUE,
    project      TEXT NOT NULL REFERENCES projects (name),
    agent        TEXT NOT NULL,
    task_id      TEXT,
    action_id    TEXT NOT NULL UNIQUE,
    branch       TEXT NOT NULL,
    base         TEXT NOT NULL,
    head         TEXT NOT NULL,
    title        TEXT NOT NULL,
    status       TEXT NOT NULL,
    merge_commit TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
