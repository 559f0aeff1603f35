-- berth's store, version 7: each fact stored once (issue 17: 3.8 KB per
-- action, the decision written three times).
--
-- proposed_actions is rebuilt (SQLite cannot drop a column's UNIQUE or NOT
-- NULL in place). The idempotency key is NULL when it is the action's own id
-- (an action proposed without a key): one unique index of every id, the
-- primary key's, instead of two; the key is read as COALESCE(key, id).
-- decision_at_proposal: the decision as it was proposed when a person's
-- approval replaced it (refused at approval), NULL otherwise; the
-- `proposed_action.created` event reads its decision from here or from
-- `decision` instead of holding a copy.
-- Every column earlier versions added is carried over (resolved_path: 4,
-- cancel_requested_by: 6); a later migration that adds one adds it here
-- only if it rebuilds the table again.
CREATE TABLE proposed_actions_v7 (
    id                   TEXT PRIMARY KEY,
    idempotency_key      TEXT,
    agent                TEXT NOT NULL REFERENCES agents (name),
    project              TEXT NOT NULL,
    task_id              TEXT,
    action_type          TEXT NOT NULL,
    action               TEXT NOT NULL,
    params               TEXT NOT NULL,
    decision             TEXT NOT NULL,
    verdict              TEXT NOT NULL,
    stage                TEXT NOT NULL,
    created_status       TEXT NOT NULL,
    status               TEXT NOT NULL,
    hold_reason          TEXT,
    proposer_kind        TEXT NOT NULL,
    proposer_id          TEXT NOT NULL,
    decided_by           TEXT,
    decided_at           BIGINT,
    executor             TEXT,
    result               TEXT,
    diagnostic           TEXT,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    resolved_path        TEXT,
    cancel_requested_by  TEXT,
    decision_at_proposal TEXT
);
INSERT INTO proposed_actions_v7 (
    id, idempotency_key, agent, project, task_id, action_type, action, params, decision, verdict,
    stage, created_status, status, hold_reason, proposer_kind, proposer_id, decided_by, decided_at,
    executor, result, diagnostic, created_at, updated_at, resolved_path, cancel_requested_by
)
SELECT
    id, NULLIF(idempotency_key, id), agent, project, task_id, action_type, action, params, decision,
    verdict, stage, created_status, status, hold_reason, proposer_kind, proposer_id, decided_by,
    decided_at, executor, result, diagnostic, created_at, updated_at, resolved_path,
    cancel_requested_by
FROM proposed_actions;
DROP TABLE proposed_actions;
ALTER TABLE proposed_actions_v7 RENAME TO proposed_actions;
CREATE INDEX proposed_actions_status ON proposed_actions (status, created_at);
CREATE INDEX proposed_actions_agent ON proposed_actions (agent, created_at);
CREATE UNIQUE INDEX proposed_actions_key ON proposed_actions (idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- The outbox holds what is still to be delivered, by reference: the event's
-- id. A consumer reads the fact from the log, and the row is deleted once
-- delivered (by whichever process delivers). Rows processed before this
-- version are gone with them; those not yet processed are kept.
CREATE TABLE outbox_v7 (
    event_id INTEGER PRIMARY KEY REFERENCES session_events (id)
);
INSERT INTO outbox_v7 (event_id)
SELECT DISTINCT e.id
FROM outbox o JOIN session_events e ON e.id = json_extract(o.payload, '$.event_id')
WHERE o.processed_at IS NULL;
DROP TABLE outbox;
ALTER TABLE outbox_v7 RENAME TO outbox;
