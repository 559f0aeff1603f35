//! Shell builtins that change what a later command runs or evaluate
//! their arguments: `alias`, `hash -p`, `enable -f`, declarations of
//! variables that change what runs (`export PATH=…`, `declare -i`), `let`,
//! and `[[ … -eq … ]]`, whose operands bash evaluates as arithmetic.

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

/// `[[ a -eq b ]]` evaluates its operands as arithmetic: variables named
/// there can hold `$(…)` that bash runs.
const COND_ARITH: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

pub(super) fn cond(args: &[Arg]) -> Facts {
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
