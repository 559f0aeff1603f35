//! What individual programs do with their arguments that matters to the
//! decision: options that make an allowed program run another program
//! (git's `-c`, `rg --pre`, `awk` calling `system()`, `sed`'s `e`, …),
//! commands they run (`find -exec`, `git rebase -x`), and paths hidden in
//! option values or program text (`awk '{print > "/etc/x"}'`, `sed w file`).
//!
//! An option that runs a program makes the segment opaque: the allowed
//! program is no longer what runs.

use crate::arg::Arg;
use crate::env::is_dangerous_env;

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
    fn opaque(reason: impl Into<String>) -> Facts {
        Facts {
            opaque: Some(reason.into()),
            ..Facts::default()
        }
    }
}

/// Analyses the program that runs (`argv[0]` is its name as written).
pub fn analyze(argv: &[Arg]) -> Facts {
    let Some(first) = argv.first() else {
        return Facts::default();
    };
    if first.dynamic {
        return Facts::default();
    }
    let name = first.basename();
    let args = &argv[1..];
    match name {
        "git" => git(argv),
        "rg" => opt_runs(
            args,
            &["--pre"],
            &[],
            "`rg --pre` runs a preprocessor program",
        ),
        "sort" => opt_runs(
            args,
            &["--compress-program"],
            &[],
            "`sort --compress-program` runs a program",
        ),
        "tar" | "gtar" | "bsdtar" => tar(args),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => awk(args),
        "sed" | "gsed" => sed(args),
        "find" | "gfind" => find(argv),
        "ssh" | "scp" | "sftp" => ssh(name, args),
        "rsync" => opt_runs(
            args,
            &["--rsh", "--rsync-path"],
            b"e",
            "`rsync -e/--rsh/--rsync-path` runs a program",
        ),
        "zip" => opt_runs(
            args,
            &["--unzip-command"],
            &[],
            "`zip -TT/--unzip-command` runs a program",
        )
        .or(if args.iter().any(|a| a.is("-TT")) {
            Some("`zip -TT` runs a program")
        } else {
            None
        }),
        "man" => opt_runs(
            args,
            &["--pager", "--html"],
            b"PH",
            "`man -P/-H` runs a program",
        ),
        "vi" | "vim" | "nvim" | "view" | "ex" | "gvim" => {
            if args.iter().any(|a| {
                a.is("-c")
                    || a.is("--cmd")
                    || a.is("-S")
                    || (a.text.starts_with('+') && a.text.len() > 1)
            }) {
                Facts::opaque(format!("`{name}` with commands to run (-c/+cmd/--cmd/-S)"))
            } else {
                Facts::default()
            }
        }
        "gdb" => opt_runs(
            args,
            &[
                "--eval-command",
                "--command",
                "--init-eval-command",
                "--init-command",
            ],
            &[],
            "",
        )
        .or(
            if args
                .iter()
                .any(|a| a.is("-ex") || a.is("-x") || a.is("-iex") || a.is("-ix"))
            {
                Some("`gdb` with commands to run (-ex/-x)")
            } else {
                None
            },
        ),
        "npm" | "pnpm" | "yarn" => npm(name, args),
        "cargo" => {
            if args
                .iter()
                .any(|a| a.is("--config") || a.text.starts_with("--config="))
            {
                Facts::opaque(
                    "`cargo --config` can set programs cargo runs (rustc wrapper, linker, runner)",
                )
            } else {
                Facts::default()
            }
        }
        "rustc" => {
            let runs = args
                .windows(2)
                .any(|w| w[0].is("-C") && w[1].text.starts_with("linker"))
                || args.iter().any(|a| {
                    a.text.starts_with("-Clinker") || a.text.starts_with("-Clink-self-contained")
                });
            if runs {
                Facts::opaque("`rustc -C linker=` runs a program")
            } else {
                Facts::default()
            }
        }
        "go" => go(args),
        "make" | "gmake" => {
            if args.iter().any(|a| {
                a.text.starts_with("SHELL=")
                    || a.text.starts_with("MAKESHELL=")
                    || a.text.starts_with(".SHELLFLAGS=")
            }) {
                Facts::opaque("`make SHELL=` changes the program that runs recipes")
            } else {
                Facts::default()
            }
        }
        "alias" => {
            if args.iter().any(|a| a.dynamic || a.text.contains('=')) {
                Facts::opaque("`alias` changes what a later command runs")
            } else {
                Facts::default()
            }
        }
        "hash" => {
            if args.iter().any(|a| a.is("-p") || a.text.starts_with("-p")) {
                Facts::opaque("`hash -p` changes what a command name runs")
            } else {
                Facts::default()
            }
        }
        "enable" => {
            if args.iter().any(|a| a.text.starts_with("-f")) {
                Facts::opaque("`enable -f` loads a builtin from a shared object")
            } else {
                Facts::default()
            }
        }
        "export" | "declare" | "typeset" | "local" | "readonly" => declaration(name, args),
        "let" => Facts::opaque("`let` evaluates arithmetic over variables"),
        _ if crate::wrapper::is_interpreter(name) && !crate::wrapper::is_shell(name) => {
            inline_code(name, args)
        }
        "[[" => cond(args),
        _ => Facts::default(),
    }
}

