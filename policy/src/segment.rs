//! From a syntax tree to segments: every simple command that would run, with
//! wrappers seen through, the directory it runs in, and what the parser could
//! not know about it.
//!
//! The walk tracks the working directory through `cd`, `pushd` and `popd` the
//! way bash would: changes in a subshell, a pipeline, a background job or a
//! command substitution do not come back; after `a && b` or `a || b` the cwd
//! is any of the directories a short-circuit could leave. A set of possible
//! directories is kept (small), and anything it cannot follow is `Unknown` —
//! which the scope stage treats as unprovable.

use std::sync::Arc;

use crate::arg::Arg;
use crate::env::is_dangerous_env;
use crate::invocation::{AS_WRITTEN, Invocation, Normalized};
use crate::program::{self, HiddenPath, Inner};
use crate::scope::normalize;
use crate::shell::ast::*;
use crate::shell::parser::{MAX_DEPTH, parse_text_at_depth};
use crate::shell::word::{self, Value};
use crate::wrapper::{self, Unwrap};

mod substitution_walks;

use substitution_walks::SubstitutionWalks;

/// Why a word whose expansion evaluates text as code makes its segment
/// opaque.
const CODE_IN_WORD: &str = "bash evaluates text as code here (arithmetic over variables, an array subscript, `${!x}`, `${x@P}` or a `${x:offset}`: a variable can hold `$(…)` that bash runs)";

/// Most directories tracked as possible cwds before giving up.
const MAX_CWDS: usize = 8;
/// Most wrappers seen through in one command.
const MAX_WRAPPERS: usize = 16;
/// Arguments of each wrapper kept in a segment's chain past the chain budget.
const MAX_CHAIN_ARGS: usize = 8;

/// Where a segment runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cwd {
    /// One of these directories (absolute, normalised). Shared: every
    /// segment and every branch of the walk holds the cwd it starts in, and
    /// a copy is a count, not a list of strings.
    Known(Arc<[String]>),
    /// Could not be followed (`cd "$X"`, `cd -`, a loop that changes it).
    Unknown,
}

impl Cwd {
    /// Both: the directories of either (owned: the first is extended, not
    /// copied).
    fn union(self, other: &Cwd) -> Cwd {
        match (self, other) {
            (Cwd::Known(a), Cwd::Known(b)) => {
                // Mostly both are the same directories: nothing new made.
                if b.iter().all(|d| a.contains(d)) {
                    return if a.len() > MAX_CWDS {
                        Cwd::Unknown
                    } else {
                        Cwd::Known(a)
                    };
                }
                let mut v = a.to_vec();
                for d in b.iter() {
                    if !v.contains(d) {
                        v.push(d.clone());
                    }
                }
                if v.len() > MAX_CWDS {
                    Cwd::Unknown
                } else {
                    Cwd::Known(v.into())
                }
            }
            _ => Cwd::Unknown,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    cwd: Cwd,
    /// `pushd` stack.
    stack: Vec<Cwd>,
}

impl State {
    fn union(self, other: &State) -> State {
        let State { cwd, stack } = self;
        State {
            stack: if stack == other.stack {
                stack
            } else {
                Vec::new()
            },
            cwd: cwd.union(&other.cwd),
        }
    }

    fn unknown() -> State {
        State {
            cwd: Cwd::Unknown,
            stack: Vec::new(),
        }
    }
}

/// What a segment is, for the rules file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegKind {
    /// A program runs: rules apply.
    Command,
    /// Assignments or redirections alone, `(( ))`: no program runs.
    NotACommand,
    /// A call of a function defined in the same line: its body is judged.
    FunctionCall,
}

/// Where stdin comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    Inherited,
    Pipe,
    File,
    HereDoc,
    HereString,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegRedirect {
    pub writes: bool,
    pub target: Arg,
}

/// One simple command that would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Wrappers seen through on the way, outermost first, each with its argv.
    pub chain: Vec<Vec<Arg>>,
    /// The program that runs and its arguments.
    pub argv: Vec<Arg>,
    pub kind: SegKind,
    /// Environment assignments (leading, or made by `env`).
    pub assigns: Vec<(String, Arg)>,
    pub redirects: Vec<SegRedirect>,
    pub cwd: Cwd,
    /// Relative arguments resolve against this (`git -C dir`).
    pub arg_dir: Option<Arg>,
    pub opaque: Option<String>,
    pub hidden_paths: Vec<HiddenPath>,
    /// What `{}` stands for (`find -exec`).
    pub find_roots: Vec<Arg>,
    /// Arguments are appended from stdin (`xargs`).
    pub trailing_dynamic: bool,
    pub stdin: Stdin,
    /// `cd`/`pushd` to a static absolute target: it touches only its target.
    pub cd_absolute: bool,
    /// The function whose body holds it.
    pub in_function: Option<String>,
    /// Runs in a child process: a pipeline, the background, a subshell, a
    /// command or process substitution, a coproc.
    pub piped_or_background: bool,
    /// The self-call of a function that runs itself (directly or through
    /// other functions) in a child process: a fork bomb.
    pub fork_bomb: bool,
    /// What a pipe feeds this segment, when the writer is `echo` or
    /// `printf` of static words: the operands `xargs` would append
    /// (`echo / | xargs rm -rf`).
    pub stdin_words: Option<Vec<Arg>>,
    /// Each invocation's normalised argv, derived once when the walk is
    /// done (in `invocations()` order); read through
    /// [`Segment::invocations_normalized`]. During the walk it may hold
    /// one entry, `argv`'s own, derived with what the program's analysis
    /// found (the chain's are added when the walk is done).
    normalized: Vec<Normalized>,
}

impl Segment {
    fn new(state: &State) -> Segment {
        Segment {
            chain: Vec::new(),
            argv: Vec::new(),
            kind: SegKind::Command,
            assigns: Vec::new(),
            redirects: Vec::new(),
            cwd: state.cwd.clone(),
            arg_dir: None,
            opaque: None,
            hidden_paths: Vec::new(),
            find_roots: Vec::new(),
            trailing_dynamic: false,
            stdin: Stdin::Inherited,
            cd_absolute: false,
            in_function: None,
            piped_or_background: false,
            fork_bomb: false,
            stdin_words: None,
            normalized: Vec::new(),
        }
    }

