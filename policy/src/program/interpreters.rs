//! Interpreters given code on the command line (`python -c`, `node -e`,
//! `perl -le`, `ruby -e`, `php -r`, `deno eval`, `lua -e`, `Rscript -e`).
//!
//! Inline code is a program the policy cannot read the way it reads a
//! command line: a denylist of calls (`os.system`, `child_process`) is
//! beaten by any indirection (`from os import system as s`,
//! `require('child'+'_process')`). So inline code is a class: it is opaque
//! unless it is *provably harmless* — every name it uses, free or after a
//! dot, is on a short per-language list of names that cannot run a
//! program, load code or write a file (`print`, `sys.version`,
//! `console.log`, `process.version`, `s/a/b/g`). Where the code sits is
//! found as each interpreter reads its options: clusters (`-Ic`, `-le`,
//! `-pe`), attached values (`-cCODE`, `--eval=CODE`) and options before
//! the code.

use super::Facts;
use crate::arg::Arg;

/// The languages whose inline code can be proved harmless.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Python,
    Js,
    Ruby,
    Lua,
    Perl,
    Php,
    /// No harmless subset is modelled: inline code is always opaque.
    Unread,
}

/// How one interpreter's command line names inline code.
struct CodeOptions {
    lang: Lang,
    /// Short options whose value (attached or the next word) is code.
    code_short: &'static [u8],
    /// Long options whose value (`=v` or the next word) is code.
    code_long: &'static [&'static str],
    /// Short options that take a value (attached or the next word).
    value_short: &'static [u8],
    /// Short options whose value is only ever attached (`perl -i.bak`,
    /// `perl -l0`), consuming the rest of the cluster.
    attached_short: &'static [u8],
    /// Long options that take the next word when not given with `=`.
    value_long: &'static [&'static str],
    /// Options whose value is a module loaded before any code; a value
    /// that is not a plain module name is code (`perl -M'X;system(…)'`,
    /// `node --import data:…`).
    module_short: &'static [u8],
    module_long: &'static [&'static str],
    /// A subcommand whose operand is code (`deno eval CODE`).
    code_subcommand: Option<&'static str>,
    /// Whole-word options (single-dash long ones included) whose value —
    /// the next word, or after `=`/`:` — is code (`erl -eval`,
    /// `java -XX:OnError=`).
    code_words: &'static [&'static str],
    /// Module names that `module_short` may load without running code at
    /// load time (perl's `-M`); `None`: any plain name.
    safe_modules: Option<&'static [&'static str]>,
}

/// python: `-c CODE` (clusters: `-Ic`, `-uc`, `-cCODE`).
const PYTHON: CodeOptions = CodeOptions {
    lang: Lang::Python,
    code_short: b"c", // the program passed in as a string
    code_long: &[],
    value_short: b"mWXQ", // -m module, -W warnings, -X option, -Q division
    attached_short: b"",
    value_long: &["--check-hash-based-pycs"],
    module_short: b"",
    module_long: &[],
    code_subcommand: None,
    code_words: &[],
    safe_modules: None,
};

/// node: `-e`/`--eval`, `-p`/`--print` (clusters: `-pe`).
const NODE: CodeOptions = CodeOptions {
    lang: Lang::Js,
    code_short: b"ep", // -e evaluates, -p evaluates and prints
    code_long: &["--eval", "--print"],
    value_short: b"rC", // -r preloads a module, -C sets conditions
    attached_short: b"",
    value_long: &[
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "--conditions",
        "--input-type",
        "--title",
        "--env-file",
        "--inspect-port",
        "--debug-port",
        "--redirect-warnings",
        "--watch-path",
        "--test-reporter",
        "--test-reporter-destination",
        "--test-name-pattern",
        "--cpu-prof-dir",
        "--heap-prof-dir",
        "--diagnostic-dir",
        "--report-dir",
        "--icu-data-dir",
        "--openssl-config",
        "--secure-heap",
        "--stack-size",
        "--max-old-space-size",
        "--disable-warning",
        "--experimental-config-file",
    ],
    module_short: b"r",
    // A `data:` URL here is inline code.
    module_long: &["--require", "--import", "--loader", "--experimental-loader"],
    code_subcommand: None,
    code_words: &[],
    safe_modules: None,
};

/// bun: `-e`/`--eval`, `-p`/`--print`.
const BUN: CodeOptions = CodeOptions {
    lang: Lang::Js,
    code_short: b"ep",
    code_long: &["--eval", "--print"],
    value_short: b"r",
    attached_short: b"",
    value_long: &["--preload", "--cwd", "--env-file", "--config"],
    module_short: b"r",
    module_long: &["--preload"],
    code_subcommand: None,
    code_words: &[],
    safe_modules: None,
};

/// deno: `deno eval CODE` (and `-p`).
const DENO: CodeOptions = CodeOptions {
    lang: Lang::Js,
    code_short: b"",
    code_long: &[],
    value_short: b"",
    attached_short: b"",
    value_long: &[
        "--config",
        "--import-map",
        "--location",
        "--cert",
        "--env-file",
    ],
    module_short: b"",
    module_long: &["--preload", "--import"],
    code_subcommand: Some("eval"), // the operand is code
    code_words: &[],
    safe_modules: None,
};

/// perl: `-e`/`-E` (clusters: `-le`, `-lane`, `-pi.bak -e`), `-M`/`-m`.
const PERL: CodeOptions = CodeOptions {
    lang: Lang::Perl,
    code_short: b"eE", // a line of program
    code_long: &[],
    value_short: b"IMm", // -I dir, -M/-m module (attached or next)
    // -0 and -l take digits, -i an extension, -F a pattern, -C a number,
    // -d/-D a debugger spec, -x a directory: all attached only.
    attached_short: b"0liFCdDxV",
    value_long: &[],
    module_short: b"Mm",
    module_long: &[],
    code_subcommand: None,
    code_words: &[],
    // Modules whose loading runs nothing (any other module's `import` is code).
    safe_modules: Some(&[
        "strict",
        "warnings",
        "utf8",
        "feature",
        "List::Util",
        "Scalar::Util",
        "POSIX",
        "Data::Dumper",
        "JSON::PP",
        "Time::HiRes",
        "Time::Local",
        "Text::Wrap",
        "MIME::Base64",
        "Digest::MD5",
        "Digest::SHA",
        "open",
        "bigint",
        "bignum",
        "integer",
        "English",
        "constant",
        "Encode",
    ]),
};

