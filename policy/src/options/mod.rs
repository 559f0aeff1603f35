//! Options read as the program reads them: one getopt.
//!
//! A decision that compares spellings (`--split-string`, `-S`) misses the
//! other spellings a program accepts for the same option: GNU long options
//! abbreviated to any unambiguous prefix (`env --sp=…`, `timeout --kill 5`),
//! short options clustered (`env -vS'…'`, `sed -ne`), values attached
//! (`su -c'…'`, `-o/path`, `--eval=…`), and `--` ending the options. This
//! module is the one parser for all of them (GNU `getopt_long` semantics, as
//! clap also reads options), driven by a table per program ([`Opt`]): each
//! option's names, its arity, and what its value is to the decision
//! ([`Role`]). The wrapper tables (`wrapper/`), the per-program tables
//! ([`programs`]) and the global options of subcommand tools ([`global`])
//! are written in it.
//!
//! Positive knowledge: an option a table does not list is reported
//! ([`Problem::Unknown`]), and for programs in the wrapper, program-running,
//! privileged and deny-template classes the caller makes the segment opaque.

pub mod global;
pub mod programs;

use crate::arg::Arg;

/// How many values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// No value (`-v`, `--verbose`); `--verbose=x` is an error.
    Flag,
    /// A value: attached (`-ofile`, `--output=file`) or the next word.
    Value,
    /// A value only when attached (`-d5`, `--differences=permanent`).
    OptionalValue,
    /// Attached digits only, as perl reads `-l` and `-0` (`-l0e` is `-l0 -e`).
    OptionalDigits,
}

/// What an option's presence or value is to the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Changes nothing the decision judges.
    Plain,
    /// Its value is a shell command line the program runs (`su -c`).
    Script,
    /// Its value names a program, or code, the program runs (`su -s SHELL`,
    /// `tar --to-command`, `xargs`'s none): the segment is opaque.
    Runs,
    /// After it the program runs nothing else (`sudo -l`, `--help`).
    Itself,
    /// Its value is the directory the wrapped command runs in (`env -C`).
    Chdir,
    /// The wrapper reads its command line from this value (`env -S`),
    /// followed by the remaining words.
    SplitString,
    /// Replaces a string in the command with input (`xargs -I`).
    Replace,
    /// Its value is code in the program's own language (`perl -e`,
    /// `python -c`): the program's table of calls judges it.
    Code,
    /// Its value is a file the wrapper itself writes (`strace -o`,
    /// `valgrind --log-file`, `time -o`): judged as a written path; a value
    /// `|cmd` or `!cmd` pipes into a command (strace): opaque.
    Writes,
}

/// One option of a program: its short letter (0 if none), its long name
/// without `--` (empty if none), its arity and its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt {
    pub short: u8,
    pub long: &'static str,
    pub arity: Arity,
    pub role: Role,
    /// The program reads no options after this one (`python -c CODE args…`).
    pub ends: bool,
}

impl Opt {
    /// A copy with another role.
    pub const fn role(self, role: Role) -> Opt {
        Opt { role, ..self }
    }

    /// A copy after which the program reads no more options.
    pub const fn ends(self) -> Opt {
        Opt { ends: true, ..self }
    }

    /// How people write it: `-x` or `--long`.
    pub fn display(&self) -> String {
        if self.long.is_empty() {
            format!("-{}", self.short as char)
        } else {
            format!("--{}", self.long)
        }
    }
}

/// An option without a value.
pub const fn flag(short: u8, long: &'static str) -> Opt {
    Opt {
        short,
        long,
        arity: Arity::Flag,
        role: Role::Plain,
        ends: false,
    }
}

/// An option with a required value.
pub const fn value(short: u8, long: &'static str) -> Opt {
    Opt {
        short,
        long,
        arity: Arity::Value,
        role: Role::Plain,
        ends: false,
    }
}