    fn set_opaque(&mut self, reason: impl Into<String>) {
        if self.opaque.is_none() {
            self.opaque = Some(reason.into());
        }
    }

    /// The program's name as written (`/usr/bin/sudo`), if known.
    pub fn program(&self) -> Option<&Arg> {
        self.argv.first()
    }

    /// Every invocation in order: the wrappers, then the program.
    pub fn invocations(&self) -> impl Iterator<Item = &[Arg]> {
        self.chain
            .iter()
            .map(Vec::as_slice)
            .chain(std::iter::once(self.argv.as_slice()).filter(|a| !a.is_empty()))
    }

    /// Every invocation with its normalised views (see [`crate::invocation`]).
    pub fn invocations_normalized(&self) -> impl Iterator<Item = Invocation<'_>> {
        self.invocations()
            .enumerate()
            .map(|(i, inv)| Invocation::new(inv, self.normalized.get(i)))
    }

    /// The program's own argv (the last invocation) as patterns compare it.
    pub fn argv_normalized(&self) -> Invocation<'_> {
        if self.argv.is_empty() {
            return Invocation::new(&self.argv, Some(&AS_WRITTEN));
        }
        Invocation::new(&self.argv, self.normalized.get(self.chain.len()))
    }

    /// Derives the normalised views once the segment is final.
    fn derive_normalized(&mut self) {
        // `argv`'s own view, when the walk derived it already.
        let own = match self.normalized.pop() {
            Some(own) if self.normalized.is_empty() && !self.argv.is_empty() => own,
            _ => {
                self.normalized = self.invocations().map(Normalized::derive).collect();
                return;
            }
        };
        if self.chain.is_empty() {
            self.normalized.push(own);
            return;
        }
        self.normalized = self
            .chain
            .iter()
            .map(|inv| Normalized::derive(inv))
            .chain(std::iter::once(own))
            .collect();
    }
}

/// The segments of a command line, and the parse error if there was one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Shared: the copies of a substitution walked once and replayed
    /// (`substitution_walks`) are one segment, met again at each copy.
    pub segments: Vec<Arc<Segment>>,
    /// The first parse error (the segment list then also holds an opaque
    /// segment for the unparsed rest).
    pub parse_error: Option<String>,
}

/// Splits a command line into segments. `cwd` and `home` are frame paths.
pub fn analyze(command: &[u8], cwd: &str, home: &str) -> Analysis {
    analyze_with(command, None, cwd, home, true)
}

/// [`analyze`] of a command line known to be text (a case's command).
pub fn analyze_text(command: &str, cwd: &str, home: &str) -> Analysis {
    analyze_with(command.as_bytes(), Some(command), cwd, home, true)
}

/// [`analyze`] walking every copy of a substitution (the reference for
/// `substitution_walks`' replays).
#[cfg(test)]
fn analyze_walking_each(command: &[u8], cwd: &str, home: &str) -> Analysis {
    analyze_with(command, None, cwd, home, false)
}

/// [`analyze`] of `command`, which is `text` when that is given.
fn analyze_with(
    command: &[u8],
    text: Option<&str>,
    cwd: &str,
    home: &str,
    reuse_walks: bool,
) -> Analysis {
    let script = match text {
        Some(t) => crate::shell::parse_text(t),
        None => crate::shell::parse(command),
    };
    let mut walker = Walker::new(home, command.len());
    walker.reuse_walks = reuse_walks;
    walker.cdpath_named = names_cdpath(command);
    let state = State {
        cwd: Cwd::Known(Arc::from([normalize("/", cwd)])),
        stack: Vec::new(),
    };
    walker.walk_list(&script.list, state);
    let mut parse_error = None;
    if let Some(e) = &script.error {
        let mut seg = Segment::new(&State::unknown());
        seg.kind = SegKind::Command;
        seg.set_opaque(format!(
            "the command line does not parse at byte {}: {}",
            e.offset, e.message
        ));
        walker.segments.push(Arc::new(seg));
        parse_error = Some(e.message.clone());
    }
    walker.mark_fork_bombs();
    // The kept walks hold their segments too: let go of them, so that only
    // replayed segments stay shared.
    walker.substitution_walks = SubstitutionWalks::default();
    derive_normalized(&mut walker.segments);
    Analysis {
        segments: walker.segments,
        parse_error,
    }
}

/// Derives each segment's normalised views ([`Segment::derive_normalized`]).
/// A shared segment (a replayed substitution's) is derived once and every
/// copy of it gets the one result: the views are a function of the segment.
fn derive_normalized(segments: &mut [Arc<Segment>]) {
    // Each shared segment met so far, by address, with its derived copy;
    // the original is held so that its address stays its own.
    let mut derived: rustc_hash::FxHashMap<*const Segment, (Arc<Segment>, Arc<Segment>)> =
        rustc_hash::FxHashMap::default();
    for seg in segments {
        if let Some(own) = Arc::get_mut(seg) {
            own.derive_normalized();
            continue;
        }
        let (_, copy) = derived.entry(Arc::as_ptr(seg)).or_insert_with(|| {
            let mut copy = Segment::clone(seg);
            copy.derive_normalized();
            (Arc::clone(seg), Arc::new(copy))
        });
        *seg = Arc::clone(copy);
    }
}

struct FunctionInfo {
    changes_cwd: bool,
}