/// ruby: `-e` (clusters: `-ne`, `-pe`), `-r` library.
const RUBY: CodeOptions = CodeOptions {
    lang: Lang::Ruby,
    code_short: b"e",
    code_long: &[],
    value_short: b"IrCE", // -I dir, -r library, -C dir, -E encoding
    attached_short: b"0iFxWTK",
    value_long: &["--encoding", "--external-encoding", "--internal-encoding"],
    module_short: b"r",
    module_long: &[],
    code_subcommand: None,
    code_words: &[],
    safe_modules: None,
};

/// php: `-r` code, and `-B`/`-R`/`-E` code run per line with `-F`.
const PHP: CodeOptions = CodeOptions {
    lang: Lang::Php,
    code_short: b"rBRE",
    code_long: &[
        "--run",
        "--process-begin",
        "--process-code",
        "--process-end",
    ],
    // -d sets an ini entry (`auto_prepend_file` loads code): judged as a module.
    value_short: b"cdfzFSt",
    attached_short: b"",
    value_long: &["--php-ini", "--define", "--file", "--zend-extension"],
    module_short: b"dz",
    module_long: &["--define", "--zend-extension"],
    code_subcommand: None,
    code_words: &[],
    safe_modules: None,
};

/// lua: `-e` statement, `-l` library.
const LUA: CodeOptions = CodeOptions {
    lang: Lang::Lua,
    code_short: b"e",
    code_long: &[],
    value_short: b"l",
    attached_short: b"",
    value_long: &[],
    module_short: b"l",
    module_long: &[],
    code_subcommand: None,
    code_words: &[],
    safe_modules: None,
};

/// R: `Rscript -e EXPR`, `R -e EXPR`.
const R: CodeOptions = CodeOptions {
    lang: Lang::Unread,
    code_short: b"e",
    code_long: &[],
    value_short: b"",
    attached_short: b"",
    value_long: &[],
    module_short: b"",
    module_long: &[],
    code_subcommand: None,
    code_words: &[],
    safe_modules: None,
};

/// An interpreter whose inline code has no harmless subset modelled: any
/// inline code is opaque.
const fn unread(
    code_short: &'static [u8],
    code_long: &'static [&'static str],
    code_words: &'static [&'static str],
) -> CodeOptions {
    CodeOptions {
        lang: Lang::Unread,
        code_short,
        code_long,
        value_short: b"",
        attached_short: b"",
        value_long: &[],
        module_short: b"",
        module_long: &[],
        code_subcommand: None,
        code_words,
        safe_modules: None,
    }
}

/// julia: `-e`/`--eval`, `-E`/`--print`.
const JULIA: CodeOptions = unread(b"eE", &["--eval", "--print"], &[]);
/// osascript: `-e` statement.
const OSASCRIPT: CodeOptions = unread(b"e", &[], &[]);
/// ghci: `-e` expression.
const GHCI: CodeOptions = unread(b"e", &[], &[]);
/// racket: `-e`/`--eval`, `-r`/`--require-script`? no: `-e` only as code.
const RACKET: CodeOptions = unread(b"e", &["--eval"], &[]);
/// guile: `-c` expression.
const GUILE: CodeOptions = unread(b"c", &["--eval"], &[]);
/// sbcl: `--eval` form.
const SBCL: CodeOptions = unread(b"", &["--eval"], &[]);
/// clojure: `-e`/`--eval`.
const CLOJURE: CodeOptions = unread(b"e", &["--eval"], &[]);
/// scala, groovy, swift, kotlin: `-e` expression.
const DASH_E: CodeOptions = unread(b"e", &["--eval", "--execute"], &[]);
/// elixir: `-e`/`--eval`.
const ELIXIR: CodeOptions = unread(b"e", &["--eval", "--rpc-eval"], &[]);
/// erl: `-eval EXPR`, `-s MOD FUN`, `-run MOD FUN` run code.
const ERL: CodeOptions = unread(b"", &[], &["-eval", "-s", "-run", "-pa", "-pz"]);
/// java: `-XX:OnError=CMD` / `-XX:OnOutOfMemoryError=CMD` run a shell
/// command; `-XX:Flags=`/`-XX:VMOptionsFile=` read more options (those
/// included) from a file. Agents (`-javaagent:`, `-agentlib:jdwp`) load
/// code the way `-jar` does, and are not inline code.
const JAVA: CodeOptions = unread(
    b"",
    &[],
    &[
        "-XX:OnError",
        "-XX:OnOutOfMemoryError",
        "-XX:Flags",
        "-XX:VMOptionsFile",
    ],
);

/// tcl: `tclsh`/`wish` take no inline code option; a script file or stdin.
fn options_for(name: &str) -> Option<&'static CodeOptions> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    Some(match base {
        "python" | "pypy" => &PYTHON,
        "node" | "nodejs" => &NODE,
        "bun" => &BUN,
        "deno" => &DENO,
        "perl" => &PERL,
        "ruby" | "irb" => &RUBY,
        "php" => &PHP,
        "lua" | "luajit" | "texlua" => &LUA, // texlua: LuaTeX's Lua interpreter
        "Rscript" | "R" => &R,
        "julia" => &JULIA,
        "osascript" => &OSASCRIPT,
        "ghci" | "runghc" | "ghc" => &GHCI,
        "racket" => &RACKET,
        "guile" => &GUILE,
        "sbcl" => &SBCL,
        "clojure" | "clj" => &CLOJURE,
        "scala" | "groovy" | "swift" | "kotlin" | "kotlinc" => &DASH_E,
        "elixir" | "iex" => &ELIXIR,
        "erl" => &ERL,
        "java" => &JAVA,
        _ => return None,
    })
}

/// Inline code found on a command line.
enum Found {
    Code(Arg),
    /// A module option whose value is not a plain module name.
    Module(String),
}

/// Whether the interpreter's inline code options are modelled here.
pub(super) fn has_model(name: &str) -> bool {
    options_for(name).is_some() || matches!(name, "pwsh" | "powershell" | "pwsh-preview")
}

