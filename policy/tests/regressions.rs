//! Bypasses found by verification (totality tests, fuzzing, differential
//! runs against bash), each fixed in the parser or the segment walk. Every
//! row was auto-approved — or not denied — before its fix, while bash ran
//! the hidden command. The rows read as: command, rules, mode, verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::case::{Case, CaseRules};

struct Row {
    why: &'static str,
    command: String,
    deny: &'static [&'static str],
    /// The verdict the contract gives.
    want: &'static str,
}

fn decide(row: &Row) -> (String, String, String) {
    let case = Case {
        command: Some(row.command.clone()),
        rules: Some(CaseRules {
            allow: vec!["Bash(*)".into()],
            deny: row.deny.iter().map(|s| s.to_string()).collect(),
            ..CaseRules::default()
        }),
        mode: Some("auto".into()),
        frame: Some("container".into()),
        ..Case::default()
    };
    let d = case.inputs().unwrap().decide();
    (
        d.verdict.as_str().to_string(),
        d.stage.as_str().to_string(),
        d.reason,
    )
}

fn rows() -> Vec<Row> {
    let nohup17 = "nohup ".repeat(17);
    let command17 = "command ".repeat(17);
    let timeout17 = "timeout 5 ".repeat(17);
    vec![
        // A wrapper past the 16 berth follows was judged as the program.
        Row {
            why: "17 wrappers hid `rm -rf /` from the deny template",
            command: format!("{nohup17}rm -rf /"),
            deny: &[],
            want: "require_approval",
        },
        Row {
            why: "17 wrappers hid `sudo` from the privileged limit",
            command: format!("{command17}sudo id"),
            deny: &[],
            want: "require_approval",
        },
        Row {
            why: "17 wrappers hid `git push` from the external-effect limit",
            command: format!("{timeout17}git push"),
            deny: &[],
            want: "require_approval",
        },
        Row {
            why: "16 wrappers are still followed",
            command: format!("{}rm -rf /", "nohup ".repeat(16)),
            deny: &[],
            want: "deny",
        },
        // bash reads `\` CR LF as an escaped CR and a newline: the next line
        // runs. berth took it for a line continuation and joined the lines.
        Row {
            why: "backslash CR LF is not a line continuation",
            command: "echo a\\\r\nrm -rf /".into(),
            deny: &[],
            want: "deny",
        },
        Row {
            why: "backslash CR LF between words",
            command: "echo a \\\r\necho PWNED".into(),
            deny: &["echo PWNED"],
            want: "deny",
        },
        // A heredoc delimiter followed by CR (not CR LF) holds the CR in
        // bash, which then ends the body at a line `EOF` CR; berth stripped
        // the CR from the line, never found the end, and read the commands
        // after it as the (quoted, literal) body.
        Row {
            why: "a heredoc delimiter with a CR ends at the line with the CR",
            command: "cat <<'EOF'\r x\nEOF\r\nrm -rf /\n".into(),
            deny: &[],
            want: "deny",
        },
        Row {
            why: "CR LF heredocs still end at `EOF` CR LF",
            command: "cat <<'EOF'\r\nbody\r\nEOF\r\necho PWNED\r\n".into(),
            deny: &["echo PWNED"],
            want: "deny",
        },
        Row {
            why: "an LF heredoc ends at `EOF` too (berth ends no later than bash)",
            command: "cat <<'EOF'\r\nbody\nEOF\necho PWNED\n".into(),
            deny: &["echo PWNED"],
            want: "deny",
        },
        // A delimiter with a parameter: bash ends at `$a$b` as written;
        // berth doubled the raw text into `$a$b$a$b` and never ended.
        Row {
            why: "a delimiter with parameters is refused (it was read past its end)",
            command: "cat <<$a$b\nx\n$a$b\nrm -rf /\n".into(),
            deny: &[],
            want: "require_approval",
        },
        Row {
            why: "a quoted delimiter with a parameter (bash ends at `$a`)",
            command: "cat <<\"$a\"\nx\n$a\necho PWNED\n".into(),
            deny: &["echo PWNED"],
            want: "require_approval",
        },
        // Quotes inside `$(…)` in a delimiter do not make the body literal
        // in bash: its substitutions run.
        Row {
            why: "quotes inside a substitution in a delimiter",
            command: "cat <<$(echo \"a\")\n$(echo PWNED)\n$(echo \"a\")\n".into(),
            deny: &["echo PWNED"],
            want: "require_approval",
        },
        // A line continuation in a delimiter is no quoting: the body expands.
        Row {
            why: "a line continuation in a delimiter leaves the body unquoted",
            command: "cat <<E\\\nOF\n$(echo PWNED)\nEOF\n".into(),
            deny: &["echo PWNED"],
            want: "deny",
        },
        // Redirections without a target are syntax errors in bash.
        Row {
            why: "a here-string without a word",
            command: "x <<< <<\r\n'".into(),
            deny: &[],
            want: "require_approval",
        },
        Row {
            why: "a heredoc without a delimiter before CR LF",
            command: "cat << \r\nrm -rf /\r\n".into(),
            deny: &[],
            want: "require_approval",
        },
        // bash reads `NAME[` in command position on to the matching `]`,
        // over blanks, `;` and `#`; berth read `#` as a comment.
        Row {
            why: "a subscript over a `#` hid the next command",
            command: "x[ # ]; rm -rf /".into(),
            deny: &[],
            want: "require_approval",
        },
        Row {
            why: "a subscript over a substitution holding `]`",
            command: "a[$(echo ])  # ] ; echo PWNED".into(),
            deny: &["echo PWNED"],
            want: "require_approval",
        },
        Row {
            why: "a closed subscript is a word as before",
            command: "a[1]=x; rm -rf /".into(),
            deny: &[],
            want: "deny",
        },
        Row {
            why: "a subscript with a variable closes in the word",
            command: "a[$i]=x; a[${j}]=y; rm -rf /".into(),
            deny: &[],
            want: "deny",
        },
        // A quote in the tilde-prefix leaves `~` literal: `~'x'` is `~x`.
        Row {
            why: "a quoted tilde-prefix is no home directory",
            command: "eval ~'mk5'".into(),
            deny: &["~mk5"],
            want: "deny",
        },
        // Quotes in the name make a word no assignment: bash runs `mk1=x`.
        Row {
            why: "an empty quote inside an assignment-shaped word",
            command: "m\"\"k1=x ls".into(),
            deny: &["mk1=x"],
            want: "deny",
        },
        // A comment after an assignment alone: `\` does not continue it.
        Row {
            why: "a comment after an assignment hid the next line",
            command: "x=1 # \\\nrm -rf /".into(),
            deny: &[],
            want: "deny",
        },
        // bash reads a quoted subscript as part of the assignment's name:
        // the next word is the command.
        Row {
            why: "an assignment with a quoted subscript",
            command: "a['x']=1 rm -rf /".into(),
            deny: &[],
            want: "deny",
        },
        Row {
            why: "a substitution in a subscript runs",
            command: "a[\"$(rm -rf /)\"]=1".into(),
            deny: &[],
            want: "deny",
        },
        // Line continuations go before `$'…'` is read.
        Row {
            why: "a line continuation between `$` and `'`",
            command: "$\\\n'\\x72\\x6d' -rf /".into(),
            deny: &[],
            want: "deny",
        },
        // bash cuts `$'…'` at a NUL: `$'rm\0x'` runs `rm`.
        Row {
            why: "a NUL in `$'…'` hid `rm`",
            command: "$'rm\\0x' -rf /".into(),
            deny: &[],
            want: "deny",
        },
        Row {
            why: "a NUL by `\\c@` and `\\x00`",
            command: "$'r\\x00a'$'m\\c@b' -rf /".into(),
            deny: &[],
            want: "deny",
        },
        // bash's lexer ends `$'…'` at the first quote no backslash escapes:
        // `$'\c'` is `\c`, and the next line runs. berth read `\c'` as
        // control-quote and the string on.
        Row {
            why: "`\\c` before the closing quote hid the next line",
            command: "printf %s $'\\c'\necho PWNED\n'".into(),
            deny: &["echo PWNED"],
            want: "deny",
        },
        Row {
            why: "`\\c\\'` ends where bash ends it",
            command: "printf %s $'\\c\\''\necho PWNED\n'".into(),
            deny: &["echo PWNED"],
            want: "deny",
        },
        // Empty unquoted brace expansions vanish: `git {,} push` is `git push`.
        Row {
            why: "empty brace expansions shifted `push` out of the subcommand place",
            command: "git {,} push --force origin main".into(),
            deny: &[],
            want: "require_approval",
        },
        Row {
            why: "the deny rule meets `git {,} push`",
            command: "git {,} push origin main".into(),
            deny: &["git push"],
            want: "deny",
        },
        // bash 5.2 reads `\x{HH…}` in `$'…'`.
        Row {
            why: "`\\x{72}\\x{6d}` is `rm`",
            command: "$'\\x{72}\\x{6d}' -rf /".into(),
            deny: &[],
            want: "deny",
        },
        // Every command of a long `eval`/`hyperfine` carries the wrapper's
        // argv; past a budget the segment is opaque (and the work linear).
        Row {
            why: "8,000 commands under one `eval`",
            command: format!("eval {}", "a \\; ".repeat(8_000)),
            deny: &[],
            want: "require_approval",
        },
        // An array value belongs to the word after a declaration builtin
        // only; after any other command bash rejects the line.
        Row {
            why: "an array argument after a command that is no declaration builtin",
            command: "xargs x=() sh".into(),
            deny: &[],
            want: "require_approval",
        },
        // A raw NUL cannot reach `bash -c`; bash drops it from a script file
        // (`\0rm` runs `rm`). The line is opaque, never approved.
        Row {
            why: "a NUL byte before a program name",
            command: "\0rm -rf /".into(),
            deny: &[],
            want: "require_approval",
        },
        Row {
            why: "a NUL byte inside a program name",
            command: "echo x; g\0it push origin main".into(),
            deny: &[],
            want: "require_approval",
        },
        Row {
            why: "what comes before a NUL byte is still judged",
            command: "echo x; rm -rf /\0".into(),
            deny: &[],
            want: "deny",
        },
        Row {
            why: "an array argument after `export` is fine",
            command: "export a=(1 2)".into(),
            deny: &[],
            want: "auto_approve",
        },
    ]
}

#[test]
fn found_bypasses_stay_fixed() {
    let mut failures = Vec::new();
    for row in rows() {
        let (verdict, stage, reason) = decide(&row);
        if verdict != row.want {
            failures.push(format!(
                "{}: {:?} → {verdict} ({stage}: {reason}), want {}",
                row.why, row.command, row.want
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
