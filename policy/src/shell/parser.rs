//! A strict recursive-descent parser for the part of bash agents write.
//!
//! Why hand-written: the policy needs totality (any byte string gets a tree or
//! an error, never a panic), linear time, and an explicit bound on nesting so
//! that 5,000 nested `$(` cannot overflow the stack — a stack overflow aborts
//! the process and a whole batch with it. Grammar crates either recurse
//! without a bound or are several times slower than the decision's budget.
//!
//! On the first error the parser stops and returns what it built so far plus
//! the error: the caller judges the visible commands (a deny rule still
//! matches them) and treats the rest as opaque. Anything it does not support
//! is an error, so it fails closed.

use std::sync::Arc;

use super::ast::*;
use super::plain_subs::{self, PlainSubs};

/// Nesting deeper than this is an error (and so opaque). Each level costs a
/// few stack frames; 100 levels fit comfortably in a 2 MiB test thread.
pub const MAX_DEPTH: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub message: String,
}

/// A parsed command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    pub list: List,
    /// The first error, if any: everything after it was not parsed.
    pub error: Option<ParseError>,
}

/// Parses a whole command line. Total: never panics, linear in the input.
pub fn parse(src: &[u8]) -> Script {
    parse_line(src, None)
}

/// [`parse`] of a line known to be text (a case's command): its bytes are
/// not checked as UTF-8 again.
pub fn parse_text(src: &str) -> Script {
    parse_line(src.as_bytes(), Some(src))
}

/// [`parse`] of `src`, which is `text` when that is given.
fn parse_line(src: &[u8], text: Option<&str>) -> Script {
    // A NUL byte cannot reach bash in a `-c` argument, and bash drops it when
    // it reads a script file (`g⁰it` runs `git`): no shell runs the line as
    // written. What comes before it is judged; the line is opaque.
    if let Some(n) = crate::substring::find_byte(0, src) {
        // (A NUL is one byte: `n` is a char boundary of `text`.)
        let mut script = parse_text_at_depth(&src[..n], text.and_then(|t| t.get(..n)), 0);
        if script.error.is_none() {
            script.error = Some(ParseError {
                offset: n,
                message: "a NUL byte in the command line".to_string(),
            });
        }
        return script;
    }
    parse_text_at_depth(src, text, 0)
}

pub(crate) fn parse_at_depth(src: &[u8], depth: usize) -> Script {
    parse_text_at_depth(src, None, depth)
}

/// [`parse_at_depth`] of `src`, which is `text` when that is given (else
/// checked here).
pub(crate) fn parse_text_at_depth(src: &[u8], text: Option<&str>, depth: usize) -> Script {
    let mut p = match text {
        Some(t) => Parser::with_text(src, Some(t), depth),
        None => Parser::new(src, depth),
    };
    let mut list = p.parse_list(Stop::EOF);
    if p.error.is_none() && !p.at_end() {
        let msg = format!("unexpected {}", p.describe_here());
        p.fail(msg);
    }
    p.finish_heredocs(&mut list);
    Script {
        list,
        error: p.error,
    }
}

/// What ends the list being parsed.
#[derive(Clone, Copy)]
struct Stop {
    /// Reserved words that end it (`then`, `fi`, `done`, `}`, …).
    words: &'static [&'static str],
    /// A `)` ends it (subshell, command substitution).
    paren: bool,
    /// `;;`, `;&`, `;;&` end it (a case arm).
    case_arm: bool,
}

impl Stop {
    const EOF: Stop = Stop {
        words: &[],
        paren: false,
        case_arm: false,
    };
    const PAREN: Stop = Stop {
        words: &[],
        paren: true,
        case_arm: false,
    };
    const fn words(words: &'static [&'static str]) -> Stop {
        Stop {
            words,
            paren: false,
            case_arm: false,
        }
    }
}

/// The reserved word `w` is, if it is one: a `match` (by length, then bytes),
/// not a scan of a list — it runs at every command's first word.
fn reserved_word(w: &[u8]) -> Option<&'static str> {
    Some(match w {
        b"if" => "if",
        b"then" => "then",
        b"else" => "else",
        b"elif" => "elif",
        b"fi" => "fi",
        b"case" => "case",
        b"esac" => "esac",
        b"for" => "for",
        b"select" => "select",
        b"while" => "while",
        b"until" => "until",
        b"do" => "do",
        b"done" => "done",
        b"in" => "in",
        b"function" => "function",
        b"time" => "time",
        b"{" => "{",
        b"}" => "}",
        b"!" => "!",
        b"[[" => "[[",
        b"]]" => "]]",
        b"coproc" => "coproc",
        _ => return None,
    })
}

struct PendingHereDoc {
    id: usize,
    delimiter: Vec<u8>,
    strip_tabs: bool,
    quoted: bool,
}

struct Parser<'a> {
    src: &'a [u8],
    /// `src` as text when it is UTF-8 (nearly every command line): a
    /// piece of it between two char boundaries is text too, found without
    /// checking its bytes again ([`Parser::text`]).
    text: Option<&'a str>,
    pos: usize,
    depth: usize,
    error: Option<ParseError>,
    pending: Vec<PendingHereDoc>,
    /// Bodies read so far, by heredoc id; moved into the tree at the end.
    bodies: Vec<Option<HereDoc>>,
    /// Plain `$(…)` texts parsed so far in this command line.
    plain_subs: PlainSubs,
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Bytes that end an unquoted word.
fn is_meta(b: u8) -> bool {
    BYTE_CLASS[usize::from(b)] & META != 0
}

/// [`BYTE_CLASS`] bits: a metacharacter ([`is_meta`]).
const META: u8 = 1;
/// …a byte that ends a run of plain word bytes: a quote, `\\`, `$`, a
/// backquote, CR.
const WORD_STOP: u8 = 2;
/// …`~`, which may start a tilde expansion.
const TILDE: u8 = 4;

/// The classes of each byte, as bits: the scans over a word's bytes test
/// one table entry a byte, not a chain of comparisons.
static BYTE_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let meta = b" \t\n|&;()<>";
    let mut i = 0;
    while i < meta.len() {
        table[meta[i] as usize] |= META;
        i += 1;
    }
    let stops = b"'\"\\$`\r";
    let mut i = 0;
    while i < stops.len() {
        table[stops[i] as usize] |= WORD_STOP;
        i += 1;
    }
    table[b'~' as usize] |= TILDE;
    table
};

