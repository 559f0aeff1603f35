//! Identifiers and time, the two things every row carries.
//!
//! Ids are random (uuid v4, 32 hex digits) so that any prefix a person types
//! is as likely to be unique as any other; order comes from timestamps and, for
//! the two logs, from their integer cursor. Time is milliseconds since the
//! Unix epoch: portable across SQLite and Postgres and cheap to compare.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A new random id.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The short form shown to people: the first 8 hex digits.
pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Now, in milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `YYYY-MM-DD` (midnight UTC) or an RFC 3339 time in UTC (`…Z`, or no
/// offset), as a person gives it for `what`: milliseconds since the epoch.
pub fn parse_time_ms(what: &'static str, text: &str) -> crate::Result<i64> {
    let invalid = |why: &str| crate::EngineError::Invalid {
        what,
        value: text.to_string(),
        why: why.to_string(),
    };
    let full = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.to_string()
    };
    let at = humantime::parse_rfc3339_weak(&full)
        .map_err(|_| invalid("not YYYY-MM-DD nor an RFC 3339 time in UTC"))?;
    let ms = at
        .duration_since(UNIX_EPOCH)
        .map_err(|_| invalid("before 1970"))?
        .as_millis();
    i64::try_from(ms).map_err(|_| invalid("out of range"))
}

/// RFC 3339 (UTC, milliseconds) for a stored timestamp.
pub fn rfc3339(ms: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(t).to_string()
}
