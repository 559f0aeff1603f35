//! Protected paths: places whose contents decide what code runs later, so
//! that writing them is never auto-approved (POLICY.md, "Spelling does not
//! change meaning", point 10), in every front end — a command's redirection,
//! `cp`/`tee`/`sed -i`/`dd of=` target, or a `file_write` action.
//!
//! One list, each entry with why. It holds what POLICY.md names and what
//! Claude Code's permission-modes documentation ("Protected paths",
//! code.claude.com/docs/en/permission-modes#protected-paths) protects: the
//! directories `.git`, `.vscode`, `.idea`, `.husky`, `.claude` and the files
//! `.gitconfig`, `.bashrc`, `.zshrc`, `.profile`, `.mcp.json`. By the same
//! principle it holds every hidden file or directory whose contents a
//! program runs later, when nobody is deciding: other shells' startup
//! files, `~/.ssh`, the `PATH` directories in the home (`~/.local/bin`),
//! package managers' configs that name programs (`.npmrc`, `.yarnrc.yml`,
//! `.cargo/config.toml`), hook managers' configs, editors' and REPLs'
//! startup files, and credential configs that run helpers (`~/.aws`,
//! `~/.kube`, `~/.docker`). A project's visible build files (`Makefile`,
//! `build.rs`, `package.json`) are its work, not hidden config: writing
//! them is ordinary. Reading any of them is fine.

mod mentions;

pub use mentions::{may_name, mentioned_in};