/// PowerShell reads `-Command`, `-EncodedCommand` and `-CommandWithArgs`
/// by any case-insensitive prefix; Windows PowerShell also takes a bare
/// operand as a command.
fn powershell(name: &str, args: &[Arg]) -> Facts {
    for a in args {
        if a.dynamic {
            return Facts::opaque(format!("`{name}` with an argument computed at run time"));
        }
        let o = a.text.to_ascii_lowercase();
        let o = o.split(':').next().unwrap_or("");
        let names_code = o.len() >= 2
            && o.starts_with('-')
            && [
                "-command",
                "-encodedcommand",
                "-commandwithargs",
                "-ec",
                "-cwa",
            ]
            .iter()
            .any(|full| full.starts_with(o));
        if names_code {
            return Facts::opaque(format!("`{name} {}` runs inline code", a.text));
        }
        if name == "powershell" && !o.starts_with('-') {
            return Facts::opaque("`powershell` runs its operand as a command");
        }
    }
    Facts::default()
}

/// Inline code given to an interpreter: opaque unless provably harmless.
pub(super) fn inline_code(name: &str, args: &[Arg]) -> Facts {
    if matches!(name, "pwsh" | "powershell" | "pwsh-preview") {
        return powershell(name, args);
    }
    let Some(opts) = options_for(name) else {
        return Facts::default();
    };
    for found in find_code(opts, args) {
        match found {
            Found::Module(m) => {
                return Facts::opaque(format!(
                    "`{name}` loads `{m}` before its code, which is code itself"
                ));
            }
            Found::Code(code) => {
                if code.dynamic {
                    return Facts::opaque(format!(
                        "`{name}` runs inline code from a dynamic string"
                    ));
                }
                if let Err(why) = harmless(opts.lang, &code.text) {
                    return Facts::opaque(format!(
                        "inline `{name}` code is a program the policy cannot read ({why})"
                    ));
                }
            }
        }
    }
    Facts::default()
}

/// Every inline code word (and every module value that is code) on an
/// interpreter's command line. Parsing stops at the script (the first
/// operand) unless an unknown option might have taken it as its value.
fn find_code(opts: &CodeOptions, args: &[Arg]) -> Vec<Found> {
    let mut out = Vec::new();
    // A `data:` URL as the module to run (`deno run data:…`) is inline code.
    if opts.lang == Lang::Js
        && let Some(d) = args
            .iter()
            .find(|a| !a.dynamic && a.text.starts_with("data:"))
    {
        out.push(Found::Module(d.text.clone()));
        return out;
    }
    let mut uncertain = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.dynamic {
            // A dynamic word among the options may be an option that takes code.
            if i == 0 || uncertain || a.text.starts_with('-') {
                out.push(Found::Code(a.clone()));
                return out;
            }
            break;
        }
        let t = a.text.as_str();
        if t == "--" {
            break;
        }
        if let Some(word) = opts.code_words.iter().find(|w| {
            t == **w
                || t.strip_prefix(**w)
                    .is_some_and(|r| r.starts_with(['=', ':']))
        }) {
            let code = match t.strip_prefix(word).filter(|r| !r.is_empty()) {
                Some(r) => Arg::lit(&r[1..]),
                None => args.get(i + 1).cloned().unwrap_or_else(|| Arg::dynamic("")),
            };
            out.push(Found::Code(code));
            i += if t == *word { 2 } else { 1 };
            continue;
        }
        if let Some(sub) = opts.code_subcommand
            && out.is_empty()
            && t == sub
        {
            // `deno eval [opts] CODE`: the first operand after it.
            let mut k = i + 1;
            while k < args.len() && args[k].text.starts_with('-') && !args[k].dynamic {
                k += 1;
            }
            match args.get(k) {
                Some(code) => out.push(Found::Code(code.clone())),
                None => out.push(Found::Code(Arg::dynamic(""))),
            }
            return out;
        }
        if let Some(long) = t.strip_prefix("--").filter(|l| !l.is_empty()) {
            let (lname, value) = match long.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                None => (t.to_string(), None),
            };
            let takes_code = opts.code_long.contains(&lname.as_str());
            let takes_value = takes_code || opts.value_long.contains(&lname.as_str());
            let (v, step) = match (&value, takes_value) {
                (Some(v), _) => (Some(Arg::lit(v.clone())), 1),
                (None, true) => (args.get(i + 1).cloned(), 2),
                (None, false) => (None, 1),
            };
            if takes_code {
                out.push(Found::Code(v.unwrap_or_else(|| Arg::dynamic(""))));
            } else if opts.module_long.contains(&lname.as_str())
                && let Some(m) = v.as_ref().and_then(module_is_code)
            {
                out.push(Found::Module(m));
            } else if !takes_value && value.is_none() {
                // An option the model does not know may take the next word.
                uncertain = true;
            }
            i += step;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let bytes = t.as_bytes();
            let mut k = 1;
            let mut step = 1;
            while k < bytes.len() {
                let c = bytes[k];
                // Not a char boundary after a non-ASCII byte: an unknown flag.
                let rest = t.get(k + 1..).unwrap_or("");
                if opts.code_short.contains(&c) {
                    if rest.is_empty() {
                        out.push(Found::Code(
                            args.get(i + 1).cloned().unwrap_or_else(|| Arg::dynamic("")),
                        ));
                        step = 2;
                    } else {
                        out.push(Found::Code(Arg::lit(rest)));
                    }
                    // python: what follows `-c CODE` is the program's argv.
                    if opts.lang == Lang::Python {
                        return out;
                    }
                    break;
                }
                if opts.value_short.contains(&c) {
                    let v = if rest.is_empty() {
                        step = 2;
                        args.get(i + 1).cloned()
                    } else {
                        Some(Arg::lit(rest))
                    };
                    if opts.module_short.contains(&c)
                        && let Some(m) = v.as_ref().and_then(|m| module_not_safe(opts, m))
                    {
                        out.push(Found::Module(m));
                    }
                    // python: `-m MODULE` ends the options like a script does.
                    if opts.lang == Lang::Python && c == b'm' {
                        return out;
                    }
                    break;
                }
                if opts.attached_short.contains(&c) {
                    if opts.module_short.contains(&c)
                        && let Some(m) = module_is_code(&Arg::lit(rest))
                    {
                        out.push(Found::Module(m));
                    }
                    // `-l`/`-0` take digits only; the cluster may go on.
                    if matches!(c, b'l' | b'0') && opts.lang == Lang::Perl {
                        let digits = rest
                            .bytes()
                            .take_while(|b| (b'0'..=b'7').contains(b))
                            .count();
                        k += 1 + digits;
                        continue;
                    }
                    break;
                }
                k += 1;
            }
            i += step;
            continue;
        }
        // The script: what follows is its own argv.
        if !uncertain {
            break;
        }
        i += 1;
    }
    out
}