trait OrOpaque {
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
fn opt_runs(args: &[Arg], long: &[&str], short: &[u8], reason: &str) -> Facts {
    for a in args {
        if a.dynamic {
            continue;
        }
        let t = a.text.as_str();
        if t == "--" {
            break;
        }
        if t.starts_with("--") {
            let name = t.split('=').next().unwrap_or(t);
            if long.contains(&name) {
                return Facts::opaque(reason);
            }
        } else if t.len() > 1 && t.starts_with('-') && short.contains(&t.as_bytes()[1]) {
            return Facts::opaque(reason);
        }
    }
    Facts::default()
}

// ---- git --------------------------------------------------------------------

/// git's global options that take a value.
const GIT_GLOBAL_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--attr-source",
    "--list-cmds",
];

/// The result of splitting git's global options from its subcommand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitSplit {
    /// Index in argv of the subcommand, if any.
    pub sub: Option<usize>,
    /// Why a global option makes git run another program.
    pub opaque: Option<String>,
    /// `-C` directories in order (relative args resolve against them).
    pub dirs: Vec<Arg>,
}

/// Splits git's global options (`-C D`, `-c K=V`, `--git-dir=…`, …) from the
/// subcommand.
pub fn git_split(argv: &[Arg]) -> GitSplit {
    let mut out = GitSplit::default();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            // A dynamic word where the subcommand or an option would be.
            out.sub = Some(i);
            return out;
        }
        let t = a.text.as_str();
        if !t.starts_with('-') || t == "-" {
            out.sub = Some(i);
            return out;
        }
        if t == "--" {
            out.sub = (i + 1 < argv.len()).then_some(i + 1);
            return out;
        }
        let name = t.split('=').next().unwrap_or(t);
        match name {
            "-c" | "--config-env" => {
                out.opaque.get_or_insert_with(|| {
                    format!("git's global `{name}` can set a program git runs")
                });
            }
            "--exec-path" => {
                out.opaque.get_or_insert_with(|| {
                    "git's `--exec-path` chooses the programs git runs".to_string()
                });
            }
            "-p" | "--paginate" => {
                out.opaque
                    .get_or_insert_with(|| format!("git's `{name}` runs a pager"));
            }
            "-C" => {
                if let Some(d) = argv.get(i + 1) {
                    out.dirs.push(d.clone());
                }
            }
            _ => {}
        }
        // `-C.` / `-cK=V` attached forms.
        if let Some(rest) = t
            .strip_prefix("-C")
            .filter(|r| !r.is_empty() && !t.starts_with("--"))
        {
            out.dirs.push(Arg {
                text: rest.to_string(),
                ..a.clone()
            });
            i += 1;
            continue;
        }
        if t.starts_with("-c") && t.len() > 2 && !t.starts_with("--") {
            i += 1;
            continue;
        }
        if GIT_GLOBAL_VALUE.contains(&name) && !t.contains('=') {
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

/// argv with git's global options removed (`git -C /work push` → `git push`).
pub fn git_normalized(argv: &[Arg]) -> Vec<Arg> {
    let split = git_split(argv);
    let mut out = vec![argv[0].clone()];
    if let Some(s) = split.sub {
        out.extend_from_slice(&argv[s..]);
    }
    out
}

fn git(argv: &[Arg]) -> Facts {
    let split = git_split(argv);
    let mut facts = Facts {
        opaque: split.opaque.clone(),
        ..Facts::default()
    };
    if let Some(d) = split.dirs.last() {
        facts.arg_dir = Some(d.clone());
    }
    let Some(sub_i) = split.sub else { return facts };
    let sub = &argv[sub_i];
    let rest = &argv[sub_i + 1..];
    if facts.opaque.is_some() || sub.dynamic {
        return facts;
    }
    if rest
        .iter()
        .any(|a| !a.dynamic && (a.text.starts_with("ext::") || a.text.starts_with("fd::")))
    {
        facts.opaque = Some("a git `ext::` remote runs a command".into());
        return facts;
    }
    let has = |names: &[&str]| {
        rest.iter().any(|a| {
            !a.dynamic && {
                let n = a.text.split('=').next().unwrap_or(&a.text);
                names.contains(&n)
            }
        })
    };
    match sub.text.as_str() {
        "config" => {
            if let Some(key) = git_config_sets_program(rest) {
                facts.opaque = Some(format!(
                    "`git config` sets `{key}`, which makes git run a program"
                ));
            }
        }
        "fetch" | "pull" | "ls-remote" if has(&["--upload-pack"]) => {
            facts.opaque = Some("`--upload-pack` runs a program".into());
        }
        "clone" if has(&["--upload-pack", "-u", "--config", "-c", "--template"]) => {
            facts.opaque = Some(
                "`git clone` with --upload-pack, --config or --template runs or installs programs"
                    .into(),
            );
        }
        "push" | "send-pack" if has(&["--receive-pack", "--exec"]) => {
            facts.opaque = Some("`--receive-pack`/`--exec` runs a program".into());
        }
        "archive" if has(&["--exec", "--remote"]) => {
            facts.opaque = Some("`git archive --remote/--exec` runs a program".into());
        }
        "grep"
            if (has(&["-O", "--open-files-in-pager"])
                || rest.iter().any(|a| a.text.starts_with("-O"))) =>
        {
            facts.opaque = Some("`git grep -O` runs a pager".into());
        }
        "difftool" if has(&["-x", "--extcmd"]) => {
            facts.opaque = Some("`git difftool --extcmd` runs a program".into());
        }
        "diff" | "log" | "show" | "format-patch" | "whatchanged" | "diff-tree" | "diff-files"
        | "diff-index"
            if has(&["--ext-diff"]) =>
        {
            facts.opaque = Some("`--ext-diff` runs an external diff program".into());
        }
        "filter-branch" => {
            // Each filter is a shell snippet, run in a temporary checkout.
            const FILTERS: &[&str] = &[
                "--env-filter",
                "--tree-filter",
                "--index-filter",
                "--parent-filter",
                "--msg-filter",
                "--commit-filter",
                "--tag-name-filter",
            ];
            let mut i = 0;
            while i < rest.len() {
                let a = &rest[i];
                let name = a.text.split('=').next().unwrap_or(&a.text);
                if !a.dynamic && FILTERS.contains(&name) {
                    let script = match a.text.split_once('=') {
                        Some((_, v)) => Some(Arg {
                            text: v.to_string(),
                            ..a.clone()
                        }),
                        None => rest.get(i + 1).cloned(),
                    };
                    if let Some(s) = script {
                        facts.inner.push(Inner::Script(s));
                    }
                    i += if a.text.contains('=') { 1 } else { 2 };
                    continue;
                }
                i += 1;
            }
            facts.filter_in_temp_dir = true;
        }
        "filter-repo"
            if rest
                .iter()
                .any(|a| a.text.ends_with("-callback") || a.text.contains("-callback=")) =>
        {
            facts.opaque = Some("`git filter-repo` callbacks run Python code".into());
        }
        "send-email" if has(&["--to-cmd", "--cc-cmd", "--sendmail-cmd", "--smtp-server"]) => {
            facts.opaque = Some("`git send-email` with a command option runs a program".into());
        }
        "rebase" => {
            let mut i = 0;
            while i < rest.len() {
                let a = &rest[i];
                if a.is("-x") || a.is("--exec") {
                    if let Some(s) = rest.get(i + 1) {
                        facts.inner.push(Inner::Script(s.clone()));
                    }
                    i += 2;
                    continue;
                }
                if let Some(s) = a.text.strip_prefix("--exec=") {
                    facts.inner.push(Inner::Script(Arg {
                        text: s.to_string(),
                        ..a.clone()
                    }));
                } else if a.text.starts_with("-x") && a.text.len() > 2 && !a.dynamic {
                    facts.inner.push(Inner::Script(Arg {
                        text: a.text[2..].to_string(),
                        ..a.clone()
                    }));
                }
                i += 1;
            }
        }
        "bisect" if rest.first().is_some_and(|a| a.is("run")) && rest.len() > 1 => {
            facts.inner.push(Inner::Argv(rest[1..].to_vec()));
        }
        "submodule" => {
            if let Some(pos) = rest.iter().position(|a| a.is("foreach")) {
                let words: Vec<&Arg> = rest[pos + 1..]
                    .iter()
                    .filter(|a| !a.is("--recursive") && !a.is("-q") && !a.is("--quiet"))
                    .collect();
                if words.iter().any(|w| w.dynamic) {
                    facts.opaque = Some("`git submodule foreach` with a dynamic command".into());
                } else if !words.is_empty() {
                    let text = words
                        .iter()
                        .map(|w| w.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" ");
                    facts.inner.push(Inner::Script(Arg::lit(text)));
                }
            }
        }
        _ => {}
    }
    facts
}

/// When `git config …` sets a key that makes git run a program, that key.
fn git_config_sets_program(rest: &[Arg]) -> Option<String> {
    let mut positional: Vec<&Arg> = Vec::new();
    let mut setting = false;
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if a.dynamic {
            positional.push(a);
            i += 1;
            continue;
        }
        let t = a.text.as_str();
        match t {
            "--add" | "--replace-all" => setting = true,
            "-f" | "--file" | "--blob" | "--type" | "--default" | "--comment" | "--value" => {
                i += 2;
                continue;
            }
            "--get" | "--get-all" | "--get-regexp" | "--get-urlmatch" | "-l" | "--list"
            | "--unset" | "--unset-all" | "--remove-section" | "--rename-section" | "-e"
            | "--edit" | "--show-origin" | "--show-scope" | "--name-only" => {
                return None;
            }
            _ if t.starts_with('-') => {}
            _ => positional.push(a),
        }
        i += 1;
    }
    // New syntax: `git config set [opts] key value`.
    if let Some(first) = positional.first() {
        match first.text.as_str() {
            "set" => {
                setting = true;
                positional.remove(0);
            }
            "get" | "list" | "unset" | "rename-section" | "remove-section" | "edit" => return None,
            _ => {}
        }
    }
    let key = positional.first()?;
    if !(setting || positional.len() >= 2) {
        return None;
    }
    if key.dynamic {
        return Some("a dynamic key".to_string());
    }
    git_key_runs_program(&key.text).then(|| key.text.clone())
}

