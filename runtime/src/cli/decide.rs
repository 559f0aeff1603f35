//! `berth decide`: one decision, or a batch of policy cases as JSON lines.
//!
//! Exit codes of a single decision: 0 auto_approve, 10 require_approval,
//! 20 deny (2 is an error). A batch exits 0 when every line was read.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use berth_engine::config::ProjectConfig;
use berth_policy::batch::decide_lines;
use berth_policy::frame::{DEFAULT_HOME, WORK};
use berth_policy::{Action, Approval, Autonomy, Frame, RuleSet, Verdict, decide};

#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    /// A rules file: berth's permissions.json or a Claude Code settings.json.
    #[arg(long)]
    pub rules: Vec<PathBuf>,
    /// manual = autonomy {"*": "require_approval"}, auto = {"*": "auto_approve"}.
    #[arg(long, default_value = "manual", value_parser = ["manual", "auto"])]
    pub mode: String,
    /// An autonomy map as JSON ({"terminal": "auto_approve", …}); replaces --mode.
    #[arg(long)]
    pub autonomy: Option<PathBuf>,
    /// The frame the command runs in.
    #[arg(long, default_value = "host", value_parser = ["host", "container"])]
    pub frame: String,
    #[arg(long, default_value = WORK)]
    pub project_root: String,
    /// The working directory in the frame (default: the project root).
    #[arg(long)]
    pub cwd: Option<String>,
    #[arg(long, default_value = DEFAULT_HOME)]
    pub home: String,
    /// The action type (terminal, file_read, file_write, git_push, git_merge, …).
    #[arg(long, default_value = "terminal")]
    pub action: String,
    /// The path of a file action.
    #[arg(long)]
    pub path: Option<String>,
    /// The branch of git_push, or the target of git_merge.
    #[arg(long)]
    pub branch: Option<String>,
    /// Print the decision as JSON.
    #[arg(long)]
    pub json: bool,
    /// Explain: segments, rules (file:line), paths, and what auto mode lifts.
    #[arg(long)]
    pub explain: bool,
    /// Decide every case of a JSON-lines file (`-` for stdin), one JSON line out each.
    #[arg(long, value_name = "FILE")]
    pub batch: Option<String>,
    /// The command line to decide.
    #[arg(last = true)]
    pub command: Vec<String>,
}

pub fn run(args: DecideArgs) -> anyhow::Result<u8> {
    if let Some(batch) = &args.batch {
        return run_batch(batch);
    }
    let mut rules = RuleSet::default();
    for r in &args.rules {
        let set = RuleSet::load(r)
            .with_context(|| "nothing was decided: fix the rules file and run again".to_string())?;
        for w in &set.warnings {
            eprintln!("berth: warning: {w}");
        }
        rules.extend(set);
    }
    let autonomy = match &args.autonomy {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the autonomy file {}", path.display()))?;
            let map: std::collections::BTreeMap<String, String> = serde_json::from_str(&text)
                .with_context(|| {
                    format!(
                        "{}: expected a JSON object of action type → mode",
                        path.display()
                    )
                })?;
            let mut a = Autonomy::new();
            for (k, v) in map {
                let m = Approval::parse(&v).with_context(|| {
                    format!(
                        "{}: `{k}`: unknown mode `{v}` (auto_approve, require_approval or deny)",
                        path.display()
                    )
                })?;
                a.set(&k, m);
            }
            a
        }
        None if args.mode == "auto" => Autonomy::auto(),
        None => Autonomy::manual(),
    };
    let frame = if args.frame == "container" {
        let mut f = Frame::container(&args.project_root);
        if let Frame::Container { home, .. } = &mut f {
            home.clone_from(&args.home);
        }
        f
    } else {
        Frame::Host {
            project_root: args.project_root.clone(),
            extra_roots: Vec::new(),
            home: args.home.clone(),
        }
    };
    let command = super::command_line(&args.command);
    if args.action == "terminal" && command.is_empty() {
        bail!("no command given: `berth decide [options] -- COMMAND`");
    }
    let action = Action::from_parts(
        &args.action,
        Some(&command),
        args.path.as_deref(),
        args.branch.as_deref(),
    );
    let cwd = args
        .cwd
        .clone()
        .unwrap_or_else(|| args.project_root.clone());
    // No project: the built-in protected branches and no extra limits.
    let config = ProjectConfig::default();
    let ctx = config.policy_context(&rules, &frame, &cwd, &autonomy);
    let d = decide(&action, &ctx);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&d)?);
    } else if args.explain {
        print!("{}", berth_policy::explain::render(&d));
    } else {
        println!(
            "{} ({}): {}",
            d.verdict.as_str(),
            d.stage.as_str(),
            d.reason
        );
    }
    Ok(match d.verdict {
        Verdict::AutoApprove => 0,
        Verdict::RequireApproval => 10,
        Verdict::Deny => 20,
    })
}

fn run_batch(source: &str) -> anyhow::Result<u8> {
    let reader: Box<dyn BufRead> = if source == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(source)
            .with_context(|| format!("cannot open the batch file {source}"))?;
        Box::new(std::io::BufReader::with_capacity(1 << 16, f))
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    decide_lines(reader, &mut out)?;
    out.flush()?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_goes_on_after_bad_lines() {
        let input = b"{\"id\":\"a\",\"command\":\"ls\",\"rules\":{\"allow\":[\"ls\"]}}\nnot json\n{\"id\":\"b\",\"frame\":\"moon\",\"command\":\"ls\"}\n\n{\"id\":\"c\",\"command\":\"git push\",\"mode\":\"auto\"}\n";
        let mut out = Vec::new();
        decide_lines(&input[..], &mut out).unwrap();
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["verdict"], "auto_approve");
        assert_eq!(lines[1]["line"], 2);
        assert!(lines[1]["error"].as_str().unwrap().starts_with("not JSON"));
        assert_eq!(lines[2]["id"], "b");
        assert!(lines[2]["error"].as_str().unwrap().contains("frame"));
        assert_eq!(lines[3]["id"], "c");
        assert_eq!(lines[3]["stage"], "privileged");
    }

    #[test]
    fn line_terminators_beyond_newline_are_escaped() {
        // An id and a command (which the reason quotes) holding U+2028,
        // U+2029 and U+0085, and a line that is not a case, naming one.
        let odd = "a\u{2028}b\u{2029}c\u{85}d";
        let case =
            serde_json::json!({"id": odd, "command": format!("echo '{odd}'"), "mode": "manual"});
        let bad = serde_json::json!({"id": odd, "frame": "moon", "command": "ls"});
        let input = format!("{case}\n{bad}\n");
        let mut out = Vec::new();
        decide_lines(input.as_bytes(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for c in ['\u{2028}', '\u{2029}', '\u{85}'] {
            assert!(!text.contains(c), "{c:?} left raw in {text:?}");
        }
        assert!(text.contains("\\u2028") && text.contains("\\u2029") && text.contains("\\u0085"));
        // What Python's splitlines or a JavaScript reader would split on.
        let records: Vec<&str> = text
            .split(['\n', '\r', '\u{2028}', '\u{2029}', '\u{85}'])
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(records.len(), 2, "{text}");
        let first: serde_json::Value = serde_json::from_str(records[0]).unwrap();
        assert_eq!(first["id"], odd);
        assert!(first["reason"].as_str().unwrap().contains(odd), "{first}");
        let second: serde_json::Value = serde_json::from_str(records[1]).unwrap();
        assert_eq!(second["id"], odd);
        assert!(second["error"].as_str().unwrap().contains("frame"));
    }
}
