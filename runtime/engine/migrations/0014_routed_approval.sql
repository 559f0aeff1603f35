-- berth's store, version 14: an approval that runs on another process. A
-- person's approval received by a process that does not hold the agent's
-- lease (a worker of a fleet, `berth approve` beside it) is recorded as
-- status `approved`, and executed by the worker holding the agent
-- (`actions/route.rs`). `approval` is what the holder needs of the decision
-- besides who made it and when (`decided_by`, `decided_at`): JSON with
-- `always` (add the allow rules), `received_by` (who took the decision)
-- and `routed_to` (the worker that held the agent then, or null).
ALTER TABLE proposed_actions ADD COLUMN approval TEXT;