struct Walker<'h> {
    home: &'h str,
    segments: Vec<Arc<Segment>>,
    /// Functions defined so far, by name (a later definition replaces one).
    functions: std::collections::HashMap<String, FunctionInfo>,
    current_function: Option<String>,
    piped_or_background: bool,
    /// Wrappers of the enclosing `sh -c` / `eval` being walked.
    via: Vec<Vec<Arg>>,
    /// The words the previous command of a pipeline prints, when known.
    pipe_words: Option<Vec<Arg>>,
    /// Nesting of scripts inside scripts (bounded with the parser's depth).
    depth: usize,
    /// Bytes of nested scripts still allowed to be parsed (keeps the whole
    /// analysis linear in the input).
    budget: usize,
    /// Words brace expansion may still add.
    expansion_budget: usize,
    /// Wrapper arguments still allowed to be copied into segments' chains.
    /// Every command of `eval a \; a \; …` or `sh -c 'a; a; …' x x …`
    /// carries the wrapper's whole argv: without a bound that is quadratic.
    chain_budget: usize,
    /// The line names `CDPATH`: a relative `cd` may go anywhere.
    cdpath_named: bool,
    /// A `shopt` may have set `lastpipe` (named, or a dynamic argument):
    /// the last command of a pipeline may then run in the current shell,
    /// and a `cd` there stays.
    lastpipe: bool,
    /// A `shopt` may have set `cdable_vars`: `cd name` may go where the
    /// variable `name` says.
    cdable_vars: bool,
    /// Walks of shared substitution trees, pushed again for their copies.
    substitution_walks: SubstitutionWalks,
    /// Whether those walks are used (off: the reference in tests).
    reuse_walks: bool,
}

/// Whether the line names `CDPATH`, however quoted (`read CDPATH`,
/// `"CD"PATH=/`): then `cd etc` may mean `/etc`, and the cwd after a `cd`
/// to a relative name is unknown.
fn names_cdpath(command: &[u8]) -> bool {
    const REST: &[u8] = b"DPATH";
    let is_quote = |b: u8| matches!(b, b'\'' | b'"' | b'\\');
    let mut from = 0;
    // At each `C`: the bytes after it, the quoting ones left out, go on
    // `DPATH`. A byte is looked at by at most the six `C`s before it.
    while let Some(at) = crate::substring::find_byte(b'C', &command[from..]).map(|i| from + i) {
        let mut want = REST.iter().peekable();
        for &b in &command[at + 1..] {
            match want.peek() {
                None => break,
                Some(_) if is_quote(b) => {}
                Some(&&w) if w == b => {
                    want.next();
                }
                Some(_) => break,
            }
        }
        if want.peek().is_none() {
            return true;
        }
        from = at + 1;
    }
    false
}

impl<'h> Walker<'h> {
    fn new(home: &'h str, input_len: usize) -> Self {
        Walker {
            home,
            // Most lines are one or two commands; a Segment is ~300
            // bytes, and the first growth (to 4) is past the allocator's
            // small-block size.
            segments: Vec::with_capacity(2),
            functions: std::collections::HashMap::new(),
            current_function: None,
            piped_or_background: false,
            via: Vec::new(),
            pipe_words: None,
            depth: 0,
            budget: input_len.saturating_mul(8).saturating_add(64 * 1024),
            expansion_budget: input_len.saturating_mul(4).saturating_add(4096),
            chain_budget: input_len.saturating_mul(4).saturating_add(4096),
            cdpath_named: false,
            lastpipe: false,
            cdable_vars: false,
            substitution_walks: SubstitutionWalks::default(),
            reuse_walks: true,
        }
    }

    /// Inlined: the segment is moved once, into its `Arc`, not first into
    /// this function's argument (a segment is some 300 bytes, and every
    /// segment of every command comes through here).
    #[inline(always)]
    fn push(&mut self, mut seg: Segment) {
        seg.in_function = self.current_function.clone();
        seg.piped_or_background |= self.piped_or_background;
        self.segments.push(Arc::new(seg));
    }

    fn walk_list(&mut self, list: &List, mut state: State) -> State {
        for item in &list.items {
            if item.background {
                let saved = self.piped_or_background;
                self.piped_or_background = true;
                self.walk_and_or(&item.and_or, state.clone());
                self.piped_or_background = saved;
            } else {
                state = self.walk_and_or(&item.and_or, state);
            }
        }
        state
    }

    fn walk_and_or(&mut self, ao: &AndOr, state: State) -> State {
        let (mut succ, mut fail) = self.walk_pipeline(&ao.first, state);
        for (conn, p) in &ao.rest {
            match conn {
                Connector::And => {
                    let (s, f) = self.walk_pipeline(p, succ.clone());
                    fail = fail.union(&f);
                    succ = s;
                }
                Connector::Or => {
                    let (s, f) = self.walk_pipeline(p, fail.clone());
                    succ = succ.union(&s);
                    fail = f;
                }
            }
        }
        succ.union(&fail)
    }

    fn walk_pipeline(&mut self, p: &Pipeline, state: State) -> (State, State) {
        let (s, f) = if p.commands.len() == 1 {
            self.walk_command(&p.commands[0], state, Stdin::Inherited)
        } else {
            let saved = self.piped_or_background;
            self.piped_or_background = true;
            let mut out = state.clone();
            for (i, c) in p.commands.iter().enumerate() {
                let stdin = if i == 0 {
                    Stdin::Inherited
                } else {
                    Stdin::Pipe
                };
                self.pipe_words = match i.checked_sub(1).and_then(|k| p.commands.get(k)) {
                    Some(Command::Simple(w)) => printed_words(w, self.home),
                    _ => None,
                };
                let (o, _) = self.walk_command(c, state.clone(), stdin);
                self.pipe_words = None;
                // `shopt -s lastpipe`: bash runs the last command in the
                // current shell (`true | cd .git; touch hooks/x`).
                if self.lastpipe && i + 1 == p.commands.len() {
                    out = out.union(&o);
                }
            }
            self.piped_or_background = saved;
            (out.clone(), out)
        };
        if p.negated { (f, s) } else { (s, f) }
    }

    fn walk_command(&mut self, cmd: &Command, state: State, stdin: Stdin) -> (State, State) {
        match cmd {
            Command::Simple(s) => self.walk_simple(s, state, stdin),
            Command::Function { name, body } => {
                // Registered before its body: a call inside is recursion.
                self.functions
                    .insert(name.clone(), FunctionInfo { changes_cwd: false });
                let saved = self.current_function.replace(name.clone());
                let (out, _) = self.walk_command(body, state.clone(), Stdin::Inherited);
                self.current_function = saved;
                if let Some(f) = self.functions.get_mut(name) {
                    f.changes_cwd = out != state;
                }
                (state.clone(), state)
            }
            Command::Compound(c, redirects) => {
                if !redirects.is_empty() {
                    let mut seg = Segment::new(&state);
                    seg.kind = SegKind::NotACommand;
                    self.judge_redirects(redirects, &state, &mut seg);
                    self.push(seg);
                }
                let out = self.walk_compound(c, state);
                (out.clone(), out)
            }
        }
    }

