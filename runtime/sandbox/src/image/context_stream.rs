//! The recipe image's build context, streamed into the build: a Dockerfile
//! and the root filesystem as a nested tar (`ADD rootfs.tar /` keeps its
//! owners, so the home belongs to the agent), written by a blocking task one
//! buffer at a time into the request body. A toolchain image's context is
//! hundreds of megabytes (a Rust toolchain ~600 MB): none of it is held in
//! memory whole, and the engine reads it while host files are still being
//! read. The nested tar's length goes in its header first, so it is sized
//! beforehand without reading a file ([`Rootfs::tar_len`]).

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::ImageError;
use super::rootfs::{EntryKind, Rootfs};

/// Bytes sent to the engine at a time.
const CHUNK_BYTES: usize = 1 << 20;
/// Chunks written ahead of the engine.
const CHUNKS_AHEAD: usize = 4;
/// A tar block.
const BLOCK: u64 = 512;

/// A build request's body.
pub(crate) enum ContextBody {
    /// A context held whole (a project's Dockerfile context, bounded).
    Full(Vec<u8>),
    /// Chunks from a writer task.
    Stream(mpsc::Receiver<std::io::Result<Bytes>>),
}

/// A context being written: its body, its exact length and the writer.
pub(crate) struct StreamedContext {
    pub body: ContextBody,
    pub len: u64,
    pub writer: ContextWriter,
}

/// The task writing a [`StreamedContext`].
pub(crate) struct ContextWriter {
    task: tokio::task::JoinHandle<Result<(), ImageError>>,
    /// The engine dropped the body (the build failed or the connection
    /// broke): the writer's error is then a consequence, not the cause.
    stopped_reading: Arc<AtomicBool>,
}

impl ContextWriter {
    /// Waits for the writer: `Ok(None)` when it wrote everything,
    /// `Ok(Some(error))` when it failed on its own (a host file, say),
    /// `Ok(None)` too when it failed only because the engine stopped reading.
    pub(crate) async fn finish(self) -> Result<Option<ImageError>, tokio::task::JoinError> {
        match self.task.await? {
            Ok(()) => Ok(None),
            Err(_) if self.stopped_reading.load(Ordering::SeqCst) => Ok(None),
            Err(e) => Ok(Some(e)),
        }
    }
}

/// Starts writing the context of `dockerfile` and `rootfs` (blocking work on
/// the blocking pool); `inner_len` is [`Rootfs::tar_len`].
pub(crate) fn stream_context(
    dockerfile: String,
    rootfs: Rootfs,
    inner_len: u64,
) -> StreamedContext {
    let (tx, rx) = mpsc::channel(CHUNKS_AHEAD);
    let stopped_reading = Arc::new(AtomicBool::new(false));
    let len = context_len(dockerfile.len() as u64, inner_len);
    let sender = ChunkSender {
        tx: tx.clone(),
        buf: Vec::with_capacity(CHUNK_BYTES),
        stopped_reading: stopped_reading.clone(),
    };
    let task = tokio::task::spawn_blocking(move || {
        let written = write_context(&dockerfile, &rootfs, inner_len, sender);
        if let Err(e) = &written {
            // Abort the request rather than end it early and well-formed.
            let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
        }
        written.map(drop)
    });
    StreamedContext {
        body: ContextBody::Stream(rx),
        len,
        writer: ContextWriter {
            task,
            stopped_reading,
        },
    }
}

/// `n` rounded up to whole tar blocks.
fn padded(n: u64) -> u64 {
    n.div_ceil(BLOCK) * BLOCK
}

/// The length of a context holding a Dockerfile and a nested tar.
fn context_len(dockerfile_len: u64, inner_len: u64) -> u64 {
    BLOCK + padded(dockerfile_len) + BLOCK + padded(inner_len) + 2 * BLOCK
}

/// Writes the whole context to `w`: two entries, then the end of archive.
pub(crate) fn write_context<W: Write>(
    dockerfile: &str,
    rootfs: &Rootfs,
    inner_len: u64,
    w: W,
) -> Result<W, ImageError> {
    let err = |what: &str, e: std::io::Error| ImageError::Context {
        message: format!("writing {what}: {e}"),
    };
    let mut w = w;
    write_header(&mut w, "Dockerfile", dockerfile.len() as u64)
        .map_err(|e| err("Dockerfile", e))?;
    w.write_all(dockerfile.as_bytes())
        .and_then(|()| pad(&mut w, dockerfile.len() as u64))
        .map_err(|e| err("Dockerfile", e))?;
    write_header(&mut w, "rootfs.tar", inner_len).map_err(|e| err("rootfs.tar", e))?;
    let w = rootfs.write_tar_to(CountingWriter { w, written: 0 }, TarContent::Host)?;
    if w.written != inner_len {
        return Err(ImageError::Context {
            message: format!(
                "the root filesystem came to {} bytes, sized at {inner_len}; build again",
                w.written
            ),
        });
    }
    let mut w = w.w;
    pad(&mut w, inner_len)
        .and_then(|()| w.write_all(&[0u8; 2 * BLOCK as usize]))
        .and_then(|()| w.flush())
        .map_err(|e| err("the end of the archive", e))?;
    Ok(w)
}