/// `python -m MODULE args…` as the argv the module runs with
/// (`python3 -m twine upload` → `twine upload`), for the privileged limit.
pub fn python_module_argv(argv: &[Arg]) -> Option<Vec<Arg>> {
    let first = argv.first()?;
    // Only `python…` and `pypy…` read Python (`options_for`): a first
    // letter other than `p` settles it without the table.
    if first.dynamic
        || !first.basename().starts_with('p')
        || options_for(first.basename()).is_none_or(|o| o.lang != Lang::Python)
    {
        return None;
    }
    let args = &argv[1..];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if a.dynamic || !t.starts_with('-') || t == "-" || t == "--" {
            return None;
        }
        if t.starts_with("--") {
            i += if PYTHON.value_long.contains(&t) { 2 } else { 1 };
            continue;
        }
        let bytes = t.as_bytes();
        for (k, c) in bytes.iter().enumerate().skip(1) {
            if *c == b'm' {
                let rest = &t[k + 1..];
                let (module, after) = if rest.is_empty() {
                    (args.get(i + 1)?.clone(), i + 2)
                } else {
                    (Arg::lit(rest), i + 1)
                };
                let mut out = vec![module];
                out.extend_from_slice(args.get(after..).unwrap_or(&[]));
                return Some(out);
            }
            if *c == b'c' {
                return None;
            }
            if PYTHON.value_short.contains(c) {
                if k + 1 == bytes.len() {
                    i += 1;
                }
                break;
            }
        }
        i += 1;
    }
    None
}

/// `python [opts] SCRIPT args…` as the script's argv (`python3 setup.py
/// sdist upload` → `setup.py sdist upload`), for the privileged limit;
/// `None` for `-c`, `-m`, stdin or a dynamic word before the script.
pub fn python_script_argv(argv: &[Arg]) -> Option<&[Arg]> {
    let first = argv.first()?;
    if first.dynamic
        || !first.basename().starts_with('p')
        || options_for(first.basename()).is_none_or(|o| o.lang != Lang::Python)
    {
        return None;
    }
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if a.dynamic || t == "-" {
            return None;
        }
        if t == "--" {
            return argv.get(i + 1..).filter(|rest| !rest.is_empty());
        }
        if !t.starts_with('-') {
            return Some(&argv[i..]);
        }
        if t.starts_with("--") {
            i += if PYTHON.value_long.contains(&t) { 2 } else { 1 };
            continue;
        }
        let bytes = t.as_bytes();
        let mut step = 1;
        for (k, c) in bytes.iter().enumerate().skip(1) {
            if matches!(*c, b'c' | b'm') {
                return None;
            }
            if PYTHON.value_short.contains(c) {
                if k + 1 == bytes.len() {
                    step = 2;
                }
                break;
            }
        }
        i += step;
    }
    None
}

/// A module option's value that may run code when loaded: code itself
/// (`module_is_code`), or a module off the interpreter's list.
fn module_not_safe(opts: &CodeOptions, m: &Arg) -> Option<String> {
    if let Some(code) = module_is_code(m) {
        return Some(code);
    }
    let safe = opts.safe_modules?;
    let name = m
        .text
        .split('=')
        .next()
        .unwrap_or("")
        .trim_start_matches('-');
    (!safe.contains(&name)).then(|| m.text.clone())
}

/// The value of a module option, when it is more than a module name
/// (`POSIX;system(…)`, `data:text/javascript,…`).
fn module_is_code(m: &Arg) -> Option<String> {
    if m.dynamic {
        return Some(format!("⟨{}⟩", m.text));
    }
    let t = m.text.as_str();
    if t.starts_with("data:") || t.contains("auto_prepend") || t.contains("auto_append") {
        return Some(t.to_string());
    }
    // `Mod`, `Mod::Sub`, `Mod=a,b`, `-Mod`, `./local.js`, `@scope/pkg`.
    let plain = t.chars().all(|c| {
        c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '=' | ',' | '-' | '.' | '/' | '@')
    });
    (!plain).then(|| t.to_string())
}

/// Python names that cannot run a program, load code or write a file:
/// builtins, keywords and the modules `import` may name.
const PY_SAFE: &[&str] = &[
    // keywords
    "import",
    "from",
    "as",
    "for",
    "in",
    "if",
    "else",
    "elif",
    "and",
    "or",
    "not",
    "is",
    "lambda",
    "while",
    "break",
    "continue",
    "pass",
    "True",
    "False",
    "None",
    "try",
    "except",
    "finally",
    "del",
    // builtins that compute
    "print",
    "len",
    "str",
    "int",
    "float",
    "bool",
    "list",
    "dict",
    "tuple",
    "set",
    "frozenset",
    "range",
    "sorted",
    "reversed",
    "sum",
    "min",
    "max",
    "abs",
    "round",
    "repr",
    "enumerate",
    "zip",
    "map",
    "filter",
    "any",
    "all",
    "hex",
    "oct",
    "bin",
    "chr",
    "ord",
    "format",
    "isinstance",
    "divmod",
    "pow",
    "hash",
    "bytes",
    "bytearray",
    "complex",
    "ascii",
    "exit",
    "quit",
    "ValueError",
    "KeyError",
    "Exception",
    // modules that compute (no processes, files or imports by name)
    "sys",
    "json",
    "math",
    "datetime",
    "time",
    "re",
    "base64",
    "hashlib",
    "random",
    "string",
    "textwrap",
    "decimal",
    "fractions",
    "statistics",
    "itertools",
    "collections",
    "functools",
    "operator",
    "struct",
    "binascii",
    "unicodedata",
    "calendar",
    "keyword",
    "zlib",
    "html",
    "secrets",
];