/// The protected names, each with why writing there runs code later.
/// A name matches as a path component anywhere: the file or directory
/// itself and everything under it.
const PROTECTED: &[(&str, &str)] = &[
    (
        ".git",
        "git runs its hooks and the programs its config names (`core.fsmonitor`, `core.pager`, filters)",
    ),
    (
        ".claude",
        "Claude Code's settings, hooks and commands: hooks run shell commands, settings grant permissions",
    ),
    (".husky", "husky's git hooks run on every commit and push"),
    (
        ".vscode",
        "editor tasks and settings run programs when the folder is opened",
    ),
    (
        ".idea",
        "JetBrains run configurations and tool settings run programs",
    ),
    (
        ".envrc",
        "direnv runs it as shell code on entering the directory",
    ),
    (
        ".mcp.json",
        "it names the MCP servers an agent starts (programs it runs)",
    ),
    (
        ".gitconfig",
        "git config can name programs git runs (`core.pager`, `core.sshCommand`, aliases with `!`)",
    ),
    (
        ".gitmodules",
        "submodule URLs and paths steer what `git submodule update` fetches and checks out",
    ),
    (
        ".bashrc",
        "bash runs it as shell code at every interactive start",
    ),
    (".bash_profile", "bash runs it as shell code at every login"),
    (".bash_login", "bash runs it as shell code at login"),
    (
        ".zshrc",
        "zsh runs it as shell code at every interactive start",
    ),
    (".zshenv", "zsh runs it as shell code at every start"),
    (".zprofile", "zsh runs it as shell code at login"),
    (".profile", "login shells run it as shell code"),
    (".zlogin", "zsh runs it as shell code at login"),
    (".bash_logout", "bash runs it as shell code at logout"),
    (
        ".kshrc",
        "ksh runs it as shell code at every interactive start",
    ),
    (
        ".mkshrc",
        "mksh runs it as shell code at every interactive start",
    ),
    (".cshrc", "csh runs it as shell code at every start"),
    (".tcshrc", "tcsh runs it as shell code at every start"),
    (".login", "csh runs it as shell code at login"),
    (".xinitrc", "startx runs it as shell code"),
    (
        ".xprofile",
        "display managers run it as shell code at login",
    ),
    (".xsession", "display managers run it as the session"),
    (".xsessionrc", "Debian's X session runs it as shell code"),
    (
        ".ssh",
        "ssh runs what its config names (`ProxyCommand`, `LocalCommand`), `authorized_keys` grants logins and `rc` runs at each one",
    ),
    (
        ".npmrc",
        "npm runs the shell it names (`script-shell`) and the options it sets",
    ),
    (".yarnrc", "yarn runs the file `yarn-path` names"),
    (
        ".yarnrc.yml",
        "yarn runs the file `yarnPath` names and the plugins it lists",
    ),
    (
        ".pnpmfile.cjs",
        "pnpm runs it as JavaScript at every install",
    ),
    (
        ".pre-commit-config.yaml",
        "pre-commit runs the hooks it names (`entry`) at every commit",
    ),
    (
        ".lefthook.yml",
        "lefthook's git hooks run on every commit and push",
    ),
    (
        ".overcommit.yml",
        "overcommit's git hooks run on every commit",
    ),
    (
        ".devcontainer",
        "a dev container's commands (`postCreateCommand`, `initializeCommand`) run when it is built",
    ),
    (
        ".mise.toml",
        "mise runs its hooks and sourced files when the directory is entered",
    ),
    (".vimrc", "vim runs it as Vim script at every start"),
    (".gvimrc", "gvim runs it as Vim script at every start"),
    (".exrc", "vi and vim run it from the current directory"),
    (".emacs", "emacs runs it as Lisp at every start"),
    (
        ".emacs.d",
        "emacs runs its init files as Lisp at every start",
    ),
    (
        ".gdbinit",
        "gdb runs its commands (`shell`, Python) at every start",
    ),
    (".lldbinit", "lldb runs its commands at every start"),
    (
        ".pdbrc",
        "pdb runs it as debugger commands (Python) from the current directory",
    ),
    (".irbrc", "irb runs it as Ruby at every start"),
    (".pryrc", "pry runs it as Ruby at every start"),
    (
        ".psqlrc",
        "psql runs its commands (`\\!` runs a shell) at every start",
    ),
    (
        ".sqliterc",
        "sqlite3 runs its commands (`.shell`) at every start",
    ),
    (
        ".Rprofile",
        "R runs it as R code from the current directory",
    ),
    (
        ".tmux.conf",
        "tmux runs its commands (`run-shell`) at every start",
    ),
    (
        ".screenrc",
        "screen runs its commands (`exec`) at every start",
    ),
    (
        ".ipython",
        "IPython runs its startup files as Python at every start",
    ),
    (".bunfig.toml", "bun runs the scripts it preloads"),
    (
        ".claude.json",
        "Claude Code's user config names the MCP servers it starts (programs it runs)",
    ),
    (
        ".codex",
        "Codex's config names the MCP servers and programs it runs",
    ),
    (".cursor", "Cursor's config names the MCP servers it starts"),
    (
        ".docker",
        "docker runs the credential helper its config names",
    ),
    (
        ".kube",
        "kubectl runs the `exec` credential plugins a kubeconfig names",
    ),
    (
        ".aws",
        "the AWS CLI and SDKs run the `credential_process` its config names",
    ),
    (
        ".bash_aliases",
        "`~/.bashrc` sources it: bash runs it as shell code at every interactive start",
    ),
    (
        ".pam_environment",
        "every login reads its variables (`LD_PRELOAD`, `PATH`)",
    ),
    (
        ".pythonrc",
        "Python runs it at every interactive start (`PYTHONSTARTUP`)",
    ),
    (".pdbrc.py", "pdb runs it as Python at every start"),
    (
        ".node_modules",
        "node resolves `require` from it for every program (`~/.node_modules`)",
    ),
    (
        ".node_libraries",
        "node resolves `require` from it for every program",
    ),
    (
        ".gnupg",
        "gpg and its agent run the programs their configs name (`pinentry-program`)",
    ),
    (
        ".sbt",
        "sbt runs its global plugins and settings in every build",
    ),
    (
        ".jupyter",
        "Jupyter runs its config files as Python at every start",
    ),
    (
        ".terraformrc",
        "terraform runs the `credentials_helper` it names and installs its providers",
    ),
    (
        ".rustup",
        "the Rust toolchains every `cargo` and `rustc` runs",
    ),
    (
        ".bazelrc",
        "bazel runs the programs its options name (`--workspace_status_command`, `--run_under`)",
    ),
    (
        ".devcontainer.json",
        "it names commands and images the editor's container runs (as `.devcontainer/`)",
    ),
    (
        ".gitpod.yml",
        "Gitpod runs its tasks when a workspace starts",
    ),
    (
        ".gemini",
        "Gemini CLI's settings name the MCP servers and tools it starts",
    ),
    (
        ".aider.conf.yml",
        "aider runs the `lint-cmd` and `test-cmd` it names",
    ),
    (
        ".continue",
        "Continue's config names the MCP servers it starts",
    ),
    (".zed", "Zed's settings and tasks name programs it runs"),
    (".theia", "Theia runs its tasks and launch configs"),
    (".fleet", "Fleet runs its run configurations"),
];

