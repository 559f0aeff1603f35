//! A small JSON reader that keeps where each value was written, so that a
//! rules file berth cannot use is reported at its file, line and column.

use std::fmt;

/// A line and column, both from 1 (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Spanned>),
    Object(Vec<(String, Spanned)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    pub pos: Pos,
    pub value: Json,
}

impl Json {
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

const MAX_DEPTH: usize = 64;

/// Parses a whole document.
pub fn parse(text: &str) -> Result<Spanned, (Pos, String)> {
    let mut p = Reader {
        s: text.as_bytes(),
        i: 0,
        line: 1,
        line_start: 0,
        text,
    };
    if p.s.starts_with(b"\xef\xbb\xbf") {
        p.i = 3;
        p.line_start = 3;
    }
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i < p.s.len() {
        return Err((p.pos(), "unexpected text after the JSON value".into()));
    }
    Ok(v)
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
    line: usize,
    line_start: usize,
    text: &'a str,
}

impl Reader<'_> {
    fn pos(&self) -> Pos {
        let start = self.line_start.min(self.text.len());
        let end = self.i.min(self.text.len());
        let column = self
            .text
            .get(start..end)
            .map_or(end - start, |s| s.chars().count())
            + 1;
        Pos {
            line: self.line,
            column,
        }
    }

    fn ws(&mut self) {
        while let Some(&b) = self.s.get(self.i) {
            match b {
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'\n' => {
                    self.i += 1;
                    self.line += 1;
                    self.line_start = self.i;
                }
                _ => break,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Spanned, (Pos, String)> {
        if depth > MAX_DEPTH {
            return Err((self.pos(), "JSON nested too deeply".into()));
        }
        let pos = self.pos();
        let Some(&b) = self.s.get(self.i) else {
            return Err((pos, "unexpected end of file".into()));
        };
        let value = match b {
            b'{' => {
                self.i += 1;
                let mut fields = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let kpos = self.pos();
                        if self.s.get(self.i) != Some(&b'"') {
                            return Err((kpos, "expected a string key".into()));
                        }
                        let key = self.string()?;
                        self.ws();
                        if self.s.get(self.i) != Some(&b':') {
                            return Err((self.pos(), "expected `:` after a key".into()));
                        }
                        self.i += 1;
                        self.ws();
                        let v = self.value(depth + 1)?;
                        fields.push((key, v));
                        self.ws();
                        match self.s.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err((self.pos(), "expected `,` or `}`".into())),
                        }
                    }
                }
                Json::Object(fields)
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        match self.s.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err((self.pos(), "expected `,` or `]`".into())),
                        }
                    }
                }
                Json::Array(items)
            }
            b'"' => Json::String(self.string()?),
            b't' if self.s[self.i..].starts_with(b"true") => {
                self.i += 4;
                Json::Bool(true)
            }
            b'f' if self.s[self.i..].starts_with(b"false") => {
                self.i += 5;
                Json::Bool(false)
            }
            b'n' if self.s[self.i..].starts_with(b"null") => {
                self.i += 4;
                Json::Null
            }
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                while self.s.get(self.i).is_some_and(|c| {
                    c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E')
                }) {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                match t.parse::<f64>() {
                    Ok(n) => Json::Number(n),
                    Err(_) => return Err((pos, format!("invalid number `{t}`"))),
                }
            }
            _ => return Err((pos, "expected a JSON value".into())),
        };
        Ok(Spanned { pos, value })
    }

    fn string(&mut self) -> Result<String, (Pos, String)> {
        let start_pos = self.pos();
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&b) = self.s.get(self.i) else {
                return Err((start_pos, "unterminated string".into()));
            };
            self.i += 1;
            match b {
                b'"' => break,
                b'\n' => return Err((start_pos, "unterminated string".into())),
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else {
                        return Err((start_pos, "unterminated string".into()));
                    };
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self
                                .hex4()
                                .ok_or_else(|| (self.pos(), "invalid \\u escape".to_string()))?;
                            if (0xD800..0xDC00).contains(&cp)
                                && self.s[self.i..].starts_with(b"\\u")
                            {
                                self.i += 2;
                                let lo = self.hex4().ok_or_else(|| {
                                    (self.pos(), "invalid \\u escape".to_string())
                                })?;
                                cp = 0x10000
                                    + ((cp - 0xD800) << 10)
                                    + (lo.wrapping_sub(0xDC00) & 0x3ff);
                            }
                            let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err((self.pos(), format!("invalid escape `\\{}`", e as char))),
                    }
                }
                _ => out.push(b),
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.s.get(self.i..self.i + 4)?;
        let v = u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()?;
        self.i += 4;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions() {
        let v = parse("{\n  \"allow\": [\n    \"ls\", 3\n  ]\n}").unwrap();
        let Json::Object(f) = v.value else { panic!() };
        let Json::Array(items) = &f[0].1.value else {
            panic!()
        };
        assert_eq!(
            items[1].pos,
            Pos {
                line: 3,
                column: 11
            }
        );
    }

    #[test]
    fn errors_have_positions() {
        let e = parse("{\"allow\": [\"ls\",]}").unwrap_err();
        assert_eq!(e.0.line, 1);
        assert!(parse("").is_err());
        assert!(parse("[[[[").is_err());
        assert!(parse(&"[".repeat(10_000)).is_err());
    }
}