/// Attribute names Python code may use (after a dot).
const PY_SAFE_ATTRS: &[&str] = &[
    "version",
    "version_info",
    "hexversion",
    "executable",
    "platform",
    "argv",
    "stdin",
    "stdout",
    "stderr",
    "read",
    "readline",
    "readlines",
    "write",
    "flush",
    "exit",
    "maxsize",
    "maxunicode",
    "byteorder",
    "implementation",
    "name",
    "cache_tag",
    "prefix",
    "base_prefix",
    "path",
    "loads",
    "load",
    "dumps",
    "dump",
    "keys",
    "values",
    "items",
    "get",
    "split",
    "rsplit",
    "strip",
    "lstrip",
    "rstrip",
    "join",
    "upper",
    "lower",
    "title",
    "replace",
    "startswith",
    "endswith",
    "format",
    "encode",
    "decode",
    "append",
    "extend",
    "count",
    "index",
    "find",
    "sort",
    "sqrt",
    "pi",
    "e",
    "floor",
    "ceil",
    "log",
    "now",
    "today",
    "utcnow",
    "isoformat",
    "strftime",
    "timestamp",
    "time",
    "sub",
    "match",
    "search",
    "findall",
    "fullmatch",
    "group",
    "groups",
    "b64encode",
    "b64decode",
    "urlsafe_b64encode",
    "urlsafe_b64decode",
    "sha1",
    "sha256",
    "sha512",
    "md5",
    "hexdigest",
    "digest",
    "randint",
    "choice",
    "random",
    "shuffle",
    "ascii_letters",
    "ascii_lowercase",
    "ascii_uppercase",
    "digits",
    "punctuation",
    "dedent",
    "indent",
    "Decimal",
    "mean",
    "median",
    "stdev",
    "product",
    "permutations",
    "combinations",
    "chain",
    "Counter",
    "defaultdict",
    "OrderedDict",
    "most_common",
    "reduce",
    "itemgetter",
    "attrgetter",
    "unpack",
    "pack",
    "hexlify",
    "unhexlify",
    "crc32",
    "escape",
    "unescape",
    "token_hex",
    "token_urlsafe",
    "major",
    "minor",
    "micro",
    "fromtimestamp",
    "fromisoformat",
    "date",
    "splitlines",
    "zfill",
    "center",
    "ljust",
    "rjust",
    "isdigit",
    "isalpha",
    "hex",
    "fromhex",
    "bit_length",
    "real",
    "imag",
];

/// JavaScript names that cannot run a program, load code or write a file.
const JS_SAFE: &[&str] = &[
    "console",
    "log",
    "error",
    "info",
    "warn",
    "dir",
    "table",
    "process",
    "version",
    "versions",
    "platform",
    "arch",
    "argv",
    "pid",
    "exit",
    "exitCode",
    "cwd",
    "uptime",
    "memoryUsage",
    "hrtime",
    "release",
    "execPath",
    "JSON",
    "parse",
    "stringify",
    "Math",
    "max",
    "min",
    "floor",
    "ceil",
    "round",
    "random",
    "abs",
    "sqrt",
    "pow",
    "PI",
    "Date",
    "now",
    "toISOString",
    "getTime",
    "String",
    "Number",
    "Boolean",
    "Array",
    "Object",
    "keys",
    "length",
    "map",
    "filter",
    "join",
    "split",
    "reduce",
    "forEach",
    "toString",
    "toFixed",
    "trim",
    "toUpperCase",
    "toLowerCase",
    "includes",
    "startsWith",
    "endsWith",
    "slice",
    "concat",
    "push",
    "sort",
    "reverse",
    "from",
    "of",
    "isArray",
    "parseInt",
    "parseFloat",
    "isNaN",
    "true",
    "false",
    "null",
    "undefined",
    "typeof",
    "new",
    "let",
    "const",
    "var",
    "of",
    "in",
    "for",
    "if",
    "else",
    "return",
    "Intl",
    "DateTimeFormat",
    "resolvedOptions",
    "timeZone",
    "navigator",
    "userAgent",
    "Deno",
    "Bun",
    "padStart",
    "padEnd",
    "repeat",
    "Infinity",
    "NaN",
    "BigInt",
    "Set",
    "Map",
    "size",
    "has",
    "get",
    "set",
    "node",
    "v8",
    "uv",
    "openssl",
    "modules",
];

/// Ruby names that cannot run a program, load code or write a file.
const RUBY_SAFE: &[&str] = &[
    "puts",
    "print",
    "p",
    "pp",
    "RUBY_VERSION",
    "RUBY_PLATFORM",
    "RUBY_ENGINE",
    "RUBY_PATCHLEVEL",
    "RUBY_RELEASE_DATE",
    "to_s",
    "to_i",
    "to_f",
    "to_a",
    "upcase",
    "downcase",
    "length",
    "size",
    "split",
    "join",
    "map",
    "each",
    "sum",
    "max",
    "min",
    "sort",
    "reverse",
    "strip",
    "chomp",
    "gsub",
    "sub",
    "if",
    "else",
    "end",
    "do",
    "true",
    "false",
    "nil",
    "and",
    "or",
    "not",
    "Time",
    "now",
    "Math",
    "sqrt",
    "PI",
    "inspect",
    "first",
    "last",
    "count",
    "times",
    "upto",
    "step",
    "Integer",
    "Float",
    "String",
    "Array",
    "Hash",
    "keys",
    "values",
    "round",
    "floor",
    "ceil",
    "abs",
    "STDIN",
    "read",
    "readlines",
    "each_line",
    "lines",
    "chars",
    "bytes",
    "select",
    "reject",
    "uniq",
    "include",
    "start_with",
    "end_with",
    "zip",
    "flatten",
    "compact",
];

/// Lua names that cannot run a program, load code or write a file.
const LUA_SAFE: &[&str] = &[
    "print", "_VERSION", "string", "math", "table", "tostring", "tonumber", "pairs", "ipairs",
    "type", "select", "format", "rep", "sub", "upper", "lower", "len", "concat", "insert", "sort",
    "floor", "ceil", "max", "min", "sqrt", "pi", "abs", "huge", "local", "for", "in", "do", "end",
    "if", "then", "else", "elseif", "and", "or", "not", "nil", "true", "false", "return", "while",
    "repeat", "until", "function", "gsub", "find", "match", "gmatch", "byte", "char", "reverse",
    "unpack",
];

