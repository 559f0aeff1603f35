//! Shell builtins that change what a later command runs or evaluate
//! their arguments: `alias`, `hash -p`, `enable -f`, builtins that set
//! variables which change what runs however they set them (`export PATH=…`,
//! `read PATH`, `printf -v PATH`, `mapfile`, `declare -n r=PATH`), names
//! whose subscript bash evaluates as code (`read 'a[$(…)]'`,
//! `test -v 'a[$(…)]'`, `unset`), `declare -i`, `let`, and `[[ … -eq … ]]`,
//! whose operands bash evaluates as arithmetic.

use super::Facts;
use crate::arg::Arg;
use crate::env::is_dangerous_env;

pub(super) fn alias(args: &[Arg]) -> Facts {
    // `alias name=value` changes what `name` runs from here on.
    if args.iter().any(|a| a.dynamic || a.text.contains('=')) {
        Facts::opaque("`alias` changes what a later command runs")
    } else {
        Facts::default()
    }
}

pub(super) fn hash(args: &[Arg]) -> Facts {
    // `hash -p PATH name`: `name` runs PATH from here on.
    if args.iter().any(|a| a.is("-p") || a.text.starts_with("-p")) {
        Facts::opaque("`hash -p` changes what a command name runs")
    } else {
        Facts::default()
    }
}

pub(super) fn enable(args: &[Arg]) -> Facts {
    // `enable -f lib.so name` loads code into the shell.
    if args.iter().any(|a| a.text.starts_with("-f")) {
        Facts::opaque("`enable -f` loads a builtin from a shared object")
    } else {
        Facts::default()
    }
}

pub(super) fn declaration(name: &str, args: &[Arg]) -> Facts {
    let mut nameref = false;
    for a in args {
        if !a.dynamic && (a.text.starts_with('-') || a.text.starts_with('+')) && a.text.len() > 1 {
            if name != "export" && a.text.contains('i') {
                return Facts::opaque(format!("`{name} -i` evaluates arithmetic over variables"));
            }
            // `declare -n r=PATH`: `r` then names another variable.
            if name != "export" && a.text.starts_with('-') && a.text.contains('n') {
                nameref = true;
            }
            continue;
        }
        // (`export` makes no array: bash keeps `export 'x=(…)'` as text.)
        if name != "export"
            && let Some((_, value)) = a.text.split_once('=')
            && compound_is_code(value, a.dynamic)
        {
            return Facts::opaque(format!(
                "`{name}` of a quoted `NAME=(…)`: bash expands the words inside again, and evaluates their subscripts"
            ));
        }
        let var = a.text.split('=').next().unwrap_or("");
        if a.dynamic && (!a.text.contains('=') || !is_static_prefix_name(var)) {
            return Facts::opaque(format!("`{name}` of a dynamic name"));
        }
        if let Some(r) = variable_set(name, var) {
            return Facts::opaque(r);
        }
        if nameref {
            // The target of a nameref is a variable name: whatever it names
            // is set through it.
            match a.text.split_once('=') {
                Some((_, target)) if !a.dynamic => {
                    if let Some(r) = variable_set(name, target) {
                        return Facts::opaque(format!("a nameref to it: {r}"));
                    }
                }
                _ => {
                    return Facts::opaque(format!(
                        "`{name} -n` without a static target: a later assignment sets any variable"
                    ));
                }
            }
        }
    }
    Facts::default()
}

/// Whether a declaration's value, written in quotes as `(…)`, is code:
/// for an array bash parses and expands it as a compound assignment
/// (`declare -a 'x=($(cmd))'` runs `cmd`), its subscripts as arithmetic.
/// (The array parser splices a real `x=(…)` into words: no parentheses.)
fn compound_is_code(value: &str, dynamic: bool) -> bool {
    let Some(inside) = value.strip_prefix('(').and_then(|v| v.strip_suffix(')')) else {
        return false;
    };
    dynamic
        || inside.contains(['$', '`'])
        || inside
            .split('[')
            .skip(1)
            .any(|sub| subscript_is_code(&format!("a[{sub}")))
}