fn write_header(w: &mut impl Write, name: &str, size: u64) -> std::io::Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_path(name)?;
    h.set_mode(0o644);
    h.set_size(size);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    w.write_all(h.as_bytes())
}

fn pad(w: &mut impl Write, len: u64) -> std::io::Result<()> {
    let fill = (padded(len) - len) as usize;
    w.write_all(&[0u8; BLOCK as usize][..fill])
}

/// Counts what passes through, to check the nested tar's sized length.
struct CountingWriter<W> {
    w: W,
    written: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.w.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// Sends what is written in chunks to the request body.
struct ChunkSender {
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    buf: Vec<u8>,
    stopped_reading: Arc<AtomicBool>,
}

impl ChunkSender {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.tx.blocking_send(Ok(Bytes::from(chunk))).map_err(|_| {
            self.stopped_reading.store(true, Ordering::SeqCst);
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the engine stopped reading the build context",
            )
        })
    }
}

impl Write for ChunkSender {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(buf);
        if self.buf.len() >= CHUNK_BYTES {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

impl Rootfs {
    /// The exact length of the tar [`Rootfs::write_tar_to`] writes, without
    /// reading any host file (the build context's header needs it first).
    pub(crate) fn tar_len(&self) -> Result<u64, ImageError> {
        Ok(self.write_tar_to(ByteCount(0), TarContent::Zeros)?.0)
    }

    /// Writes the root filesystem as a tar (GNU headers for long names) to
    /// `w`, and gives it back. Blocking: with [`TarContent::Host`] it reads
    /// every host file, one buffer at a time.
    fn write_tar_to<W: Write>(&self, w: W, content: TarContent) -> Result<W, ImageError> {
        let tar_err = |path: &str, e: std::io::Error| ImageError::Context {
            message: format!("adding {path}: {e}"),
        };
        let mut b = tar::Builder::new(w);
        for (path, e) in &self.entries {
            let name = path.trim_start_matches('/');
            let mut h = tar::Header::new_gnu();
            h.set_mode(e.mode);
            h.set_uid(e.uid.into());
            h.set_gid(e.gid.into());
            h.set_mtime(u64::try_from(e.mtime).unwrap_or(0));
            match &e.kind {
                EntryKind::Dir => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_size(0);
                    b.append_data(&mut h, format!("{name}/"), std::io::empty())
                        .map_err(|err| tar_err(path, err))?;
                }
                EntryKind::Symlink { target } => {
                    h.set_entry_type(tar::EntryType::Symlink);
                    h.set_size(0);
                    b.append_link(&mut h, name, target)
                        .map_err(|err| tar_err(path, err))?;
                }
                EntryKind::HardLink { to } => {
                    h.set_entry_type(tar::EntryType::Link);
                    h.set_size(0);
                    b.append_link(&mut h, name, to.trim_start_matches('/'))
                        .map_err(|err| tar_err(path, err))?;
                }
                EntryKind::Generated { content } => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(content.len() as u64);
                    b.append_data(&mut h, name, content.as_slice())
                        .map_err(|err| tar_err(path, err))?;
                }
                EntryKind::HostFile { host, size } => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(*size);
                    match content {
                        TarContent::Zeros => b
                            .append_data(&mut h, name, std::io::repeat(0).take(*size))
                            .map_err(|err| tar_err(path, err))?,
                        TarContent::Host => {
                            let file =
                                std::fs::File::open(host).map_err(|source| ImageError::Io {
                                    op: "open a host file for the image",
                                    path: host.clone(),
                                    source,
                                })?;
                            let exact = ExactSize {
                                file,
                                left: *size,
                                expected: *size,
                            };
                            b.append_data(&mut h, name, exact)
                                .map_err(|err| tar_err(path, err))?;
                        }
                    }
                }
            }
        }
        b.into_inner()
            .map_err(|e| tar_err("the end of the archive", e))
    }
}

/// What a host file's entry holds in [`Rootfs::write_tar_to`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TarContent {
    /// The file's bytes.
    Host,
    /// As many zeros: the same length, for sizing the archive.
    Zeros,
}

/// A writer that only counts.
struct ByteCount(u64);

impl Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A host file read as exactly the size it had when the recipe was
/// resolved: one that shrank or grew since fails rather than producing an
/// entry whose length disagrees with its header (or with the sized archive).
struct ExactSize {
    file: std::fs::File,
    left: u64,
    expected: u64,
}

