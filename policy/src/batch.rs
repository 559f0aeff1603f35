//! The loop of `berth decide --batch`: policy cases as JSON lines in, one
//! JSON line out each (`{"id", "verdict", "stage", "reason"}`, or an error
//! line naming the case). It lives with the policy, not the binary, so that
//! the examples and benches measure what the binary runs — reading each
//! line, building its inputs, deciding, writing — and not the decision
//! alone.

use std::io::{BufRead, Write};

use crate::case::{CaseLine, CaseShared};

/// Decides each line of `reader` onto `out`; a malformed line gets an
/// error line and the batch goes on. Fails only when reading or writing
/// does.
pub fn decide_lines(mut reader: impl BufRead, out: &mut impl Write) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut n = 0usize;
    let mut shared = CaseShared::default();
    loop {
        line.clear();
        if read_line(&mut reader, &mut line)? == 0 {
            break;
        }
        n += 1;
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        // The case's strings are borrowed from the line. A line of UTF-8 (all
        // but broken ones) is checked once, here, and read as text: read as
        // bytes, each string was checked again. Either way the same answer,
        // and the same message for what is not a case.
        let parsed = match std::str::from_utf8(text) {
            // The usual shape without serde (`case_json`), the rest with it.
            Ok(t) => crate::case_json::read(t)
                .map_or_else(|| serde_json::from_str::<CaseLine<'_>>(t), Ok),
            Err(_) => serde_json::from_slice::<CaseLine<'_>>(text),
        };
        let case = match parsed {
            Ok(c) => c,
            Err(e) => {
                // Say whether it is JSON at all, and name the case if it can.
                match serde_json::from_slice::<serde_json::Value>(text) {
                    Ok(v) => {
                        let id = v.get("id").and_then(|v| v.as_str());
                        write_error(out, id, n, &format!("not a policy case: {e}"))?;
                    }
                    Err(e) => write_error(out, None, n, &format!("not JSON: {e}"))?,
                }
                continue;
            }
        };
        let id = case.id.as_ref().map(|t| t.as_ref());
        // The batch prints the verdict, stage and reason alone.
        let d = match case.decide_brief_shared(&mut shared) {
            Ok(d) => d,
            Err(e) => {
                write_error(out, id, n, &e)?;
                continue;
            }
        };
        write_decision(out, id, n, &d)?;
    }
    Ok(())
}

/// `reader.read_until(b'\n', line)`, the same bytes and errors, its newline
/// found by `memchr`'s vector search: std's byte search cost about a
/// hundredth of the whole batch.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut read = 0;
    loop {
        let (done, used) = {
            let available = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            match memchr::memchr(b'\n', available) {
                Some(i) => {
                    line.extend_from_slice(&available[..=i]);
                    (true, i + 1)
                }
                None => {
                    line.extend_from_slice(available);
                    (false, available.len())
                }
            }
        };
        reader.consume(used);
        read += used;
        if done || used == 0 {
            return Ok(read);
        }
    }
}

/// `{"id":…,"verdict":…,"stage":…,"reason":…}` and a newline, written
/// directly: the bytes serde_json's compact output with [`LineSafe`] gives
/// (a test compares them), without its machinery for every line.
fn write_decision(
    out: &mut impl Write,
    id: Option<&str>,
    line: usize,
    d: &crate::decision::Brief,
) -> std::io::Result<()> {
    // The fixed part (keys, verdict, stage) is under 96 bytes; an id and a
    // reason with a few escapes fit in the rest: one allocation, no growth.
    let mut buf = Vec::with_capacity(128 + id.map_or(0, str::len) + d.reason.len());
    buf.extend_from_slice(b"{\"id\":");
    match id {
        Some(id) => push_json_string(&mut buf, id),
        None => buf.extend_from_slice(line.to_string().as_bytes()),
    }
    buf.extend_from_slice(b",\"verdict\":");
    push_json_string(&mut buf, d.verdict.as_str());
    buf.extend_from_slice(b",\"stage\":");
    push_json_string(&mut buf, d.stage.as_str());
    buf.extend_from_slice(b",\"reason\":");
    push_json_string(&mut buf, &d.reason);
    buf.extend_from_slice(b"}\n");
    out.write_all(&buf)
}