/// Protected directories named by two components: git's user config in
/// its XDG place is `~/.gitconfig` under another name.
const PROTECTED_PAIRS: &[(&str, &str, &str)] = &[
    (
        ".config",
        "environment.d",
        "the user's service manager reads its variables (`LD_PRELOAD`, `PATH`) for every session",
    ),
    (
        ".local",
        "lib",
        "Python imports the user's site-packages at every start (a `.pth` line runs code)",
    ),
    (
        ".cargo",
        "env",
        "the shell's startup files source it (rustup's `. \"$HOME/.cargo/env\"`)",
    ),
    (
        ".gradle",
        "init.gradle",
        "gradle runs its init scripts in every build",
    ),
    (
        ".gradle",
        "init.gradle.kts",
        "gradle runs its init scripts in every build",
    ),
    (
        ".gradle",
        "init.d",
        "gradle runs its init scripts in every build",
    ),
    (
        ".gradle",
        "gradle.properties",
        "gradle reads its JVM options (`-javaagent`) in every build",
    ),
    (
        ".config",
        "git",
        "git's user config, attributes and hooks (`~/.config/git/`) name programs git runs, as `~/.gitconfig` does",
    ),
    (
        ".config",
        "fish",
        "fish runs its config and `conf.d` as shell code at every start",
    ),
    (
        ".config",
        "nvim",
        "neovim runs its init files at every start",
    ),
    (
        ".config",
        "Code",
        "VS Code's user settings and tasks run programs, as `.vscode/` does",
    ),
    (".config", "direnv", "direnv runs `direnvrc` as shell code"),
    (
        ".config",
        "berth",
        "berth's own configuration: the rules that judge the agent's actions",
    ),
    (
        "share",
        "berth",
        "berth's own state (`~/.local/share/berth`): its store records every decision and approval",
    ),
    (
        "state",
        "berth",
        "berth's own state (`~/.local/state/berth`)",
    ),
    (
        "Library",
        "LaunchAgents",
        "launchd runs its agents at every login (macOS)",
    ),
    (
        "Library",
        "LaunchDaemons",
        "launchd runs its daemons as root at boot (macOS)",
    ),
    (
        ".config",
        "tmux",
        "tmux runs its config's commands at every start",
    ),
    (
        ".config",
        "systemd",
        "systemd runs the user units and timers there",
    ),
    (
        ".config",
        "autostart",
        "desktop sessions run the entries there at login",
    ),
    (
        ".config",
        "gh",
        "gh runs its aliases (`!` runs a shell) and extensions",
    ),
    (
        ".local",
        "bin",
        "on `PATH` before the system's: a program there runs in place of one of the same name",
    ),
    (
        ".cargo",
        "bin",
        "on `PATH`: a program there runs in place of one of the same name",
    ),
    (
        ".cargo",
        "config.toml",
        "cargo runs what it names (`runner`, `rustc-wrapper`, aliases)",
    ),
    (
        ".cargo",
        "config",
        "cargo runs what it names (`runner`, `rustc-wrapper`, aliases)",
    ),
];