/// Config keys whose value is a program git runs, or that load more config.
pub fn git_key_runs_program(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let parts: Vec<&str> = k.split('.').collect();
    let (section, last) = (
        parts.first().copied().unwrap_or(""),
        parts.last().copied().unwrap_or(""),
    );
    match section {
        "alias" | "filter" | "include" | "includeif" | "pager" | "hook" | "sendemail"
        | "instaweb" => true,
        "core" => matches!(
            last,
            "pager"
                | "editor"
                | "fsmonitor"
                | "hookspath"
                | "sshcommand"
                | "gitproxy"
                | "askpass"
                | "attributesfile"
                | "worktree"
        ),
        "diff" => matches!(last, "external" | "textconv" | "command"),
        "difftool" | "mergetool" => matches!(last, "cmd" | "path"),
        "merge" => last == "driver",
        "credential" => last == "helper",
        "gpg" => last == "program",
        "sequence" => last == "editor",
        "interactive" => last == "difffilter",
        "web" => last == "browser",
        "browser" | "man" => matches!(last, "cmd" | "path" | "viewer"),
        "uploadpack" => last == "packobjectshook",
        "remote" => matches!(last, "uploadpack" | "receivepack" | "vcs" | "proxy"),
        "url" => matches!(last, "insteadof" | "pushinsteadof"),
        "protocol" => last == "allow",
        "submodule" => last == "update",
        "trailer" => matches!(last, "command" | "cmd"),
        "receive" => last == "procreceiverefs",
        _ => false,
    }
}