/// `s` as a JSON string, escaped as serde_json escapes it (`"`, `\`, and
/// the control characters: `\b`, `\t`, `\n`, `\f`, `\r` by name, the others
/// as `\u00xx`), and U+2028, U+2029 and U+0085 as `\uxxxx` ([`LineSafe`]).
fn push_json_string(buf: &mut Vec<u8>, s: &str) {
    buf.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Most of a reason is plain ASCII: eight bytes a test, to the first
        // byte that may be escaped.
        match bytes.get(i..i + 8).map(first_unplain) {
            Some(None) => {
                i += 8;
                continue;
            }
            Some(Some(at)) => i += at,
            None if !MAY_ESCAPE[usize::from(bytes[i])] => {
                i += 1;
                continue;
            }
            None => {}
        }
        let b = bytes[i];
        // The escaped characters: ASCII, or the three line terminators
        // (U+0085 is C2 85; U+2028 and U+2029 are E2 80 A8 and E2 80 A9).
        let escape: Option<(&[u8], usize)> = match b {
            b'"' => Some((b"\\\"", 1)),
            b'\\' => Some((b"\\\\", 1)),
            0x08 => Some((b"\\b", 1)),
            b'\t' => Some((b"\\t", 1)),
            b'\n' => Some((b"\\n", 1)),
            0x0c => Some((b"\\f", 1)),
            b'\r' => Some((b"\\r", 1)),
            0x00..=0x1f => Some((b"", 1)),
            0xc2 if bytes.get(i + 1) == Some(&0x85) => Some((b"\\u0085", 2)),
            0xe2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xa8) => {
                Some((b"\\u2028", 3))
            }
            0xe2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xa9) => {
                Some((b"\\u2029", 3))
            }
            _ => None,
        };
        let Some((text, len)) = escape else {
            i += 1;
            continue;
        };
        buf.extend_from_slice(&bytes[start..i]);
        if text.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            buf.extend_from_slice(b"\\u00");
            buf.push(HEX[usize::from(b >> 4)]);
            buf.push(HEX[usize::from(b & 0xf)]);
        } else {
            buf.extend_from_slice(text);
        }
        i += len;
        start = i;
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

/// The place of the first of the eight bytes of `chunk` that [`MAY_ESCAPE`]
/// holds or that is not ASCII (the first bytes of the escaped terminators
/// are C2 and E2), if any. Each test below may also flag a byte after the
/// first it flags (a borrow), never one before it: the lowest flag is the
/// first such byte.
fn first_unplain(chunk: &[u8]) -> Option<usize> {
    use crate::substring::{HIGHS, ONES, bytes_equal_to};
    let mut word = [0u8; 8];
    word.copy_from_slice(chunk);
    let x = u64::from_le_bytes(word);
    // A byte below 0x20 (a borrow sets its high bit where it had none), a
    // `"` or `\`, or a byte with its high bit.
    let control = x.wrapping_sub(ONES * 0x20) & !x;
    let found = (control | x) & HIGHS | bytes_equal_to(x, b'"') | bytes_equal_to(x, b'\\');
    (found != 0).then(|| found.trailing_zeros() as usize / 8)
}

/// The bytes [`push_json_string`] looks at twice: the ones JSON escapes,
/// and the first bytes of U+0085 (C2) and of U+2028 and U+2029 (E2).
static MAY_ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table[0xc2] = true;
    table[0xe2] = true;
    table
};

/// Writes one JSON record and its newline through serde_json. U+2028,
/// U+2029 and U+0085 are line terminators to some line-oriented readers
/// (JavaScript's, Python's `str.splitlines`): escaped, a record is always
/// one line for them too.
fn write_line(out: &mut impl Write, value: &impl serde::Serialize) -> std::io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, LineSafe);
    value.serialize(&mut ser)?;
    out.write_all(b"\n")
}

/// serde_json's compact output with the line terminators JSON leaves raw
/// escaped as `\uXXXX`.
struct LineSafe;