/// An option whose value, if any, is attached.
pub const fn optional(short: u8, long: &'static str) -> Opt {
    Opt {
        short,
        long,
        arity: Arity::OptionalValue,
        role: Role::Plain,
        ends: false,
    }
}

/// An option whose value, if any, is the digits attached to it.
pub const fn digits(short: u8) -> Opt {
    Opt {
        short,
        long: "",
        arity: Arity::OptionalDigits,
        role: Role::Plain,
        ends: false,
    }
}

/// `--help` and `--version`: the program prints and runs nothing.
pub const HELP_VERSION: [Opt; 2] = [
    flag(0, "help").role(Role::Itself),
    flag(0, "version").role(Role::Itself),
];

/// How a program's command line is read.
#[derive(Debug, Clone, Copy)]
pub struct Syntax {
    pub opts: &'static [Opt],
    /// Options end at the first operand (getopt's `+`, as wrappers do:
    /// `timeout 5 cmd -x`); otherwise options and operands mix (GNU
    /// permutation: `rm x -rf`).
    pub stop_at_operand: bool,
    /// `-NUM` is an option (`nice -10`).
    pub numeric: bool,
    /// `+x` clusters are options too (shells: `bash +o posix`).
    pub plus: bool,
    /// A long option the table does not list is a flag, not an error
    /// (node passes its V8 flags through).
    pub lenient_long: bool,
    /// Read on past an unknown option as if it were a flag, keeping the
    /// first problem: a best guess of where the operands start, so deny
    /// rules still see the command of a segment that is opaque anyway.
    pub guess: bool,
}

impl Syntax {
    /// A wrapper's syntax: options, then the command.
    pub const fn wrapper(opts: &'static [Opt]) -> Syntax {
        Syntax {
            opts,
            stop_at_operand: true,
            numeric: false,
            plus: false,
            lenient_long: false,
            guess: false,
        }
    }

    /// A GNU program's syntax: options anywhere before `--`.
    pub const fn gnu(opts: &'static [Opt]) -> Syntax {
        Syntax {
            opts,
            stop_at_operand: false,
            numeric: false,
            plus: false,
            lenient_long: false,
            guess: false,
        }
    }
}

/// One option found, with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub opt: Opt,
    pub value: Option<Arg>,
    /// Index in argv of the word that holds the option.
    pub at: usize,
}

/// Why a command line could not be read to the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// An option the table does not list (or `--flag=value` for a flag).
    Unknown(String),
    /// A long-option prefix that more than one option starts with.
    Ambiguous(String),
    /// A value-taking option at the end of the line.
    MissingValue(String),
    /// A dynamic word where an option may stand.
    Dynamic(usize),
}

impl Problem {
    /// For people: why the segment is opaque.
    pub fn describe(&self, program: &str) -> String {
        match self {
            Problem::Unknown(o) => {
                format!("`{program}` with the option `{o}`, which berth does not know")
            }
            Problem::Ambiguous(o) => format!("`{program} {o}` is an ambiguous abbreviation"),
            Problem::MissingValue(o) => format!("`{program} {o}` lacks its value"),
            Problem::Dynamic(_) => {
                format!("`{program}` with a dynamic word where an option may stand")
            }
        }
    }
}

/// A command line read by [`parse`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The options in order.
    pub found: Vec<Found>,
    /// Indexes of the operands (for `stop_at_operand`, only those before
    /// `end`: none).
    pub operands: Vec<usize>,
    /// Index of the first word not read as an option (the first operand
    /// when options stop there; `argv.len()` otherwise). `--` is skipped.
    pub end: usize,
    /// Where reading stopped early.
    pub problem: Option<Problem>,
}

impl Parsed {
    /// The first option with this long name (or short letter, when it has
    /// no long name) found.
    pub fn get(&self, long: &str) -> Option<&Found> {
        self.found.iter().find(|f| f.opt.long == long)
    }

