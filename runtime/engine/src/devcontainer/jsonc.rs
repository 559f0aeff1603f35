//! JSON with comments, as `devcontainer.json` is written: `//` and `/* */`
//! comments and trailing commas before `}` or `]`. They are blanked out —
//! each byte of a comment or of a trailing comma becomes a space, newlines
//! stay — and what is left is parsed by `serde_json`, so an error's line and
//! column are the file's own. Total: any input gives a value or an error,
//! never a panic; a `//` or `,` inside a string is left alone.

/// A place in the text, 1-based, as an editor counts it (columns in
/// characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// Why a text is not JSON with comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsoncError {
    pub at: Position,
    pub message: String,
}

/// `text` parsed as JSON with comments.
pub fn parse(text: &str) -> Result<serde_json::Value, JsoncError> {
    let plain = blank_comments_and_trailing_commas(text)?;
    serde_json::from_str(&plain).map_err(|e| {
        // serde_json counts columns in bytes; the text is the file's, byte
        // for byte, so the position maps back exactly.
        let at = if e.line() == 0 {
            Position { line: 1, column: 1 }
        } else {
            position_of_byte_column(text, e.line(), e.column())
        };
        let message = e.to_string();
        // serde_json appends " at line L column C" in bytes: said once, ours.
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        JsoncError { at, message }
    })
}

/// The position (characters) of byte column `column` (1-based) of `line`.
fn position_of_byte_column(text: &str, line: usize, column: usize) -> Position {
    let Some(l) = text.split('\n').nth(line.saturating_sub(1)) else {
        return Position { line, column };
    };
    let bytes = column.min(l.len());
    let mut end = bytes;
    while end > 0 && !l.is_char_boundary(end) {
        end -= 1;
    }
    let chars = l[..end].chars().count();
    Position {
        line,
        column: chars.max(1),
    }
}

