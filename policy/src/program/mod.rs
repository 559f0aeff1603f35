//! What individual programs do with their arguments that matters to the
//! decision: options that make an allowed program run another program
//! (git's `-c`, `rg --pre`, `awk` calling `system()`, `sed`'s `e`, …),
//! commands they run (`find -exec`, `git rebase -x`), and paths hidden in
//! option values or program text (`awk '{print > "/etc/x"}'`, `sed w file`).
//!
//! An option that runs a program makes the segment opaque: the allowed
//! program is no longer what runs.
//!
//! One file per program family, each with a table per program of the
//! options that matter and a line on why each does; this file holds what
//! they share and the dispatch by program name.

mod awk;
mod build_tools;
mod code_runners;
mod compilers;
mod editors;
mod file_tools;
mod foreign_shells;
mod forge;
mod git;
mod interpreters;
mod network;
mod option_runners;
mod sed;
mod shell_builtins;
mod sqlite;
mod stdin_program;

pub use awk::awk_program;
pub(crate) use git::git_harmless_settings_removed;
pub use git::{
    GitSplit, git_key_harmless, git_key_runs_program, git_normalized, git_split, git_undashed,
    git_without_harmless_settings,
};
pub use interpreters::{python_module_argv, python_script_argv};
pub use sed::sed_script;
pub use shell_builtins::subscript_is_code;
pub use stdin_program::is_stdin_alias;

use crate::arg::Arg;
use crate::options::{self, programs};

/// A command a program runs on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inner {
    Argv(Vec<Arg>),
    Script(Arg),
}

/// A path found inside an option value or a program's own language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenPath {
    /// `None` when the path is computed at run time.
    pub path: Option<String>,
    pub writes: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub opaque: Option<String>,
    pub inner: Vec<Inner>,
    pub paths: Vec<HiddenPath>,
    /// Relative arguments resolve against this directory (`git -C dir`).
    pub arg_dir: Option<Arg>,
    /// The paths `find` walks (what `{}` stands for in its `-exec`).
    pub find_roots: Vec<Arg>,
    /// The program's own argv when parts of it belong to inner commands
    /// (`find … -exec rm {} ;` is judged as `find …`).
    pub own_argv: Option<Vec<Arg>>,
    /// Inner commands run in a temporary directory (`git filter-branch`).
    pub filter_in_temp_dir: bool,
}

impl Facts {
    pub(super) fn opaque(reason: impl Into<String>) -> Facts {
        Facts {
            opaque: Some(reason.into()),
            ..Facts::default()
        }
    }
}

/// Analyses the program that runs (`argv[0]` is its name as written).
pub fn analyze(argv: &[Arg]) -> Facts {
    analyze_noting(argv, &mut None)
}

/// [`analyze`], noting in `global` [`options::global::normalized`]`(argv)`
/// when the analysis finds it anyway (left as it is otherwise): the
/// segment's normalised views reuse it instead of parsing the tool's
/// options a second time.
pub fn analyze_noting(argv: &[Arg], global: &mut Option<Option<Vec<Arg>>>) -> Facts {
    let Some(first) = argv.first() else {
        return Facts::default();
    };
    if first.dynamic {
        return Facts::default();
    }
    analyze_named(argv, first.basename(), global)
}