    /// Whether an option with this long name is present.
    pub fn has(&self, long: &str) -> bool {
        self.get(long).is_some()
    }

    /// Whether an option with this short letter is present.
    pub fn has_short(&self, short: u8) -> bool {
        self.found.iter().any(|f| f.opt.short == short)
    }

    /// The first option with a role that changes what runs.
    pub fn first_with(&self, role: Role) -> Option<&Found> {
        self.found.iter().find(|f| f.opt.role == role)
    }
}

/// The option a long name (without `--`) means: the exact name, else the one
/// option it is a prefix of.
pub fn long_option(opts: &[Opt], name: &str) -> Result<Opt, Problem> {
    if name.is_empty() {
        return Err(Problem::Unknown("--".into()));
    }
    if let Some(o) = opts.iter().find(|o| !o.long.is_empty() && o.long == name) {
        return Ok(*o);
    }
    let mut hit: Option<Opt> = None;
    for o in opts.iter().filter(|o| o.long.starts_with(name)) {
        match hit {
            None => hit = Some(*o),
            // Two names for one option (same letter, arity and role) are
            // not ambiguous.
            Some(h) if h.short != 0 && h.short == o.short && h.arity == o.arity => {}
            Some(_) => return Err(Problem::Ambiguous(format!("--{name}"))),
        }
    }
    hit.ok_or_else(|| Problem::Unknown(format!("--{name}")))
}

fn short_option(opts: &[Opt], c: u8) -> Option<Opt> {
    opts.iter().find(|o| o.short == c && c != 0).copied()
}

