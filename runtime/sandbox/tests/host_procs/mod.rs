//! Finding a runner exec's processes from the host. Each exec has its own PID
//! namespace, so a pid it prints means nothing outside: tests start
//! `sleep <marker>` with a unique marker (`1000.<n>`, still a valid duration)
//! and look for that argument in `/proc/*/cmdline`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A `sleep` duration no other process on the host uses.
pub fn marker() -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("1000.{}{:05}{:03}", std::process::id(), nanos % 100_000, n)
}

fn zombie(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).map_or(true, |status| {
        status
            .lines()
            .any(|l| l.starts_with("State:") && (l.contains('Z') || l.contains('X')))
    })
}

/// Live (not zombie) host pids whose argv holds `marker`.
pub fn marked(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == marker.as_bytes())
            && !zombie(pid)
        {
            found.push(pid.parse().unwrap());
        }
    }
    found
}

/// Waits (bounded) until no process carries `marker`; true if none does.
/// Kills survivors before returning false, so a failing test leaves nothing.
pub async fn gone_marked(marker: &str) -> bool {
    for _ in 0..100 {
        if marked(marker).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for pid in marked(marker) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    false
}

/// Waits (bounded) until some process carries `marker`.
pub async fn appears(marker: &str) -> bool {
    for _ in 0..300 {
        if !marked(marker).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