/// The system's own places whose contents decide who gains privilege or
/// what runs later as root, by absolute path: the file or directory and
/// everything under it. (In a container they are the container's own; the
/// rule is the same: nobody reads what lands there before it runs.)
const SYSTEM_PLACES: &[(&str, &str)] = &[
    ("/etc/sudoers", "it decides who may run commands as root"),
    ("/etc/sudoers.d", "it decides who may run commands as root"),
    ("/etc/doas.conf", "it decides who may run commands as root"),
    (
        "/etc/passwd",
        "the machine's accounts (a uid 0 line is a root account)",
    ),
    ("/etc/shadow", "the machine's passwords"),
    (
        "/etc/group",
        "the machine's groups (`sudo`, `docker` grant root)",
    ),
    ("/etc/gshadow", "the machine's group passwords"),
    ("/etc/pam.d", "how logins and sudo authenticate"),
    ("/etc/security", "login and privilege limits"),
    ("/etc/polkit-1", "who may act as root through polkit"),
    ("/etc/ld.so.preload", "a library loaded into every program"),
    (
        "/etc/ld.so.conf",
        "where every program's libraries are found",
    ),
    (
        "/etc/ld.so.conf.d",
        "where every program's libraries are found",
    ),
    ("/etc/profile", "every login shell runs it"),
    ("/etc/profile.d", "every login shell runs it"),
    ("/etc/bash.bashrc", "every interactive bash runs it"),
    ("/etc/zsh", "every zsh runs its startup files"),
    (
        "/etc/environment",
        "every login's environment (`LD_PRELOAD`, `PATH`)",
    ),
    (
        "/etc/gitconfig",
        "git's system config names programs git runs",
    ),
    ("/etc/crontab", "cron runs it"),
    ("/etc/cron.d", "cron runs it"),
    ("/etc/cron.hourly", "cron runs it"),
    ("/etc/cron.daily", "cron runs it"),
    ("/etc/cron.weekly", "cron runs it"),
    ("/etc/cron.monthly", "cron runs it"),
    ("/etc/systemd", "units the service manager runs as root"),
    (
        "/lib/systemd/system",
        "units the service manager runs as root",
    ),
    (
        "/usr/lib/systemd/system",
        "units the service manager runs as root",
    ),
    ("/etc/init.d", "services the machine starts as root"),
    ("/etc/rc.local", "the machine runs it at boot as root"),
    ("/etc/ssh", "the ssh server's config and host keys"),
    ("/etc/udev", "udev rules run programs as root"),
    (
        "/etc/modprobe.d",
        "modprobe's config runs commands (`install`)",
    ),
    ("/etc/modules-load.d", "kernel modules loaded at boot"),
    ("/etc/sysctl.conf", "the kernel's settings at boot"),
    ("/etc/sysctl.d", "the kernel's settings at boot"),
    (
        "/etc/apt/apt.conf.d",
        "apt's hooks run commands as root (`DPkg::Pre-Invoke`)",
    ),
    (
        "/etc/apt/sources.list",
        "where packages installed as root come from",
    ),
    (
        "/etc/apt/sources.list.d",
        "where packages installed as root come from",
    ),
    (
        "/proc/sys",
        "the running kernel's settings (`kernel.core_pattern` runs a program)",
    ),
    (
        "/proc/sysrq-trigger",
        "the kernel's emergency commands (reboot, crash)",
    ),
    ("/sys", "the kernel's devices and settings"),
    ("/boot", "the kernel and the boot loader"),
    (
        "/usr/lib/python3",
        "every Python imports its packages (a `.pth` line runs code)",
    ),
    // Where every command is looked up: a program placed there shadows
    // the tools the person, their scripts and berth run by name.
    (
        "/usr/local/bin",
        "commands are looked up there first (`PATH`)",
    ),
    (
        "/usr/local/sbin",
        "commands are looked up there first (`PATH`)",
    ),
    ("/usr/bin", "the machine's commands (`PATH`)"),
    ("/usr/sbin", "the machine's commands (`PATH`)"),
    ("/bin", "the machine's commands (`PATH`)"),
    ("/sbin", "the machine's commands (`PATH`)"),
];