/// Reads `argv[start..]` as `syntax` says the program does.
pub fn parse(argv: &[Arg], start: usize, syntax: &Syntax) -> Parsed {
    let mut out = Parsed {
        end: argv.len(),
        ..Parsed::default()
    };
    let mut i = start;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        let option_like =
            t.len() > 1 && (t.starts_with('-') || (syntax.plus && t.starts_with('+')));
        if a.dynamic {
            // A dynamic word may expand to options; its static start says
            // whether it surely does not.
            if t.starts_with('-') || (syntax.plus && t.starts_with('+')) {
                out.problem = Some(Problem::Dynamic(i));
                out.end = i;
                return out;
            }
            if syntax.stop_at_operand {
                out.end = i;
                return out;
            }
            out.operands.push(i);
            i += 1;
            continue;
        }
        if t == "--" {
            if syntax.stop_at_operand {
                out.end = i + 1;
                return out;
            }
            out.operands.extend(i + 1..argv.len());
            return out;
        }
        if !option_like {
            if syntax.stop_at_operand {
                out.end = i;
                return out;
            }
            out.operands.push(i);
            i += 1;
            continue;
        }
        let at = i;
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let opt = match long_option(syntax.opts, name) {
                Ok(o) => o,
                Err(Problem::Unknown(_)) if syntax.lenient_long => {
                    i += 1;
                    continue;
                }
                Err(p @ (Problem::Unknown(_) | Problem::Ambiguous(_))) if syntax.guess => {
                    out.problem.get_or_insert(p);
                    i += 1;
                    continue;
                }
                Err(p) => {
                    out.problem = Some(p);
                    out.end = i;
                    return out;
                }
            };
            let value = match (opt.arity, attached) {
                (Arity::Flag, Some(_)) if syntax.guess => {
                    out.problem.get_or_insert(Problem::Unknown(t.to_string()));
                    None
                }
                (Arity::Flag, Some(_)) => {
                    out.problem = Some(Problem::Unknown(t.to_string()));
                    out.end = i;
                    return out;
                }
                (Arity::Flag, None) | (Arity::OptionalValue | Arity::OptionalDigits, None) => None,
                (_, Some(v)) => Some(Arg {
                    text: v.to_string(),
                    ..a.clone()
                }),
                (Arity::Value, None) => {
                    let Some(v) = argv.get(i + 1) else {
                        out.problem = Some(Problem::MissingValue(format!("--{}", opt.long)));
                        out.end = i;
                        return out;
                    };
                    i += 1;
                    Some(v.clone())
                }
            };
            out.found.push(Found { opt, value, at });
            i += 1;
            if opt.ends {
                out.end = i;
                return out;
            }
            continue;
        }
        if syntax.numeric && t[1..].bytes().all(|b| b.is_ascii_digit()) {
            out.found.push(Found {
                opt: flag(0, "").role(Role::Plain),
                value: Some(Arg {
                    text: t[1..].to_string(),
                    ..a.clone()
                }),
                at: i,
            });
            i += 1;
            continue;
        }
        // A cluster of short options.
        let bytes = t.as_bytes();
        let mut j = 1;
        while j < bytes.len() {
            let c = bytes[j];
            let Some(opt) = short_option(syntax.opts, c) else {
                let shown = t
                    .get(j..=j)
                    .map_or_else(|| "?".to_string(), |s| s.to_string());
                let p = Problem::Unknown(format!("{}{shown}", &t[..1]));
                if syntax.guess {
                    out.problem.get_or_insert(p);
                    break;
                }
                out.problem = Some(p);
                out.end = i;
                return out;
            };
            match opt.arity {
                Arity::Flag => {
                    out.found.push(Found {
                        opt,
                        value: None,
                        at,
                    });
                    j += 1;
                }
                Arity::OptionalDigits => {
                    let rest = t.get(j + 1..).unwrap_or("");
                    let n = rest.bytes().take_while(u8::is_ascii_digit).count();
                    out.found.push(Found {
                        opt,
                        value: (n > 0).then(|| Arg {
                            text: rest[..n].to_string(),
                            ..a.clone()
                        }),
                        at,
                    });
                    j += 1 + n;
                }
                Arity::OptionalValue => {
                    let rest = t.get(j + 1..).unwrap_or("");
                    out.found.push(Found {
                        opt,
                        value: (!rest.is_empty()).then(|| Arg {
                            text: rest.to_string(),
                            ..a.clone()
                        }),
                        at,
                    });
                    break;
                }
                Arity::Value => {
                    let rest = t.get(j + 1..).unwrap_or("");
                    let value = if rest.is_empty() {
                        let Some(v) = argv.get(i + 1) else {
                            out.problem = Some(Problem::MissingValue(format!("-{}", c as char)));
                            out.end = i;
                            return out;
                        };
                        i += 1;
                        v.clone()
                    } else {
                        Arg {
                            text: rest.to_string(),
                            ..a.clone()
                        }
                    };
                    out.found.push(Found {
                        opt,
                        value: Some(value),
                        at,
                    });
                    break;
                }
            }
        }
        i += 1;
        if out.found.last().is_some_and(|f| f.at == at && f.opt.ends) {
            out.end = i;
            return out;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
        flag(b'v', "verbose"),
        value(b'S', "split-string"),
        value(b'k', "kill-after"),
        flag(0, "kill-children"),
        value(b's', "signal"),
        optional(b'd', "differences"),
        flag(0, "force"),
        flag(0, "foreground"),
    ];

    fn words(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(Arg::lit).collect()
    }

    fn names(p: &Parsed) -> Vec<String> {
        p.found
            .iter()
            .map(|f| {
                let v = f.value.as_ref().map(|v| v.text.clone()).unwrap_or_default();
                format!("{}={v}", f.opt.display())
            })
            .collect()
    }

    #[test]
    fn reads_options_as_getopt_long_does() {
        // (argv after the program name, options found, end, problem)
        let cases: &[(&str, &[&str], usize, Option<Problem>)] = &[
            ("--sp=ls x", &["--split-string=ls"], 2, None),
            ("-vSls x", &["--verbose=", "--split-string=ls"], 2, None),
            ("-vS ls x", &["--verbose=", "--split-string=ls"], 3, None),
            ("--kill-a 5 x", &["--kill-after=5"], 3, None),
            (
                "--kill 5 x",
                &[],
                1,
                Some(Problem::Ambiguous("--kill".into())),
            ),
            ("--fo x", &[], 1, Some(Problem::Ambiguous("--fo".into()))),
            ("--forc x", &["--force="], 2, None),
            (
                "--force=1 x",
                &[],
                1,
                Some(Problem::Unknown("--force=1".into())),
            ),
            ("-d x", &["--differences="], 2, None),
            ("-d5 x", &["--differences=5"], 2, None),
            ("-- -v", &[], 2, None),
            ("-x y", &[], 1, Some(Problem::Unknown("-x".into()))),
            (
                "-vx y",
                &["--verbose="],
                1,
                Some(Problem::Unknown("-x".into())),
            ),
            ("-k", &[], 1, Some(Problem::MissingValue("-k".into()))),
            ("x -v", &[], 1, None),
        ];
        let syntax = Syntax::wrapper(OPTS);
        for (line, want, end, problem) in cases {
            let argv = words(&format!("p {line}"));
            let p = parse(&argv, 1, &syntax);
            assert_eq!(names(&p), *want, "{line}");
            assert_eq!(p.end, *end, "{line}");
            assert_eq!(p.problem, *problem, "{line}");
        }
    }

    #[test]
    fn a_guess_reads_on_past_unknown_options() {
        let argv = words("p --bogus -vx -s 9 cmd -v");
        let syntax = Syntax {
            guess: true,
            ..Syntax::wrapper(OPTS)
        };
        let p = parse(&argv, 1, &syntax);
        assert_eq!(p.problem, Some(Problem::Unknown("--bogus".into())));
        assert_eq!(p.end, 5);
    }

    #[test]
    fn parsing_is_total() {
        let words = [
            "-",
            "--",
            "-=",
            "--=",
            "--é=x",
            "-é",
            "-aé",
            "-vé",
            "-Sé",
            "-l0é",
            "-0",
            "+",
            "+é",
            "+o",
            "-\u{10FFFF}",
            "--sp",
            "--s",
            "-kS",
            "x",
            "",
            "-d",
        ];
        let tables: [&[Opt]; 6] = [
            OPTS,
            programs::RM,
            programs::SED,
            programs::PERL,
            programs::PYTHON,
            programs::NODE,
        ];
        for table in tables {
            for plus in [false, true] {
                for stop in [false, true] {
                    let syntax = Syntax {
                        opts: table,
                        stop_at_operand: stop,
                        numeric: plus,
                        plus,
                        lenient_long: plus,
                        guess: stop,
                    };
                    for a in words {
                        for b in words {
                            let argv = vec![Arg::lit("p"), Arg::lit(a), Arg::lit(b)];
                            let p = parse(&argv, 1, &syntax);
                            assert!(p.end <= argv.len(), "{a:?} {b:?}");
                            let argv = vec![Arg::lit("p"), Arg::dynamic(a), Arg::lit(b)];
                            let _ = parse(&argv, 1, &syntax);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn gnu_programs_permute() {
        let argv = words("p a -v b -- -s");
        let p = parse(&argv, 1, &Syntax::gnu(OPTS));
        assert_eq!(p.operands, vec![1, 3, 5]);
        assert!(p.has("verbose"));
    }

    #[test]
    fn a_dynamic_word_where_an_option_may_stand() {
        let argv = vec![Arg::lit("p"), Arg::dynamic("-"), Arg::lit("x")];
        let p = parse(&argv, 1, &Syntax::wrapper(OPTS));
        assert_eq!(p.problem, Some(Problem::Dynamic(1)));
        let argv = vec![Arg::lit("p"), Arg::dynamic(""), Arg::lit("x")];
        let p = parse(&argv, 1, &Syntax::wrapper(OPTS));
        assert_eq!((p.problem, p.end), (None, 1));
    }
}