    fn walk_compound(&mut self, c: &Compound, state: State) -> State {
        match c {
            Compound::Group(l) => self.walk_list(l, state),
            Compound::Subshell(l) => {
                let saved = self.piped_or_background;
                self.piped_or_background = true;
                self.walk_list(l, state.clone());
                self.piped_or_background = saved;
                state
            }
            Compound::If {
                branches,
                otherwise,
            } => {
                let mut cur = state;
                let mut outs: Vec<State> = Vec::new();
                for (cond, body) in branches {
                    let c_out = self.walk_list(cond, cur);
                    outs.push(self.walk_list(body, c_out.clone()));
                    cur = c_out;
                }
                match otherwise {
                    Some(o) => outs.push(self.walk_list(o, cur)),
                    None => outs.push(cur),
                }
                union_all(outs)
            }
            Compound::While { cond, body } => {
                let c = self.walk_list(cond, state.clone());
                let b = self.walk_list(body, c.clone());
                if c == state && b == state {
                    state
                } else {
                    State::unknown()
                }
            }
            Compound::For { var, words, body } => {
                if is_dangerous_env(var) {
                    // `for PATH in /work/bin; do git status; done`
                    let mut seg = Segment::new(&state);
                    seg.kind = SegKind::NotACommand;
                    seg.set_opaque(format!(
                        "`for {var}` sets a variable that changes what runs"
                    ));
                    self.push(seg);
                }
                if let Some(ws) = words {
                    for w in ws {
                        self.walk_nested(&w.parts, &state);
                        let v = word::evaluate(w, self.home);
                        if v.arith_vars {
                            let mut seg = Segment::new(&state);
                            seg.kind = SegKind::NotACommand;
                            seg.set_opaque("arithmetic over variables");
                            self.push(seg);
                        }
                    }
                }
                let b = self.walk_list(body, state.clone());
                if b == state { state } else { State::unknown() }
            }
            Compound::ArithFor { header, body } => {
                self.arith_segment(header, &state);
                let b = self.walk_list(body, state.clone());
                if b == state { state } else { State::unknown() }
            }
            Compound::Case { subject, arms } => {
                self.walk_nested(&subject.parts, &state);
                self.evaluated_code(&subject.parts, &state);
                let mut outs = vec![state.clone()];
                for arm in arms {
                    for p in &arm.patterns {
                        self.walk_nested(&p.parts, &state);
                        self.evaluated_code(&p.parts, &state);
                    }
                    outs.push(self.walk_list(&arm.body, state.clone()));
                }
                union_all(outs)
            }
            Compound::Arith(a) => {
                self.arith_segment(a, &state);
                state
            }
            Compound::Cond(words) => {
                let mut args = vec![Arg::lit("[[")];
                let mut code = false;
                for w in words {
                    self.walk_nested(&w.parts, &state);
                    let (a, v) = self.eval_word(w);
                    code |= v.arith_vars;
                    args.extend(a);
                }
                args.push(Arg::lit("]]"));
                let mut seg = Segment::new(&state);
                if code {
                    seg.set_opaque(CODE_IN_WORD);
                }
                let facts = program::analyze(&args);
                if let Some(r) = facts.opaque {
                    seg.set_opaque(r);
                }
                seg.argv = args;
                self.push(seg);
                state
            }
        }
    }

    fn arith_segment(&mut self, a: &Arith, state: &State) {
        for l in &a.subs {
            self.walk_subshell(l, state);
        }
        let mut seg = Segment::new(state);
        seg.kind = SegKind::NotACommand;
        if a.has_vars {
            seg.set_opaque("arithmetic over variables (a variable can hold `$(…)` that bash runs)");
        }
        self.push(seg);
    }

    /// A segment of its own, opaque, when expanding `parts` makes bash
    /// evaluate text as code (`${x@P}`, `${!x}`, `${a[i]}`, `${x:i}`,
    /// arithmetic over variables) — for the words no command's segment
    /// holds: a `case` subject or pattern, an unquoted heredoc's body.
    fn evaluated_code(&mut self, parts: &[Part], state: &State) {
        if word::arith_vars_in(parts) {
            let mut seg = Segment::new(state);
            seg.kind = SegKind::NotACommand;
            seg.set_opaque(CODE_IN_WORD);
            self.push(seg);
        }
    }

    /// Walks command lists nested in word parts (`$(…)`, `<(…)`, …): each is
    /// a subshell of the current state.
    fn walk_nested(&mut self, parts: &[Part], state: &State) {
        if parts
            .iter()
            .all(|p| matches!(p, Part::Lit { .. } | Part::Tilde(_)))
        {
            return;
        }
        for part in parts {
            match part {
                Part::CmdSub(l) | Part::ProcSub(l) => self.walk_substitution(l, state),
                Part::Param { inner, .. } => self.walk_nested(inner, state),
                Part::Arith(a) => {
                    for l in &a.subs {
                        self.walk_subshell(l, state);
                    }
                }
                Part::Lit { .. } | Part::Tilde(_) => {}
            }
        }
    }

    fn walk_subshell(&mut self, list: &List, state: &State) {
        let saved_via = std::mem::take(&mut self.via);
        // A substitution runs in the same privilege as its command's shell:
        // keep the enclosing wrappers (`sudo sh -c 'echo $(id)'`).
        self.via = saved_via.clone();
        // …and in a child process (`f(){ f <(f); }` forks).
        let saved_forked = std::mem::replace(&mut self.piped_or_background, true);
        self.walk_list(list, state.clone());
        self.piped_or_background = saved_forked;
        self.via = saved_via;
    }

    /// Evaluates a word to arguments (brace expansion splices), and whether
    /// it held arithmetic over variables.
    fn eval_word(&mut self, w: &Word) -> (Vec<Arg>, Value) {
        let mut v = word::evaluate(w, self.home);
        if v.values.len() > 1 {
            // Brace expansion multiplies words: past the budget a word is
            // treated as unknowable, which keeps the analysis linear.
            if v.values.len() > self.expansion_budget {
                v.values.truncate(1);
                v.too_many = true;
            } else {
                self.expansion_budget -= v.values.len();
            }
        }
        let args = value_args(&mut v);
        (args, v)
    }

