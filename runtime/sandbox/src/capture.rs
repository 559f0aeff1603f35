//! Captured output: the tail of a stream up to a cap, and how much there was.
//!
//! An agent reads the end of a failing build, not its first megabyte, so when a
//! stream exceeds the cap the *tail* is kept and the truncation is reported with
//! the stream's total size. Memory stays bounded by the cap however much a
//! command prints.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

use crate::exec::{Output, OutputChunk, OutputSink};

/// The last `cap` bytes of a stream, and its total length.
#[derive(Debug, Clone)]
pub struct TailBuffer {
    cap: usize,
    kept: VecDeque<u8>,
    total: u64,
}

impl TailBuffer {
    pub fn new(cap: usize) -> Self {
        TailBuffer {
            cap,
            // Grows with the stream; a large cap costs nothing for small output.
            kept: VecDeque::with_capacity(cap.min(64 * 1024)),
            total: 0,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if chunk.len() >= self.cap {
            self.kept.clear();
            self.kept.extend(&chunk[chunk.len() - self.cap..]);
            return;
        }
        let overflow = (self.kept.len() + chunk.len()).saturating_sub(self.cap);
        self.kept.drain(..overflow);
        self.kept.extend(chunk);
    }

    /// Bytes seen so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn finish(self) -> Output {
        let bytes: Vec<u8> = self.kept.into();
        Output {
            truncated: self.total > bytes.len() as u64,
            total: self.total,
            bytes,
        }
    }
}

/// Which stream a pipe carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn chunk(self, bytes: Vec<u8>) -> OutputChunk {
        match self {
            Stream::Stdout => OutputChunk::Stdout(bytes),
            Stream::Stderr => OutputChunk::Stderr(bytes),
        }
    }
}

/// Reads `pipe` to its end (or until `stop` turns true), forwarding each chunk
/// to `sink` and keeping the tail. `stop` exists because a background process
/// that escaped the kill may hold the pipe open forever: the exec must return
/// regardless, with what was read.
///
/// A full `sink` is waited for before the next read: the pipe then fills and
/// the command's writes wait, so a slow reader throttles the command and the
/// memory held stays bounded. `stop` ends the reading, not a send already
/// under way: what was read reaches a reader that is still there.
pub(crate) async fn drain<R: AsyncRead + Unpin>(
    mut pipe: R,
    stream: Stream,
    cap: usize,
    mut sink: Option<OutputSink>,
    mut stop: watch::Receiver<bool>,
) -> Output {
    let mut tail = TailBuffer::new(cap);
    // Capacity, not zeroed bytes: `read_buf` fills the spare capacity, so
    // a command that prints little never has 64 KiB cleared (and paged in)
    // for each of its streams.
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        buf.clear();
        let read = tokio::select! {
            biased;
            read = pipe.read_buf(&mut buf) => read,
            _ = stop.wait_for(|stop| *stop) => {
                tracing::debug!(?stream, "stopped reading output held open by an escaped process");
                break;
            }
        };
        match read {
            Ok(0) => break,
            Ok(n) => {
                tail.push(&buf[..n]);
                if let Some(s) = &sink
                    && s.send(stream.chunk(buf[..n].to_vec())).await.is_err()
                {
                    // A receiver that went away only stops the streaming.
                    sink = None;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!(?stream, error = %e, "reading command output failed; keeping what was read");
                break;
            }
        }
    }
    tail.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(cap: usize, chunks: &[&[u8]]) -> Output {
        let mut tail = TailBuffer::new(cap);
        for chunk in chunks {
            tail.push(chunk);
        }
        tail.finish()
    }

    fn output(bytes: &[u8], total: u64, truncated: bool) -> Output {
        Output {
            bytes: bytes.to_vec(),
            total,
            truncated,
        }
    }

    #[test]
    fn keeps_the_tail_and_reports_truncation() {
        let cases: Vec<(&str, usize, Vec<&[u8]>, Output)> = vec![
            ("nothing", 4, vec![], output(b"", 0, false)),
            ("under the cap", 4, vec![b"ab"], output(b"ab", 2, false)),
            (
                "exactly the cap",
                4,
                vec![b"ab", b"cd"],
                output(b"abcd", 4, false),
            ),
            (
                "over in pieces",
                4,
                vec![b"ab", b"cd", b"ef"],
                output(b"cdef", 6, true),
            ),
            (
                "one big chunk",
                4,
                vec![b"abcdefgh"],
                output(b"efgh", 8, true),
            ),
            (
                "big then small",
                4,
                vec![b"abcdefgh", b"ij"],
                output(b"ghij", 10, true),
            ),
            (
                "small then big",
                4,
                vec![b"ab", b"cdefgh"],
                output(b"efgh", 8, true),
            ),
            ("zero cap", 0, vec![b"ab"], output(b"", 2, true)),
            ("zero cap, no output", 0, vec![], output(b"", 0, false)),
            (
                "empty chunks",
                4,
                vec![b"", b"a", b""],
                output(b"a", 1, false),
            ),
        ];
        for (name, cap, chunks, want) in cases {
            assert_eq!(capture(cap, &chunks), want, "{name}");
        }
    }

    #[test]
    fn matches_a_naive_tail_for_every_split() {
        let data: Vec<u8> = (0..200u8).collect();
        for cap in [0, 1, 7, 64, 199, 200, 500] {
            for step in [1, 3, 50, 200] {
                let chunks: Vec<&[u8]> = data.chunks(step).collect();
                let start = data.len().saturating_sub(cap);
                let want = output(&data[start..], 200, cap < 200);
                assert_eq!(capture(cap, &chunks), want, "cap {cap}, step {step}");
            }
        }
    }

    #[tokio::test]
    async fn drain_streams_chunks_and_stops_on_request() {
        let (mut writer, reader) = tokio::io::duplex(16);
        let (sink, mut chunks) = crate::exec::output_channel();
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = tokio::spawn(drain(reader, Stream::Stderr, 3, Some(sink), stop_rx));
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"hello")
            .await
            .unwrap();
        let mut seen = Vec::new();
        while seen.len() < 5 {
            match chunks.recv().await.unwrap() {
                OutputChunk::Stderr(b) => seen.extend(b),
                other => panic!("wrong stream: {other:?}"),
            }
        }
        assert_eq!(seen, b"hello");
        // The writer stays open, as an escaped process would keep it.
        stop_tx.send(true).unwrap();
        assert_eq!(task.await.unwrap(), output(b"llo", 5, true));
        drop(writer);
    }
}
