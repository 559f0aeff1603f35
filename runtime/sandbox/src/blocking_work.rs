//! Where berth's short blocking work runs: a store connection's open, a
//! berth's directories, the resident's socket, an exec's cgroups.
//!
//! A server runs many things at once, so such work goes to tokio's blocking
//! pool and the async threads stay free for the rest. A one-shot command
//! (`berth exec`) does one thing and exits, on a current-thread runtime:
//! there the trip costs more than the work. Its first trip starts a thread
//! (a stack, an allocator heap of its own and a C-library arena, about 130
//! page faults in all), and every trip wakes that thread and then wakes the
//! runtime's again. So such a process says once, as it starts, that it runs
//! one thing at a time ([`run_inline`]), and from then on the work runs on
//! the thread that asks.
//!
//! Only for work that waits on nothing the process itself does — the disk,
//! the kernel, another process — never on a task of its own runtime: run
//! inline, work that waited on such a task (a channel an async task drains)
//! would wait forever. Such work stays on `tokio::task::spawn_blocking`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

/// Set once by a process that runs one command and exits.
static INLINE: AtomicBool = AtomicBool::new(false);

/// From now on, [`spawn`] runs its work on the calling thread. For a
/// process that runs one command and exits (see the module docs).
pub fn run_inline() {
    INLINE.store(true, Ordering::Relaxed);
}

/// Runs `work` off the async threads (on tokio's blocking pool), or — in a
/// process that said [`run_inline`] — at once, on this thread. Its result
/// (or its panic, as an error) is the returned future's either way.
pub fn spawn<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> BlockingWork<T> {
    start(INLINE.load(Ordering::Relaxed), work)
}

fn start<T: Send + 'static>(
    inline: bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> BlockingWork<T> {
    match inline {
        true => {
            let done = std::panic::catch_unwind(AssertUnwindSafe(work))
                .map_err(|_| BlockingWorkError::Panicked);
            BlockingWork(Place::Done(Some(done)))
        }
        false => BlockingWork(Place::Pool(tokio::task::spawn_blocking(work))),
    }
}

/// Blocking work started by [`spawn`]: a future of its result.
#[derive(Debug)]
pub struct BlockingWork<T>(Place<T>);

#[derive(Debug)]
enum Place<T> {
    Pool(JoinHandle<T>),
    /// Run already; `None` once its result was taken.
    Done(Option<Result<T, BlockingWorkError>>),
}

// The result is moved out whole, never pinned in place.
impl<T> Unpin for BlockingWork<T> {}

impl<T> Future for BlockingWork<T> {
    type Output = Result<T, BlockingWorkError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            Place::Pool(handle) => Pin::new(handle)
                .poll(cx)
                .map(|joined| joined.map_err(BlockingWorkError::Pool)),
            Place::Done(done) => Poll::Ready(done.take().unwrap_or(Err(BlockingWorkError::Taken))),
        }
    }
}

/// Blocking work that did not complete.
#[derive(Debug, thiserror::Error)]
pub enum BlockingWorkError {
    /// On the blocking pool: it panicked, or the runtime shut down first.
    #[error(transparent)]
    Pool(#[from] tokio::task::JoinError),
    /// Run inline, it panicked.
    #[error("the work panicked")]
    Panicked,
    /// Its future was polled again after it gave its result.
    #[error("the work's result was taken already")]
    Taken,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_work_runs_before_start_returns_and_a_panic_is_an_error() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let asking = std::thread::current().id();
        let ran = std::sync::Arc::new(AtomicBool::new(false));
        let noted = std::sync::Arc::clone(&ran);
        let work = start(true, move || {
            noted.store(true, Ordering::Relaxed);
            std::thread::current().id()
        });
        assert!(ran.load(Ordering::Relaxed), "not run before start returned");
        assert_eq!(rt.block_on(work).unwrap(), asking);
        let panicked = rt.block_on(start(true, || -> u8 { panic!("inline work") }));
        assert!(matches!(panicked, Err(BlockingWorkError::Panicked)));
    }

    #[test]
    fn pool_work_runs_on_another_thread_and_a_panic_is_an_error() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let asking = std::thread::current().id();
        let ran_on = rt.block_on(async { start(false, || std::thread::current().id()).await });
        assert_ne!(ran_on.unwrap(), asking);
        let panicked = rt.block_on(async { start(false, || -> u8 { panic!("pool work") }).await });
        assert!(matches!(panicked, Err(BlockingWorkError::Pool(_))));
    }
}
