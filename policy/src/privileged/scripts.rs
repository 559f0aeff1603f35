//! A project's own script or target named for publishing: `npm run
//! deploy`, `yarn publish:npm`, `make deploy`, `just push`, `gulp
//! deploy`. The decision cannot see what the script runs (the project's
//! files say, and an agent can write them), but its name says what it is
//! for: a deploy by the project's own spelling is a deploy.
//!
//! A name counts when one of its parts (split at `:`, `-`, `_`, `/`, `.`)
//! is `deploy`, `publish`, `push`, `ship` or `upload`. `release` counts in
//! package scripts, where it is the publishing convention (release-it,
//! semantic-release), and not for make-like runners, where `make release`
//! is an optimised build.

use super::Hit;
use crate::arg::Arg;

/// Parts of a name that publish, for every runner.
const PUBLISHING: &[&str] = &["deploy", "publish", "push", "ship", "upload"];

/// Package managers: the script is the word after `run` (and for yarn and
/// bun, the first word, which runs a script of that name).
const PACKAGE_RUNNERS: &[&str] = &["npm", "pnpm", "yarn", "bun"];

/// Runners whose every positional word is a target or task.
const TASK_RUNNERS: &[&str] = &[
    "make", "gmake", "just", "task", "go-task", "rake", "invoke", "inv", "mage", "gulp", "grunt",
    "fab", // Fabric: tasks from the project's fabfile
];

/// Runners whose script or task is the word after a verb (`deno task
/// deploy`, `turbo run deploy`, `nx run app:deploy`): package scripts.
const VERB_RUNNERS: &[(&str, &str)] = &[
    ("deno", "task"),
    ("turbo", "run"),
    ("lerna", "run"),
    ("nx", "run"),
    ("nx", "run-many"),
    ("rush", "run"),
];

/// Runners whose every positional word is a package script
/// (`npm-run-all build deploy`, `run-p`, `run-s`).
const SCRIPT_LIST_RUNNERS: &[&str] = &["npm-run-all", "npm-run-all2", "run-p", "run-s"];

/// Whether `tool` is read here.
pub(super) fn is_runner(tool: &str) -> bool {
    PACKAGE_RUNNERS.contains(&tool)
        || TASK_RUNNERS.contains(&tool)
        || SCRIPT_LIST_RUNNERS.contains(&tool)
        || VERB_RUNNERS.iter().any(|(t, _)| *t == tool)
}

fn publishes(name: &str, package: bool) -> bool {
    name.split([':', '-', '_', '/', '.'])
        .any(|part| PUBLISHING.contains(&part) || (package && part == "release"))
}

/// The limit's verdict on a script or target run by name (`pos`: the
/// positional words, global options removed).
pub(super) fn named_script(tool: &str, pos: &[&Arg]) -> Option<Hit> {
    let names: Vec<&Arg> = if PACKAGE_RUNNERS.contains(&tool) {
        let after_run = pos
            .iter()
            .position(|a| a.is("run") || a.is("run-script"))
            .and_then(|i| pos.get(i + 1));
        let first = pos.first().filter(|_| matches!(tool, "yarn" | "bun"));
        after_run.into_iter().chain(first).copied().collect()
    } else if VERB_RUNNERS
        .iter()
        .any(|(t, v)| *t == tool && pos.first().is_some_and(|a| a.is(v)))
    {
        // Every word after the verb: `nx run-many -t deploy` names its
        // targets as option values.
        pos[1..].to_vec()
    } else if SCRIPT_LIST_RUNNERS.contains(&tool) {
        pos.to_vec()
    } else if TASK_RUNNERS.contains(&tool) {
        // `make CC=clang all`: an assignment is no target.
        pos.iter()
            .filter(|a| !a.text.contains('='))
            .copied()
            .collect()
    } else {
        return None;
    };
    let package = !TASK_RUNNERS.contains(&tool);
    names
        .iter()
        .find(|a| !a.dynamic && publishes(&a.text, package))
        .map(|a| {
            Hit::Yes(format!(
                "`{tool} {}`: a script named for publishing or deploying",
                a.text
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(s: &str) -> Option<Hit> {
        let words: Vec<Arg> = s.split_whitespace().map(Arg::lit).collect();
        let pos: Vec<&Arg> = words[1..].iter().collect();
        named_script(words[0].text.as_str(), &pos)
    }

    #[test]
    fn publishing_names_are_privileged() {
        for c in [
            "npm run deploy",
            "npm run deploy:prod",
            "npm run release",
            "npm run-script publish-npm",
            "yarn deploy",
            "yarn run ship",
            "pnpm run deploy",
            "bun run deploy",
            "bun deploy",
            "make deploy",
            "make CC=clang docker-push",
            "just upload",
            "task deploy",
            "rake deploy",
            "gulp deploy",
            "grunt publish",
            "deno task deploy",
            "fab deploy",
            "turbo run deploy",
            "nx run app:deploy",
            "npm-run-all build deploy",
            "run-s release",
        ] {
            assert!(matches!(verdict(c), Some(Hit::Yes(_))), "{c}");
        }
    }

    #[test]
    fn other_names_are_not() {
        for c in [
            "npm run build",
            "npm run typecheck",
            "npm run deployment-notes-lint",
            "pnpm deploy out",
            "yarn install",
            "make release",
            "make",
            "make check",
            "make PUSH=1 all",
            "just test",
            "rake spec",
            "deno task dev",
            "turbo run build",
            "run-p lint test",
        ] {
            assert_eq!(verdict(c), None, "{c}");
        }
    }
}