/// Whether a word may name a place of [`SYSTEM_PLACES`]: the cheap test.
/// Only an absolute path or one starting with `.` can (`../../etc/x`);
/// a bare relative word can only from a cwd that already is one (or `/`,
/// which this test takes as one). One look after each `/`.
/// `equals` false says the word holds no `=`, `dot` false no `.`: the
/// searches for them are skipped.
fn may_be_system(word: &str, equals: bool, dot: bool) -> bool {
    // A value attached to an option (`of=/etc/shadow`, `--output=/etc/x`).
    // (What follows the `=` holds no byte the word does not.)
    if equals
        && let Some(i) = crate::substring::find_byte(b'=', word.as_bytes())
        && may_be_system(&word[i + 1..], equals, dot)
    {
        return true;
    }
    if !(word.starts_with('/') || word.starts_with('.')) {
        return false;
    }
    if word == "/" {
        return true;
    }
    // Each test below needs a `/` right before the first letter of one of
    // [`SYSTEM_NAMES`]: most paths hold none (`/work`, `/tmp/out.txt`), and are
    // answered by one pass over their bytes.
    if !word
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'/' && SYSTEM_NAME_START[usize::from(w[1])])
    {
        return false;
    }
    // `/etc/x`, `//etc/x`: the first component. Only `..`, `/./` and the
    // kernel's aliases (`/proc/self/root/…`) can reach one further on.
    let first = word.trim_start_matches('/');
    if first.len() < word.len() && SYSTEM_NAMES.iter().any(|p| first.starts_with(p)) {
        return true;
    }
    // `..` and `/./` hold a dot: most paths have none, and are not searched
    // for them.
    let dotted = dot
        && word.as_bytes().contains(&b'.')
        && (crate::substring::contains(word, "..") || crate::substring::contains(word, "/./"));
    if !(dotted || crate::substring::contains(word, "/proc/")) {
        return false;
    }
    let mut rest = word;
    while let Some(i) = crate::substring::find_byte(b'/', rest.as_bytes()) {
        rest = &rest[i + 1..];
        if SYSTEM_NAMES.iter().any(|p| rest.starts_with(p)) {
            return true;
        }
    }
    false
}

/// The components right after a `/` that [`may_be_system`] takes for a
/// way into [`SYSTEM_PLACES`] (`/etc`, `../../etc`, `/proc/self/root/etc`).
const SYSTEM_NAMES: [&str; 8] = [
    "etc",
    "proc/sys",
    "sys",
    "boot",
    "lib/systemd",
    "usr/",
    "bin",
    "sbin",
];

/// The first bytes of [`SYSTEM_NAMES`]: after a `/`, the only bytes that
/// may start one.
static SYSTEM_NAME_START: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < SYSTEM_NAMES.len() {
        table[SYSTEM_NAMES[i].as_bytes()[0] as usize] = true;
        i += 1;
    }
    table
};

/// The system place `path` (absolute, normalised) writes, if any; a glob
/// is judged by its static prefix (`/etc/sudo*` may be `/etc/sudoers`).
fn system_place(path: &str, glob: bool) -> Option<(String, &'static str)> {
    let fixed = if glob {
        &path[..path.find(['*', '?', '[']).unwrap_or(path.len())]
    } else {
        path
    };
    SYSTEM_PLACES
        .iter()
        .find(|(place, _)| {
            let under = fixed == *place
                || fixed
                    .strip_prefix(place)
                    .is_some_and(|rest| rest.starts_with('/'));
            under || glob && place.starts_with(fixed)
        })
        .map(|(place, why)| ((*place).to_string(), *why))
}

/// Places held only where a command is known to write them, not where it
/// merely names them: programs are named by their path as arguments all
/// the time (`--editor /usr/bin/nano`, `-p /usr/bin/python3`).
const HELD_ONLY_WHEN_WRITTEN: &[&str] = &[
    "/usr/local/bin",
    "/usr/local/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/bin",
    "/sbin",
    "/usr/lib/python3",
];

/// Whether the place [`why`] named is held only for a known write.
pub fn held_only_when_written(place: &str) -> bool {
    HELD_ONLY_WHEN_WRITTEN.contains(&place)
}

/// Whether an absolute path (as written) lies in a place held only for a
/// known write.
pub fn in_place_held_only_when_written(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains("..")
        && !path.contains("/./")
        && !path.contains("//")
        && HELD_ONLY_WHEN_WRITTEN.iter().any(|p| {
            path.strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('/'))
        })
}

/// The system place a write of names known only at run time beneath
/// `dir` (absolute, normalised) may reach: one `dir` lies in, or one
/// below it (`tar -x -C /usr/local` may write `/usr/local/bin/…`).
pub fn system_place_beneath(dir: &str) -> Option<(String, &'static str)> {
    let dir = dir.trim_end_matches('/');
    if let Some(hit) = system_place(if dir.is_empty() { "/" } else { dir }, false) {
        return Some(hit);
    }
    SYSTEM_PLACES
        .iter()
        .find(|(place, _)| {
            place
                .strip_prefix(dir)
                .is_some_and(|rest| rest.starts_with('/'))
        })
        .map(|(place, why)| ((*place).to_string(), *why))
}