impl serde_json::ser::Formatter for LineSafe {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some((i, c)) = rest
            .char_indices()
            .find(|(_, c)| matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}'))
        {
            writer.write_all(&rest.as_bytes()[..i])?;
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[i + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
}

fn write_error(
    out: &mut impl Write,
    id: Option<&str>,
    line: usize,
    message: &str,
) -> std::io::Result<()> {
    let v = match id {
        Some(id) => serde_json::json!({"id": id, "line": line, "error": message}),
        None => serde_json::json!({"id": serde_json::Value::Null, "line": line, "error": message}),
    };
    write_line(out, &v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{Brief, Stage, Verdict};

    /// [`read_line`] reads the lines `read_until` reads, through a buffer
    /// smaller than a line too.
    #[test]
    fn lines_read_as_read_until_reads_them() {
        let input = b"{\"a\":1}\n\nlong line past the buffer\r\nlast, no newline";
        for capacity in [1, 3, 8, 64] {
            let mut ours = std::io::BufReader::with_capacity(capacity, &input[..]);
            let mut std = std::io::BufReader::with_capacity(capacity, &input[..]);
            loop {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let n = read_line(&mut ours, &mut a).expect("read from a slice");
                let m = std.read_until(b'\n', &mut b).expect("read from a slice");
                assert_eq!((n, &a), (m, &b), "capacity {capacity}");
                if n == 0 {
                    break;
                }
            }
        }
    }

    /// The line as serde_json wrote it before: a struct of the four fields,
    /// the id a string or the line number.
    fn through_serde(id: Option<&str>, line: usize, d: &Brief) -> Vec<u8> {
        #[derive(serde::Serialize)]
        struct Line<'a> {
            id: Id<'a>,
            verdict: &'static str,
            stage: &'static str,
            reason: &'a str,
        }
        #[derive(serde::Serialize)]
        #[serde(untagged)]
        enum Id<'a> {
            Given(&'a str),
            LineNumber(usize),
        }
        let mut out = Vec::new();
        let record = Line {
            id: id.map_or(Id::LineNumber(line), Id::Given),
            verdict: d.verdict.as_str(),
            stage: d.stage.as_str(),
            reason: &d.reason,
        };
        write_line(&mut out, &record).expect("a write to a Vec");
        out
    }

    /// [`first_unplain`] finds the first byte [`MAY_ESCAPE`] holds or
    /// that is not ASCII: each byte value at each place among plain ones,
    /// and beside each of a few others.
    #[test]
    fn first_unplain_is_the_first_to_look_at() {
        let first = |c: &[u8]| {
            c.iter()
                .position(|&b| !b.is_ascii() || MAY_ESCAPE[usize::from(b)])
        };
        for b in 0u8..=255 {
            for at in 0..8 {
                let mut chunk = *b"abcdefgh";
                chunk[at] = b;
                assert_eq!(first_unplain(&chunk), first(&chunk), "{b:#x} at {at}");
                for c in [
                    0u8, 0x1f, 0x20, b'"', b'\\', b'!', b'#', b'[', b']', 0x7f, 0x80,
                ] {
                    for other in [at.wrapping_sub(1), at + 1] {
                        if other < 8 {
                            let mut two = chunk;
                            two[other] = c;
                            assert_eq!(first_unplain(&two), first(&two), "{b:#x} {c:#x} {at}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn direct_lines_are_serde_json_lines() {
        let texts = [
            "",
            "plain",
            "`ls` matches the allow rule \"ls\" (<allow>:1:1)",
            "quote \" backslash \\ slash /",
            "controls \u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f}\u{7f}",
            "terminators a\u{2028}b\u{2029}c\u{85}d",
            "near ones \u{2027}\u{202a}\u{84}\u{86}\u{a0}€ ⟨$f⟩ 日本",
            "\u{2028}",
            "\u{85}\u{85}",
            "ends with \\",
            "a longer reason, past several chunks: `rm -rf /tmp/x` touches /tmp/x \"quoted\" \\ and\tmore",
            "0123456\u{85}01234567\u{2028}0123456\"0123456789abcdef\u{1}",
            "⟨$f⟩ plain plain plain plain ⟨$g⟩ plain plain \u{2029}",
        ];
        for (i, t) in texts.iter().enumerate() {
            let d = Brief {
                verdict: Verdict::RequireApproval,
                stage: Stage::Opaque,
                reason: (*t).to_string(),
            };
            for id in [None, Some(*t), Some("bulk-7")] {
                let mut direct = Vec::new();
                write_decision(&mut direct, id, i + 1, &d).expect("a write to a Vec");
                assert_eq!(
                    String::from_utf8_lossy(&direct),
                    String::from_utf8_lossy(&through_serde(id, i + 1, &d)),
                    "{t:?}"
                );
            }
        }
    }
}
