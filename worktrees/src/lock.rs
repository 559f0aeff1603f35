//! Writer locks: one per repository, across threads and across processes.
//!
//! Every `berth` process may perform any step (the CLI, `berth serve`), so two
//! writers of one repository can be two threads or two processes. A writer first
//! takes an in-process lock keyed by the lock file's path (threads queue on a
//! condition variable instead of each holding a file descriptor in `flock`), then
//! an exclusive `flock(2)` on the lock file, which the kernel drops when the
//! process dies — a crash never leaves a stale berth lock behind.
//!
//! Lock files live under `<state>/locks/`, outside anything an agent can write,
//! so an agent cannot hold them. Order, when both are needed: the agent's lock,
//! then the forge's.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use rustix::fs::FlockOperation;

use crate::error::{Error, Op, Result};

static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static RELEASED: Condvar = Condvar::new();

fn held() -> MutexGuard<'static, Vec<PathBuf>> {
    // The set only holds paths; a panic elsewhere cannot leave it inconsistent.
    HELD.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A held writer lock; released on drop.
#[derive(Debug)]
pub(crate) struct RepoLock {
    path: PathBuf,
    // Closing the file releases the flock.
    _file: File,
}

impl RepoLock {
    /// Waits for the lock at `path` (creating the file and its directory).
    pub(crate) fn acquire(path: &Path) -> Result<RepoLock> {
        {
            let mut set = held();
            while set.iter().any(|p| p == path) {
                set = RELEASED.wait(set).unwrap_or_else(PoisonError::into_inner);
            }
            set.push(path.to_path_buf());
        }
        let file = match open_and_flock(path, false) {
            Ok(Some(file)) => file,
            // A blocking flock does not report "busy"; keep the type honest.
            Ok(None) => {
                release(path);
                return Err(Error::Io {
                    op: Op::Lock,
                    path: path.to_path_buf(),
                    source: std::io::Error::new(std::io::ErrorKind::WouldBlock, "lock is busy"),
                });
            }
            Err(e) => {
                release(path);
                return Err(e);
            }
        };
        Ok(RepoLock {
            path: path.to_path_buf(),
            _file: file,
        })
    }

    /// Takes the lock at `path` if nobody holds it; `None` when busy.
    pub(crate) fn try_acquire(path: &Path) -> Result<Option<RepoLock>> {
        {
            let mut set = held();
            if set.iter().any(|p| p == path) {
                return Ok(None);
            }
            set.push(path.to_path_buf());
        }
        match open_and_flock(path, true) {
            Ok(Some(file)) => Ok(Some(RepoLock {
                path: path.to_path_buf(),
                _file: file,
            })),
            Ok(None) => {
                release(path);
                Ok(None)
            }
            Err(e) => {
                release(path);
                Err(e)
            }
        }
    }
}

impl Drop for RepoLock {
    fn drop(&mut self) {
        release(&self.path);
    }
}

fn release(path: &Path) {
    let mut set = held();
    set.retain(|p| p != path);
    drop(set);
    RELEASED.notify_all();
}

fn open_and_flock(path: &Path, nonblocking: bool) -> Result<Option<File>> {
    let lock_err = |source| Error::Io {
        op: Op::Lock,
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| Error::Io {
            op: Op::Lock,
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(lock_err)?;
    let op = if nonblocking {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::LockExclusive
    };
    loop {
        match rustix::fs::flock(&file, op) {
            Ok(()) => return Ok(Some(file)),
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::WOULDBLOCK) if nonblocking => return Ok(None),
            Err(e) => return Err(lock_err(e.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn threads_are_serialised_per_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locks/r.lock");
        let inside = Arc::new(AtomicUsize::new(0));
        let max = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (path, inside, max) = (path.clone(), inside.clone(), max.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let _g = RepoLock::acquire(&path).unwrap();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        max.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(max.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn try_acquire_reports_busy_in_process_and_across_descriptors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.lock");
        let held = RepoLock::acquire(&path).unwrap();
        assert!(RepoLock::try_acquire(&path).unwrap().is_none());
        drop(held);
        assert!(RepoLock::try_acquire(&path).unwrap().is_some());

        // Another open file description (as another process would have) holding
        // the flock makes the lock busy too.
        let other = File::open(&path).unwrap();
        rustix::fs::flock(&other, FlockOperation::LockExclusive).unwrap();
        assert!(RepoLock::try_acquire(&path).unwrap().is_none());
        drop(other);
        assert!(RepoLock::try_acquire(&path).unwrap().is_some());
    }
}