/// A bare repository's directory (`p.git`) is a git directory too: its
/// `config` and `hooks/` run code like a `.git/` directory's.
const BARE_REPO_SUFFIX: &str = ".git";

/// Why writing `path` (absolute, normalised; components may be globs when
/// `glob` is set) would write a protected place, if it would. A glob is
/// judged by what it can match; without `dotglob` it does not match a
/// leading `.`.
pub fn why(path: &str, glob: bool, dotglob: bool) -> Option<(String, &'static str)> {
    if !may_name(path, glob && dotglob) {
        return None;
    }
    if path.starts_with('/')
        && let Some(hit) = system_place(path, glob)
    {
        return Some(hit);
    }
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    // Compared as a host's file system opens them (`name_fold.rs`): without
    // case — a case-insensitive host (macOS) opens `.GIT/config` as
    // `.git/config` — and, for a component with anything to fold, folded
    // (once a component, not once a name: `Folded`). A glob component is
    // compared in lower case (also made once a component).
    let forms: Vec<Form<'_>> = comps
        .iter()
        .map(|c| {
            if glob && c.bytes().any(|b| matches!(b, b'*' | b'?' | b'[')) {
                Form::Glob(c.to_ascii_lowercase())
            } else if crate::name_fold::is_plain(c) {
                Form::Plain(c)
            } else {
                Form::Folded(crate::name_fold::Folded::of(c))
            }
        })
        .collect();
    let meets = |form: &Form<'_>, name: &str| match form {
        Form::Glob(lower) => crate::glob_meet::may_meet(lower, name, !dotglob),
        Form::Plain(c) => c.eq_ignore_ascii_case(name),
        Form::Folded(f) => f.is(name),
    };
    for (i, comp) in comps.iter().enumerate() {
        for (name, why) in PROTECTED {
            if meets(&forms[i], name) {
                return Some((name.to_string(), why));
            }
        }
        if let Some(next) = forms.get(i + 1) {
            for (first, second, why) in PROTECTED_PAIRS {
                if meets(&forms[i], first) && meets(next, second) {
                    return Some((format!("{first}/{second}"), why));
                }
            }
        }
        // `p.git/config`, `p.git/hooks/…`: a bare repository's own files.
        let bare = comp.len() > BARE_REPO_SUFFIX.len()
            && comp.is_char_boundary(comp.len() - BARE_REPO_SUFFIX.len())
            && comp[comp.len() - BARE_REPO_SUFFIX.len()..].eq_ignore_ascii_case(BARE_REPO_SUFFIX);
        if bare && i + 1 < comps.len() {
            return Some((
                comp.to_string(),
                "a bare git repository: git runs its hooks and the programs its config names",
            ));
        }
    }
    None
}