/// PHP names that cannot run a program, load code or write a file.
const PHP_SAFE: &[&str] = &[
    "echo",
    "print",
    "phpversion",
    "PHP_VERSION",
    "PHP_OS",
    "PHP_EOL",
    "PHP_INT_MAX",
    "PHP_OS_FAMILY",
    "php_uname",
    "php_sapi_name",
    "json_encode",
    "json_decode",
    "var_dump",
    "print_r",
    "strlen",
    "strtoupper",
    "strtolower",
    "implode",
    "explode",
    "date",
    "time",
    "phpinfo",
    "extension_loaded",
    "get_loaded_extensions",
    "true",
    "false",
    "null",
    "PHP_MAJOR_VERSION",
    "PHP_MINOR_VERSION",
    "ini_get",
    "version_compare",
];

/// Perl names that cannot run a program, load code or write a file (with
/// regexes and strings free of code: no `(?{`, `@{[…]}`, `/e`).
const PERL_SAFE: &[&str] = &[
    "print", "say", "printf", "chomp", "chop", "lc", "uc", "lcfirst", "ucfirst", "length", "split",
    "join", "next", "last", "if", "unless", "and", "or", "not", "defined", "sort", "reverse",
    "keys", "values", "scalar", "sprintf", "substr", "index", "int", "abs", "sqrt", "END", "BEGIN",
    "my", "foreach", "for", "while", "eq", "ne", "lt", "gt", "le", "ge", "x", "uniq", "exists",
    "push", "shift", "pop", "map", "grep", "m", "qw", "q", "ARGV", "STDIN", "STDOUT", "STDERR",
    "F", "_", "lines",
];

/// Whether inline code is provably harmless; the reason when it is not.
fn harmless(lang: Lang, code: &str) -> Result<(), String> {
    match lang {
        Lang::Unread => Err("no harmless subset is modelled".into()),
        Lang::Perl => perl_harmless(code),
        Lang::Php if code.contains('$') => Err("PHP variables can name functions".into()),
        _ => names_harmless(lang, code),
    }
}

/// The free names and attribute names of `code` are all on the language's
/// list, or (python) bound by the code itself; strings are skipped unless
/// they interpolate code.
fn names_harmless(lang: Lang, code: &str) -> Result<(), String> {
    let mut bound = Vec::new();
    scan_names(lang, code, &mut bound, None)?;
    let bound = bound;
    scan_names(lang, code, &mut Vec::new(), Some(&bound))
}

/// One pass over `code`: with `check` `None`, collects the names the code
/// binds (python: `x =`, `for x`, `as x`, `lambda x`); with `check`, fails
/// on the first name neither listed nor bound.
fn scan_names<'c>(
    lang: Lang,
    code: &'c str,
    binds: &mut Vec<&'c str>,
    check: Option<&[&'c str]>,
) -> Result<(), String> {
    let (safe, attrs): (&[&str], &[&str]) = match lang {
        Lang::Python => (PY_SAFE, PY_SAFE_ATTRS),
        Lang::Js => (JS_SAFE, JS_SAFE),
        Lang::Ruby => (RUBY_SAFE, RUBY_SAFE),
        Lang::Lua => (LUA_SAFE, LUA_SAFE),
        Lang::Php => (PHP_SAFE, PHP_SAFE),
        Lang::Perl | Lang::Unread => return Err("not read by names".into()),
    };
    let b = code.as_bytes();
    let mut i = 0;
    let mut after_dot = false;
    // Inside `for a, b` / `lambda a, b` / `as a`: the names bind.
    let mut binding_list = false;
    while i < b.len() {
        let c = b[i];
        if !c.is_ascii() {
            // Identifiers may be non-ASCII (python folds `ｅｘｅｃ` to `exec`).
            return Err("a non-ASCII character outside a string".into());
        }
        match c {
            b'\'' | b'"' => {
                let end = string_end(b, i, lang == Lang::Python)?;
                let body = &code[i..end];
                if lang == Lang::Ruby && c == b'"' && body.contains("#{") {
                    return Err("a string that interpolates code".into());
                }
                if lang == Lang::Php && (body.contains("{$") || body.contains("${")) {
                    return Err("a string that interpolates code".into());
                }
                i = end;
                after_dot = false;
                binding_list = false;
                continue;
            }
            b'`' => return Err("a backtick (a command, or a template string)".into()),
            b'#' if lang == Lang::Python || lang == Lang::Ruby => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'[' if lang == Lang::Js
                && code[..i].trim_end().bytes().last().is_some_and(|p| {
                    p.is_ascii_alphanumeric() || matches!(p, b'_' | b'$' | b')' | b']')
                }) =>
            {
                // Computed member access reaches any property by a string.
                let rest = &code[i + 1..];
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                if digits == 0 || !rest[digits..].starts_with(']') {
                    return Err("a computed property (`[…]`)".into());
                }
                i += 1 + digits + 1;
                continue;
            }
            b'[' if lang == Lang::Lua && code[i..].starts_with("[[") => {
                return Err("a long string".into());
            }
            b'%' if lang == Lang::Ruby && b.get(i + 1).is_some_and(u8::is_ascii_alphabetic) => {
                return Err("a percent literal (`%x` runs a command)".into());
            }
            b'.' => {
                after_dot = true;
                i += 1;
                continue;
            }
            b'?' if lang == Lang::Js && b.get(i + 1) == Some(&b'.') => {
                i += 1;
                continue;
            }
            _ if c.is_ascii_digit() => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
                after_dot = false;
                continue;
            }
            _ if c.is_ascii_alphabetic() || c == b'_' || (c == b'$' && lang == Lang::Js) => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$')
                {
                    i += 1;
                }
                let word = &code[start..i];
                // Ruby's `start_with?`, `include?`.
                if lang == Lang::Ruby && matches!(b.get(i), Some(b'?' | b'!')) {
                    i += 1;
                }
                // A python string prefix (`r"…"`, `b'…'`); an f-string is code.
                if lang == Lang::Python
                    && matches!(b.get(i), Some(b'\'' | b'"'))
                    && word.len() <= 2
                    && word.chars().all(|ch| "rRbBuUfF".contains(ch))
                {
                    let end = string_end(b, i, true)?;
                    if word.contains(['f', 'F']) {
                        let q = b[i] as char;
                        let body = code[i..end].trim_matches(q);
                        if body.contains('{') {
                            scan_names(lang, body, binds, check)?;
                        }
                    }
                    i = end;
                    after_dot = false;
                    continue;
                }
                if word.starts_with("__") {
                    return Err(format!("`{word}`"));
                }
                let rest = code[i..].trim_start();
                if lang == Lang::Python && !after_dot && !PY_BUILTINS_UNSAFE.contains(&word) {
                    let assigned = rest.starts_with('=') && !rest.starts_with("==");
                    if assigned || binding_list {
                        binds.push(word);
                    }
                }
                if let Some(bound) = check {
                    let ok = if after_dot {
                        attrs.contains(&word)
                    } else {
                        safe.contains(&word) || bound.contains(&word)
                    };
                    if !ok {
                        return Err(format!("`{word}`"));
                    }
                }
                binding_list = if matches!(word, "for" | "as" | "lambda") {
                    true
                } else {
                    binding_list && rest.starts_with(',')
                };
                after_dot = false;
                continue;
            }
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            after_dot = false;
            if c != b',' {
                binding_list = false;
            }
        }
        i += 1;
    }
    Ok(())
}