/// Whether `b` is of one of the `classes` ([`BYTE_CLASS`] bits).
fn is_class(b: u8, classes: u8) -> bool {
    BYTE_CLASS[usize::from(b)] & classes != 0
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `bytes` as text, each invalid sequence replaced by U+FFFD. Valid UTF-8
/// (nearly every command) is checked by `from_utf8`, faster than the
/// replacing reader, which only the rest goes through.
fn lossy(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Appends literal bytes to a parts list, merging with a previous literal of
/// the same quotedness.
struct PartsBuilder {
    parts: Vec<Part>,
    buf: Vec<u8>,
    buf_quoted: bool,
}

impl PartsBuilder {
    fn new() -> Self {
        PartsBuilder {
            parts: Vec::new(),
            buf: Vec::new(),
            buf_quoted: false,
        }
    }

    fn lit(&mut self, b: u8, quoted: bool) {
        if !self.buf.is_empty() && self.buf_quoted != quoted {
            self.flush();
        }
        self.buf_quoted = quoted;
        self.buf.push(b);
    }

    /// [`PartsBuilder::lit`] for each byte, appended at once.
    fn lit_bytes(&mut self, bytes: &[u8], quoted: bool) {
        if bytes.is_empty() {
            return;
        }
        if !self.buf.is_empty() && self.buf_quoted != quoted {
            self.flush();
        }
        self.buf_quoted = quoted;
        self.buf.extend_from_slice(bytes);
    }

    /// Marks a (possibly empty) quoted literal: `''` is a word, and `a""=1`
    /// is no assignment (bash runs the program `a=1`).
    fn empty_quoted(&mut self) {
        if self.buf.is_empty() || !self.buf_quoted {
            self.flush();
            self.parts.push(Part::Lit {
                text: String::new(),
                quoted: true,
            });
        }
    }

    fn push(&mut self, part: Part) {
        self.flush();
        self.parts.push(part);
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            // The buffer becomes the text (no copy) when it is UTF-8, as
            // nearly every command is.
            let text = match String::from_utf8(std::mem::take(&mut self.buf)) {
                Ok(text) => text,
                Err(e) => lossy(e.as_bytes()),
            };
            self.parts.push(Part::Lit {
                text,
                quoted: self.buf_quoted,
            });
        }
    }

    /// The unquoted literal text so far, when the word is nothing else yet.
    fn plain_prefix(&self) -> Option<&[u8]> {
        if self.parts.is_empty() && !self.buf_quoted {
            Some(&self.buf)
        } else {
            None
        }
    }

    fn finish(mut self) -> Vec<Part> {
        self.flush();
        self.parts
    }
}

impl<'a> Parser<'a> {
    fn new(src: &'a [u8], depth: usize) -> Self {
        Parser::with_text(src, std::str::from_utf8(src).ok(), depth)
    }

    /// A parser of `src`, which is `text` when that is given.
    fn with_text(src: &'a [u8], text: Option<&'a str>, depth: usize) -> Self {
        Parser {
            src,
            text,
            pos: 0,
            depth,
            error: None,
            pending: Vec::new(),
            bodies: Vec::new(),
            plain_subs: PlainSubs::default(),
        }
    }

    // ---- basics -------------------------------------------------------

    fn failed(&self) -> bool {
        self.error.is_some()
    }

    fn fail(&mut self, message: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some(ParseError {
                offset: self.pos,
                message: message.into(),
            });
        }
    }

    /// The bytes `start..end` of the line as text: [`lossy`], without
    /// checking them again when the line is UTF-8 and both ends are char
    /// boundaries (the same text: a valid piece is its own lossy reading).
    fn text(&self, start: usize, end: usize) -> String {
        match self.text.and_then(|t| t.get(start..end)) {
            Some(piece) => piece.to_owned(),
            None => lossy(self.src.get(start..end).unwrap_or_default()),
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.src.len()
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<u8> {
        self.src.get(self.pos + n).copied()
    }

    fn starts_with(&self, s: &[u8]) -> bool {
        self.src.get(self.pos..).is_some_and(|r| r.starts_with(s))
    }

    fn describe_here(&self) -> String {
        match self.peek() {
            None => "end of input".to_string(),
            Some(b'\n') => "newline".to_string(),
            Some(_) => {
                let end = (self.pos + 12).min(self.src.len());
                format!("`{}`", lossy(&self.src[self.pos..end]))
            }
        }
    }

    fn enter(&mut self) -> bool {
        if self.depth >= MAX_DEPTH {
            self.fail(format!("nesting deeper than {MAX_DEPTH} levels"));
            return false;
        }
        self.depth += 1;
        true
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Whether the input is at a newline (`\n` or `\r\n`).
    fn at_newline(&self) -> bool {
        match self.peek() {
            Some(b'\n') => true,
            Some(b'\r') => self.peek_at(1) == Some(b'\n'),
            _ => false,
        }
    }

    /// Skips blanks and line continuations (not newlines). A lone `\r` before
    /// a newline is part of the newline (CRLF input).
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(b) if is_blank(b) => self.pos += 1,
                // Only `\` newline continues a line: bash reads `\` CR LF as
                // an escaped CR and a newline, and runs the next line.
                Some(b'\\') if self.peek_at(1) == Some(b'\n') => self.pos += 2,
                Some(b'\r')
                    if self.peek_at(1) != Some(b'\n') && self.peek_at(1).is_none_or(is_blank) =>
                {
                    self.pos += 1
                }
                _ => break,
            }
        }
    }

    /// Skips blanks and a comment (a `#` where a word would start).
    fn skip_blanks_and_comment(&mut self) {
        self.skip_blanks();
        if self.peek() == Some(b'#') {
            while let Some(b) = self.peek() {
                if b == b'\n' {
                    break;
                }
                self.pos += 1;
            }
        }
    }

    /// Consumes one newline and reads the heredoc bodies pending on it.
    fn consume_newline(&mut self) {
        if self.peek() == Some(b'\r') {
            self.pos += 1;
        }
        if self.peek() == Some(b'\n') {
            self.pos += 1;
        }
        if !self.pending.is_empty() {
            self.read_heredoc_bodies();
        }
    }

    /// Skips blanks, comments and newlines (a linebreak in the grammar).
    fn skip_linebreaks(&mut self) {
        loop {
            self.skip_blanks_and_comment();
            if self.at_newline() {
                self.consume_newline();
            } else {
                break;
            }
        }
    }

    /// The plain word at the cursor, if it is unquoted literal text followed
    /// by a delimiter — used to recognise reserved words.
    fn peek_plain_word(&self) -> Option<&'a [u8]> {
        let start = self.pos;
        let mut i = start;
        while let Some(&b) = self.src.get(i) {
            if is_class(b, META | WORD_STOP) {
                break;
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        match self.src.get(i) {
            None => {}
            Some(&b) if is_meta(b) || b == b'\r' => {}
            Some(_) => return None,
        }
        Some(&self.src[start..i])
    }

    fn peek_reserved(&self) -> Option<&'static str> {
        let w = self.peek_plain_word()?;
        reserved_word(w)
    }

    fn eat_reserved(&mut self, word: &str) -> bool {
        if self.peek_reserved() == Some(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn expect_reserved(&mut self, word: &str) {
        self.skip_linebreaks();
        if !self.eat_reserved(word) {
            let found = self.describe_here();
            self.fail(format!("expected `{word}`, found {found}"));
        }
    }

    // ---- lists ----------------------------------------------------------

    fn at_stop(&self, stop: Stop) -> bool {
        if self.at_end() {
            return true;
        }
        if stop.paren && self.peek() == Some(b')') {
            return true;
        }
        if stop.case_arm
            && self.peek() == Some(b';')
            && matches!(self.peek_at(1), Some(b';') | Some(b'&'))
        {
            return true;
        }
        if let Some(r) = self.peek_reserved()
            && stop.words.contains(&r)
        {
            return true;
        }
        false
    }

    fn parse_list(&mut self, stop: Stop) -> List {
        let mut list = List::default();
        loop {
            self.skip_linebreaks();
            if self.failed() || self.at_stop(stop) {
                break;
            }
            let and_or = self.parse_and_or();
            let mut item = ListItem {
                and_or,
                background: false,
            };
            if self.failed() {
                list.items.push(item);
                break;
            }
            self.skip_blanks_and_comment();
            match self.peek() {
                Some(b';') if !matches!(self.peek_at(1), Some(b';') | Some(b'&')) => self.pos += 1,
                Some(b';') => {
                    if !stop.case_arm {
                        self.fail("`;;` outside a case arm");
                    }
                }
                Some(b'&') if self.peek_at(1) != Some(b'&') && self.peek_at(1) != Some(b'>') => {
                    self.pos += 1;
                    item.background = true;
                }
                _ if self.at_newline() => self.consume_newline(),
                None => {}
                Some(b')') if stop.paren => {}
                _ => {
                    if !self.at_stop(stop) {
                        let msg = format!("unexpected {}", self.describe_here());
                        self.fail(msg);
                    }
                }
            }
            list.items.push(item);
        }
        list
    }

    fn parse_and_or(&mut self) -> AndOr {
        let first = self.parse_pipeline();
        let mut rest = Vec::new();
        loop {
            if self.failed() {
                break;
            }
            self.skip_blanks_and_comment();
            let conn = if self.starts_with(b"&&") {
                Connector::And
            } else if self.starts_with(b"||") {
                Connector::Or
            } else {
                break;
            };
            self.pos += 2;
            self.skip_linebreaks();
            let p = self.parse_pipeline();
            rest.push((conn, p));
        }
        AndOr { first, rest }
    }

    fn parse_pipeline(&mut self) -> Pipeline {
        let mut negated = false;
        loop {
            self.skip_blanks();
            if self.eat_reserved("!") {
                negated = !negated;
                continue;
            }
            if self.eat_reserved("time") {
                self.skip_blanks();
                if self.peek_plain_word() == Some(b"-p") {
                    self.pos += 2;
                }
                continue;
            }
            break;
        }
        let mut commands = vec![self.parse_command()];
        loop {
            if self.failed() {
                break;
            }
            self.skip_blanks_and_comment();
            if self.peek() == Some(b'|') && self.peek_at(1) != Some(b'|') {
                self.pos += 1;
                if self.peek() == Some(b'&') {
                    self.pos += 1;
                }
                self.skip_linebreaks();
                commands.push(self.parse_command());
            } else {
                break;
            }
        }
        Pipeline { negated, commands }
    }

    // ---- commands -------------------------------------------------------

    fn parse_command(&mut self) -> Command {
        if !self.enter() {
            return Command::Simple(Simple::default());
        }
        let cmd = self.parse_command_inner();
        self.leave();
        cmd
    }

    fn parse_command_inner(&mut self) -> Command {
        self.skip_blanks();
        if self.peek() == Some(b'(') {
            if self.peek_at(1) == Some(b'(') {
                let (start, pending, bodies) = (self.pos, self.pending.len(), self.bodies.len());
                self.pos += 2;
                let arith = self.parse_arith_body();
                if self.error.as_ref().is_some_and(|e| e.message == NOT_ARITH) {
                    // `((rm -rf x) )`: not arithmetic, so bash reads it
                    // again as a subshell holding a subshell.
                    self.error = None;
                    self.pos = start;
                    self.pending.truncate(pending);
                    self.bodies.truncate(bodies);
                    self.pos += 1;
                    let list = self.parse_list(Stop::PAREN);
                    self.expect_byte(b')', "`)` closing a subshell");
                    let redirects = self.parse_trailing_redirects();
                    return Command::Compound(Compound::Subshell(list), redirects);
                }
                let redirects = self.parse_trailing_redirects();
                return Command::Compound(Compound::Arith(arith), redirects);
            }
            self.pos += 1;
            let list = self.parse_list(Stop::PAREN);
            self.expect_byte(b')', "`)` closing a subshell");
            let redirects = self.parse_trailing_redirects();
            return Command::Compound(Compound::Subshell(list), redirects);
        }
        match self.peek_reserved() {
            Some("{") => {
                self.pos += 1;
                let list = self.parse_list(Stop::words(&["}"]));
                self.expect_reserved("}");
                let redirects = self.parse_trailing_redirects();
                Command::Compound(Compound::Group(list), redirects)
            }
            Some("if") => {
                self.pos += 2;
                let c = self.parse_if();
                let r = self.parse_trailing_redirects();
                Command::Compound(c, r)
            }
            Some(w @ ("while" | "until")) => {
                self.pos += w.len();
                let cond = self.parse_list(Stop::words(&["do"]));
                self.expect_reserved("do");
                let body = self.parse_list(Stop::words(&["done"]));
                self.expect_reserved("done");
                let r = self.parse_trailing_redirects();
                Command::Compound(Compound::While { cond, body }, r)
            }
            Some(w @ ("for" | "select")) => {
                self.pos += w.len();
                let c = self.parse_for();
                let r = self.parse_trailing_redirects();
                Command::Compound(c, r)
            }
            Some("case") => {
                self.pos += 4;
                let c = self.parse_case();
                let r = self.parse_trailing_redirects();
                Command::Compound(c, r)
            }
            Some("[[") => {
                self.pos += 2;
                let words = self.parse_cond();
                let r = self.parse_trailing_redirects();
                Command::Compound(Compound::Cond(words), r)
            }
            Some("function") => {
                self.pos += 8;
                self.parse_function_keyword()
            }
            Some("coproc") => {
                self.pos += 6;
                self.skip_blanks();
                // `coproc NAME compound`: skip the name when a compound follows.
                if let Some(w) = self.peek_plain_word()
                    && w.iter().all(|&b| is_name_char(b))
                    && reserved_word(w).is_none()
                {
                    let save = self.pos;
                    self.pos += w.len();
                    self.skip_blanks();
                    let compound_next = self.peek() == Some(b'(')
                        || matches!(
                            self.peek_reserved(),
                            Some("{" | "if" | "while" | "until" | "for" | "select" | "case" | "[[")
                        );
                    if !compound_next {
                        self.pos = save;
                    }
                }
                // A coprocess runs in the background, in a subshell.
                let cmd = self.parse_command();
                Command::Compound(
                    Compound::Group(List {
                        items: vec![ListItem {
                            and_or: AndOr {
                                first: Pipeline {
                                    negated: false,
                                    commands: vec![cmd],
                                },
                                rest: Vec::new(),
                            },
                            background: true,
                        }],
                    }),
                    Vec::new(),
                )
            }
            Some(r) if !matches!(r, "in") => {
                let msg = format!("unexpected reserved word `{r}`");
                self.fail(msg);
                Command::Simple(Simple::default())
            }
            _ => self.parse_simple(),
        }
    }

    fn expect_byte(&mut self, b: u8, what: &str) {
        self.skip_linebreaks();
        if self.peek() == Some(b) {
            self.pos += 1;
        } else {
            let found = self.describe_here();
            self.fail(format!("expected {what}, found {found}"));
        }
    }

    fn parse_if(&mut self) -> Compound {
        let mut branches = Vec::new();
        let mut otherwise = None;
        let cond = self.parse_list(Stop::words(&["then"]));
        self.expect_reserved("then");
        let body = self.parse_list(Stop::words(&["elif", "else", "fi"]));
        branches.push((cond, body));
        loop {
            if self.failed() {
                break;
            }
            self.skip_linebreaks();
            if self.eat_reserved("elif") {
                let cond = self.parse_list(Stop::words(&["then"]));
                self.expect_reserved("then");
                let body = self.parse_list(Stop::words(&["elif", "else", "fi"]));
                branches.push((cond, body));
            } else if self.eat_reserved("else") {
                otherwise = Some(self.parse_list(Stop::words(&["fi"])));
                self.expect_reserved("fi");
                break;
            } else {
                self.expect_reserved("fi");
                break;
            }
        }
        Compound::If {
            branches,
            otherwise,
        }
    }

    fn parse_for(&mut self) -> Compound {
        self.skip_blanks();
        if self.starts_with(b"((") {
            self.pos += 2;
            let header = self.parse_arith_body();
            self.skip_blanks();
            if self.peek() == Some(b';') {
                self.pos += 1;
            }
            self.expect_reserved("do");
            let body = self.parse_list(Stop::words(&["done"]));
            self.expect_reserved("done");
            return Compound::ArithFor { header, body };
        }
        let var = match self.peek_plain_word() {
            Some(w)
                if !w.is_empty() && is_name_start(w[0]) && w.iter().all(|&b| is_name_char(b)) =>
            {
                self.pos += w.len();
                lossy(w)
            }
            _ => {
                self.fail("expected a variable name after `for`");
                return Compound::For {
                    var: String::new(),
                    words: None,
                    body: List::default(),
                };
            }
        };
        self.skip_linebreaks();
        let mut words = None;
        if self.eat_reserved("in") {
            let mut ws = Vec::new();
            loop {
                self.skip_blanks_and_comment();
                if self.failed() || self.at_end() || self.at_newline() || self.peek() == Some(b';')
                {
                    break;
                }
                if self.peek().is_some_and(is_meta) {
                    let msg = format!("unexpected {} in a for list", self.describe_here());
                    self.fail(msg);
                    break;
                }
                ws.push(self.parse_word());
            }
            words = Some(ws);
            if self.peek() == Some(b';') {
                self.pos += 1;
            }
        } else if self.peek() == Some(b';') {
            self.pos += 1;
        }
        self.expect_reserved("do");
        let body = self.parse_list(Stop::words(&["done"]));
        self.expect_reserved("done");
        Compound::For { var, words, body }
    }

    fn parse_case(&mut self) -> Compound {
        self.skip_blanks();
        let subject = self.parse_word();
        self.skip_linebreaks();
        self.expect_reserved("in");
        let mut arms = Vec::new();
        loop {
            self.skip_linebreaks();
            if self.failed() {
                break;
            }
            if self.eat_reserved("esac") {
                return Compound::Case { subject, arms };
            }
            if self.at_end() {
                self.fail("expected `esac`");
                break;
            }
            if self.peek() == Some(b'(') {
                self.pos += 1;
            }
            let mut patterns = Vec::new();
            loop {
                self.skip_blanks();
                if self.failed() {
                    break;
                }
                if self.peek().is_none_or(is_meta) {
                    let msg = format!("expected a case pattern, found {}", self.describe_here());
                    self.fail(msg);
                    break;
                }
                patterns.push(self.parse_word());
                self.skip_blanks();
                match self.peek() {
                    Some(b'|') => self.pos += 1,
                    Some(b')') => {
                        self.pos += 1;
                        break;
                    }
                    _ => {
                        let msg = format!(
                            "expected `)` after a case pattern, found {}",
                            self.describe_here()
                        );
                        self.fail(msg);
                        break;
                    }
                }
            }
            let body = self.parse_list(Stop {
                words: &["esac"],
                paren: false,
                case_arm: true,
            });
            arms.push(CaseArm { patterns, body });
            self.skip_blanks();
            if self.starts_with(b";;&") {
                self.pos += 3;
            } else if self.starts_with(b";;") || self.starts_with(b";&") {
                self.pos += 2;
            }
        }
        Compound::Case { subject, arms }
    }

    /// `[[ … ]]`: words until `]]`; operators become words of their own.
    fn parse_cond(&mut self) -> Vec<Word> {
        let mut words = Vec::new();
        let mut regex_next = false;
        loop {
            self.skip_blanks();
            while self.at_newline() {
                self.consume_newline();
                self.skip_blanks();
            }
            if self.failed() {
                break;
            }
            if self.at_end() {
                self.fail("expected `]]`");
                break;
            }
            if self.eat_reserved("]]") {
                break;
            }
            if regex_next {
                regex_next = false;
                words.push(self.parse_cond_regex());
                continue;
            }
            let op: Option<&[u8]> = [&b"&&"[..], b"||", b"(", b")", b"<", b">", b"!"]
                .into_iter()
                .find(|op| self.starts_with(op));
            if let Some(op) = op {
                self.pos += op.len();
                words.push(Word {
                    parts: WordParts::One(Part::Lit {
                        text: lossy(op),
                        quoted: false,
                    }),
                });
                continue;
            }
            let w = self.parse_word();
            if w.parts.is_empty() {
                let msg = format!("unexpected {} in [[ ]]", self.describe_here());
                self.fail(msg);
                break;
            }
            regex_next =
                matches!(w.parts.as_slice(), [Part::Lit { text, quoted: false }] if text == "=~");
            words.push(w);
        }
        words
    }

    /// The right side of `=~`: parentheses and `|` belong to the regex.
    fn parse_cond_regex(&mut self) -> Word {
        let mut b = PartsBuilder::new();
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            if self.failed() {
                break;
            }
            match c {
                b'(' => {
                    depth += 1;
                    b.lit(c, false);
                    self.pos += 1;
                }
                b')' if depth > 0 => {
                    depth -= 1;
                    b.lit(c, false);
                    self.pos += 1;
                }
                b'|' if depth > 0 => {
                    b.lit(c, false);
                    self.pos += 1;
                }
                b' ' | b'\t' | b'\n' if depth == 0 => break,
                _ if is_meta(c) && depth == 0 => break,
                _ => self.word_piece(&mut b, false),
            }
        }
        Word {
            parts: b.finish().into(),
        }
    }

    fn parse_function_keyword(&mut self) -> Command {
        self.skip_blanks();
        let name = match self.peek_plain_word() {
            Some(w) => {
                self.pos += w.len();
                lossy(w)
            }
            None => {
                self.fail("expected a function name after `function`");
                return Command::Simple(Simple::default());
            }
        };
        self.skip_blanks();
        if self.peek() == Some(b'(') {
            self.pos += 1;
            self.skip_blanks();
            if self.peek() != Some(b')') {
                self.fail("expected `)` in a function definition");
                return Command::Simple(Simple::default());
            }
            self.pos += 1;
        }
        self.parse_function_body(name)
    }

    fn parse_function_body(&mut self, name: String) -> Command {
        self.skip_linebreaks();
        let body = self.parse_command();
        if !self.failed() && !matches!(body, Command::Compound(..)) {
            self.fail(format!(
                "the body of function `{name}` is not a compound command"
            ));
        }
        Command::Function {
            name,
            body: Box::new(body),
        }
    }

    fn parse_trailing_redirects(&mut self) -> Vec<Redirect> {
        let mut redirects = Vec::new();
        loop {
            self.skip_blanks();
            if self.failed() {
                break;
            }
            match self.try_redirect() {
                Some(r) => redirects.push(r),
                None => break,
            }
        }
        redirects
    }

    fn parse_simple(&mut self) -> Command {
        // Room for the words of most commands: grown once, not four times.
        let mut cmd = Simple {
            words: Vec::with_capacity(8),
            ..Simple::default()
        };
        loop {
            self.skip_blanks();
            if self.failed() {
                break;
            }
            let Some(b) = self.peek() else { break };
            if b == b'#' {
                // A comment ends the command — also after assignments or
                // redirections alone (`x=1 # \` does not continue the line).
                break;
            }
            if b == b'(' {
                // `name ()` starts a function definition.
                if cmd.words.len() == 1
                    && cmd.assigns.is_empty()
                    && cmd.redirects.is_empty()
                    && let Some(name) = plain_text(&cmd.words[0])
                {
                    self.pos += 1;
                    self.skip_blanks();
                    if self.peek() == Some(b')') {
                        self.pos += 1;
                        return self.parse_function_body(name);
                    }
                }
                self.fail("unexpected `(`");
                break;
            }
            if let Some(r) = self.try_redirect() {
                cmd.redirects.push(r);
                continue;
            }
            let proc_sub = matches!(b, b'<' | b'>') && self.peek_at(1) == Some(b'(');
            if !proc_sub && (is_meta(b) || self.at_newline()) {
                break;
            }
            let before = self.pos;
            let mut word = self.parse_word();
            if self.pos == before {
                let msg = format!("unexpected {}", self.describe_here());
                self.fail(msg);
            }
            // In command position bash reads `NAME[` on to the matching `]`
            // as one word, over blanks, `;` and `#`: `a[ # ]; rm -rf /` runs
            // `rm`. A subscript that does not close within the word berth
            // read is refused.
            if cmd.words.is_empty() && subscript_spans_words(&self.src[before..self.pos]) {
                self.fail("an array subscript that runs past the word (`NAME[` … `]`)");
            }
            if self.failed() && word.parts.is_empty() {
                break;
            }
            if cmd.words.is_empty() {
                match self.as_assignment(word) {
                    Ok(mut assign) => {
                        assign.subscript_code = subscript_is_code(&self.src[before..self.pos]);
                        cmd.assigns.push(assign);
                        continue;
                    }
                    Err(w) => word = w,
                }
            }
            // `declare a=(1 2)`, `export a=(…)`: the array belongs to the word
            // — after a declaration builtin only; bash rejects `echo a=(1)`.
            if self.peek() == Some(b'(')
                && assignment_split(&word).is_some()
                && cmd.words.first().and_then(plain_text).is_some_and(|w| {
                    matches!(
                        w.as_str(),
                        "declare" | "typeset" | "export" | "local" | "readonly"
                    )
                })
            {
                cmd.words.push(word);
                let items = self.parse_array();
                cmd.words.extend(items);
                continue;
            }
            cmd.words.push(word);
        }
        if !self.failed()
            && cmd.words.is_empty()
            && cmd.assigns.is_empty()
            && cmd.redirects.is_empty()
        {
            let msg = format!("expected a command, found {}", self.describe_here());
            self.fail(msg);
        }
        Command::Simple(cmd)
    }

    /// `NAME=value` (or `NAME+=`, `NAME[i]=`) before the command name; the
    /// word back when it is none.
    fn as_assignment(&mut self, word: Word) -> Result<Assign, Word> {
        let (name, value_parts) = into_assignment(word)?;
        if self.peek() == Some(b'(') && value_parts.is_empty() {
            let words = self.parse_array();
            return Ok(Assign {
                name,
                value: AssignValue::Array(words),
                subscript_code: false,
            });
        }
        Ok(Assign {
            name,
            value: AssignValue::Scalar(Word {
                parts: value_parts.into(),
            }),
            subscript_code: false,
        })
    }

    fn parse_array(&mut self) -> Vec<Word> {
        // at `(`
        self.pos += 1;
        let mut words = Vec::new();
        loop {
            self.skip_linebreaks();
            if self.failed() {
                break;
            }
            match self.peek() {
                Some(b')') => {
                    self.pos += 1;
                    break;
                }
                None => {
                    self.fail("unterminated array assignment");
                    break;
                }
                Some(b) if is_meta(b) => {
                    let msg = format!("unexpected {} in an array assignment", self.describe_here());
                    self.fail(msg);
                    break;
                }
                _ => words.push(self.parse_word()),
            }
        }
        words
    }

    // ---- redirections ---------------------------------------------------

    #[inline]
    fn try_redirect(&mut self) -> Option<Redirect> {
        // Every redirection starts with a digit, `{`, `<`, `>` or `&`: most
        // words start with none, and need none of the tests below (asked
        // where the word is, without a call).
        if !matches!(self.peek(), Some(b'0'..=b'9' | b'{' | b'<' | b'>' | b'&')) {
            return None;
        }
        self.redirect()
    }

    /// [`Parser::try_redirect`] past its first test.
    fn redirect(&mut self) -> Option<Redirect> {
        let start = self.pos;
        let mut fd = None;
        // `2>`, `10<`: digits directly followed by an operator.
        let mut i = self.pos;
        while self.src.get(i).is_some_and(|b| b.is_ascii_digit()) {
            i += 1;
        }
        if i > self.pos && matches!(self.src.get(i), Some(b'<') | Some(b'>')) {
            fd = std::str::from_utf8(&self.src[self.pos..i])
                .ok()
                .and_then(|s| s.parse().ok());
            self.pos = i;
        } else if self.peek() == Some(b'{') {
            // `{var}>file`, `{a[i]}>file`
            if let Some((end, code)) = super::fd_var::scan(self.src, self.pos, is_meta) {
                if code {
                    self.fail(
                        "a descriptor variable `{NAME[…]}` whose subscript bash evaluates as code",
                    );
                }
                self.pos = end;
            }
        }
        let op = if self.starts_with(b"<<<") {
            self.pos += 3;
            RedirOp::HereString
        } else if self.starts_with(b"<<-") {
            self.pos += 3;
            return Some(self.parse_heredoc_op(fd, true));
        } else if self.starts_with(b"<<") {
            self.pos += 2;
            return Some(self.parse_heredoc_op(fd, false));
        } else if self.starts_with(b"<>") {
            self.pos += 2;
            RedirOp::ReadWrite
        } else if self.starts_with(b"<&") {
            self.pos += 2;
            RedirOp::Dup
        } else if self.starts_with(b"<(") {
            self.pos = start;
            return None;
        } else if self.starts_with(b"<") {
            self.pos += 1;
            RedirOp::In
        } else if self.starts_with(b">>") {
            self.pos += 2;
            RedirOp::Append
        } else if self.starts_with(b">&") {
            self.pos += 2;
            RedirOp::Dup
        } else if self.starts_with(b">|") {
            self.pos += 2;
            RedirOp::Out
        } else if self.starts_with(b">(") {
            self.pos = start;
            return None;
        } else if self.starts_with(b">") {
            self.pos += 1;
            RedirOp::Out
        } else if fd.is_none() && self.starts_with(b"&>>") {
            self.pos += 3;
            RedirOp::OutBoth
        } else if fd.is_none() && self.starts_with(b"&>") {
            self.pos += 2;
            RedirOp::OutBoth
        } else {
            self.pos = start;
            return None;
        };
        self.skip_blanks();
        if self
            .peek()
            .is_none_or(|b| is_meta(b) && b != b'<' && b != b'>')
            || self.at_newline()
        {
            let msg = format!(
                "expected a redirection target, found {}",
                self.describe_here()
            );
            self.fail(msg);
            return Some(Redirect {
                fd,
                op,
                target: RedirTarget::Fd,
            });
        }
        let word = self.parse_word();
        if word.parts.is_empty() {
            // `> >x`, `<<< <<`: bash reports a syntax error.
            let msg = format!(
                "expected a redirection target, found {}",
                self.describe_here()
            );
            self.fail(msg);
            return Some(Redirect {
                fd,
                op,
                target: RedirTarget::Fd,
            });
        }
        if op == RedirOp::Dup {
            let is_fd = match plain_text(&word) {
                Some(t) => {
                    t == "-"
                        || (!t.is_empty()
                            && t.trim_end_matches('-').bytes().all(|b| b.is_ascii_digit()))
                }
                None => false,
            };
            if is_fd {
                return Some(Redirect {
                    fd,
                    op,
                    target: RedirTarget::Fd,
                });
            }
            // `>&file` writes the file (both streams).
            return Some(Redirect {
                fd,
                op: RedirOp::OutBoth,
                target: RedirTarget::Word(word),
            });
        }
        Some(Redirect {
            fd,
            op,
            target: RedirTarget::Word(word),
        })
    }

    fn parse_heredoc_op(&mut self, fd: Option<u32>, strip_tabs: bool) -> Redirect {
        self.skip_blanks();
        if self.peek().is_none_or(is_meta) {
            let msg = format!(
                "expected a heredoc delimiter, found {}",
                self.describe_here()
            );
            self.fail(msg);
            return Redirect {
                fd,
                op: RedirOp::HereDoc,
                target: RedirTarget::Fd,
            };
        }
        let start = self.pos;
        let word = self.parse_word();
        let raw = &self.src[start..self.pos];
        let no_target = Redirect {
            fd,
            op: RedirOp::HereDoc,
            target: RedirTarget::Fd,
        };
        if word.parts.is_empty() {
            let msg = format!(
                "expected a heredoc delimiter, found {}",
                self.describe_here()
            );
            self.fail(msg);
            return no_target;
        }
        // bash keeps an expansion in a delimiter as written but removes the
        // quotes in and around it by rules of its own (`"$(echo "a")"` ends
        // at `$(echo a)`, and quotes inside `$(…)` do not make the body
        // literal). Where the body ends decides what runs: refuse the form.
        if word
            .parts
            .iter()
            .any(|p| !matches!(p, Part::Lit { .. } | Part::Tilde(_)))
        {
            self.fail("a heredoc delimiter with an expansion in it");
            return no_target;
        }
        // A quote or an escape makes the body literal; a line continuation
        // is neither (`E\⏎OF` is `EOF`, and the body expands).
        let mut quoted = false;
        let mut i = 0;
        while i < raw.len() {
            match raw[i] {
                b'\\' if raw.get(i + 1) == Some(&b'\n') => i += 2,
                b'\'' | b'"' | b'\\' => {
                    quoted = true;
                    break;
                }
                _ => i += 1,
            }
        }
        let mut delimiter = Vec::new();
        for part in &word.parts {
            match part {
                Part::Lit { text, .. } => delimiter.extend_from_slice(text.as_bytes()),
                Part::Tilde(u) => {
                    delimiter.push(b'~');
                    delimiter.extend_from_slice(u.as_bytes());
                }
                _ => {}
            }
        }
        let id = self.bodies.len();
        self.bodies.push(None);
        self.pending.push(PendingHereDoc {
            id,
            delimiter,
            strip_tabs,
            quoted,
        });
        Redirect {
            fd,
            op: RedirOp::HereDoc,
            target: RedirTarget::HereDoc(HereDoc {
                quoted,
                parts: Vec::new(),
                id,
            }),
        }
    }

    fn read_heredoc_bodies(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for doc in pending {
            let body_start = self.pos;
            let mut body_end = self.src.len();
            let mut after = self.src.len();
            let mut line_start = self.pos;
            while line_start < self.src.len() {
                // As bash compares it: continuations joined when unquoted.
                let (logical, line_end) =
                    super::heredoc::logical_line(self.src, line_start, !doc.quoted);
                let mut line: &[u8] = &logical;
                if doc.strip_tabs {
                    while line.first() == Some(&b'\t') {
                        line = &line[1..];
                    }
                }
                // bash ends the body at the delimiter exactly (a delimiter
                // written before CR LF holds the CR); berth also ends it at
                // the delimiter before a CR. Never later than bash: a body
                // read past bash's end would hide the commands after it.
                let exact = line == doc.delimiter.as_slice();
                let before_cr = line.strip_suffix(b"\r") == Some(doc.delimiter.as_slice());
                if exact || before_cr {
                    body_end = line_start;
                    after = (line_end + 1).min(self.src.len());
                    break;
                }
                line_start = line_end + 1;
            }
            self.pos = after;
            let body = &self.src[body_start..body_end.max(body_start)];
            let parts = if doc.quoted {
                Vec::new()
            } else {
                let body_text = self
                    .text
                    .and_then(|t| t.get(body_start..body_end.max(body_start)));
                let mut sub = Parser::with_text(body, body_text, self.depth);
                sub.plain_subs = std::mem::take(&mut self.plain_subs);
                let mut parts = sub.parse_heredoc_content();
                self.plain_subs = std::mem::take(&mut sub.plain_subs);
                let mut sub_bodies = std::mem::take(&mut sub.bodies);
                fill_parts(&mut parts, &mut sub_bodies, 0);
                if let Some(e) = sub.error {
                    self.fail(format!("in a heredoc body: {}", e.message));
                }
                parts
            };
            if let Some(slot) = self.bodies.get_mut(doc.id) {
                *slot = Some(HereDoc {
                    quoted: doc.quoted,
                    parts,
                    id: doc.id,
                });
            }
        }
    }

    /// An unquoted heredoc body: like double-quoted text without the quotes.
    fn parse_heredoc_content(&mut self) -> Vec<Part> {
        let mut b = PartsBuilder::new();
        while let Some(c) = self.peek() {
            if self.failed() {
                break;
            }
            match c {
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(e @ (b'$' | b'`' | b'\\')) => {
                        b.lit(e, true);
                        self.pos += 2;
                    }
                    _ => {
                        b.lit(b'\\', true);
                        self.pos += 1;
                    }
                },
                b'$' => self.parse_dollar(&mut b, true),
                b'`' => self.parse_backtick(&mut b, true),
                _ => {
                    // A body's plain runs are long (whole lines): memchr3's
                    // vector search finds their end.
                    let from = self.pos + 1;
                    let rest = self.src.get(from..).unwrap_or_default();
                    let end = from + memchr::memchr3(b'\\', b'$', b'`', rest).unwrap_or(rest.len());
                    b.lit_bytes(&self.src[self.pos..end], true);
                    self.pos = end;
                }
            }
        }
        b.finish()
    }

    /// Moves heredoc bodies read after their command into the tree.
    fn finish_heredocs(&mut self, list: &mut List) {
        if self.bodies.is_empty() {
            return;
        }
        let mut bodies = std::mem::take(&mut self.bodies);
        fill_list(list, &mut bodies, 0);
    }

    // ---- words ----------------------------------------------------------

    /// Reads one word up to an unquoted metacharacter.
    fn parse_word(&mut self) -> Word {
        let mut b = PartsBuilder::new();
        let start = self.pos;
        // Process substitution at the start of a word.
        if matches!(self.peek(), Some(b'<') | Some(b'>')) && self.peek_at(1) == Some(b'(') {
            self.pos += 2;
            if self.enter() {
                let list = self.parse_list(Stop::PAREN);
                self.leave();
                self.expect_byte(b')', "`)` closing a process substitution");
                b.push(Part::ProcSub(Arc::new(list)));
            }
        }
        if self.pos == start
            && !self.failed()
            && let Some(end) = self.plain_word_end()
        {
            // The loop below would take these bytes as one literal piece
            // and stop at the metacharacter (or the end) after them: the
            // same word, without building it byte run by byte run.
            let text = self.text(start, end);
            self.pos = end;
            return Word {
                parts: WordParts::One(Part::Lit {
                    text,
                    quoted: false,
                }),
            };
        }
        while let Some(c) = self.peek() {
            if self.failed() {
                break;
            }
            if c == b'\r' && self.peek_at(1) == Some(b'\n') {
                break;
            }
            if is_meta(c) {
                break;
            }
            let at_start = self.pos == start;
            self.word_piece_tilde(&mut b, at_start);
        }
        Word {
            parts: b.finish().into(),
        }
    }

    /// One piece of an unquoted word, recognising tilde expansion at the
    /// start of a word or after `=`/`:` in an assignment.
    fn word_piece_tilde(&mut self, b: &mut PartsBuilder, at_start: bool) {
        if self.peek() == Some(b'~') {
            let tilde_ok = at_start
                || b.plain_prefix().is_some_and(|p| {
                    (p.last() == Some(&b'=') || p.last() == Some(&b':')) && assignment_prefix(p)
                });
            if tilde_ok {
                let mut j = self.pos + 1;
                while let Some(&c) = self.src.get(j) {
                    if c == b'/'
                        || c == b':'
                        || is_meta(c)
                        || matches!(c, b'\'' | b'"' | b'\\' | b'$' | b'`')
                    {
                        break;
                    }
                    j += 1;
                }
                // `~user` only when the user part ends the word or meets `/`
                // (or `:` in an assignment). A quote or an expansion in the
                // tilde-prefix leaves the `~` literal in bash (`~'x'`, `~"/"`).
                let user = &self.src[self.pos + 1..j];
                let ends = match self.src.get(j) {
                    None | Some(b'/') => true,
                    Some(b':') => !at_start,
                    Some(&c) => is_meta(c),
                };
                let valid = ends
                    && user
                        .iter()
                        .all(|&c| is_name_char(c) || c == b'-' || c == b'.' || c == b'+');
                if valid {
                    let user = lossy(user);
                    self.pos = j;
                    b.push(Part::Tilde(user));
                    return;
                }
            }
        }
        self.word_piece(b, false);
    }

    /// One piece of an unquoted word: a quoted string, an expansion, an
    /// escape or a literal byte.
    fn word_piece(&mut self, b: &mut PartsBuilder, _in_regex: bool) {
        let Some(c) = self.peek() else { return };
        match c {
            b'\'' => {
                self.pos += 1;
                let start = self.pos;
                match self.src[start..].iter().position(|&x| x == b'\'') {
                    Some(n) => {
                        b.lit_bytes(&self.src[start..start + n], true);
                        b.empty_quoted();
                        self.pos = start + n + 1;
                    }
                    None => {
                        self.pos = self.src.len();
                        self.fail("unterminated single quote");
                    }
                }
            }
            b'"' => {
                self.pos += 1;
                self.parse_dquote(b);
            }
            b'\\' => match self.peek_at(1) {
                // `\` CR LF is an escaped CR, then a newline (as in bash).
                Some(b'\n') => self.pos += 2,
                Some(e) => {
                    b.lit(e, true);
                    self.pos += 2;
                }
                None => {
                    b.lit(b'\\', true);
                    self.pos += 1;
                }
            },
            b'$' => self.parse_dollar(b, false),
            b'`' => self.parse_backtick(b, false),
            _ => {
                // `c`, and the plain bytes after it at once: each would
                // come back here one by one.
                let end = self.plain_run_end(self.pos + 1, |x| {
                    is_meta(x) || matches!(x, b'\'' | b'"' | b'\\' | b'$' | b'`' | b'~' | b'\r')
                });
                b.lit_bytes(&self.src[self.pos..end], false);
                self.pos = end;
            }
        }
    }

    /// Where the word at the cursor ends when it is unquoted literal bytes
    /// alone — none a quote, `\\`, `$`, a backquote, `~` or CR — up to a
    /// metacharacter or the end of the input.
    fn plain_word_end(&self) -> Option<usize> {
        let end = self.plain_run_end(self.pos, |x| is_class(x, META | WORD_STOP | TILDE));
        let ends_word = self.src.get(end).is_none_or(|&c| is_meta(c));
        (end > self.pos && ends_word).then_some(end)
    }

    /// Where the run of bytes from `from` that `stops` none of ends.
    fn plain_run_end(&self, from: usize, stops: impl Fn(u8) -> bool) -> usize {
        let rest = self.src.get(from..).unwrap_or_default();
        from + rest.iter().position(|&x| stops(x)).unwrap_or(rest.len())
    }

    fn parse_dquote(&mut self, b: &mut PartsBuilder) {
        b.empty_quoted();
        loop {
            if self.failed() {
                return;
            }
            let Some(c) = self.peek() else {
                self.fail("unterminated double quote");
                return;
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return;
                }
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(e @ (b'$' | b'`' | b'"' | b'\\')) => {
                        b.lit(e, true);
                        self.pos += 2;
                    }
                    _ => {
                        b.lit(b'\\', true);
                        self.pos += 1;
                    }
                },
                b'$' => self.parse_dollar(b, true),
                b'`' => self.parse_backtick(b, true),
                _ => {
                    let end = self
                        .plain_run_end(self.pos + 1, |x| matches!(x, b'"' | b'\\' | b'$' | b'`'));
                    b.lit_bytes(&self.src[self.pos..end], true);
                    self.pos = end;
                }
            }
        }
    }

    fn parse_dollar(&mut self, b: &mut PartsBuilder, in_dquote: bool) {
        // at `$`. bash removes line continuations before it reads what
        // follows (`$` `\` newline `'\x72\x6d'` is `rm`): step over them, so
        // that `peek_at(1)` is the byte after them.
        let mut j = self.pos + 1;
        while self.src.get(j) == Some(&b'\\') && self.src.get(j + 1) == Some(&b'\n') {
            j += 2;
        }
        self.pos = j - 1;
        match self.peek_at(1) {
            Some(b'\'') if !in_dquote => {
                self.pos += 2;
                let bytes = self.parse_ansi_c();
                b.lit_bytes(&bytes, true);
                b.empty_quoted();
            }
            Some(b'"') if !in_dquote => {
                self.pos += 2;
                self.parse_dquote(b);
            }
            Some(b'(') if self.peek_at(2) == Some(b'(') => {
                self.pos += 3;
                let arith = self.parse_arith_body();
                b.push(Part::Arith(arith));
            }
            Some(b'[') => {
                // `$[…]`: bash's old spelling of `$((…))`.
                self.pos += 2;
                let arith = self.parse_arith_bracket();
                b.push(Part::Arith(arith));
            }
            Some(b'(') => {
                self.pos += 2;
                // A plain text met before shares its tree (see
                // `plain_subs`); its parse would enter two levels (the
                // substitution, its command), so only below the bound.
                let start = self.pos;
                let plain =
                    plain_subs::plain_close(self.src, start).filter(|_| self.depth + 2 < MAX_DEPTH);
                if let Some(close) = plain
                    && let Some(list) = self.plain_subs.get(&self.src[start..close])
                {
                    self.pos = close + 1;
                    b.push(Part::CmdSub(list));
                } else if self.enter() {
                    let list = Arc::new(self.parse_list(Stop::PAREN));
                    self.leave();
                    self.expect_byte(b')', "`)` closing `$(`");
                    if let Some(close) = plain
                        && self.error.is_none()
                        && self.pos == close + 1
                    {
                        self.plain_subs.keep(&self.src[start..close], &list);
                    }
                    b.push(Part::CmdSub(list));
                }
            }
            Some(b'{') => {
                self.pos += 2;
                if self.enter() {
                    let part = self.parse_braced_param(in_dquote);
                    self.leave();
                    b.push(part);
                }
            }
            Some(c) if is_name_start(c) => {
                let start = self.pos + 1;
                let mut j = start;
                while self.src.get(j).is_some_and(|&x| is_name_char(x)) {
                    j += 1;
                }
                let name = self.text(start, j);
                self.pos = j;
                b.push(Part::Param {
                    name,
                    inner: Vec::new(),
                });
            }
            Some(c)
                if c.is_ascii_digit()
                    || matches!(c, b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-') =>
            {
                self.pos += 2;
                b.push(Part::Param {
                    name: (c as char).to_string(),
                    inner: Vec::new(),
                });
            }
            _ => {
                b.lit(b'$', in_dquote);
                self.pos += 1;
            }
        }
    }

    /// `${…}` after the `${`: the name, and the operator's words as parts.
    ///
    /// Inside double quotes a `'` in the operator's word is an ordinary
    /// character (`"${x:-'$(cmd)'}"` runs `cmd`): it is read as one, so the
    /// substitutions behind it are seen.
    fn parse_braced_param(&mut self, in_dquote: bool) -> Part {
        let start = self.pos;
        let j = super::param::name_end(self.src, start);
        let name = self.text(start, j);
        self.pos = j;
        let mut b = PartsBuilder::new();
        loop {
            if self.failed() {
                break;
            }
            let Some(c) = self.peek() else {
                self.fail("unterminated `${`");
                break;
            };
            match c {
                b'}' => {
                    self.pos += 1;
                    break;
                }
                b'\'' if in_dquote => {
                    b.lit(c, true);
                    self.pos += 1;
                }
                b'$' if in_dquote => self.parse_dollar(&mut b, true),
                b'\'' | b'"' | b'\\' | b'$' | b'`' => self.word_piece(&mut b, false),
                _ => {
                    b.lit(c, false);
                    self.pos += 1;
                }
            }
        }
        Part::Param {
            name,
            inner: b.finish(),
        }
    }

    fn parse_backtick(&mut self, b: &mut PartsBuilder, in_dquote: bool) {
        self.pos += 1;
        let mut content = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                self.fail("unterminated backquote");
                return;
            };
            match c {
                b'`' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => match self.peek_at(1) {
                    Some(e @ (b'$' | b'`' | b'\\')) => {
                        content.push(e);
                        self.pos += 2;
                    }
                    Some(b'"') if in_dquote => {
                        content.push(b'"');
                        self.pos += 2;
                    }
                    Some(b'\n') => self.pos += 2,
                    _ => {
                        content.push(b'\\');
                        self.pos += 1;
                    }
                },
                _ => {
                    content.push(c);
                    self.pos += 1;
                }
            }
        }
        if self.depth >= MAX_DEPTH {
            self.fail(format!("nesting deeper than {MAX_DEPTH} levels"));
            return;
        }
        let sub = parse_at_depth(&content, self.depth + 1);
        if let Some(e) = sub.error {
            self.fail(format!("in a backquoted command: {}", e.message));
        }
        b.push(Part::CmdSub(Arc::new(sub.list)));
    }

    /// `$'…'` after the opening quote: bash's ANSI-C escapes.
    ///
    /// The extent comes first, found as bash's lexer finds it — a backslash
    /// escapes the next byte, whatever the escape then means — so that no
    /// escape (`\c'`, `\c\'`) can move where the string ends.
    fn parse_ansi_c(&mut self) -> Vec<u8> {
        let start = self.pos;
        let mut i = start;
        loop {
            match self.src.get(i) {
                None => {
                    self.pos = self.src.len();
                    self.fail("unterminated $'");
                    return Vec::new();
                }
                Some(b'\\') => i += 2,
                Some(b'\'') => break,
                Some(_) => i += 1,
            }
        }
        self.pos = i + 1;
        decode_ansi_c(&self.src[start..i])
    }

    /// An arithmetic body after `$[`, up to the matching `]`.
    fn parse_arith_bracket(&mut self) -> Arith {
        let mut arith = Arith::default();
        if !self.enter() {
            return arith;
        }
        let mut depth = 0usize;
        loop {
            if self.failed() {
                break;
            }
            let Some(c) = self.peek() else {
                self.fail("unterminated `$[`");
                break;
            };
            match c {
                b']' if depth == 0 => {
                    self.pos += 1;
                    break;
                }
                b'[' => {
                    depth += 1;
                    self.pos += 1;
                }
                b']' => {
                    depth -= 1;
                    self.pos += 1;
                }
                b'$' | b'`' | b'\'' | b'"' => {
                    arith.has_vars = true;
                    let mut b = PartsBuilder::new();
                    match c {
                        b'$' => self.parse_dollar(&mut b, true),
                        b'`' => self.parse_backtick(&mut b, true),
                        _ => self.word_piece(&mut b, false),
                    }
                    collect_subs(&b.finish(), &mut arith.subs);
                }
                c if is_name_start(c) => {
                    arith.has_vars = true;
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
        self.leave();
        arith
    }

    /// An arithmetic body after `((` or `$((`, up to the matching `))`.
    fn parse_arith_body(&mut self) -> Arith {
        let mut arith = Arith::default();
        if !self.enter() {
            return arith;
        }
        let mut depth = 0usize;
        loop {
            if self.failed() {
                break;
            }
            let Some(c) = self.peek() else {
                self.fail("unterminated arithmetic expression");
                break;
            };
            match c {
                b')' if depth == 0 => {
                    if self.peek_at(1) == Some(b')') {
                        self.pos += 2;
                    } else {
                        self.fail(NOT_ARITH);
                    }
                    break;
                }
                b'(' => {
                    depth += 1;
                    self.pos += 1;
                }
                b')' => {
                    depth -= 1;
                    self.pos += 1;
                }
                b'$' => {
                    arith.has_vars = true;
                    let mut b = PartsBuilder::new();
                    self.parse_dollar(&mut b, true);
                    collect_subs(&b.finish(), &mut arith.subs);
                }
                b'`' => {
                    arith.has_vars = true;
                    let mut b = PartsBuilder::new();
                    self.parse_backtick(&mut b, true);
                    collect_subs(&b.finish(), &mut arith.subs);
                }
                b'\'' | b'"' => {
                    arith.has_vars = true;
                    let mut b = PartsBuilder::new();
                    self.word_piece(&mut b, false);
                    collect_subs(&b.finish(), &mut arith.subs);
                }
                c if is_name_start(c) => {
                    arith.has_vars = true;
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
        self.leave();
        arith
    }
}

/// The error of `((…) )`: a `)` closes the expression without a second one.
const NOT_ARITH: &str = "expected `))` closing an arithmetic expression";

/// bash's ANSI-C escapes over the body of a `$'…'`. bash cuts the result at
/// its first NUL (`$'rm\0x'` is `rm`).
fn decode_ansi_c(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    let hex = |i: &mut usize, max: usize| -> Option<u32> {
        let mut v: u32 = 0;
        let mut n = 0;
        while n < max {
            match body.get(*i).and_then(|&b| (b as char).to_digit(16)) {
                Some(d) => {
                    v = v.wrapping_mul(16).wrapping_add(d);
                    *i += 1;
                    n += 1;
                }
                None => break,
            }
        }
        (n > 0).then_some(v)
    };
    while let Some(&c) = body.get(i) {
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = body.get(i) else {
            out.push(b'\\');
            break;
        };
        i += 1;
        match e {
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'e' | b'E' => out.push(27),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'\\' | b'\'' | b'"' | b'?' => out.push(e),
            b'0'..=b'7' => {
                let mut v: u32 = u32::from(e - b'0');
                for _ in 0..2 {
                    match body.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            // `\x{HHHH}`: any number of digits, the low byte kept (bash 5.2).
            b'x' if body.get(i) == Some(&b'{') => {
                i += 1;
                let v = hex(&mut i, usize::MAX).unwrap_or(0);
                if body.get(i) == Some(&b'}') {
                    i += 1;
                }
                out.push((v & 0xff) as u8);
            }
            b'x' => match hex(&mut i, 2) {
                Some(v) => out.push((v & 0xff) as u8),
                None => out.extend_from_slice(b"\\x"),
            },
            b'u' | b'U' => {
                let max = if e == b'u' { 4 } else { 8 };
                match hex(&mut i, max).and_then(char::from_u32) {
                    Some(ch) => {
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                    None => {
                        out.push(b'\\');
                        out.push(e);
                    }
                }
            }
            // `\cX`: control-X; `\c?` is DEL; `\c\\` takes both backslashes;
            // `\c` at the end stays as written.
            b'c' => match body.get(i) {
                None => out.extend_from_slice(b"\\c"),
                Some(&x) => {
                    i += 1;
                    if x == b'\\' && body.get(i) == Some(&b'\\') {
                        i += 1;
                    }
                    out.push(if x == b'?' {
                        0x7f
                    } else {
                        x.to_ascii_uppercase() & 0x1f
                    });
                }
            },
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    if let Some(nul) = out.iter().position(|&b| b == 0) {
        out.truncate(nul);
    }
    out
}

fn collect_subs(parts: &[Part], out: &mut Vec<List>) {
    for part in parts {
        match part {
            Part::CmdSub(l) | Part::ProcSub(l) => out.push(List::clone(l)),
            Part::Arith(a) => out.extend(a.subs.iter().cloned()),
            Part::Param { inner, .. } => collect_subs(inner, out),
            Part::Lit { .. } | Part::Tilde(_) => {}
        }
    }
}

/// Whether `raw` (one word as written) starts `NAME[` without the `]` that
/// bash would match inside it. Expansions other than `$name` and a plain
/// `${…}` count as unmatched: bash skips brackets inside them.
fn subscript_spans_words(raw: &[u8]) -> bool {
    let name = raw.iter().take_while(|&&b| is_name_char(b)).count();
    if name == 0 || !is_name_start(raw[0]) || raw.get(name) != Some(&b'[') {
        return false;
    }
    let mut depth = 0usize;
    let mut i = name;
    while i < raw.len() {
        match raw[i] {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return false;
                }
            }
            b'\\' => i += 1,
            b'\'' => match raw[i + 1..].iter().position(|&b| b == b'\'') {
                Some(n) => i += n + 1,
                None => return true,
            },
            b'"' => {
                i += 1;
                while i < raw.len() && raw[i] != b'"' {
                    if matches!(raw[i], b'$' | b'`') {
                        return true;
                    }
                    i += usize::from(raw[i] == b'\\') + 1;
                }
            }
            b'$' if raw.get(i + 1).is_some_and(|&b| is_name_start(b)) => {}
            b'$' if raw.get(i + 1) == Some(&b'{') => {
                match raw[i + 2..].iter().position(|&b| b == b'}') {
                    Some(n)
                        if !raw[i + 2..i + 2 + n]
                            .iter()
                            .any(|b| matches!(b, b'$' | b'`' | b'\'' | b'"' | b'[')) =>
                    {
                        i += n + 2
                    }
                    _ => return true,
                }
            }
            b'$' | b'`' => return true,
            _ => {}
        }
        i += 1;
    }
    true
}

/// Whether `raw` (an assignment word as written) starts `NAME[sub]` with a
/// subscript bash evaluates into code: `$`, a backquote or a name in it,
/// quoted or not. A subscript whose end cannot be found counts as code.
pub(super) fn subscript_is_code(raw: &[u8]) -> bool {
    let name = raw.iter().take_while(|&&b| is_name_char(b)).count();
    if raw.get(name) != Some(&b'[') {
        return false;
    }
    let mut depth = 0usize;
    let mut i = name;
    while i < raw.len() {
        match raw[i] {
            b'[' => depth += 1,
            b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let sub = &raw[name + 1..i];
                    return sub != b"@"
                        && sub != b"*"
                        && sub.iter().any(|&b| {
                            b == b'$' || b == b'`' || b == b'_' || b.is_ascii_alphabetic()
                        });
                }
            }
            b'\\' => i += 1,
            b'\'' => match raw[i + 1..].iter().position(|&b| b == b'\'') {
                Some(n) => i += n + 1,
                None => return true,
            },
            _ => {}
        }
        i += 1;
    }
    true
}

/// The word's text when it is one unquoted literal.
fn plain_text(word: &Word) -> Option<String> {
    match word.parts.as_slice() {
        [
            Part::Lit {
                text,
                quoted: false,
            },
        ] => Some(text.clone()),
        _ => None,
    }
}

/// Whether the bytes start with `NAME=` (or `NAME+=`, `NAME[…]=`).
fn assignment_prefix(p: &[u8]) -> bool {
    let Some(eq) = p.iter().position(|&b| b == b'=') else {
        return false;
    };
    valid_assign_lhs(&p[..eq])
}

fn valid_assign_lhs(lhs: &[u8]) -> bool {
    let lhs = lhs.strip_suffix(b"+").unwrap_or(lhs);
    let name_end = lhs.iter().position(|&b| b == b'[').unwrap_or(lhs.len());
    let name = &lhs[..name_end];
    if name.is_empty() || !is_name_start(name[0]) || !name.iter().all(|&b| is_name_char(b)) {
        return false;
    }
    let rest = &lhs[name_end..];
    rest.is_empty() || (rest.starts_with(b"[") && rest.ends_with(b"]"))
}

/// Where a `NAME=value` word splits.
struct AssignSplit {
    name: String,
    /// The value's literal text after `=` in the part that holds it.
    rest: String,
    /// That part's index.
    at: usize,
}

/// Where `word` splits as `NAME=value`, if it is an assignment.
fn assignment_split(word: &Word) -> Option<AssignSplit> {
    let Some(Part::Lit {
        text,
        quoted: false,
    }) = word.parts.first()
    else {
        return None;
    };
    // A byte scan: cheaper than `find`'s searcher on a short word.
    let Some(eq) = text.bytes().position(|b| b == b'=') else {
        return subscripted_split(text, &word.parts);
    };
    if !valid_assign_lhs(&text.as_bytes()[..eq]) {
        return None;
    }
    let lhs = &text[..eq];
    let name = lhs.trim_end_matches('+');
    let name = name.split('[').next().unwrap_or(name).to_string();
    Some(AssignSplit {
        name,
        rest: text[eq + 1..].to_string(),
        at: 0,
    })
}

/// `NAME[…]=value` whose subscript holds quotes or expansions
/// (`a['x']=1`, `a[$i]=1`): bash reads the subscript as part of the name, so
/// the word is an assignment and the next word is the command.
fn subscripted_split(first: &str, parts: &[Part]) -> Option<AssignSplit> {
    let open = first.bytes().position(|b| b == b'[')?;
    let name = &first[..open];
    if name.is_empty()
        || !is_name_start(name.as_bytes()[0])
        || !name.bytes().all(is_name_char)
        || first[open..].contains(']')
    {
        return None;
    }
    for (i, part) in parts.iter().enumerate().skip(1) {
        let Part::Lit {
            text,
            quoted: false,
        } = part
        else {
            continue;
        };
        let Some(close) = text.find(']') else {
            continue;
        };
        let after = &text[close + 1..];
        let rest = after
            .strip_prefix("+=")
            .or_else(|| after.strip_prefix('='))?;
        return Some(AssignSplit {
            name: name.to_string(),
            rest: rest.to_string(),
            at: i,
        });
    }
    None
}

/// The name and value parts of the assignment `word` is, its parts moved
/// (a substitution in the value is not copied: `a=$(a=$(…))` costs linear
/// work); the word back when it is none. A subscript's substitutions run:
/// they are kept in the value's parts.
fn into_assignment(word: Word) -> Result<(String, Vec<Part>), Word> {
    let Some(split) = assignment_split(&word) else {
        return Err(word);
    };
    let mut parts = word.parts.into_vec().into_iter();
    let mut value: Vec<Part> = parts
        .by_ref()
        .take(split.at)
        .skip(1)
        .filter(|p| !matches!(p, Part::Lit { .. } | Part::Tilde(_)))
        .collect();
    // The part that holds `=`.
    parts.next();
    if !split.rest.is_empty() {
        value.push(Part::Lit {
            text: split.rest,
            quoted: false,
        });
    }
    value.extend(parts);
    Ok((split.name, value))
}

// ---- moving heredoc bodies into the tree ---------------------------------

fn fill_list(list: &mut List, bodies: &mut [Option<HereDoc>], depth: usize) {
    if depth > MAX_DEPTH * 2 {
        return;
    }
    for item in &mut list.items {
        fill_pipeline(&mut item.and_or.first, bodies, depth);
        for (_, p) in &mut item.and_or.rest {
            fill_pipeline(p, bodies, depth);
        }
    }
}

fn fill_pipeline(p: &mut Pipeline, bodies: &mut [Option<HereDoc>], depth: usize) {
    for c in &mut p.commands {
        fill_command(c, bodies, depth + 1);
    }
}

fn fill_redirects(rs: &mut [Redirect], bodies: &mut [Option<HereDoc>], depth: usize) {
    for r in rs {
        match &mut r.target {
            RedirTarget::HereDoc(doc) => {
                if let Some(body) = bodies.get_mut(doc.id).and_then(Option::take) {
                    *doc = body;
                }
                fill_parts(&mut doc.parts, bodies, depth);
            }
            RedirTarget::Word(w) => fill_parts(&mut w.parts, bodies, depth),
            RedirTarget::Fd => {}
        }
    }
}

fn fill_parts(parts: &mut [Part], bodies: &mut [Option<HereDoc>], depth: usize) {
    for part in parts {
        match part {
            // A tree held elsewhere too is a plain text's, kept by
            // `plain_subs`: it holds no heredoc to fill.
            Part::CmdSub(l) | Part::ProcSub(l) => {
                if let Some(l) = Arc::get_mut(l) {
                    fill_list(l, bodies, depth + 1);
                }
            }
            Part::Param { inner, .. } => fill_parts(inner, bodies, depth + 1),
            Part::Arith(a) => {
                for l in &mut a.subs {
                    fill_list(l, bodies, depth + 1);
                }
            }
            Part::Lit { .. } | Part::Tilde(_) => {}
        }
    }
}

fn fill_words(words: &mut [Word], bodies: &mut [Option<HereDoc>], depth: usize) {
    for w in words {
        fill_parts(&mut w.parts, bodies, depth);
    }
}

fn fill_command(c: &mut Command, bodies: &mut [Option<HereDoc>], depth: usize) {
    match c {
        Command::Simple(s) => {
            for a in &mut s.assigns {
                match &mut a.value {
                    AssignValue::Scalar(w) => fill_parts(&mut w.parts, bodies, depth),
                    AssignValue::Array(ws) => fill_words(ws, bodies, depth),
                }
            }
            fill_words(&mut s.words, bodies, depth);
            fill_redirects(&mut s.redirects, bodies, depth);
        }
        Command::Function { body, .. } => fill_command(body, bodies, depth + 1),
        Command::Compound(comp, redirects) => {
            fill_redirects(redirects, bodies, depth);
            match comp {
                Compound::Group(l) | Compound::Subshell(l) => fill_list(l, bodies, depth + 1),
                Compound::If {
                    branches,
                    otherwise,
                } => {
                    for (c, b) in branches {
                        fill_list(c, bodies, depth + 1);
                        fill_list(b, bodies, depth + 1);
                    }
                    if let Some(o) = otherwise {
                        fill_list(o, bodies, depth + 1);
                    }
                }
                Compound::While { cond, body } => {
                    fill_list(cond, bodies, depth + 1);
                    fill_list(body, bodies, depth + 1);
                }
                Compound::For { words, body, .. } => {
                    if let Some(ws) = words {
                        fill_words(ws, bodies, depth);
                    }
                    fill_list(body, bodies, depth + 1);
                }
                Compound::ArithFor { header, body } => {
                    for l in &mut header.subs {
                        fill_list(l, bodies, depth + 1);
                    }
                    fill_list(body, bodies, depth + 1);
                }
                Compound::Case { subject, arms } => {
                    fill_parts(&mut subject.parts, bodies, depth);
                    for arm in arms {
                        fill_words(&mut arm.patterns, bodies, depth);
                        fill_list(&mut arm.body, bodies, depth + 1);
                    }
                }
                Compound::Arith(a) => {
                    for l in &mut a.subs {
                        fill_list(l, bodies, depth + 1);
                    }
                }
                Compound::Cond(ws) => fill_words(ws, bodies, depth),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table holds the byte sets the scans compared before it.
    #[test]
    fn byte_classes_are_the_sets_compared() {
        for b in 0..=u8::MAX {
            let meta = matches!(
                b,
                b' ' | b'\t' | b'\n' | b'|' | b'&' | b';' | b'(' | b')' | b'<' | b'>'
            );
            let stop = matches!(b, b'\'' | b'"' | b'\\' | b'$' | b'`' | b'\r');
            assert_eq!(is_meta(b), meta, "{b:#x}");
            assert_eq!(is_class(b, META | WORD_STOP), meta || stop, "{b:#x}");
            assert_eq!(
                is_class(b, META | WORD_STOP | TILDE),
                meta || stop || b == b'~',
                "{b:#x}"
            );
        }
    }
}