/// How [`why`] compares one component of a path with the names.
enum Form<'a> {
    /// A glob, in lower case: by what it can match.
    Glob(String),
    /// Nothing to fold: without case.
    Plain(&'a str),
    /// As a host's file system may open it (`name_fold.rs`).
    Folded(crate::name_fold::Folded<'a>),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`may_be_system`] without its filter (the look for a `/` before a
    /// name's first letter), as one expression.
    pub(super) fn may_be_system_unfiltered(word: &str, equals: bool, dot: bool) -> bool {
        let after_equals = word.split_once('=').filter(|_| equals).map(|(_, v)| v);
        let starts_system = |w: &str| SYSTEM_NAMES.iter().any(|p| w.starts_with(p));
        let first = word.trim_start_matches('/');
        let climbs =
            dot && (word.contains("..") || word.contains("/./")) || word.contains("/proc/");
        after_equals.is_some_and(|v| may_be_system_unfiltered(v, equals, dot))
            || word.starts_with(['/', '.'])
                && (word == "/"
                    || first.len() < word.len() && starts_system(first)
                    || climbs
                        && word
                            .match_indices('/')
                            .any(|(i, _)| starts_system(&word[i + 1..])))
    }

    /// Every system name in the spellings that reach it (`//etc`,
    /// `../etc`, `/proc/self/root/etc`, `of=/etc`) and that do not
    /// (`x/etc`), each cut short at every byte.
    pub(super) fn system_words() -> Vec<String> {
        let mut words = Vec::new();
        for name in SYSTEM_NAMES {
            for w in [
                format!("/{name}"),
                format!("//{name}/x"),
                format!("../{name}"),
                format!("./a/../{name}"),
                format!("/a/./{name}"),
                format!("/proc/self/root/{name}"),
                format!("/x/proc/{name}"),
                format!("of=/{name}"),
                format!("a=b=/{name}"),
                format!("--o=../{name}"),
                format!("/work/{name}"),
                format!("x/{name}"),
            ] {
                words.extend((0..=w.len()).map(|end| w[..end].to_string()));
            }
        }
        words
    }

    #[test]
    fn the_cheap_system_test_answers_as_the_unfiltered_one() {
        let check = |w: &str| {
            let (equals, dot) = (w.contains('='), w.contains('.'));
            assert_eq!(
                may_be_system(w, equals, dot),
                may_be_system_unfiltered(w, equals, dot),
                "{w:?}"
            );
        };
        crate::short_strings::each(b"/.=etcwb", 7, check);
        for w in system_words() {
            check(&w);
        }
    }

    /// [`why`] as it was before each component was folded once: every
    /// name compared through `same_name`, every glob lowered again.
    fn why_per_name(path: &str, glob: bool, dotglob: bool) -> Option<(String, &'static str)> {
        if !may_name(path, glob && dotglob) {
            return None;
        }
        if path.starts_with('/')
            && let Some(hit) = system_place(path, glob)
        {
            return Some(hit);
        }
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        let meets = |c: &str, name: &str| {
            if glob && c.bytes().any(|b| matches!(b, b'*' | b'?' | b'[')) {
                crate::glob_meet::may_meet(&c.to_ascii_lowercase(), name, !dotglob)
            } else {
                crate::name_fold::same_name(c, name)
            }
        };
        for (i, comp) in comps.iter().enumerate() {
            for (name, why) in PROTECTED {
                if meets(comp, name) {
                    return Some((name.to_string(), why));
                }
            }
            if let Some(next) = comps.get(i + 1) {
                for (first, second, why) in PROTECTED_PAIRS {
                    if meets(comp, first) && meets(next, second) {
                        return Some((format!("{first}/{second}"), why));
                    }
                }
            }
            let bare = comp.len() > BARE_REPO_SUFFIX.len()
                && comp.is_char_boundary(comp.len() - BARE_REPO_SUFFIX.len())
                && comp[comp.len() - BARE_REPO_SUFFIX.len()..]
                    .eq_ignore_ascii_case(BARE_REPO_SUFFIX);
            if bare && i + 1 < comps.len() {
                return Some((
                    comp.to_string(),
                    "a bare git repository: git runs its hooks and the programs its config names",
                ));
            }
        }
        None
    }

    /// [`why`] answers as [`why_per_name`] on each protected name and pair
    /// written in the ways a host may fold, as globs, and beside others.
    #[test]
    fn folded_once_answers_as_per_name() {
        let mut names: Vec<String> = PROTECTED.iter().map(|(n, _)| (*n).to_string()).collect();
        for (a, b, _) in PROTECTED_PAIRS {
            names.push(format!("{a}/{b}"));
        }
        let mut paths = Vec::new();
        for n in &names {
            for form in [
                n.clone(),
                n.to_uppercase(),
                format!("{n}."),
                format!("{n} ."),
                n.replacen('.', ".\u{200c}", 1),
                format!("{}\u{feff}", n.to_uppercase()),
                n.replacen('.', "", 1)
                    .to_uppercase()
                    .chars()
                    .take(6)
                    .collect::<String>()
                    + "~1",
                n.replacen(|c: char| c.is_ascii_alphabetic(), "*", 1),
                n.replacen(|c: char| c.is_ascii_alphabetic(), "?", 1),
                format!("{n}[x]"),
                format!("{n}~"),
                format!("p{n}"),
            ] {
                for p in [
                    format!("/work/{form}"),
                    format!("/work/{form}/x"),
                    format!("/work/a/{form}/b/c"),
                    format!("/{form}"),
                ] {
                    paths.push(p);
                }
            }
        }
        paths.extend(
            [
                "/work/a.git/config",
                "/work/src/main.rs",
                "/work/*/x",
                "/work/.*/hooks",
                "/etc/passwd",
                "/work/é.git/x",
                "/work/x~y/.envrc.",
            ]
            .map(String::from),
        );
        for p in &paths {
            for (glob, dotglob) in [(false, false), (true, false), (true, true)] {
                assert_eq!(
                    why(p, glob, dotglob),
                    why_per_name(p, glob, dotglob),
                    "{p:?} glob {glob} dotglob {dotglob}"
                );
            }
        }
    }

    #[test]
    fn finds_protected_components() {
        let cases = [
            ("/work/.git/config", false, Some(".git")),
            ("/work/.git/hooks/pre-commit", false, Some(".git")),
            ("/work/sub/.git/info/attributes", false, Some(".git")),
            ("/work/.git", false, Some(".git")),
            ("/work/.envrc", false, Some(".envrc")),
            ("/work/a/.claude/settings.json", false, Some(".claude")),
            ("/state/agents/p/a.git/hooks/x", false, Some("a.git")),
            ("/work/.gitignore", false, None),
            ("/work/src/git/x", false, None),
            ("/work/.gi?/hooks/x", true, Some(".git")),
            ("/work/.e*", true, Some(".envrc")),
            ("/work/*.rs", true, None),
            ("/work/.gi?", false, None),
            ("/work/src/**/*.js", true, None),
            ("/work/.GIT/hooks/x", false, Some(".git")),
            ("/work/.Git", false, Some(".git")),
            ("/srv/P.GIT/config", false, Some("P.GIT")),
            ("/work/.[g]it/config", true, Some(".git")),
            ("/home/agent/.config/git/config", false, Some(".config/git")),
            ("/home/agent/.config/git", false, Some(".config/git")),
            (
                "/home/agent/.config/g?t/attributes",
                true,
                Some(".config/git"),
            ),
            ("/home/agent/.config/gitui/theme.ron", false, None),
            (
                "/home/agent/.config/nvim/init.lua",
                false,
                Some(".config/nvim"),
            ),
            (
                "/home/agent/.config/Code/User/x.json",
                false,
                Some(".config/Code"),
            ),
            ("/home/agent/.config/pip/pip.conf", false, None),
            ("/home/agent/.claude.json", false, Some(".claude.json")),
            ("/home/agent/.ssh/authorized_keys", false, Some(".ssh")),
            ("/home/agent/.local/bin/git", false, Some(".local/bin")),
            ("/home/agent/.local/share/x", false, None),
            (
                "/work/.cargo/config.toml",
                false,
                Some(".cargo/config.toml"),
            ),
            ("/work/.cargo/registry/x", false, None),
            ("/work/.npmrc", false, Some(".npmrc")),
            (
                "/work/.pre-commit-config.yaml",
                false,
                Some(".pre-commit-config.yaml"),
            ),
            ("/work/config/git/x", false, None),
            ("/etc/sudoers", false, Some("/etc/sudoers")),
            ("/etc/sudoers.d/agent", false, Some("/etc/sudoers.d")),
            ("/etc/sudo*", true, Some("/etc/sudoers")),
            ("/proc/sys/kernel/core_pattern", false, Some("/proc/sys")),
            ("/proc/sysrq-trigger", false, Some("/proc/sysrq-trigger")),
            ("/etc/profile.d/x.sh", false, Some("/etc/profile.d")),
            ("/etc/hosts", false, None),
            ("/usr/local/bin/git", false, Some("/usr/local/bin")),
            ("/usr/bin", false, Some("/usr/bin")),
            ("/usr/local/lib/x.so", false, None),
            ("/binary/x", false, None),
            (
                "/home/agent/Library/LaunchAgents/x.plist",
                false,
                Some("Library/LaunchAgents"),
            ),
            (
                "/home/agent/.local/share/berth/berth.db",
                false,
                Some("share/berth"),
            ),
            ("/etc/passwd-", false, None),
            ("/system/x", false, None),
            ("/work/etc/sudoers", false, None),
        ];
        for (path, glob, want) in cases {
            assert_eq!(
                why(path, glob, false).map(|(n, _)| n),
                want.map(str::to_string),
                "{path}"
            );
        }
    }
}
