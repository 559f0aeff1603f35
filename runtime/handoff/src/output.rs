//! One of berth's own output streams while a handed-off command's output
//! arrives: written through and flushed at once, so what the command
//! printed shows when it printed it; the full program's local path has the
//! same rule on its async writer (`runtime/src/cli/live_output.rs`).

use std::io::Write;

pub(crate) struct Stream<W> {
    writer: W,
    /// Cleared at the first failed write: a closed terminal is not the
    /// command's failure, and what follows is dropped rather than retried.
    open: bool,
}

impl<W: Write> Stream<W> {
    pub(crate) fn new(writer: W) -> Self {
        Stream { writer, open: true }
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) {
        if self.open {
            self.open = self.writer.write_all(bytes).is_ok() && self.writer.flush().is_ok();
        }
    }
}
