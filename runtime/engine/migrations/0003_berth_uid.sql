-- berth's store, version 3: each berth's own uid (ENFORCEMENT.md, "The
-- berth's uid"). NULL: none recorded yet — a berth made before this version
-- keeps the uid it was made with (the owner of its agent repository, or
-- `sandbox.uid`), recorded at its next `berth up`.
ALTER TABLE agents ADD COLUMN uid BIGINT;
