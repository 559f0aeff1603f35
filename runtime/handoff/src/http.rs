//! Just enough HTTP/1.1 for one request to `berth serve` over its unix
//! socket and its streamed answer: a `POST` with a length, then a status
//! line, headers and a body that is chunked, sized, or runs to the end of
//! the connection. Blocking, on std's socket: the hand-off runs before
//! berth starts its async runtime, and without one.
//!
//! The answer is read as input: every line (the status line, a header, a
//! chunk's size) is bounded, every number parsed whole, and anything this
//! reader does not understand is an error, never a guess.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;

/// The longest status, header or chunk-size line taken.
const MAX_HEAD_LINE: usize = 8 << 10;
/// The most headers taken.
const MAX_HEADERS: usize = 100;

fn invalid(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// Sends `POST path` with `body` as `application/json`.
pub(crate) fn post_json(stream: &mut UnixStream, path: &str, body: &[u8]) -> io::Result<()> {
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// How the body after the head is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Chunked,
    Length(u64),
    ToEnd,
}

/// An answer's status and its body, read as it comes.
pub(crate) struct Answer<R> {
    pub(crate) status: u16,
    pub(crate) body: Body<R>,
}

/// Reads the status line and headers from `reader`.
pub(crate) fn read_answer<R: Read>(reader: R) -> io::Result<Answer<R>> {
    let mut reader = BufReader::new(reader);
    let status_line = head_line(&mut reader)?;
    let status = parse_status(&status_line)?;
    let mut framing = Framing::ToEnd;
    for _ in 0..MAX_HEADERS {
        let line = head_line(&mut reader)?;
        if line.is_empty() {
            return Ok(Answer {
                status,
                body: Body {
                    reader,
                    framing,
                    left: match framing {
                        Framing::Length(n) => n,
                        Framing::Chunked | Framing::ToEnd => 0,
                    },
                    done: false,
                },
            });
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| invalid(format!("a header without a colon: {line:?}")))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(invalid(format!("transfer-encoding {value:?}")));
            }
            framing = Framing::Chunked;
        } else if name.eq_ignore_ascii_case("content-length") && framing != Framing::Chunked {
            let n = digits(value).ok_or_else(|| invalid(format!("content-length {value:?}")))?;
            framing = Framing::Length(n);
        }
    }
    Err(invalid(format!("more than {MAX_HEADERS} headers")))
}

/// `HTTP/1.x NNN reason`'s status.
fn parse_status(line: &str) -> io::Result<u16> {
    let mut words = line.splitn(3, ' ');
    let version = words.next().unwrap_or("");
    let code = words.next().unwrap_or("");
    if !(version == "HTTP/1.1" || version == "HTTP/1.0") || code.len() != 3 {
        return Err(invalid(format!("not an HTTP status line: {line:?}")));
    }
    digits(code)
        .and_then(|n| u16::try_from(n).ok())
        .ok_or_else(|| invalid(format!("not an HTTP status line: {line:?}")))
}

/// A decimal number of ASCII digits alone (no sign, no space).
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// One CRLF-ended (or LF-ended) line of the head, without its ending;
/// bounded by [`MAX_HEAD_LINE`]; the connection's end inside it is an error.
fn head_line<R: BufRead>(reader: &mut R) -> io::Result<String> {
    let mut line = Vec::new();
    let read = reader
        .by_ref()
        .take(MAX_HEAD_LINE as u64 + 1)
        .read_until(b'\n', &mut line)?;
    if read == 0 || line.last() != Some(&b'\n') {
        return Err(match line.len() > MAX_HEAD_LINE {
            true => invalid(format!("a line longer than {MAX_HEAD_LINE} bytes")),
            false => io::Error::new(io::ErrorKind::UnexpectedEof, "the answer ended early"),
        });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| invalid("a line that is not UTF-8"))
}

/// The body's bytes, unframed: [`Read`] gives them as they arrive and 0
/// at its end.
pub(crate) struct Body<R> {
    reader: BufReader<R>,
    framing: Framing,
    /// Bytes left in the current chunk, or in the sized body.
    left: u64,
    done: bool,
}

impl<R: Read> Body<R> {
    /// The underlying connection, to change its timeouts.
    pub(crate) fn get_ref(&self) -> &R {
        self.reader.get_ref()
    }