// ---- tar --------------------------------------------------------------------

fn tar(args: &[Arg]) -> Facts {
    const LONG: &[&str] = &[
        "--to-command",
        "--checkpoint-action",
        "--use-compress-program",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
    ];
    for (i, a) in args.iter().enumerate() {
        if a.dynamic {
            continue;
        }
        let t = a.text.as_str();
        if t.starts_with("--") {
            let name = t.split('=').next().unwrap_or(t);
            if LONG.contains(&name) {
                return Facts::opaque(format!("`tar {name}` runs a program"));
            }
            continue;
        }
        let cluster = if let Some(c) = t.strip_prefix('-') {
            Some(c)
        } else if i == 0 && !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphabetic()) {
            // Old style: `tar xvf f.tar`.
            Some(t)
        } else {
            None
        };
        if let Some(c) = cluster
            && (c.contains('I') || c.contains('F'))
        {
            return Facts::opaque("`tar -I/-F` runs a program");
        }
    }
    Facts::default()
}

// ---- awk --------------------------------------------------------------------

fn awk(args: &[Arg]) -> Facts {
    let mut facts = Facts::default();
    let mut program: Option<&Arg> = None;
    let mut i = 0;
    let mut sources = Vec::new();
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if a.dynamic && program.is_none() && sources.is_empty() {
            return Facts::opaque("an awk program from a dynamic string");
        }
        if !a.dynamic && t.starts_with('-') && t.len() > 1 && program.is_none() {
            if t == "--" {
                i += 1;
                continue;
            }
            let name = t.split('=').next().unwrap_or(t);
            match name {
                "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" | "-l" | "--load" => {
                    return Facts::opaque("an awk program from a file berth cannot see");
                }
                "-e" | "--source" => {
                    if let Some(s) = args.get(i + 1) {
                        sources.push(s);
                    }
                    i += 2;
                    continue;
                }
                "-v" | "-F" | "--assign" | "--field-separator" => {
                    i += if t.len() == 2 || !t.contains('=') && t.starts_with("--") {
                        2
                    } else {
                        1
                    };
                    continue;
                }
                _ => {
                    if t.starts_with("-f") {
                        return Facts::opaque("an awk program from a file berth cannot see");
                    }
                    i += 1;
                    continue;
                }
            }
        }
        if program.is_none() && sources.is_empty() {
            program = Some(a);
        }
        i += 1;
    }
    if let Some(p) = program {
        sources.push(p);
    }
    for src in sources {
        if src.dynamic {
            return Facts::opaque("an awk program from a dynamic string");
        }
        match awk_program(&src.text) {
            Err(reason) => return Facts::opaque(reason),
            Ok(paths) => facts.paths.extend(paths),
        }
    }
    facts
}

