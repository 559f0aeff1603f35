-- berth's store, version 6: a person's request to cancel an executing
-- action (`berth cancel`), by whom. Written before the command is killed;
-- the process that records the action's end reads it in the same
-- transaction, so the action ends `cancelled`, never `failed`. Cleared when
-- the action is claimed to run again. NULL: no request.
ALTER TABLE proposed_actions ADD COLUMN cancel_requested_by TEXT;
