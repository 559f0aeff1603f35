//! `berth pr auto` and `berth pr auto-prompt`: a person's switches on a
//! PR's automation (auto-fix rounds, auto-merge, lifecycle prompts), and a
//! project's `ci-auto-fix` prompt. Setting a switch evaluates the PR at
//! once; with no switch given, `pr auto` shows where the PR stands.

use std::path::PathBuf;

use anyhow::Context as _;
use berth_engine::pr_automation::{Evaluation, PrAutomation, SwitchChange};
use berth_engine::{Actor, Engine};

use super::print_json;

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

impl OnOff {
    fn on(self) -> bool {
        self == OnOff::On
    }
}

/// A terminal state a prompt is wanted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Terminal {
    Merged,
    Closed,
    /// Neither.
    None,
}

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum PrAutoCommand {
    /// A PR's automation: `--fix on` prompts the agent with new failed
    /// checks, review comments and conflicts (at most 10 rounds);
    /// `--merge on` proposes the merge once the PR is ready (into a
    /// protected branch it waits for a person); `--on-review-request on`
    /// and `--on-terminal merged,closed` prompt the agent once per event.
    /// With no switch, shows the PR's automation.
    Auto {
        /// The PR number (or id prefix).
        id: String,
        #[arg(long, value_enum)]
        fix: Option<OnOff>,
        #[arg(long, value_enum)]
        merge: Option<OnOff>,
        #[arg(long, value_enum)]
        on_review_request: Option<OnOff>,
        /// The terminal states that prompt (`merged,closed`, or `none`).
        #[arg(long, value_enum, value_delimiter = ',')]
        on_terminal: Option<Vec<Terminal>>,
        /// The task's own auto-fix prompt (a file; `{{pr.feedback}}` is
        /// replaced by the PR's feedback).
        #[arg(long, value_name = "FILE", conflicts_with = "project_prompt")]
        prompt_file: Option<PathBuf>,
        /// Back to the project's auto-fix prompt.
        #[arg(long)]
        project_prompt: bool,
        #[arg(long)]
        json: bool,
    },
    /// A project's auto-fix prompt (`ci-auto-fix`): shows it, or edits it
    /// (`--set FILE`; a later berth never overwrites the edit), or goes back
    /// to berth's default (`--reset`).
    AutoPrompt {
        #[arg(long)]
        project: String,
        #[arg(long, value_name = "FILE", conflicts_with = "reset")]
        set: Option<PathBuf>,
        #[arg(long)]
        reset: bool,
        #[arg(long)]
        json: bool,
    },
}

fn read_text(path: &PathBuf) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading the prompt from {} (a UTF-8 text file)",
            path.display()
        )
    })
}

pub async fn run(engine: &Engine, cmd: PrAutoCommand) -> anyhow::Result<u8> {
    let user = Actor::current_user();
    match cmd {
        PrAutoCommand::Auto {
            id,
            fix,
            merge,
            on_review_request,
            on_terminal,
            prompt_file,
            project_prompt,
            json,
        } => {
            let prompt_override = match (&prompt_file, project_prompt) {
                (Some(p), _) => Some(Some(read_text(p)?)),
                (None, true) => Some(None),
                (None, false) => None,
            };
            let terminal =
                on_terminal.map(|t| (t.contains(&Terminal::Merged), t.contains(&Terminal::Closed)));
            let change = SwitchChange {
                fix: fix.map(OnOff::on),
                merge: merge.map(OnOff::on),
                on_review_request: on_review_request.map(OnOff::on),
                on_merged: terminal.map(|t| t.0),
                on_closed: terminal.map(|t| t.1),
                prompt_override,
            };
            if change == SwitchChange::default() {
                let a = engine.pr_automation(&id).await?;
                if json {
                    print_json(&a)?;
                } else {
                    print_automation(&a);
                }
                return Ok(0);
            }
            let e = engine.set_pr_automation(&id, change, &user).await?;
            if json {
                // The automation, and what the evaluation it ran did.
                let mut out = serde_json::to_value(&e.automation)?;
                let mut evaluated = serde_json::to_value(&e)?;
                if let (Some(o), Some(ev)) = (out.as_object_mut(), evaluated.as_object_mut()) {
                    ev.remove("automation");
                    ev.remove("pr");
                    o.insert("evaluated".into(), serde_json::Value::Object(ev.clone()));
                }
                print_json(&out)?;
            } else {
                print_evaluation(&e);
            }
            Ok(0)
        }
        PrAutoCommand::AutoPrompt {
            project,
            set,
            reset,
            json,
        } => {
            let name = berth_engine::pr_automation::template::AUTO_FIX;
            let t = match (&set, reset) {
                (Some(p), _) => {
                    let body = read_text(p)?;
                    engine
                        .set_prompt_template(&project, name, Some(&body), &user)
                        .await?
                }
                (None, true) => {
                    engine
                        .set_prompt_template(&project, name, None, &user)
                        .await?
                }
                (None, false) => engine.prompt_template(&project, name).await?,
            };
            if json {
                print_json(&t)?;
            } else {
                let whose = if t.edited {
                    "edited"
                } else {
                    "berth's default"
                };
                println!("{}'s {} prompt ({whose}):\n", t.project, t.name);
                println!("{}", t.body);
            }
            Ok(0)
        }
    }
}

fn print_automation(a: &PrAutomation) {
    let s = &a.switches;
    let on = |b: bool| if b { "on" } else { "off" };
    println!("PR #{} automation: {}", a.pr, a.state);
    println!(
        "  fix {}  merge {}  on-review-request {}  on-merged {}  on-closed {}",
        on(s.fix),
        on(s.merge),
        on(s.on_review_request),
        on(s.on_merged),
        on(s.on_closed)
    );
    if !a.chips.is_empty() {
        println!("  {}", a.chips.join(" · "));
    }
    if a.has_prompt_override {
        println!("  the task's own auto-fix prompt");
    }
    if let Some(e) = &a.last_error {
        println!("  error: {e}");
    }
}

fn print_evaluation(e: &Evaluation) {
    print_automation(&e.automation);
    let fix = serde_json::to_value(&e.fix).unwrap_or_default();
    let merge = serde_json::to_value(&e.merge).unwrap_or_default();
    let result = |v: &serde_json::Value| {
        v.get("result")
            .and_then(|r| r.as_str())
            .unwrap_or("?")
            .replace('_', " ")
    };
    println!(
        "  evaluated now: auto-fix {}, auto-merge {}",
        result(&fix),
        result(&merge)
    );
    for p in &e.lifecycle.prompted {
        println!("  prompted: {p}");
    }
}