/// Scans an awk program for what runs programs (`system()`, pipes, `|&`,
/// `@load`) and the files it writes or reads by name.
pub fn awk_program(prog: &str) -> Result<Vec<HiddenPath>, String> {
    #[derive(PartialEq, Clone, Copy)]
    enum Tok {
        Start,
        Operand,
        Operator,
    }
    let b = prog.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    let mut prev = Tok::Start;
    let mut in_print = false;
    let mut paren = 0i32;
    let mut redirect: Option<bool> = None; // Some(writes) after `>`/`<` in a print/getline
    let mut last_word = String::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => {
                let start = i + 1;
                i += 1;
                let mut s = Vec::new();
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        s.push(b[i + 1]);
                        i += 2;
                        continue;
                    }
                    s.push(b[i]);
                    i += 1;
                }
                let _ = start;
                i += 1;
                if let Some(writes) = redirect.take() {
                    paths.push(HiddenPath {
                        path: Some(String::from_utf8_lossy(&s).into_owned()),
                        writes,
                    });
                }
                prev = Tok::Operand;
                continue;
            }
            b'/' if prev != Tok::Operand => {
                // A regex literal.
                i += 1;
                while i < b.len() && b[i] != b'/' {
                    if b[i] == b'\\' {
                        i += 1;
                    } else if b[i] == b'[' {
                        // bracket expressions may hold `/`
                        i += 1;
                        while i < b.len() && b[i] != b']' {
                            i += 1;
                        }
                    }
                    i += 1;
                }
                i += 1;
                prev = Tok::Operand;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'@' => {
                let rest = &prog[i + 1..];
                if rest.starts_with("load") || rest.starts_with("include") {
                    return Err("an awk program that loads code (`@load`/`@include`)".into());
                }
                i += 1;
                continue;
            }
            b'|' => {
                if b.get(i + 1) == Some(&b'|') {
                    i += 2;
                    prev = Tok::Operator;
                    continue;
                }
                return Err("an awk program that pipes to or from a command".into());
            }
            b'(' => {
                if last_word == "system" {
                    return Err("an awk program that calls `system()`".into());
                }
                paren += 1;
                prev = Tok::Operator;
            }
            b')' => {
                paren -= 1;
                prev = Tok::Operand;
            }
            b'>' if in_print && paren <= 0 => {
                if b.get(i + 1) == Some(&b'>') {
                    i += 1;
                }
                redirect = Some(true);
                prev = Tok::Operator;
            }
            b'<' if last_word == "getline" => {
                redirect = Some(false);
                prev = Tok::Operator;
            }
            b';' | b'\n' | b'{' | b'}' => {
                if let Some(writes) = redirect.take() {
                    paths.push(HiddenPath { path: None, writes });
                }
                in_print = false;
                prev = Tok::Start;
            }
            _ if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                last_word = prog[start..i].to_string();
                if last_word == "print" || last_word == "printf" {
                    in_print = true;
                    paren = 0;
                }
                if let Some(writes) = redirect.take() {
                    // A file name computed by an expression.
                    paths.push(HiddenPath { path: None, writes });
                }
                let is_keyword = matches!(
                    last_word.as_str(),
                    "print" | "printf" | "return" | "in" | "getline"
                );
                prev = if is_keyword {
                    Tok::Operator
                } else {
                    Tok::Operand
                };
                // skip spaces to check `system (`
                let mut j = i;
                while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                    j += 1;
                }
                if last_word == "system" && b.get(j) == Some(&b'(') {
                    return Err("an awk program that calls `system()`".into());
                }
                continue;
            }
            b'$' => {
                if let Some(writes) = redirect.take() {
                    paths.push(HiddenPath { path: None, writes });
                }
                prev = Tok::Operator;
            }
            b' ' | b'\t' | b'\r' => {}
            b'0'..=b'9' => prev = Tok::Operand,
            _ => prev = Tok::Operator,
        }
        if !(c.is_ascii_alphanumeric() || c == b'_' || c == b' ' || c == b'\t') {
            last_word.clear();
        }
        i += 1;
    }
    if let Some(writes) = redirect.take() {
        paths.push(HiddenPath { path: None, writes });
    }
    Ok(paths)
}

// ---- sed --------------------------------------------------------------------

fn sed(args: &[Arg]) -> Facts {
    let mut facts = Facts::default();
    let mut scripts: Vec<&Arg> = Vec::new();
    let mut explicit = false;
    let mut i = 0;
    let mut first_operand: Option<&Arg> = None;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if !a.dynamic && t.starts_with('-') && t.len() > 1 {
            let name = t.split('=').next().unwrap_or(t);
            match name {
                "-e" | "--expression" => {
                    explicit = true;
                    if let Some(v) = t.strip_prefix("--expression=") {
                        let _ = v;
                        scripts.push(a);
                        i += 1;
                    } else {
                        if let Some(s) = args.get(i + 1) {
                            scripts.push(s);
                        }
                        i += 2;
                    }
                    continue;
                }
                "-f" | "--file" => {
                    return Facts::opaque("a sed script from a file berth cannot see");
                }
                "-l" | "--line-length" => {
                    i += if t.len() == 2 { 2 } else { 1 };
                    continue;
                }
                _ => {
                    if t.starts_with("-e") && t.len() > 2 {
                        explicit = true;
                        scripts.push(a);
                    } else if !t.starts_with("--")
                        && (t.starts_with("-f") || t[1..].contains('f') && !t.contains('i'))
                    {
                        return Facts::opaque("a sed script from a file berth cannot see");
                    }
                    i += 1;
                    continue;
                }
            }
        }
        if first_operand.is_none() {
            first_operand = Some(a);
        }
        i += 1;
    }
    if !explicit && let Some(s) = first_operand {
        scripts.push(s);
    }
    for s in scripts {
        if s.dynamic {
            return Facts::opaque("a sed script from a dynamic string");
        }
        let text = s
            .text
            .strip_prefix("--expression=")
            .or_else(|| s.text.strip_prefix("-e"))
            .filter(|_| s.text.starts_with('-'))
            .unwrap_or(&s.text);
        match sed_script(text) {
            Err(reason) => return Facts::opaque(reason),
            Ok(paths) => facts.paths.extend(paths),
        }
    }
    facts
}