    fn judge_redirects(&mut self, redirects: &[Redirect], state: &State, seg: &mut Segment) {
        for r in redirects {
            match &r.target {
                RedirTarget::Word(w) => {
                    self.walk_nested(&w.parts, state);
                    let mut v = word::evaluate(w, self.home);
                    if v.arith_vars {
                        seg.set_opaque("arithmetic over variables");
                    }
                    if (r.op == RedirOp::In || r.op == RedirOp::ReadWrite)
                        && (r.fd.is_none() || r.fd == Some(0))
                    {
                        seg.stdin = Stdin::File;
                    }
                    if r.op == RedirOp::HereString {
                        seg.stdin = Stdin::HereString;
                        continue;
                    }
                    for a in value_args(&mut v) {
                        seg.redirects.push(SegRedirect {
                            writes: r.op.writes(),
                            target: a,
                        });
                    }
                }
                RedirTarget::HereDoc(doc) => {
                    self.walk_nested(&doc.parts, state);
                    if word::arith_vars_in(&doc.parts) {
                        seg.set_opaque(CODE_IN_WORD);
                    }
                    if r.fd.is_none() || r.fd == Some(0) {
                        seg.stdin = Stdin::HereDoc;
                    }
                }
                RedirTarget::Fd => {}
            }
        }
    }

    fn walk_simple(&mut self, s: &Simple, state: State, stdin: Stdin) -> (State, State) {
        let mut seg = Segment::new(&state);
        seg.stdin = stdin;
        if stdin == Stdin::Pipe {
            seg.stdin_words = self.pipe_words.take();
        }
        // Assignments.
        for a in &s.assigns {
            let values: Vec<&Word> = match &a.value {
                AssignValue::Scalar(w) => vec![w],
                AssignValue::Array(ws) => ws.iter().collect(),
            };
            let array = matches!(a.value, AssignValue::Array(_));
            for w in values {
                self.walk_nested(&w.parts, &state);
                let (args, v) = self.eval_word(w);
                if v.arith_vars {
                    seg.set_opaque("arithmetic over variables");
                }
                // `a=([i]=1)`, `a=(['$(cmd)']=1)`: bash evaluates the
                // subscript of an element as arithmetic.
                if array
                    && let Some(first) = args.first()
                    && first.text.starts_with('[')
                    && let Some(end) = first.text.find("]=")
                    && (first.dynamic
                        || program::subscript_is_code(&format!("a{}", &first.text[..=end])))
                {
                    seg.set_opaque(format!(
                        "the subscript of an element of `{}=(…)` is evaluated as arithmetic, which runs `$(…)`",
                        a.name
                    ));
                }
                for arg in args {
                    seg.assigns.push((a.name.clone(), arg));
                }
            }
            if matches!(a.value, AssignValue::Array(ref ws) if ws.is_empty()) {
                seg.assigns.push((a.name.clone(), Arg::lit("")));
            }
            if is_dangerous_env(&a.name) {
                seg.set_opaque(format!(
                    "assigning `{}` changes what runs or where code loads from",
                    a.name
                ));
            }
            if a.subscript_code {
                seg.set_opaque(format!(
                    "the subscript of `{}[…]=` is evaluated as arithmetic, which runs `$(…)`",
                    a.name
                ));
            }
        }
        self.judge_redirects(&s.redirects, &state, &mut seg);
        // Words.
        let mut args = Vec::with_capacity(s.words.len());
        let mut name_value: Option<Value> = None;
        for (i, w) in s.words.iter().enumerate() {
            self.walk_nested(&w.parts, &state);
            // A literal is its own argument (no flag set): no value list
            // made and turned into arguments.
            if let Some(text) = word::single_literal(w) {
                args.push(Arg::lit(text));
                if i == 0 {
                    name_value = Some(Value::default());
                }
                continue;
            }
            let (a, v) = self.eval_word(w);
            if v.arith_vars {
                seg.set_opaque(CODE_IN_WORD);
            }
            if i == 0 {
                name_value = Some(v);
            }
            args.extend(a);
        }
        if args.is_empty() {
            seg.kind = SegKind::NotACommand;
            self.push(seg);
            return (state.clone(), state);
        }
        if let Some(v) = &name_value {
            if v.dynamic {
                seg.set_opaque("the command name comes from a variable or a substitution");
            } else if v.braced {
                seg.set_opaque("the command name comes from brace expansion");
            } else if v.glob {
                seg.set_opaque("the command name comes from a glob");
            }
        }
        // A function defined earlier in the line.
        if let Some(name) = args[0].known()
            && let Some(f) = self.functions.get(name)
        {
            let changes = f.changes_cwd;
            seg.kind = SegKind::FunctionCall;
            seg.argv = args;
            self.push(seg);
            let out = if changes {
                State::unknown()
            } else {
                state.clone()
            };
            return (out.clone(), out);
        }
        self.emit_command(seg, args, state, Vec::new())
    }