    /// Starts the next chunk; `false` at the last (zero-sized) one, whose
    /// trailers are read and dropped.
    fn next_chunk(&mut self) -> io::Result<bool> {
        let line = head_line(&mut self.reader)?;
        let size = line.split(';').next().unwrap_or("").trim();
        if size.is_empty() || size.len() > 16 || !size.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid(format!("a chunk size {line:?}")));
        }
        let size = u64::from_str_radix(size, 16).map_err(|_| invalid("a chunk size"))?;
        if size == 0 {
            for _ in 0..MAX_HEADERS {
                if head_line(&mut self.reader)?.is_empty() {
                    return Ok(false);
                }
            }
            return Err(invalid(format!("more than {MAX_HEADERS} trailers")));
        }
        self.left = size;
        Ok(true)
    }

    /// Reads into `out` no more than the [`left`](Self::left) bytes of the
    /// chunk or sized body; the connection's end before them is `early`.
    fn read_left(&mut self, out: &mut [u8], early: &'static str) -> io::Result<usize> {
        let want = out
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.reader.read(&mut out[..want])?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, early));
        }
        self.left -= n as u64;
        Ok(n)
    }

    /// The CRLF that ends a chunk's data.
    fn end_chunk(&mut self) -> io::Result<()> {
        match head_line(&mut self.reader)?.is_empty() {
            true => Ok(()),
            false => Err(invalid("a chunk longer than its size")),
        }
    }
}

impl<R: Read> Read for Body<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.done || out.is_empty() {
            return Ok(0);
        }
        match self.framing {
            Framing::ToEnd => {
                let n = self.reader.read(out)?;
                self.done = n == 0;
                Ok(n)
            }
            Framing::Length(_) => {
                if self.left == 0 {
                    self.done = true;
                    return Ok(0);
                }
                self.read_left(out, "the answer ended before its length")
            }
            Framing::Chunked => {
                if self.left == 0 && !self.next_chunk()? {
                    self.done = true;
                    return Ok(0);
                }
                let n = self.read_left(out, "the answer ended inside a chunk")?;
                if self.left == 0 {
                    self.end_chunk()?;
                }
                Ok(n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Reads `raw` as an answer whose bytes arrive `piece` at a time.
    fn answer(raw: &[u8], piece: usize) -> io::Result<(u16, Vec<u8>)> {
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(out.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut a = read_answer(Trickle(raw, piece))?;
        let mut body = Vec::new();
        a.body.read_to_end(&mut body)?;
        Ok((a.status, body))
    }

    #[test]
    fn chunked_sized_and_to_the_end_bodies_read_whole_however_they_arrive() {
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nx: y\r\n\r\n5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nt: 1\r\n\r\nNEXT";
        let sized = b"HTTP/1.1 409 Conflict\r\ncontent-length: 3\r\n\r\nabcdef";
        let to_end = b"HTTP/1.0 200 OK\n\nall of it";
        for piece in [1, 2, 3, 7, 1000] {
            assert_eq!(
                answer(chunked, piece).unwrap(),
                (200, b"hello 0123456789".to_vec())
            );
            assert_eq!(answer(sized, piece).unwrap(), (409, b"abc".to_vec()));
            assert_eq!(answer(to_end, piece).unwrap(), (200, b"all of it".to_vec()));
        }
    }

    #[test]
    fn what_is_not_http_or_ends_early_is_an_error() {
        let bad: &[&[u8]] = &[
            b"",
            b"SSH-2.0-OpenSSH\r\n\r\n",
            b"HTTP/1.1 20 OK\r\n\r\n",
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            b"HTTP/2 200\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 1 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n-1\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n11111111111111111\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nab\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nab",
        ];
        for raw in bad {
            assert!(
                answer(raw, 1000).is_err(),
                "{:?} read as {:?}",
                String::from_utf8_lossy(raw),
                answer(raw, 1000)
            );
        }
    }

    #[test]
    fn head_lines_and_headers_are_bounded() {
        let mut long = b"HTTP/1.1 200 OK\r\nx: ".to_vec();
        long.extend(std::iter::repeat_n(b'a', MAX_HEAD_LINE));
        long.extend_from_slice(b"\r\n\r\n");
        assert!(answer(&long, 4096).is_err());
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("h{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert!(answer(&many, 4096).is_err());
    }
}