/// Python builtins that must never be taken for a name the code binds
/// (`for open in [open]: …`).
const PY_BUILTINS_UNSAFE: &[&str] = &[
    "open",
    "exec",
    "eval",
    "compile",
    "getattr",
    "setattr",
    "delattr",
    "hasattr",
    "globals",
    "locals",
    "vars",
    "input",
    "breakpoint",
    "help",
    "memoryview",
    "type",
    "object",
    "super",
    "classmethod",
    "staticmethod",
    "property",
    "id",
    "dir",
    "callable",
    "iter",
    "next",
    "aiter",
    "anext",
    "issubclass",
    "slice",
    "license",
    "credits",
    "copyright",
];

/// The index just past the string literal starting at `start` (python
/// triple quotes included); an unterminated string is not harmless.
fn string_end(b: &[u8], start: usize, triple_ok: bool) -> Result<usize, String> {
    let q = b[start];
    let triple = triple_ok && b.get(start + 1) == Some(&q) && b.get(start + 2) == Some(&q);
    let mut i = start + if triple { 3 } else { 1 };
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == q {
            if !triple {
                return Ok(i + 1);
            }
            if b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q) {
                return Ok(i + 3);
            }
        }
        i += 1;
    }
    Err("an unterminated string".into())
}

/// Perl one-liners: statements of listed names, variables, numbers,
/// single-quoted strings, double-quoted strings and regexes that hold no
/// code, and `s///`/`tr///` without the `e` flag.
fn perl_harmless(code: &str) -> Result<(), String> {
    if !code.is_ascii() {
        return Err("a non-ASCII character".into());
    }
    let b = code.as_bytes();
    let mut i = 0;
    // Whether a `/` here starts a regex (an operand is expected).
    let mut operand = true;
    while i < b.len() {
        let c = b[i];
        if !c.is_ascii() {
            return Err("a non-ASCII character".into());
        }
        match c {
            b'`' => return Err("a backtick runs a command".into()),
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\'' => {
                i = string_end(b, i, false)?;
                operand = false;
            }
            b'"' => {
                let end = string_end(b, i, false)?;
                interpolation_free(&code[i..end])?;
                i = end;
                operand = false;
            }
            b'/' if operand => {
                let end = delimited_end(b, i, b'/')?;
                interpolation_free(&code[i..end])?;
                i = regex_flags(b, end, false)?;
                operand = false;
            }
            b'$' | b'@' | b'%' => {
                // `$_`, `$.`, `$1`, `$F[0]`, `@F`, `$#F`; `${…}`/`@{…}` is code.
                if matches!(b.get(i + 1), Some(b'{')) {
                    return Err("a `${…}`/`@{…}` block".into());
                }
                if c == b'%' && !operand {
                    i += 1;
                    operand = true;
                    continue;
                }
                i += 1;
                if b.get(i) == Some(&b'#') {
                    i += 1;
                }
                if b.get(i) == Some(&b'^') {
                    return Err("a special variable".into());
                }
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if i == start && i < b.len() && !b[i].is_ascii_whitespace() {
                    // punctuation variables: `$.`, `$/`, `$,`, `$0`.
                    i += 1;
                }
                let name = &code[start..i];
                if name.contains("::") || matches!(name, "ENV" | "SIG" | "INC") {
                    return Err(format!("`{name}`"));
                }
                operand = false;
            }
            _ if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &code[start..i];
                let next = b.get(i).copied();
                let delim = next.filter(|n| {
                    !n.is_ascii_alphanumeric()
                        && !n.is_ascii_whitespace()
                        && *n != b'_'
                        && *n != b';'
                        && *n != b','
                        && *n != b')'
                });
                match (word, delim) {
                    ("s", Some(d)) => {
                        let (mid, close) = open_close(d);
                        let end1 = delimited_end(b, i, d)?;
                        let start2 = if mid == close && d == close {
                            end1 - 1
                        } else {
                            let mut k = end1;
                            while k < b.len() && b[k].is_ascii_whitespace() {
                                k += 1;
                            }
                            k
                        };
                        let d2 = b.get(start2).copied().ok_or("an unterminated `s`")?;
                        let end2 = delimited_end(b, start2, d2)?;
                        interpolation_free(&code[i..end2])?;
                        i = regex_flags(b, end2, true)?;
                        operand = false;
                    }
                    ("tr" | "y", Some(d)) => {
                        let end1 = delimited_end(b, i, d)?;
                        let (_, close) = open_close(d);
                        let start2 = if d == close { end1 - 1 } else { end1 };
                        let d2 = b.get(start2).copied().ok_or("an unterminated `tr`")?;
                        let end2 = delimited_end(b, start2, d2)?;
                        i = end2;
                        while i < b.len() && b[i].is_ascii_alphabetic() {
                            i += 1;
                        }
                        operand = false;
                    }
                    ("m" | "qr", Some(d)) => {
                        let end = delimited_end(b, i, d)?;
                        interpolation_free(&code[i..end])?;
                        i = regex_flags(b, end, false)?;
                        operand = false;
                    }
                    ("q" | "qw", Some(d)) => {
                        i = delimited_end(b, i, d)?;
                        operand = false;
                    }
                    _ if PERL_SAFE.contains(&word) => {
                        operand = true;
                    }
                    _ => return Err(format!("`{word}`")),
                }
                if b.get(i) == Some(&b':') && b.get(i + 1) == Some(&b':') {
                    return Err("a package name".into());
                }
            }
            _ if c.is_ascii_digit() => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
                operand = false;
            }
            b'&' if b.get(i + 1) != Some(&b'&') => {
                return Err("a `&` call".into());
            }
            b'-' if b.get(i + 1) == Some(&b'>') => {
                return Err("a method call".into());
            }
            b'<' if b
                .get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == b'$') =>
            {
                return Err("a `<…>` read or glob".into());
            }
            b')' | b']' | b'}' => {
                i += 1;
                operand = false;
            }
            _ => {
                if !c.is_ascii_whitespace() {
                    operand = true;
                }
                i += 1;
            }
        }
    }
    Ok(())
}