/// Scans a sed script: the `e` command and flag run commands; `w`/`W` write
/// and `r`/`R` read the named files.
pub fn sed_script(script: &str) -> Result<Vec<HiddenPath>, String> {
    let b = script.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b';' | b'\r') {
            *i += 1;
        }
    };
    let rest_of_line = |i: &mut usize| -> String {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
            *i += 1;
        }
        let start = *i;
        while *i < b.len() && b[*i] != b'\n' {
            *i += 1;
        }
        String::from_utf8_lossy(&b[start..*i]).into_owned()
    };
    // Reads a delimited part, honouring backslash escapes; returns false if unterminated.
    let delimited = |i: &mut usize, delim: u8| -> bool {
        while *i < b.len() {
            if b[*i] == b'\\' {
                *i += 2;
                continue;
            }
            if b[*i] == delim {
                *i += 1;
                return true;
            }
            if b[*i] == b'\n' && delim != b'\n' {
                // GNU sed allows newlines in some places; keep going.
            }
            *i += 1;
        }
        false
    };
    let mut guard = 0usize;
    loop {
        guard += 1;
        if guard > b.len() + 8 {
            return Err("a sed script berth could not read".into());
        }
        skip_ws(&mut i);
        if i >= b.len() {
            break;
        }
        // Addresses.
        for _ in 0..2 {
            match b.get(i) {
                Some(c) if c.is_ascii_digit() => {
                    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'~') {
                        i += 1;
                    }
                }
                Some(b'$') => i += 1,
                Some(b'/') => {
                    i += 1;
                    if !delimited(&mut i, b'/') {
                        return Err("a sed address berth could not read".into());
                    }
                    while i < b.len() && matches!(b[i], b'I' | b'M') {
                        i += 1;
                    }
                }
                Some(b'\\') => {
                    let Some(&d) = b.get(i + 1) else {
                        return Err("a sed address berth could not read".into());
                    };
                    i += 2;
                    if !delimited(&mut i, d) {
                        return Err("a sed address berth could not read".into());
                    }
                }
                Some(b'+') | Some(b'~') => {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                _ => {}
            }
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            if b.get(i) == Some(&b',') {
                i += 1;
                continue;
            }
            break;
        }
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t' || b[i] == b'!') {
            i += 1;
        }
        let Some(&cmd) = b.get(i) else { break };
        i += 1;
        match cmd {
            b'{' | b'}' | b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'l' | b'n' | b'N'
            | b'p' | b'P' | b'x' | b'z' | b'F' | b'q' | b'Q' | b'L' => {
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b' ' || b[i] == b'\t') {
                    i += 1;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b':' | b'b' | b't' | b'T' | b'v' => {
                while i < b.len() && b[i] != b'\n' && b[i] != b';' && b[i] != b'}' {
                    i += 1;
                }
            }
            b'a' | b'i' | b'c' => {
                // Text to the end of the line (with backslash-newline continuation).
                while i < b.len() {
                    if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                        i += 2;
                        continue;
                    }
                    if b[i] == b'\n' {
                        break;
                    }
                    i += 1;
                }
            }
            b'r' | b'R' => {
                let f = rest_of_line(&mut i);
                paths.push(HiddenPath {
                    path: Some(f),
                    writes: false,
                });
            }
            b'w' | b'W' => {
                let f = rest_of_line(&mut i);
                paths.push(HiddenPath {
                    path: Some(f),
                    writes: true,
                });
            }
            b'e' => return Err("a sed script with the `e` command runs a command".into()),
            b's' | b'y' => {
                let Some(&delim) = b.get(i) else {
                    return Err("a sed `s` command berth could not read".into());
                };
                if delim == b'\n' || delim == b'\\' {
                    return Err("a sed `s` command berth could not read".into());
                }
                i += 1;
                if !delimited(&mut i, delim) || !delimited(&mut i, delim) {
                    return Err("a sed `s` command berth could not read".into());
                }
                if cmd == b's' {
                    while i < b.len() {
                        match b[i] {
                            b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9' => i += 1,
                            b'e' => return Err("a sed `s///e` runs the result as a command".into()),
                            b'w' => {
                                i += 1;
                                let f = rest_of_line(&mut i);
                                paths.push(HiddenPath {
                                    path: Some(f),
                                    writes: true,
                                });
                                break;
                            }
                            _ => break,
                        }
                    }
                }
            }
            _ => {
                return Err(format!(
                    "a sed command berth does not know (`{}`)",
                    cmd as char
                ));
            }
        }
    }
    Ok(paths)
}

// ---- find -------------------------------------------------------------------

fn find(argv: &[Arg]) -> Facts {
    let mut facts = Facts::default();
    let mut own = vec![argv[0].clone()];
    let mut i = 1;
    // Leading options.
    while i < argv.len() {
        let t = argv[i].text.as_str();
        if argv[i].dynamic {
            break;
        }
        if matches!(t, "-H" | "-L" | "-P") || t.starts_with("-O") {
            own.push(argv[i].clone());
            i += 1;
        } else if t == "-D" {
            own.extend_from_slice(&argv[i..(i + 2).min(argv.len())]);
            i += 2;
        } else {
            break;
        }
    }
    // Start paths.
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic && ((t.starts_with('-') && t.len() > 1) || t == "(" || t == "!" || t == ",") {
            break;
        }
        facts.find_roots.push(a.clone());
        own.push(a.clone());
        i += 1;
    }
    if facts.find_roots.is_empty() {
        facts.find_roots.push(Arg::lit("."));
    }
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic && matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut j = start;
            let mut end = None;
            while j < argv.len() {
                let w = &argv[j];
                if w.is(";") || (w.is("+") && j > start && argv[j - 1].text.contains("{}")) {
                    end = Some(j);
                    break;
                }
                j += 1;
            }
            let Some(end) = end else {
                facts.opaque = Some(format!("`find {t}` without its terminating `;` or `+`"));
                return facts;
            };
            if end == start {
                facts.opaque = Some(format!("`find {t}` without a command"));
                return facts;
            }
            let inner: Vec<Arg> = argv[start..end]
                .iter()
                .map(|w| {
                    if !w.dynamic && w.text.contains("{}") {
                        Arg {
                            find_placeholder: true,
                            ..w.clone()
                        }
                    } else {
                        w.clone()
                    }
                })
                .collect();
            facts.inner.push(Inner::Argv(inner));
            i = end + 1;
            continue;
        }
        if !a.dynamic
            && matches!(t, "-fprint" | "-fprint0" | "-fls" | "-fprintf")
            && let Some(f) = argv.get(i + 1)
        {
            facts.paths.push(HiddenPath {
                path: f.known().map(str::to_string),
                writes: true,
            });
        }
        own.push(a.clone());
        i += 1;
    }
    facts.own_argv = Some(own);
    facts
}

