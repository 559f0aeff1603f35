//! berth's engine.