    /// Sees through wrappers and emits the segment(s) for one command.
    fn emit_command(
        &mut self,
        mut seg: Segment,
        mut argv: Vec<Arg>,
        state: State,
        find_roots: Vec<Arg>,
    ) -> (State, State) {
        let chain_args: usize = self.via.iter().map(Vec::len).sum();
        if chain_args <= self.chain_budget {
            self.chain_budget -= chain_args;
            seg.chain = self.via.clone();
        } else {
            // Past the bound: the wrappers' names and first options only
            // (what deny rules and the privileged limit compare), and the
            // segment is never auto-approved.
            seg.chain = self
                .via
                .iter()
                .map(|inv| inv.iter().take(MAX_CHAIN_ARGS).cloned().collect())
                .collect();
            seg.set_opaque("wrapper arguments repeated over more commands than berth follows");
        }
        seg.find_roots = find_roots;
        let mut cd_ok = true;
        for round in 0..=MAX_WRAPPERS {
            if seg.opaque.is_some() && argv.first().is_none_or(|a| a.dynamic) {
                break;
            }
            if round == MAX_WRAPPERS {
                // A wrapper still in front: what it runs is not seen, so the
                // segment cannot be judged (`nohup` ×17 `rm -rf /`).
                if !matches!(wrapper::unwrap(&argv), Unwrap::NotAWrapper | Unwrap::Itself) {
                    seg.set_opaque(format!(
                        "wrappers nested deeper than berth follows ({MAX_WRAPPERS})"
                    ));
                }
                break;
            }
            match wrapper::unwrap(&argv) {
                Unwrap::NotAWrapper | Unwrap::Itself => break,
                Unwrap::Opaque(reason) => {
                    seg.set_opaque(reason);
                    break;
                }
                Unwrap::Command { start, info } => {
                    if let Some(reason) = &info.opaque {
                        seg.set_opaque(reason.clone());
                    }
                    if !matches!(argv[0].basename(), "builtin" | "command") {
                        cd_ok = false;
                    }
                    let mut rest = argv.split_off(start);
                    seg.chain.push(std::mem::take(&mut argv));
                    note_wrapper_writes(&mut seg, &info.writes);
                    for (n, v) in info.assigns {
                        if is_dangerous_env(&n) {
                            seg.set_opaque(format!(
                                "assigning `{n}` changes what runs or where code loads from"
                            ));
                        }
                        seg.assigns.push((n, v));
                    }
                    if let Some(dir) = info.chdir {
                        seg.cwd = match dir.known() {
                            Some(d) => resolve_cwd(&seg.cwd, d),
                            None => Cwd::Unknown,
                        };
                    }
                    if info.trailing_dynamic {
                        seg.trailing_dynamic = true;
                    }
                    if let Some(r) = &info.replace {
                        for a in rest.iter_mut() {
                            if !r.is_empty() && a.text.contains(r.as_str()) {
                                // What replaces it comes from stdin: the
                                // skeleton is the rest of the word.
                                a.dynamic = true;
                                a.text = a.text.replace(r.as_str(), "");
                            }
                        }
                    }
                    if rest.is_empty() {
                        seg.kind = SegKind::NotACommand;
                        self.push(seg);
                        return (state.clone(), state);
                    }
                    if info.package {
                        rest[0] = package_name(&rest[0]);
                    }
                    if rest[0].dynamic {
                        seg.set_opaque("the command name comes from a variable or a substitution");
                    } else if rest[0].glob {
                        seg.set_opaque("the command name comes from a glob");
                    }
                    argv = rest;
                }
                Unwrap::Script {
                    script,
                    new_process,
                    info,
                } => {
                    seg.chain.push(argv.clone());
                    note_wrapper_writes(&mut seg, &info.writes);
                    if let Some(why) = info.opaque {
                        seg.set_opaque(why);
                    }
                    if script.dynamic {
                        seg.set_opaque("a shell command line from a dynamic string");
                        seg.argv = argv;
                        self.push(seg);
                        return (state.clone(), state);
                    }
                    // The wrapper's own redirections, assignments and what
                    // already made it opaque (`sh -c ls > ~/.bashrc`,
                    // `PATH=… sh -c …`) apply to the whole script: they are
                    // judged in a segment of their own, in the wrapper's cwd.
                    let own = wrapper_parts(&seg);
                    let before = self.segments.len();
                    if let Some(own) = own {
                        self.push(own);
                    }
                    let inner_start = self.segments.len();
                    let out = self.walk_script(&script.text, &seg, state.clone());
                    if self.segments.len() == inner_start {
                        // Nothing ran inside: judge the wrapper itself.
                        self.segments.truncate(before);
                        seg.chain.pop();
                        seg.argv = argv;
                        self.push(seg);
                    }
                    let out = if new_process { state } else { out };
                    return (out.clone(), out);
                }
            }
        }
        if argv.first().is_some_and(|a| a.is("exec")) && argv.len() == 1 {
            seg.kind = SegKind::NotACommand;
            seg.argv.clear();
            self.push(seg);
            return (state.clone(), state);
        }
        // cd / pushd / popd change the state.
        let out_fail = state.clone();
        let name = argv.first().map_or("", |a| a.basename());
        if name == "shopt" {
            let sets = |opt: &str| argv.iter().any(|a| a.dynamic || a.text.contains(opt));
            self.lastpipe |= sets("lastpipe");
            self.cdable_vars |= sets("cdable_vars");
        }
        let out_succ = if cd_ok && seg.opaque.is_none() && matches!(name, "cd" | "pushd" | "popd") {
            self.change_dir(name, &argv, &state, &mut seg)
        } else {
            state
        };
        // Program-specific facts.
        let mut global = None;
        // The basename above, when the program is static: not found again.
        let facts = match argv.first() {
            Some(first) if !first.dynamic => program::analyze_named(&argv, name, &mut global),
            _ => program::analyze_noting(&argv, &mut global),
        };
        if let Some(r) = facts.opaque {
            seg.set_opaque(r);
        }
        seg.hidden_paths.extend(facts.paths);
        if facts.arg_dir.is_some() {
            seg.arg_dir = facts.arg_dir;
        }
        let roots = facts.find_roots;
        match (facts.own_argv, global) {
            (Some(own), _) => argv = own,
            // The analysed argv is the segment's, and the analysis found
            // its subcommand: its view is derived without a second search.
            (None, Some(global)) if !argv.is_empty() => {
                seg.normalized = vec![Normalized::derive_with(&argv, global)];
            }
            (None, _) => {}
        }
        seg.argv = argv;
        if facts.inner.is_empty() {
            // Runs no other command (most segments): nothing to copy for one.
            self.push(seg);
            return (out_succ, out_fail);
        }
        let via_for_inner = {
            let mut v = seg.chain.clone();
            v.push(seg.argv.clone());
            v
        };
        let cwd_for_inner = if facts.filter_in_temp_dir {
            State::unknown()
        } else {
            State {
                cwd: seg.cwd.clone(),
                stack: Vec::new(),
            }
        };
        self.push(seg);
        for inner in facts.inner {
            let saved = std::mem::replace(&mut self.via, via_for_inner.clone());
            match inner {
                Inner::Argv(args) => {
                    let mut s = Segment::new(&cwd_for_inner);
                    if args.first().is_some_and(|a| a.dynamic) {
                        s.set_opaque("a command run by another program comes from a variable");
                    }
                    self.emit_command(s, args, cwd_for_inner.clone(), roots.clone());
                }
                Inner::Script(script) => {
                    let mut s = Segment::new(&cwd_for_inner);
                    if script.dynamic {
                        s.set_opaque("a command line run by another program comes from a variable");
                        s.chain = self.via.clone();
                        self.push(s);
                    } else {
                        self.walk_script(&script.text, &s, cwd_for_inner.clone());
                    }
                }
            }
            self.via = saved;
        }
        (out_succ, out_fail)
    }