fn is_static_prefix_name(var: &str) -> bool {
    !var.is_empty() && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Why setting the variable `var` (as a builtin names it) is not
/// analysable, if it is not: a variable that changes what runs, or an
/// array subscript bash evaluates as arithmetic (`a[$(cmd)]`, `a[i]` where
/// `i` may hold `x[$(cmd)]`) — text there is code, even single-quoted.
pub(super) fn variable_set(builtin: &str, var: &str) -> Option<String> {
    let base = var.split('[').next().unwrap_or(var);
    let base = base.strip_suffix('+').unwrap_or(base);
    if is_dangerous_env(base) {
        return Some(format!(
            "`{builtin}` sets `{base}`, which changes what runs or where code loads from"
        ));
    }
    if subscript_is_code(var) {
        return Some(format!(
            "`{builtin}` names `{var}`: bash evaluates the subscript as arithmetic, which runs `$(…)`"
        ));
    }
    None
}

/// Whether a name's `[subscript]` is evaluated into code: it holds `$`, a
/// backquote, or a name (a variable whose value bash evaluates in turn).
/// `[@]`, `[*]` and numbers are not.
pub fn subscript_is_code(var: &str) -> bool {
    let Some(open) = var.find('[') else {
        return false;
    };
    let sub = &var[open + 1..];
    let sub = sub.strip_suffix(']').unwrap_or(sub);
    if sub == "@" || sub == "*" {
        return false;
    }
    sub.bytes()
        .any(|b| b == b'$' || b == b'`' || b.is_ascii_alphabetic() || b == b'_')
}

/// Options of `read` that take a value (`-a NAME` takes a variable name).
const READ_VALUE: &[u8] = b"adinNptu";
/// Options of `mapfile`/`readarray` that take a value (`-C` a callback).
const MAPFILE_VALUE: &[u8] = b"dnOsuCc";

/// A builtin whose operands (after options) are variable names it sets:
/// `read`, `mapfile`/`readarray`, `getopts`, `unset` (names it evaluates),
/// and `printf -v NAME`.
pub(super) fn sets_variables(name: &str, args: &[Arg]) -> Facts {
    let value_opts: &[u8] = match name {
        "read" => READ_VALUE,
        "mapfile" | "readarray" => MAPFILE_VALUE,
        "printf" => b"v",
        _ => b"",
    };
    let mut names: Vec<&Arg> = Vec::new();
    let mut operands: Vec<&Arg> = Vec::new();
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if !options_done && !a.dynamic && t == "--" {
            options_done = true;
            i += 1;
            continue;
        }
        // A dynamic word whose written start is an option is one:
        // `printf -v"a[$(cmd)]" x` names a dynamic variable.
        if !options_done && t.len() > 1 && t.starts_with('-') && (!a.dynamic || i == 0) {
            let bytes = t.as_bytes();
            let mut j = 1;
            while j < bytes.len() {
                let c = bytes[j];
                if value_opts.contains(&c) {
                    let value = option_value(args, &mut i, j);
                    if matches!(name, "mapfile" | "readarray") && c == b'C' {
                        return Facts::opaque(format!("`{name} -C` runs a callback command"));
                    }
                    if (name == "read" && c == b'a') || (name == "printf" && c == b'v') {
                        match value {
                            Some(v) if !v.dynamic => {
                                if let Some(r) = variable_set(name, &v.text) {
                                    return Facts::opaque(r);
                                }
                            }
                            _ => {
                                return Facts::opaque(format!(
                                    "`{name} -{}` of a dynamic name",
                                    c as char
                                ));
                            }
                        }
                    }
                    break;
                }
                j += 1;
            }
            i += 1;
            continue;
        }
        if name == "printf" {
            // printf's operands are its format and arguments.
            break;
        }
        options_done = true;
        operands.push(a);
        i += 1;
    }
    match name {
        // `getopts OPTSTRING NAME [ARGS]`
        "getopts" => names.extend(operands.get(1).copied()),
        "mapfile" | "readarray" => names.extend(operands.first().copied()),
        "read" | "unset" => names.extend(operands.iter().copied()),
        _ => {}
    }
    for n in names {
        if n.dynamic {
            return Facts::opaque(format!("`{name}` of a dynamic name"));
        }
        let r = if name == "unset" {
            subscript_is_code(&n.text).then(|| {
                format!(
                    "`unset {}`: bash evaluates the subscript as arithmetic, which runs `$(…)`",
                    n.text
                )
            })
        } else {
            variable_set(name, &n.text)
        };
        if let Some(r) = r {
            return Facts::opaque(r);
        }
    }
    Facts::default()
}

/// `test -v NAME`, `[ -v NAME ]`: bash evaluates NAME's subscript.
pub(super) fn test_v(args: &[Arg]) -> Facts {
    for w in args.windows(2) {
        if w[0].is("-v") && (w[1].dynamic || subscript_is_code(&w[1].text)) {
            return Facts::opaque(format!(
                "`-v {}`: bash evaluates the subscript as arithmetic, which runs `$(…)`",
                w[1].text
            ));
        }
    }
    Facts::default()
}

/// `[[ a -eq b ]]` evaluates its operands as arithmetic: variables named
/// there can hold `$(…)` that bash runs.
const COND_ARITH: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