// ---- ssh, npm, go, declarations ----------------------------------------------

fn ssh(name: &str, args: &[Arg]) -> Facts {
    const RUNS: &[&str] = &[
        "proxycommand",
        "localcommand",
        "permitlocalcommand",
        "knownhostscommand",
        "match",
    ];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.to_ascii_lowercase();
        let opt = if t == "-o" {
            args.get(i + 1).map(|v| v.text.to_ascii_lowercase())
        } else {
            t.strip_prefix("-o").map(str::to_string)
        };
        if let Some(o) = opt {
            let key = o.split(['=', ' ']).next().unwrap_or("");
            if RUNS.contains(&key) {
                return Facts::opaque(format!("`{name} -o {key}` runs a command"));
            }
        }
        if name != "ssh" && (a.is("-S") || a.text.starts_with("-S") && a.text.len() > 2) {
            return Facts::opaque(format!("`{name} -S` runs a program"));
        }
        i += 1;
    }
    Facts::default()
}

fn npm(name: &str, args: &[Arg]) -> Facts {
    for (i, a) in args.iter().enumerate() {
        if a.text.starts_with("--script-shell") {
            return Facts::opaque(format!(
                "`{name} --script-shell` changes the program that runs scripts"
            ));
        }
        if a.is("config") || a.is("c") {
            let rest = &args[i + 1..];
            if rest.first().is_some_and(|s| s.is("set"))
                && rest.iter().any(|k| {
                    k.text.starts_with("script-shell")
                        || k.text.starts_with("node-options")
                        || k.text.starts_with("shell")
                })
            {
                return Facts::opaque(format!("`{name} config set` of a program-running key"));
            }
        }
    }
    Facts::default()
}

fn go(args: &[Arg]) -> Facts {
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        if t == "-toolexec"
            || t.starts_with("-toolexec=")
            || t == "--toolexec"
            || t.starts_with("--toolexec=")
            || t == "-exec"
            || t.starts_with("-exec=")
        {
            return Facts::opaque("`go -toolexec/-exec` runs a program");
        }
        if t == "env" && args.get(i + 1).is_some_and(|w| w.is("-w")) {
            let runs = args[i + 2..].iter().any(|kv| {
                let k = kv.text.split('=').next().unwrap_or("");
                kv.dynamic
                    || matches!(
                        k,
                        "GOFLAGS"
                            | "CC"
                            | "CXX"
                            | "AR"
                            | "PKG_CONFIG"
                            | "GOTOOLCHAIN"
                            | "GOENV"
                            | "CGO_LDFLAGS"
                            | "CGO_CFLAGS"
                    )
            });
            if runs {
                return Facts::opaque("`go env -w` sets a variable that makes go run a program");
            }
        }
    }
    Facts::default()
}

fn declaration(name: &str, args: &[Arg]) -> Facts {
    for a in args {
        if !a.dynamic && a.text.starts_with('-') {
            if name != "export" && a.text.contains('i') {
                return Facts::opaque(format!("`{name} -i` evaluates arithmetic over variables"));
            }
            continue;
        }
        let var = a.text.split('=').next().unwrap_or("");
        let valid = !var.is_empty() && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if a.dynamic && (!valid || !a.text.contains('=') && a.text.is_empty()) {
            return Facts::opaque(format!("`{name}` of a dynamic name"));
        }
        if is_dangerous_env(var) {
            return Facts::opaque(format!(
                "`{name} {var}` changes what runs or where code loads from"
            ));
        }
    }
    Facts::default()
}