    /// Parses and walks a nested script (`sh -c '…'`, `eval …`).
    fn walk_script(&mut self, text: &str, outer: &Segment, state: State) -> State {
        let opaque = |w: &mut Walker<'_>, reason: &str| {
            let mut s = Segment::new(&state);
            s.chain = outer.chain.clone();
            s.set_opaque(reason.to_string());
            w.push(s);
        };
        if self.depth >= MAX_DEPTH {
            opaque(self, "nested scripts deeper than berth follows");
            return State::unknown();
        }
        if text.len() > self.budget {
            opaque(self, "nested scripts larger than berth follows");
            return State::unknown();
        }
        self.budget -= text.len();
        let script = parse_text_at_depth(text.as_bytes(), Some(text), self.depth + 1);
        let saved_via = std::mem::replace(&mut self.via, outer.chain.clone());
        self.depth += 1;
        let out = self.walk_list(
            &script.list,
            State {
                cwd: state.cwd.clone(),
                stack: Vec::new(),
            },
        );
        self.depth -= 1;
        if let Some(e) = &script.error {
            let mut s = Segment::new(&state);
            s.chain = outer.chain.clone();
            s.set_opaque(format!(
                "a nested command line does not parse: {}",
                e.message
            ));
            self.push(s);
        }
        self.via = saved_via;
        out
    }

    fn change_dir(&mut self, name: &str, argv: &[Arg], state: &State, seg: &mut Segment) -> State {
        let operands: Vec<&Arg> = argv[1..]
            .iter()
            .filter(|a| {
                a.dynamic || !(a.text.starts_with('-') && a.text.len() > 1 && a.text != "-")
            })
            .collect();
        match name {
            "popd" => {
                let mut s = state.clone();
                match s.stack.pop() {
                    Some(c) if operands.is_empty() => s.cwd = c,
                    _ => return State::unknown(),
                }
                s
            }
            _ => {
                let target = match operands.first() {
                    None if name == "cd" => Some(self.home.to_string()),
                    None => return State::unknown(),
                    Some(a)
                        if a.dynamic || a.is("-") || a.text.starts_with('+') || a.tilde_user =>
                    {
                        None
                    }
                    Some(a) => Some(a.text.clone()),
                };
                let Some(t) = target else {
                    return State {
                        cwd: Cwd::Unknown,
                        stack: state.stack.clone(),
                    };
                };
                if t.starts_with('/') {
                    seg.cd_absolute = true;
                } else if (self.cdpath_named || self.cdable_vars)
                    && !(t == "." || t == ".." || t.starts_with("./") || t.starts_with("../"))
                {
                    return State {
                        cwd: Cwd::Unknown,
                        stack: state.stack.clone(),
                    };
                }
                let mut s = state.clone();
                if name == "pushd" {
                    s.stack.push(state.cwd.clone());
                }
                s.cwd = resolve_cwd(&state.cwd, &t);
                s
            }
        }
    }

    /// A function that runs itself — directly or through other functions of
    /// the line (`a(){ b|b& }; b(){ a; }`) — from a child process (a
    /// pipeline, the background, a subshell, `$(…)`, `<(…)`, `coproc`), and
    /// is run from a call outside every function: a fork bomb. A forked call
    /// runs its caller again when both lie on one cycle of the call graph
    /// (one strongly connected component); each such call is marked. Linear
    /// in the number of calls.
    fn mark_fork_bombs(&mut self) {
        // A call is a segment naming a function of the line, even one
        // defined after the body that calls it (`a(){ b|b& }; b(){ a; }`).
        let functions = &self.functions;
        let is_call = |s: &Segment| {
            s.kind == SegKind::FunctionCall
                || (s.kind == SegKind::Command
                    && s.chain.is_empty()
                    && s.argv
                        .first()
                        .is_some_and(|a| !a.dynamic && functions.contains_key(&a.text)))
        };
        // The call graph over the line's functions, by index.
        fn node<'n>(
            name: &'n str,
            index: &mut std::collections::HashMap<&'n str, usize>,
            edges: &mut Vec<Vec<usize>>,
        ) -> usize {
            *index.entry(name).or_insert_with(|| {
                edges.push(Vec::new());
                edges.len() - 1
            })
        }
        let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let mut edges: Vec<Vec<usize>> = Vec::new();
        let mut top: Vec<usize> = Vec::new();
        let mut forked: Vec<(usize, usize, usize)> = Vec::new(); // (segment, caller, callee)
        for (i, s) in self.segments.iter().enumerate() {
            if !is_call(s) {
                continue;
            }
            let Some(callee) = s.argv.first().map(|a| a.text.as_str()) else {
                continue;
            };
            let to = node(callee, &mut index, &mut edges);
            match s.in_function.as_deref() {
                Some(caller) => {
                    let from = node(caller, &mut index, &mut edges);
                    edges[from].push(to);
                    if s.piped_or_background {
                        forked.push((i, from, to));
                    }
                }
                None => top.push(to),
            }
        }
        if forked.is_empty() || top.is_empty() {
            return;
        }
        let n = edges.len();
        // Functions run from outside any function: reachable from a call at
        // the top level.
        let mut run = vec![false; n];
        let mut todo = top;
        while let Some(f) = todo.pop() {
            if !std::mem::replace(&mut run[f], true) {
                todo.extend(edges[f].iter().copied());
            }
        }
        // A forked call runs its caller again when both lie on one cycle:
        // the same strongly connected component (Kosaraju, iterative).
        let mut order = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        for start in 0..n {
            if seen[start] {
                continue;
            }
            seen[start] = true;
            let mut stack = vec![(start, 0usize)];
            while let Some(&mut (v, ref mut next)) = stack.last_mut() {
                if let Some(&w) = edges[v].get(*next) {
                    *next += 1;
                    if !seen[w] {
                        seen[w] = true;
                        stack.push((w, 0));
                    }
                } else {
                    order.push(v);
                    stack.pop();
                }
            }
        }
        let mut reverse: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (v, out) in edges.iter().enumerate() {
            for &w in out {
                reverse[w].push(v);
            }
        }
        let mut component = vec![usize::MAX; n];
        for (c, &root) in order.iter().rev().enumerate() {
            if component[root] != usize::MAX {
                continue;
            }
            component[root] = c;
            let mut todo = vec![root];
            while let Some(v) = todo.pop() {
                for &w in &reverse[v] {
                    if component[w] == usize::MAX {
                        component[w] = c;
                        todo.push(w);
                    }
                }
            }
        }
        for (i, from, to) in forked {
            if run[from]
                && component[from] == component[to]
                && let Some(seg) = self.segments.get_mut(i)
            {
                Arc::make_mut(seg).fork_bomb = true;
            }
        }
    }
}

