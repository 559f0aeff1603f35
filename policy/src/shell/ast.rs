//! The syntax tree the parser produces: just enough of bash to know every
//! simple command that would run, where it runs, and what it reads and writes.

/// A sequence of and-or lists separated by `;`, `&` or newlines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct List {
    pub items: Vec<ListItem>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListItem {
    pub and_or: AndOr,
    /// Ended by `&`: runs in the background (a subshell for cwd purposes).
    pub background: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connector {
    And,
    Or,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AndOr {
    pub first: Pipeline,
    pub rest: Vec<(Connector, Pipeline)>,
}

/// Commands joined by `|` or `|&`. With more than one command each runs in
/// its own subshell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    pub negated: bool,
    pub commands: Vec<Command>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Simple(Simple),
    Compound(Compound, Vec<Redirect>),
    Function { name: String, body: Box<Command> },
}

/// `NAME=value … word … redirections`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Simple {
    pub assigns: Vec<Assign>,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assign {
    pub name: String,
    pub value: AssignValue,
    /// `a[w]=…` whose subscript bash evaluates into code: it holds `$`, a
    /// backquote or a name, quoted or not (`a['$(cmd)']=1`, `a[i]=1` where
    /// `i` may hold `x[$(cmd)]`).
    pub subscript_code: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssignValue {
    Scalar(Word),
    Array(Vec<Word>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compound {
    /// `{ list; }`: runs in the current shell.
    Group(List),
    /// `( list )`: a subshell.
    Subshell(List),
    If {
        branches: Vec<(List, List)>,
        otherwise: Option<List>,
    },
    While {
        cond: List,
        body: List,
    },
    For {
        var: String,
        words: Option<Vec<Word>>,
        body: List,
    },
    ArithFor {
        header: Arith,
        body: List,
    },
    Case {
        subject: Word,
        arms: Vec<CaseArm>,
    },
    /// `(( expr ))`.
    Arith(Arith),
    /// `[[ … ]]`, its words in order (operators included).
    Cond(Vec<Word>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseArm {
    pub patterns: Vec<Word>,
    pub body: List,
}

/// An arithmetic expression: whether it names variables (which can hold
/// `$(…)` that bash would run), and the command substitutions inside it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arith {
    pub has_vars: bool,
    pub subs: Vec<List>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirOp {
    /// `<`
    In,
    /// `>`, `>|`
    Out,
    /// `>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `&>`, `&>>`, `>&file`
    OutBoth,
    /// `<&n`, `>&n`, `<&-`
    Dup,
    /// `<<`, `<<-`
    HereDoc,
    /// `<<<`
    HereString,
}

impl RedirOp {
    /// Whether the target is written.
    pub fn writes(self) -> bool {
        matches!(
            self,
            RedirOp::Out | RedirOp::Append | RedirOp::ReadWrite | RedirOp::OutBoth
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The file descriptor redirected, when written (`2>`).
    pub fd: Option<u32>,
    pub op: RedirOp,
    pub target: RedirTarget,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirTarget {
    Word(Word),
    /// A descriptor duplicated or closed (`&1`, `&-`).
    Fd,
    HereDoc(HereDoc),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HereDoc {
    /// The delimiter was quoted: the body is literal.
    pub quoted: bool,
    /// The body's expansions (unquoted heredocs only): command substitutions
    /// in them run.
    pub parts: Vec<Part>,
    /// The parser's handle for the body, read after the command's line.
    pub id: usize,
}

/// A shell word: parts concatenated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    pub parts: WordParts,
}

/// A word's parts, read as a slice. Most words are one literal (`git`,
/// `-n`, `src/main.rs`): that part is held in place ([`WordParts::One`]),
/// not in a vector of its own, which cost an allocation and a free for
/// nearly every word of every command.
#[derive(Clone)]
pub enum WordParts {
    One(Part),
    Many(Vec<Part>),
}

impl WordParts {
    pub fn as_slice(&self) -> &[Part] {
        match self {
            WordParts::One(part) => std::slice::from_ref(part),
            WordParts::Many(parts) => parts,
        }
    }

    pub fn into_vec(self) -> Vec<Part> {
        match self {
            WordParts::One(part) => vec![part],
            WordParts::Many(parts) => parts,
        }
    }
}

impl Default for WordParts {
    fn default() -> Self {
        WordParts::Many(Vec::new())
    }
}

/// One part is held in place.
impl From<Vec<Part>> for WordParts {
    fn from(mut parts: Vec<Part>) -> Self {
        match parts.pop() {
            Some(part) if parts.is_empty() => WordParts::One(part),
            Some(part) => {
                parts.push(part);
                WordParts::Many(parts)
            }
            None => WordParts::Many(parts),
        }
    }
}

impl std::ops::Deref for WordParts {
    type Target = [Part];

    fn deref(&self) -> &[Part] {
        self.as_slice()
    }
}

impl std::ops::DerefMut for WordParts {
    fn deref_mut(&mut self) -> &mut [Part] {
        match self {
            WordParts::One(part) => std::slice::from_mut(part),
            WordParts::Many(parts) => parts,
        }
    }
}

impl<'a> IntoIterator for &'a WordParts {
    type Item = &'a Part;
    type IntoIter = std::slice::Iter<'a, Part>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// Equal when the parts are, however they are held.
impl PartialEq for WordParts {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for WordParts {}

/// As a list, whatever holds it (as a vector of the parts shows).
impl std::fmt::Debug for WordParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Literal text after quote removal. `quoted` text is never subject to
    /// globbing, brace expansion or tilde expansion.
    Lit { text: String, quoted: bool },
    /// `~` or `~user` where bash expands it.
    Tilde(String),
    /// `$name`, `${…}`: the inner parts are the operator's words
    /// (`${X:-$(cmd)}` runs `cmd`).
    Param { name: String, inner: Vec<Part> },
    /// `$(…)` or backticks. Shared: the copies of a plain text in one
    /// line hold one tree (see `plain_subs`).
    CmdSub(std::sync::Arc<List>),
    /// `$((…))`.
    Arith(Arith),
    /// `<(…)` or `>(…)`.
    ProcSub(std::sync::Arc<List>),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(text: &str) -> Part {
        Part::Lit {
            text: text.into(),
            quoted: false,
        }
    }

    /// However the parts are held, a word reads, compares and prints as
    /// the vector of its parts did.
    #[test]
    fn word_parts_read_as_the_vector_of_them() {
        for parts in [
            vec![],
            vec![lit("git")],
            vec![lit("a"), Part::Tilde(String::new())],
            vec![lit("a"), lit("b"), Part::Tilde("u".into())],
        ] {
            let held = WordParts::from(parts.clone());
            assert_eq!(held.as_slice(), parts.as_slice());
            assert_eq!(matches!(held, WordParts::One(_)), parts.len() == 1);
            assert_eq!(format!("{held:?}"), format!("{parts:?}"));
            assert_eq!(format!("{held:#?}"), format!("{parts:#?}"));
            assert_eq!(held.clone().into_vec(), parts);
            assert_eq!(held, WordParts::Many(parts.clone()));
            assert_eq!((&held).into_iter().count(), parts.len());
        }
        assert_ne!(WordParts::One(lit("a")), WordParts::One(lit("b")));
        let mut one = WordParts::One(lit("a"));
        one[0] = lit("b");
        assert_eq!(one.as_slice(), [lit("b")]);
    }
}