/// [`analyze_noting`] of an argv whose program, static, has the basename
/// `name` (the caller holds it already).
pub(crate) fn analyze_named(
    argv: &[Arg],
    name: &str,
    global: &mut Option<Option<Vec<Arg>>>,
) -> Facts {
    let args = argv.get(1..).unwrap_or_default();
    if let Some(why) = stdin_program::reads_program(name, args) {
        return Facts::opaque(why);
    }
    // Only a `git-…` name is dashed git: no other is looked at again.
    if name.starts_with("git-")
        && let Some(undashed) = git_undashed(argv)
    {
        let norm = options::global::normalized(&undashed);
        return git_facts(&undashed, norm.as_deref());
    }
    // A modelled tool whose subcommand cannot be found past its global
    // options (`npm --weird publish`). Found once: git's facts read it too.
    let sub = options::global::subcommand_named(argv, name);
    if let Some(options::global::Sub::Unknown(p)) = &sub {
        *global = Some(None);
        return Facts::opaque(p.describe(name));
    }
    // Where the tool's subcommand is, past its global options.
    let norm_sub = match &sub {
        Some(options::global::Sub::At { index, .. })
            if !argv[*index].dynamic
                && !matches!(argv[*index].basename(), "npm" | "pnpm" | "yarn" | "bun") =>
        {
            Some(*index)
        }
        _ => None,
    };
    let norm = global.insert(sub.and_then(|sub| options::global::normalized_at(argv, sub)));
    match name {
        // Deny-template programs: every option known, or opaque.
        "rm" => unknown_option(argv, programs::RM),
        "chmod" => unknown_option(argv, programs::CHMOD),
        "chown" | "chgrp" => unknown_option(argv, programs::CHOWN),
        "git" => git_facts(argv, norm.as_deref()),
        "gh" => forge::gh(args),
        "sqlite3" | "sqlite" => sqlite::sqlite3(args),
        "psql" | "mysql" | "mariadb" => sqlite::sql_client(name, args),
        "emacs" | "emacsclient" => editors::emacs(name, args),
        "wget" => network::wget(args),
        "curl" => network::curl(args),
        _ if compilers::is_compiler_driver(name) => compilers::cc(name, args),
        "rg" => file_tools::rg(args),
        "sort" => file_tools::sort(args),
        "tar" | "gtar" | "bsdtar" => file_tools::tar(args),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => awk::awk(argv),
        "sed" | "gsed" => sed::sed(argv),
        "find" | "gfind" => file_tools::find(argv),
        "ssh" | "scp" | "sftp" => network::ssh(name, args),
        "rsync" => network::rsync(args),
        "zip" => file_tools::zip(args),
        "unzip" => file_tools::unzip(args),
        "cpio" => file_tools::cpio(args),
        "pax" => file_tools::pax(args),
        "man" => editors::man(args),
        "less" => editors::less(args),
        "vi" | "vim" | "nvim" | "view" | "ex" | "gvim" => editors::vi(name, args),
        "gdb" => editors::gdb(args),
        "lldb" => code_runners::lldb(args),
        "ipython" | "ipython3" => code_runners::ipython(name, args),
        "rake" => code_runners::rake(args),
        "npm" | "pnpm" | "yarn" => {
            let facts = build_tools::npm(name, args);
            match norm_sub {
                // `pnpm node -e …`, `pnpm sh -c …`: the word that is none of
                // pnpm's commands is a program it runs (privileged/mod.rs).
                Some(i)
                    if facts.opaque.is_none()
                        && name != "npm"
                        && build_tools::may_run_as_program(&argv[i]) =>
                {
                    let inner = analyze(&argv[i..]);
                    let wraps = !matches!(
                        crate::wrapper::unwrap(&argv[i..]),
                        crate::wrapper::Unwrap::NotAWrapper | crate::wrapper::Unwrap::Itself
                    );
                    if inner.opaque.is_some() {
                        inner
                    } else if wraps {
                        Facts::opaque(format!(
                            "`{name} {}` may run `{}` as a program, which runs another command",
                            argv[i].text, argv[i].text
                        ))
                    } else {
                        facts
                    }
                }
                _ => facts,
            }
        }
        "cargo" => build_tools::cargo(args),
        "rustc" => build_tools::rustc(args),
        "go" => build_tools::go(args),
        "make" | "gmake" => build_tools::make(args),
        "mvn" | "mvnw" => build_tools::mvn(args),
        "alias" => shell_builtins::alias(args),
        "hash" => shell_builtins::hash(args),
        "enable" => shell_builtins::enable(args),
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            shell_builtins::declaration(name, args)
        }
        "let" => Facts::opaque("`let` evaluates arithmetic over variables"),
        "read" | "mapfile" | "readarray" | "getopts" | "unset" | "printf" => {
            shell_builtins::sets_variables(name, args)
        }
        "test" | "[" => shell_builtins::test_v(args),
        "compgen" => shell_builtins::compgen(args),
        "fc" => shell_builtins::fc(args),
        "wait" => shell_builtins::wait(args),
        "set" => shell_builtins::set(args),
        "shopt" => shell_builtins::shopt(args),
        _ if interpreters::has_model(name)
            || (crate::wrapper::is_interpreter(name) && !crate::wrapper::is_shell(name)) =>
        {
            interpreter(name, argv)
        }
        "[[" => shell_builtins::cond(args),
        _ if foreign_shells::is_foreign_shell(name) => foreign_shells::facts(name, args),
        "cmake" => build_tools::cmake(args).or(option_runners::cmake_defines(args).as_deref()),
        _ if option_runners::has_model(name) => option_runners::facts(name, args),
        _ => Facts::default(),
    }
}