/// The words `echo …` or `printf FORMAT …` of static words prints, split
/// as `xargs` splits them; `None` for anything else.
fn printed_words(s: &Simple, home: &str) -> Option<Vec<Arg>> {
    if !s.redirects.is_empty() {
        return None;
    }
    let mut words = Vec::with_capacity(s.words.len());
    for w in &s.words {
        words.push(word::evaluate(w, home).single()?.to_string());
    }
    let (name, rest) = words.split_first()?;
    let printed: Vec<String> = match name.as_str() {
        "echo" => rest
            .iter()
            .skip_while(|w| matches!(w.as_str(), "-n" | "-e" | "-E" | "-ne" | "-en"))
            .cloned()
            .collect(),
        "printf" => match rest.split_first() {
            Some((_, args)) if !args.is_empty() => args.to_vec(),
            // A format without conversions prints itself; `\n` and `\t`
            // are blanks to xargs.
            Some((format, _)) if !format.contains('%') => {
                vec![format.replace("\\n", " ").replace("\\t", " ")]
            }
            _ => return None,
        },
        _ => return None,
    };
    // xargs reads quotes and backslashes itself: not followed here.
    if printed.iter().any(|w| w.contains(['\'', '"', '\\'])) {
        return None;
    }
    Some(
        printed
            .iter()
            .flat_map(|w| w.split_whitespace().map(Arg::lit))
            .collect(),
    )
}

fn union_all(states: Vec<State>) -> State {
    let mut it = states.into_iter();
    let Some(first) = it.next() else {
        return State::unknown();
    };
    it.fold(first, |acc, s| acc.union(&s))
}

/// The directory `cd target` leaves, the kernel's aliases followed
/// (`cd /proc/self/cwd` stays, `cd /proc/1/cwd` goes somewhere unknown).
fn resolve_cwd(cwd: &Cwd, target: &str) -> Cwd {
    let dirs: Vec<Option<&str>> = match cwd {
        Cwd::Known(dirs) => dirs.iter().map(|d| Some(d.as_str())).collect(),
        Cwd::Unknown if target.starts_with('/') => vec![None],
        Cwd::Unknown => return Cwd::Unknown,
    };
    let mut out = Vec::with_capacity(dirs.len());
    for d in dirs {
        match crate::scope::resolve(d.unwrap_or("/"), target, d) {
            Ok(p) => out.push(p),
            Err(_) => return Cwd::Unknown,
        }
    }
    Cwd::Known(out.into())
}

/// Arguments of an evaluated word.
fn value_args(v: &mut Value) -> Vec<Arg> {
    let base = Arg {
        text: String::new(),
        dynamic: v.dynamic || v.too_many,
        glob: v.glob,
        braced: v.braced,
        tilde_user: v.tilde_user,
        proc_sub: v.proc_sub,
        package: false,
        find_placeholder: false,
    };
    std::mem::take(&mut v.values)
        .into_iter()
        .map(|text| Arg {
            text,
            ..base.clone()
        })
        .collect()
}

/// `prettier@3.1.0` → `prettier`; `@scope/pkg@1` → `@scope/pkg`.
fn package_name(a: &Arg) -> Arg {
    let t = &a.text;
    let cut = if let Some(rest) = t.strip_prefix('@') {
        rest.find('@').map(|i| i + 1)
    } else {
        t.find('@')
    };
    let name = match cut {
        Some(i) if i > 0 => &t[..i],
        _ => t.as_str(),
    };
    Arg {
        text: name.to_string(),
        package: !name.starts_with('.') && !name.starts_with('/'),
        ..a.clone()
    }
}

/// The files a wrapper writes itself (`strace -o FILE`, `script FILE`):
/// paths the segment writes, as a redirection's target is.
fn note_wrapper_writes(seg: &mut Segment, writes: &[Arg]) {
    for w in writes {
        seg.hidden_paths.push(HiddenPath {
            path: w.known().map(str::to_string),
            writes: true,
        });
    }
}

/// The part of a wrapper that runs a script (`sh -c`, `eval`, `trap`) which
/// is its own: redirections, assignments, and what made it opaque. `None`
/// when it has none. The segment keeps the wrapper in its chain (deny rules
/// and the privileged limit see it) but runs no program of its own.
fn wrapper_parts(seg: &Segment) -> Option<Segment> {
    if seg.redirects.is_empty()
        && seg.assigns.is_empty()
        && seg.opaque.is_none()
        && seg.hidden_paths.is_empty()
    {
        return None;
    }
    let mut own = seg.clone();
    own.kind = SegKind::NotACommand;
    own.argv.clear();
    own.normalized.clear();
    // What is hidden so far is the wrappers' own writes (`script FILE`).
    own.find_roots.clear();
    own.trailing_dynamic = false;
    Some(own)
}
