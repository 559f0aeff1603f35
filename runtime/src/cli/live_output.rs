//! A command's output printed as it arrives (`berth exec`, `berth approve`).
//!
//! The engine streams output through a bounded sink
//! ([`berth_sandbox::output_channel`]); the printer takes the next chunk only
//! once the previous one is written to berth's own stdout or stderr. A reader
//! that stops reading — a paused pipe, a stopped terminal — so stops the
//! command at its source (its writes wait), and berth holds a few chunks at
//! most, however much the command prints. Behind an unbounded channel it had
//! held 1.47 GB in 12 s.

use berth_sandbox::{OutputChunk, OutputSink};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::task::JoinHandle;

/// The task writing a command's output; [`Printer::finish`] waits for it.
pub(super) struct Printer {
    task: JoinHandle<()>,
}

/// A sink for the engine and the printer that empties it.
pub(super) fn printer() -> (OutputSink, Printer) {
    let (sink, mut chunks) = berth_sandbox::output_channel();
    let task = tokio::spawn(async move {
        let (mut stdout, mut stderr) = (
            Stream::new(tokio::io::stdout()),
            Stream::new(tokio::io::stderr()),
        );
        while let Some(chunk) = chunks.recv().await {
            match chunk {
                OutputChunk::Stdout(bytes) => stdout.write(&bytes).await,
                OutputChunk::Stderr(bytes) => stderr.write(&bytes).await,
            }
        }
    });
    (sink, Printer { task })
}

impl Printer {
    /// Returns once everything sent has been written (the sink is closed
    /// when the exec returns).
    pub(super) async fn finish(self) {
        let _ = self.task.await;
    }
}

/// One of berth's own output streams (a handed-off exec's are
/// `berth_handoff`'s: blocking, with the same rule).
struct Stream<W> {
    writer: W,
    /// Cleared at the first failed write: a closed terminal is not the
    /// command's failure, and what follows is dropped rather than retried.
    open: bool,
}

impl<W: AsyncWrite + Unpin> Stream<W> {
    fn new(writer: W) -> Self {
        Stream { writer, open: true }
    }

    async fn write(&mut self, bytes: &[u8]) {
        if self.open {
            self.open =
                self.writer.write_all(bytes).await.is_ok() && self.writer.flush().await.is_ok();
        }
    }
}