pub(super) fn cond(args: &[Arg]) -> Facts {
    let v = test_v(args);
    if v.opaque.is_some() {
        return v;
    }
    for (i, a) in args.iter().enumerate() {
        if COND_ARITH.contains(&a.text.as_str()) {
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

/// The value of the option letter at byte `j` of `args[*i]`: the rest of
/// the word, or the next argument (then `*i` moves to it).
fn option_value(args: &[Arg], i: &mut usize, j: usize) -> Option<Arg> {
    let a = &args[*i];
    if j + 1 < a.text.len() {
        Some(Arg {
            text: a.text[j + 1..].to_string(),
            ..a.clone()
        })
    } else {
        *i += 1;
        args.get(*i).cloned()
    }
}

/// `compgen` runs code: `-C command`, `-F function`, and the `-W`
/// wordlist, which it expands again (`compgen -W '$(cmd)'` runs `cmd`).
/// (`complete` only registers them for an interactive shell's completion.)
pub(super) fn compgen(args: &[Arg]) -> Facts {
    const VALUE: &[u8] = b"AGWCFXPSo";
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if t == "--" || !t.starts_with('-') {
            break;
        }
        if a.dynamic {
            return Facts::opaque("`compgen` with a dynamic option");
        }
        for (j, c) in t.bytes().enumerate().skip(1) {
            if !VALUE.contains(&c) {
                continue;
            }
            let value = option_value(args, &mut i, j);
            match c {
                b'C' | b'F' => {
                    return Facts::opaque(format!(
                        "`compgen -{}` runs a command or function",
                        c as char
                    ));
                }
                b'W' if value
                    .as_ref()
                    .is_none_or(|v| v.dynamic || v.text.contains(['$', '`'])) =>
                {
                    return Facts::opaque("`compgen -W` expands its wordlist, which runs `$(…)`");
                }
                _ => {}
            }
            break;
        }
        i += 1;
    }
    Facts::default()
}

/// `fc` runs commands again from the history (`fc -s`, `fc -e -`, or
/// an editor on them); only listing (`-l`) is known.
pub(super) fn fc(args: &[Arg]) -> Facts {
    let lists = args
        .iter()
        .take_while(|a| !a.dynamic && a.text.starts_with('-') && a.text != "--")
        .any(|a| !a.text.starts_with("-e") && a.text.contains('l'));
    if lists {
        Facts::default()
    } else {
        Facts::opaque("`fc` runs commands from the history")
    }
}

/// `wait -p NAME` sets `NAME` to a process id.
pub(super) fn wait(args: &[Arg]) -> Facts {
    for (i, a) in args.iter().enumerate() {
        if a.text == "--" || (!a.dynamic && !a.text.starts_with('-')) {
            break;
        }
        if let Some(rest) = a.text.strip_prefix('-')
            && let Some(p) = rest.find('p')
        {
            let name = if p + 1 < rest.len() {
                Some(&rest[p + 1..]).filter(|_| !a.dynamic)
            } else {
                args.get(i + 1)
                    .filter(|n| !n.dynamic)
                    .map(|n| n.text.as_str())
            };
            return match name {
                Some(n) => match variable_set("wait", n) {
                    Some(r) => Facts::opaque(r),
                    None => Facts::default(),
                },
                None => Facts::opaque("`wait -p` of a dynamic name"),
            };
        }
    }
    Facts::default()
}

/// Why enabling history expansion is not analysable: bash then replaces
/// `!…` and `^…^…` in the lines after it with earlier text
/// (`set -o history -H` ⏎ `: cmd` ⏎ `!:1` runs `cmd`).
const HISTEXPAND: &str =
    "history expansion: later lines run text from the history (`!…`) that berth cannot see";

/// Why `set -k` is not analysable: every later `NAME=value` word, not only
/// a prefix, goes to the command's environment (`git fetch GIT_SSH_COMMAND=…`).
const KEYWORD: &str =
    "`set -k` puts every later `NAME=value` argument in the command's environment";

/// `set`: `-H` or `-o histexpand` turns on history expansion, `-k` or
/// `-o keyword` reads every `NAME=value` word as an assignment; an option
/// berth cannot read may be either.
pub(super) fn set(args: &[Arg]) -> Facts {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if t == "--" || t == "-" {
            break;
        }
        if a.dynamic {
            return Facts::opaque(format!(
                "`set` with a dynamic option may turn on {HISTEXPAND}"
            ));
        }
        let Some(letters) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) else {
            break;
        };
        if t.starts_with('-') && letters.contains('H') {
            return Facts::opaque(HISTEXPAND);
        }
        if t.starts_with('-') && letters.contains('k') {
            return Facts::opaque(KEYWORD);
        }
        if letters.contains('o') {
            i += 1;
            match args.get(i) {
                Some(n) if t.starts_with('-') && (n.dynamic || n.text == "histexpand") => {
                    return Facts::opaque(HISTEXPAND);
                }
                Some(n) if t.starts_with('-') && n.text == "keyword" => {
                    return Facts::opaque(KEYWORD);
                }
                _ => {}
            }
        }
        i += 1;
    }
    Facts::default()
}

/// `shopt -s -o histexpand` is `set -o histexpand`.
pub(super) fn shopt(args: &[Arg]) -> Facts {
    let set_option = args
        .iter()
        .any(|a| !a.dynamic && a.text.starts_with('-') && a.text.contains('o'));
    if set_option && args.iter().any(|a| a.dynamic || a.text == "histexpand") {
        Facts::opaque(HISTEXPAND)
    } else if set_option && args.iter().any(|a| a.text == "keyword") {
        Facts::opaque(KEYWORD)
    } else {
        Facts::default()
    }
}