/// Inline code given to an interpreter (`python -c`, `node -e`, `perl -e`,
/// `ruby -e`, `php -r`): when it calls out to other programs, an allowed
/// interpreter is no longer what runs.
fn inline_code(name: &str, args: &[Arg]) -> Facts {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let (flags, runs): (&[&str], &[&str]) = match base {
        "python" | "pypy" => (
            &["-c"],
            &[
                "os.system",
                "subprocess",
                "os.popen",
                "os.exec",
                "os.spawn",
                "os.posix_spawn",
                "pty.spawn",
                "commands.",
                "__import__",
                "exec(",
                "eval(",
                "importlib",
                "ctypes",
                "os.fork",
                "compile(",
            ],
        ),
        "node" | "nodejs" | "deno" | "bun" => (
            &["-e", "--eval", "-p", "--print"],
            &[
                "child_process",
                "execSync",
                "spawnSync",
                "execFile",
                "exec(",
                "spawn(",
                "Deno.run",
                "Deno.Command",
                "Bun.spawn",
                "Bun.$",
                "eval(",
                "Function(",
                "process.binding",
                "import(",
                "require(\"vm\")",
                "require('vm')",
                "worker_threads",
            ],
        ),
        "perl" => (
            &["-e", "-E"],
            &[
                "system", "exec", "`", "qx", "open(", "open ", "fork", "eval", "readpipe",
                "syscall",
            ],
        ),
        "ruby" | "irb" => (
            &["-e"],
            &[
                "system", "exec", "`", "%x", "popen", "spawn", "Open3", "fork", "eval", "Kernel.",
                "syscall",
            ],
        ),
        "php" => (
            &["-r"],
            &[
                "system",
                "exec",
                "shell_exec",
                "passthru",
                "popen",
                "proc_open",
                "`",
                "eval",
                "pcntl_exec",
                "assert(",
            ],
        ),
        _ => return Facts::default(),
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let code = if flags.contains(&a.text.as_str()) && !a.dynamic {
            i += 1;
            args.get(i)
        } else {
            None
        };
        if let Some(code) = code {
            if code.dynamic {
                return Facts::opaque(format!("`{name}` runs inline code from a dynamic string"));
            }
            if let Some(hit) = runs.iter().find(|r| code.text.contains(**r)) {
                return Facts::opaque(format!(
                    "inline `{name}` code that can run other programs (`{hit}`)"
                ));
            }
        }
        i += 1;
    }
    // `python -cCODE` attached forms.
    for a in args {
        if a.dynamic || a.text.starts_with("--") {
            continue;
        }
        for f in flags.iter().filter(|f| f.len() == 2) {
            if let Some(code) = a.text.strip_prefix(f).filter(|c| !c.is_empty())
                && let Some(hit) = runs.iter().find(|r| code.contains(**r))
            {
                return Facts::opaque(format!(
                    "inline `{name}` code that can run other programs (`{hit}`)"
                ));
            }
        }
    }
    Facts::default()
}

fn cond(args: &[Arg]) -> Facts {
    // `[[ a -eq b ]]` evaluates its operands as arithmetic: variables named
    // there can hold `$(…)` that bash runs.
    const ARITH: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
    for (i, a) in args.iter().enumerate() {
        if ARITH.contains(&a.text.as_str()) {
            for side in [i.checked_sub(1), Some(i + 1)].into_iter().flatten() {
                if let Some(op) = args.get(side)
                    && (op.dynamic
                        || op
                            .text
                            .bytes()
                            .any(|b| b.is_ascii_alphabetic() || b == b'_'))
                {
                    return Facts::opaque("`[[ -eq ]]` evaluates arithmetic over variables");
                }
            }
        }
    }
    Facts::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awk_programs() {
        let cases: &[(&str, Result<usize, ()>)] = &[
            ("{print $5}", Ok(0)),
            ("/WARN/ {print $2}", Ok(0)),
            ("{s+=$1} END {print s}", Ok(0)),
            ("NR%3==1", Ok(0)),
            ("$0 ~ /a|b/ {print}", Ok(0)),
            ("{ if (a || b) print }", Ok(0)),
            ("{print $1 > \"/tmp/out\"}", Ok(1)),
            ("{print $1 > $2}", Ok(1)),
            ("{system(\"rm -rf /\")}", Err(())),
            ("{ system (\"id\") }", Err(())),
            ("{print | \"sh\"}", Err(())),
            ("{\"date\" | getline d}", Err(())),
            (
                "BEGIN { while ((\"ls\" | getline l) > 0) print l }",
                Err(()),
            ),
            ("@load \"x\"", Err(())),
            ("{ x = a / b / c; print x }", Ok(0)),
        ];
        for (prog, want) in cases {
            let got = awk_program(prog).map(|p| p.len()).map_err(|_| ());
            assert_eq!(got, *want, "{prog}");
        }
    }

    #[test]
    fn sed_scripts() {
        let cases: &[(&str, Result<usize, ()>)] = &[
            ("s/foo/bar/g", Ok(0)),
            ("s|/usr|/opt|", Ok(0)),
            ("1d", Ok(0)),
            ("/^#/d;s/a/b/", Ok(0)),
            ("$!N;P;D", Ok(0)),
            ("10q", Ok(0)),
            ("s/x/y/w /tmp/out", Ok(1)),
            ("w out.txt", Ok(1)),
            ("r /etc/passwd", Ok(1)),
            ("1e id", Err(())),
            ("s/.*/id/e", Err(())),
            ("e", Err(())),
            ("/start/,/end/{s/a/b/}", Ok(0)),
            ("y/abc/xyz/", Ok(0)),
            ("a\\text", Ok(0)),
            ("1i header", Ok(0)),
        ];
        for (script, want) in cases {
            let got = sed_script(script).map(|p| p.len()).map_err(|_| ());
            assert_eq!(got, *want, "{script}");
        }
    }

    #[test]
    fn git_config_keys() {
        for key in [
            "alias.st",
            "core.pager",
            "core.fsmonitor",
            "core.hooksPath",
            "diff.x.textconv",
            "filter.lfs.clean",
            "credential.helper",
            "include.path",
            "url.ext::sh.insteadOf",
        ] {
            assert!(git_key_runs_program(key), "{key}");
        }
        for key in [
            "user.name",
            "user.email",
            "color.ui",
            "core.autocrlf",
            "init.defaultBranch",
            "pull.rebase",
        ] {
            assert!(!git_key_runs_program(key), "{key}");
        }
    }
}