impl Read for ExactSize {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let expected = self.expected;
        let changed = move || {
            std::io::Error::other(format!(
                "changed while the image was assembled (expected {expected} bytes); build again"
            ))
        };
        if self.left == 0 {
            let mut probe = [0u8; 1];
            return match self.file.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(changed()),
            };
        }
        let max = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.file.read(&mut buf[..max])?;
        if n == 0 {
            return Err(changed());
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::image::rootfs::{Entry, EntryKind};

    fn entry(kind: EntryKind) -> Entry {
        Entry::test(kind, 0o644, 1000)
    }

    /// A root filesystem with a host file, a name and a link target longer
    /// than a tar header holds (GNU long-name entries), and a hard link.
    fn rootfs(host: &std::path::Path, size: u64) -> Rootfs {
        let long = format!("/opt/{}/file", "d".repeat(120));
        let entries = [
            ("/opt".to_string(), entry(EntryKind::Dir)),
            (
                "/opt/host".to_string(),
                entry(EntryKind::HostFile {
                    host: host.to_path_buf(),
                    size,
                }),
            ),
            (
                long.clone(),
                entry(EntryKind::Generated {
                    content: b"generated".to_vec(),
                }),
            ),
            (
                "/opt/link".to_string(),
                entry(EntryKind::Symlink {
                    target: long.clone(),
                }),
            ),
            (
                "/opt/again".to_string(),
                entry(EntryKind::HardLink {
                    to: "/opt/host".to_string(),
                }),
            ),
        ];
        Rootfs {
            entries: entries.into_iter().collect(),
            fingerprint: String::new(),
            library_dirs: Default::default(),
        }
    }

    #[test]
    fn the_sized_context_is_exactly_what_is_written_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("host");
        let content: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&host, &content).unwrap();
        let fs = rootfs(&host, content.len() as u64);
        let inner_len = fs.tar_len().unwrap();
        let dockerfile = "FROM scratch\nADD rootfs.tar /\n";
        let out = write_context(dockerfile, &fs, inner_len, Vec::new()).unwrap();
        assert_eq!(
            out.len() as u64,
            context_len(dockerfile.len() as u64, inner_len)
        );

        let mut outer = tar::Archive::new(out.as_slice());
        let mut names = Vec::new();
        let mut inner = Vec::new();
        for e in outer.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            if name == "Dockerfile" {
                assert_eq!(data, dockerfile.as_bytes());
            } else {
                inner = data;
            }
            names.push(name);
        }
        assert_eq!(names, ["Dockerfile", "rootfs.tar"]);
        assert_eq!(inner.len() as u64, inner_len);
        let mut found = Vec::new();
        for e in tar::Archive::new(inner.as_slice()).entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            if name == "opt/host" {
                assert_eq!(data, content);
            }
            found.push(name);
        }
        assert_eq!(found.len(), 5, "{found:?}");
        assert!(found.iter().any(|n| n.len() > 100), "{found:?}");
    }

    #[test]
    fn a_host_file_that_changed_after_resolving_fails_the_context() {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("host");
        std::fs::write(&host, b"0123456789").unwrap();
        for (now, word) in [(&b"01234"[..], "shrank"), (&b"0123456789ab"[..], "grew")] {
            let fs = rootfs(&host, 10);
            let inner_len = fs.tar_len().unwrap();
            std::fs::write(&host, now).unwrap();
            let err = write_context("FROM scratch\n", &fs, inner_len, Vec::new())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("changed while the image was assembled"),
                "{word}: {err}"
            );
            std::fs::write(&host, b"0123456789").unwrap();
        }
    }

    /// Streams a context holding a host file of `size` bytes, rewritten to
    /// `now` after it was sized when given.
    fn streamed(
        dir: &std::path::Path,
        size: usize,
        now: Option<&[u8]>,
    ) -> (mpsc::Receiver<std::io::Result<Bytes>>, ContextWriter, u64) {
        let host = dir.join("host");
        std::fs::write(&host, vec![7u8; size]).unwrap();
        let fs = rootfs(&host, size as u64);
        let inner_len = fs.tar_len().unwrap();
        if let Some(now) = now {
            std::fs::write(&host, now).unwrap();
        }
        let StreamedContext { body, writer, len } =
            stream_context("FROM scratch\n".into(), fs, inner_len);
        let ContextBody::Stream(rx) = body else {
            panic!("a streamed body")
        };
        (rx, writer, len)
    }

    #[tokio::test]
    async fn the_writers_own_failure_aborts_the_body_and_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let (mut rx, writer, _) = streamed(dir.path(), 3 << 20, Some(b"short"));
        let mut last = None;
        while let Some(item) = rx.recv().await {
            last = Some(item.is_err());
        }
        assert_eq!(last, Some(true), "the body ends with an error");
        let err = writer.finish().await.unwrap().expect("the writer's error");
        assert!(err.to_string().contains("changed while"), "{err}");
    }

    #[tokio::test]
    async fn an_engine_that_stops_reading_is_not_the_writers_fault() {
        let dir = tempfile::tempdir().unwrap();
        let (mut rx, writer, len) = streamed(dir.path(), 8 << 20, None);
        assert!(len > 8 << 20, "{len}");
        // One chunk, then the engine hangs up.
        assert!(rx.recv().await.unwrap().is_ok());
        drop(rx);
        assert!(writer.finish().await.unwrap().is_none());
    }
}