/// An interpreter's inline code, found as it reads its options (`perl -le`,
/// `python3 -Sc`, `node --eval=`), given to the interpreter's table of calls
/// in its plain spelling (`-e CODE`); options it cannot read are opaque.
/// git's own facts, and its subcommands' options that run a program in any
/// spelling (`--upload-p`, `rebase -fx`).
fn git_facts(argv: &[Arg], norm: Option<&[Arg]>) -> Facts {
    let facts = git::git(argv);
    let runs = programs::git_sub_runs(norm.unwrap_or(argv));
    facts.or(runs.as_deref())
}

fn interpreter(name: &str, argv: &[Arg]) -> Facts {
    let module = code_runners::python_module(argv);
    if module.opaque.is_some() {
        return module;
    }
    let as_written = interpreters::inline_code(name, &argv[1..]);
    if as_written.opaque.is_some() {
        return as_written;
    }
    match programs::interpreter_code(argv) {
        None => as_written,
        Some(Err(reason)) => Facts::opaque(reason),
        Some(Ok(code)) => {
            let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
            let flag = match base {
                "python" | "pypy" => "-c",
                "php" => "-r",
                _ => "-e",
            };
            // perl's `-MModule` is judged as written above (a list of safe
            // modules); only a value that is more than a module name
            // (`-M'POSIX;system…'`) is code here.
            let module_name = |c: &Arg| {
                base == "perl"
                    && !c.dynamic
                    && c.text
                        .split_once('=')
                        .map_or(c.text.as_str(), |(m, _)| m)
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
                    && c.text.split_once('=').is_none_or(|(_, v)| {
                        v.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == ',')
                    })
                    && argv.iter().any(|a| a.text == format!("-M{}", c.text))
            };
            let plain: Vec<Arg> = code
                .into_iter()
                .filter(|c| !module_name(c))
                .flat_map(|c| [Arg::lit(flag), c])
                .collect();
            let judged = interpreters::inline_code(name, &plain);
            if judged.opaque.is_some() {
                judged
            } else {
                as_written
            }
        }
    }
}

/// Opaque when `argv` holds an option `opts` does not list.
fn unknown_option(argv: &[Arg], opts: &'static [options::Opt]) -> Facts {
    match programs::unknown_option(argv, opts) {
        Some(reason) => Facts::opaque(reason),
        None => Facts::default(),
    }
}

pub(super) trait OrOpaque {
    fn or(self, other: Option<&str>) -> Facts;
}

impl OrOpaque for Facts {
    fn or(self, other: Option<&str>) -> Facts {
        if self.opaque.is_some() {
            return self;
        }
        match other {
            Some(r) => Facts::opaque(r),
            None => self,
        }
    }
}

/// Opaque when any of the long options (`--x` or `--x=…`) or short options
/// (`-x`, `-xVALUE`) is present.
pub(super) fn opt_runs(args: &[Arg], long: &[&str], short: &[u8], reason: &str) -> Facts {
    for a in args {
        if a.dynamic {
            continue;
        }
        let t = a.text.as_str();
        if t == "--" {
            break;
        }
        if t.starts_with("--") {
            // GNU getopt_long takes any unambiguous prefix (`--pre`,
            // `--compress-p`): a prefix of a listed option is read as it.
            let name = t.split('=').next().unwrap_or(t);
            if long
                .iter()
                .any(|l| *l == name || (name.len() >= 4 && l.starts_with(name)))
            {
                return Facts::opaque(reason);
            }
        } else if t.len() > 1 && t.starts_with('-') {
            // Any letter of a cluster (`-aP pager`), a value attached or not.
            if t.bytes().skip(1).any(|b| short.contains(&b)) {
                return Facts::opaque(reason);
            }
        }
    }
    Facts::default()
}
