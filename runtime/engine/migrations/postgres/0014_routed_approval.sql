-- SQLite's 0014: an approval that runs on another process (status
-- `approved`, `actions/route.rs`) keeps what the holder needs of the
-- decision in `approval` (JSON: `always`, `received_by`, `routed_to`).
ALTER TABLE proposed_actions ADD COLUMN approval TEXT;