/// The closing delimiter of a perl quote-like operator.
fn open_close(d: u8) -> (u8, u8) {
    match d {
        b'(' => (b'(', b')'),
        b'[' => (b'[', b']'),
        b'{' => (b'{', b'}'),
        b'<' => (b'<', b'>'),
        _ => (d, d),
    }
}

/// The index just past a delimited part opened by `b[start]` (`/…/`,
/// `{…}`); for a same-character delimiter, the closing one is shared with
/// the next part (`s/a/b/`).
fn delimited_end(b: &[u8], start: usize, d: u8) -> Result<usize, String> {
    let (open, close) = open_close(d);
    let mut depth = 0usize;
    let mut i = start + 1;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' {
            i += 2;
            continue;
        }
        if open != close && c == open {
            depth += 1;
        } else if c == close {
            if depth == 0 {
                return Ok(i + 1);
            }
            depth -= 1;
        }
        i += 1;
    }
    Err("an unterminated quote".into())
}

/// Regex modifiers after a match or substitution; `e` makes the
/// replacement code.
fn regex_flags(b: &[u8], mut i: usize, substitution: bool) -> Result<usize, String> {
    while i < b.len() && b[i].is_ascii_alphabetic() {
        if substitution && b[i] == b'e' {
            return Err("`s///e` runs its replacement as code".into());
        }
        i += 1;
    }
    Ok(i)
}

/// A perl string or regex interpolates no code: no `@{[…]}`, `${\…}`,
/// `(?{…})`, `(??{…})`, `\N{…}` (charnames can load code) or method
/// calls.
fn interpolation_free(s: &str) -> Result<(), String> {
    for bad in ["@{", "${", "(?{", "(??{", "\\N{", "->", "(*{", "::", "$^"] {
        if s.contains(bad) {
            return Err(format!("`{bad}` in a string or regex"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harmless_code() {
        for (lang, code) in [
            (Lang::Python, "import sys; print(sys.version)"),
            (
                Lang::Python,
                "import json,sys; print(json.dumps(json.load(sys.stdin), indent=2))",
            ),
            (Lang::Python, "print(1+1)"),
            (Lang::Python, "x = [i*i for i in range(3)]; print(x)"),
            (Lang::Python, "print(f'{1+1}')"),
            (Lang::Js, "console.log(process.version)"),
            (Lang::Js, "process.versions"),
            (Lang::Js, "console.log(JSON.stringify([1, 2]))"),
            (Lang::Perl, "s/foo/bar/g"),
            (Lang::Perl, "print if /x/"),
            (Lang::Perl, "print $F[0]"),
            (Lang::Perl, "s{a}{b}g; tr/a-z/A-Z/"),
            (Lang::Ruby, "puts RUBY_VERSION"),
            (Lang::Lua, "print(_VERSION)"),
        ] {
            assert_eq!(harmless(lang, code), Ok(()), "{code}");
        }
    }

    #[test]
    fn not_harmless_code() {
        for (lang, code) in [
            (Lang::Python, "from os import system as s; s('id')"),
            (Lang::Python, "import os; os.system('id')"),
            (Lang::Python, "__import__('os').system('id')"),
            (Lang::Python, "getattr(__builtins__, 'ev'+'al')('1')"),
            (Lang::Python, "print(f'{__import__(\"os\").system(1)}')"),
            (Lang::Python, "open('x','w').write('y')"),
            (Lang::Python, "for open in [open]: open('x','w')"),
            (Lang::Python, "import sys; sys.modules['os'].system('id')"),
            (Lang::Python, "().__class__.__bases__[0].__subclasses__()"),
            (Lang::Python, "exec('x')"),
            (
                Lang::Python,
                "\u{ff45}\u{ff58}\u{ff45}\u{ff43}('import os')",
            ),
            (Lang::Js, "require('child'+'_process').execSync('id')"),
            (Lang::Js, "process.binding('spawn_sync')"),
            (Lang::Js, "[]['constructor']['constructor']('x')()"),
            (Lang::Js, "console.log(`${process.mainModule}`)"),
            (Lang::Js, "globalThis.process.mainModule.require('fs')"),
            (Lang::Js, "Object.values(process)[3]('spawn_sync')"),
            (Lang::Perl, "system('id')"),
            (Lang::Perl, "s/x/`id`/e"),
            (Lang::Perl, "s/x/system('id')/e"),
            (Lang::Perl, "print \"@{[ system('id') ]}\""),
            (Lang::Perl, "/(?{ system('id') })/"),
            (Lang::Perl, "&{\"sys\".\"tem\"}('id')"),
            (Lang::Perl, "exec q(git push)"),
            (Lang::Ruby, "system 'id'"),
            (Lang::Ruby, "puts \"#{`id`}\""),
            (Lang::Ruby, "%x(id)"),
            (Lang::Lua, "os.execute('id')"),
            (Lang::Php, "shell_exec('id');"),
            (Lang::Php, "$f='sys'.'tem'; $f('id');"),
            (Lang::Unread, "print(1)"),
        ] {
            assert!(harmless(lang, code).is_err(), "{code}");
        }
    }
}