fn position_at(text: &[u8], offset: usize) -> Position {
    let before = &text[..offset.min(text.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    Position { line, column }
}

/// `text` with comments and trailing commas turned into spaces (newlines
/// kept), the same length in bytes.
pub fn blank_comments_and_trailing_commas(text: &str) -> Result<String, JsoncError> {
    let mut out = text.as_bytes().to_vec();
    blank_comments(&mut out)?;
    blank_trailing_commas(&mut out);
    // Only whole comments (which end at an ASCII byte) and commas were
    // replaced by ASCII spaces: still UTF-8.
    String::from_utf8(out).map_err(|_| JsoncError {
        at: Position { line: 1, column: 1 },
        message: "not UTF-8 after removing comments".to_string(),
    })
}

fn blank_comments(b: &mut [u8]) -> Result<(), JsoncError> {
    let mut i = 0;
    let mut in_string = false;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                // A string never spans lines: a newline ends it (serde_json
                // reports it), so a quote in a later comment stays a comment.
                b'\n' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (c, b.get(i + 1)) {
            (b'"', _) => {
                in_string = true;
                i += 1;
            }
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    b[i] = b' ';
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                let start = i;
                let Some(len) = b[i + 2..].windows(2).position(|w| w == b"*/") else {
                    return Err(JsoncError {
                        at: position_at(b, start),
                        message: "a `/*` comment is never closed with `*/`".to_string(),
                    });
                };
                let end = i + 2 + len + 2;
                for x in &mut b[start..end] {
                    if *x != b'\n' {
                        *x = b' ';
                    }
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Commas (outside strings) that follow a value and are followed, past
/// whitespace, by `}` or `]`. A comma right after `{`, `[` or another comma
/// trails nothing: it stays, for serde_json to refuse.
fn blank_trailing_commas(b: &mut [u8]) {
    let mut i = 0;
    let mut in_string = false;
    let mut last = 0u8;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' | b'\n' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
        } else if c == b',' && !matches!(last, b'{' | b'[' | b',' | 0) {
            let next = b[i + 1..]
                .iter()
                .find(|x| !matches!(x, b' ' | b'\t' | b'\r' | b'\n'));
            if matches!(next, Some(b'}') | Some(b']')) {
                b[i] = b' ';
            }
        }
        if !matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
            last = b[i];
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tricky_inputs_parse_as_the_format_allows() {
        let cases: &[(&str, serde_json::Value)] = &[
            ("{}", json!({})),
            ("// only a comment\n{}", json!({})),
            ("{\"a\": 1, // one\n}", json!({"a": 1})),
            ("{\"a\": [1, 2, ], }", json!({"a": [1, 2]})),
            ("{\"a\": [1,\n/* c */\n]}", json!({"a": [1]})),
            ("{\"url\": \"http://x//y\"}", json!({"url": "http://x//y"})),
            (
                "{\"c\": \"/* not */ a comment\"}",
                json!({"c": "/* not */ a comment"}),
            ),
            (
                "{\"q\": \"a \\\" // still\"}",
                json!({"q": "a \" // still"}),
            ),
            ("{\"b\": \"back\\\\\"// c\n}", json!({"b": "back\\"})),
            ("{\"t\": \", }\"}", json!({"t": ", }"})),
            ("{\"a\": 1 /* ** / */, \"b\": 2}", json!({"a": 1, "b": 2})),
            ("{/*x*/\"a\"/*y*/:/*z*/1}", json!({"a": 1})),
            ("{\"é\": \"ü\" // ümlaut comment\n}", json!({"é": "ü"})),
            ("{\"a\": /* multi\nline */ 2}", json!({"a": 2})),
            ("[1, 2,\n\t]", json!([1, 2])),
            ("{\"a\": \"x\"}\n// trailing comment", json!({"a": "x"})),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).as_ref(), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn broken_inputs_name_the_line_and_column() {
        let cases: &[(&str, (usize, usize), &str)] = &[
            (
                "{\n  \"a\": 1\n  \"b\": 2\n}",
                (3, 3),
                "expected `,` or `}`",
            ),
            ("{\n  /* open\n\n", (2, 3), "never closed"),
            ("{\"a\": }", (1, 7), "expected value"),
            ("", (1, 1), "EOF"),
            ("{\"a\": [1,, 2]}", (1, 10), "expected value"),
            ("{\"ü\": x}", (1, 7), "expected value"),
            ("{\"a\": \"unterminated\n}", (2, 1), "control character"),
            ("{,}", (1, 2), "key must be a string"),
        ];
        for (text, (line, column), want) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(
                (e.at.line, e.at.column),
                (*line, *column),
                "{text:?}: {e:?}"
            );
            assert!(e.message.contains(want), "{text:?}: {e:?}");
        }
    }

    #[test]
    fn every_short_text_of_tricky_characters_gives_a_value_or_an_error() {
        // Total: all 41,371 texts of up to 4 of these 14 characters (one of
        // them two bytes), each blanked to the same length and parsed
        // without a panic; a text with no `/` or `,` means what serde_json
        // says of it.
        let alphabet = [
            '{', '}', '[', ']', '"', ',', '/', '*', '\\', '\n', '1', ':', 'é', ' ',
        ];
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = texts
                .iter()
                .filter(|t| t.chars().count() == texts.last().map_or(0, |l| l.chars().count()))
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            texts.extend(longer);
        }
        assert_eq!(texts.len(), 41_371);
        for text in &texts {
            let blanked = blank_comments_and_trailing_commas(text);
            if let Ok(b) = &blanked {
                assert_eq!(b.len(), text.len(), "{text:?}");
            }
            let parsed = parse(text);
            if !text.contains(['/', ',']) {
                assert_eq!(
                    parsed.is_ok(),
                    serde_json::from_str::<serde_json::Value>(text).is_ok(),
                    "{text:?}"
                );
            }
        }
    }

    #[test]
    fn blanking_keeps_every_byte_offset() {
        for text in [
            "{ // c\n\"a\": [1, /* x\ny */ 2,], }",
            "\"// s\"",
            "/* é */ 1",
        ] {
            let out = blank_comments_and_trailing_commas(text).unwrap();
            assert_eq!(out.len(), text.len(), "{text:?}");
            assert_eq!(out.matches('\n').count(), text.matches('\n').count());
        }
    }
}
