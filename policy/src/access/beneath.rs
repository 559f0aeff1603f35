//! Writes whose names are known only when the program runs, beneath a
//! directory it names: an archive extracted there, a patch applied, a
//! directory's contents copied, a repository made or checked out, packages
//! installed under a prefix; and the file git writes when told
//! (`--output`). [`super::FileAccess::beneath`] marks them, so the
//! decision can judge the directory by what may land beneath it (the
//! home's protected files) rather than by its own name.

use super::write_options::long_is;
use crate::arg::Arg;
use crate::substring::has_byte;

/// The value of option `long`/`short` at `argv[i]` (`--o v`, `--o=v`,
/// `-o v`, `-ov`): `(index of a separate value word, attached value)`.
pub(super) fn option_at(
    argv: &[Arg],
    i: usize,
    long: &str,
    short: &str,
) -> Option<(Option<usize>, Option<String>)> {
    let t = argv[i].text.as_str();
    if argv[i].dynamic {
        return None;
    }
    if t == long || !short.is_empty() && t == short {
        return Some(((i + 1 < argv.len()).then_some(i + 1), None));
    }
    if let Some(v) = t.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
        return Some((None, Some(v.to_string())));
    }
    // An abbreviation (`--out=F` for `--output`): git's parse-options, GNU
    // getopt_long, nopt, optparse and OptionParser take any unambiguous
    // prefix.
    if let Some((_, v)) = abbreviation_of(argv[0].basename(), t, long) {
        return Some(match v {
            Some(v) => (None, Some(v.to_string())),
            None => ((i + 1 < argv.len()).then_some(i + 1), None),
        });
    }
    if !short.is_empty()
        && !t.starts_with("--")
        && let Some(v) = t.strip_prefix(short).filter(|v| !v.is_empty())
    {
        return Some((None, Some(v.to_string())));
    }
    None
}

/// `t` as the long option `long` of `program`, whole or abbreviated
/// ([`long_is`]): its name and its attached value, if any.
fn abbreviation_of<'t>(
    program: &str,
    t: &'t str,
    long: &str,
) -> Option<(&'t str, Option<&'t str>)> {
    // Most words are no long option: answered before looking for a `=`
    // (the name is a prefix of `t`, so it starts with `--` only if `t` does).
    if !t.starts_with("--") {
        return None;
    }
    let (name, v) = match t.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (t, None),
    };
    (name.starts_with("--") && long_is(program, name, long)).then_some((name, v))
}

/// Whether [`unknown_names_beneath`] may find a write in `argv`: the
/// program is one it reads and a word it reads is there (most `git`,
/// `cp` and `npm` commands have none). Cheap: the write-only shortcut of
/// [`super::accesses`] skips the words of every other command.
///
/// `name` is the basename of `argv[0]`, a static word.
pub(super) fn may_write_beneath(argv: &[Arg], name: &str) -> bool {
    let any = |f: &dyn Fn(&str) -> bool| argv.iter().skip(1).any(|a| !a.dynamic && f(&a.text));
    match name {
        // An extraction (`x`, `-x`, `--extract`): the cwd or `-C`'s directory.
        "tar" | "gtar" | "bsdtar" => {
            any(&|t| has_byte(t, b'x') || t.starts_with("--ext") || t == "--get")
        }
        "unzip" | "7z" | "7za" | "7zr" | "7zz" | "patch" | "gpatch" | "rsync" => true,
        "wget" => !wget_output_document(argv),
        "dpkg" | "dpkg-deb" => extracts_package(argv),
        "curl" => curl_remote_name(argv),
        "cp" | "gcp" => any(&|t| t.ends_with("/.") || has_byte(t, b'*')),
        "npm" | "pnpm" | "yarn" | "bun" => any(&|t| t.starts_with("--prefix")),
        "pip" | "pip3" | "uv" => any(&|t| {
            t.starts_with("--target")
                || t.starts_with("--prefix")
                || t.starts_with("--root")
                || t.starts_with("-t")
        }),
        "cargo" => any(&|t| t.starts_with("--root")),
        "gem" => any(&|t| {
            t.starts_with("--install-dir")
                || t.starts_with("--bindir")
                || t.starts_with("-i")
                || t.starts_with("-n")
        }),
        "git" => any(&|t| {
            matches!(t, "clone" | "init" | "worktree" | "bundle" | "-o")
                || t.starts_with("--output")
                || abbreviation_of("git", t, "--output").is_some()
                || t.starts_with("--work-tree")
                || t.starts_with("--separate-git-dir")
                || t.starts_with("--directory")
                || t.starts_with("-o")
        }),
        _ => false,
    }
}

/// Where a program writes names known only at run time beneath a
/// directory it names: archives extracted (`unzip -d D`, `7z x -oD`), a
/// patch applied in `patch -d D`, a directory's contents copied (`rsync -a
/// src/ D`, `cp -r src/. D`), a repository made or checked out (`git clone
/// URL D`, `git init D`, `git worktree add D`, `git --work-tree=D`),
/// packages installed under a prefix (`npm --prefix D`, `pip --target D`,
/// `cargo install --root D`, `gem install -i D`); and what git writes to a
/// file it is told (`git log --output=F`, `git archive -o F`).
pub(super) fn unknown_names_beneath(
    name: &str,
    argv: &[Arg],
    operands: &[usize],
    recursive: bool,
    beneath: &mut Vec<usize>,
    attached: &mut Vec<String>,
) {
    let by_option =
        |long: &str, short: &str, beneath: &mut Vec<usize>, attached: &mut Vec<String>| {
            let mut found = false;
            for i in 1..argv.len() {
                if let Some((word, value)) = option_at(argv, i, long, short) {
                    found = true;
                    beneath.extend(word);
                    attached.extend(value);
                }
            }
            found
        };
    match name {
        "unzip" => {
            let lists = argv[1..].iter().any(|a| {
                !a.dynamic
                    && a.text.starts_with('-')
                    && !a.text.starts_with("--")
                    && a.text[1..].contains(['l', 'v', 'c', 'p', 't', 'z', 'Z'])
            });
            if !lists && !by_option("--extract-dir", "-d", beneath, attached) {
                attached.push(".".to_string());
            }
        }
        "7z" | "7za" | "7zr" | "7zz" => {
            let extracts = operands
                .first()
                .and_then(|&i| argv[i].known())
                .is_some_and(|v| matches!(v, "x" | "e"));
            if extracts && !by_option("-o", "-o", beneath, attached) {
                attached.push(".".to_string());
            }
        }
        "patch" | "gpatch" => {
            by_option("--directory", "-d", beneath, attached);
        }
        // The contents of a directory (`src/`, `src/.`, `src/*`) land
        // beneath the target under their own names.
        "rsync" | "cp" | "gcp" if recursive || name == "rsync" => {
            let contents = operands[..operands.len().saturating_sub(1)]
                .iter()
                .any(|&i| {
                    let t = argv[i].text.as_str();
                    t.ends_with("/.") || name == "rsync" && t.ends_with('/') || argv[i].glob
                });
            if contents && let Some(&last) = operands.last() {
                beneath.push(last);
            }
        }
        "npm" | "pnpm" | "yarn" | "bun" => {
            by_option("--prefix", "", beneath, attached);
        }
        "pip" | "pip3" | "uv" => {
            by_option("--target", "-t", beneath, attached);
            by_option("--prefix", "", beneath, attached);
            by_option("--root", "", beneath, attached);
        }
        "cargo" => {
            by_option("--root", "", beneath, attached);
        }
        "gem" => {
            by_option("--install-dir", "-i", beneath, attached);
            by_option("--bindir", "-n", beneath, attached);
        }
        "git" => git_unknown_names(argv, beneath, attached),
        // `dpkg -x PKG DIR`, `dpkg-deb -R PKG DIR`: the package's files
        // beneath DIR.
        "dpkg" | "dpkg-deb" if extracts_package(argv) => {
            beneath.extend(operands.last());
        }
        // `curl -O URL`: the file is named by the URL (or the server, `-J`)
        // in `--output-dir` or the cwd; the URL's name is judged there too
        // (`curl -O …/.envrc`).
        "curl" if curl_remote_name(argv) => {
            let dir = option_value(argv, "--output-dir", "");
            if !by_option("--output-dir", "", beneath, attached) {
                attached.push(".".to_string());
            }
            attached.extend(url_names(argv, &dir, false, false));
        }
        // `wget URL`: the file is named by the URL, in `-P DIR` or the cwd
        // (with `-O FILE`, that file alone); with `-x` the URL's whole path
        // (and host, unless `-nH`) is made there.
        "wget" if !wget_output_document(argv) => {
            let dir = option_value(argv, "--directory-prefix", "-P");
            if !by_option("--directory-prefix", "-P", beneath, attached) {
                attached.push(".".to_string());
            }
            let has = |short: &str, long: &str| {
                argv[1..]
                    .iter()
                    .any(|a| a.is(short) || abbreviation_of("wget", &a.text, long).is_some())
            };
            let paths = has("-x", "--force-directories");
            let no_host = has("-nH", "--no-host-directories");
            attached.extend(url_names(argv, &dir, paths, no_host));
        }
        _ => {}
    }
}

/// The static value of an option (`--output-dir D`, `-PD`), or `.`.
fn option_value(argv: &[Arg], long: &str, short: &str) -> String {
    (1..argv.len())
        .find_map(|i| {
            option_at(argv, i, long, short).and_then(|(word, value)| {
                value.or_else(|| word.and_then(|w| argv[w].known().map(String::from)))
            })
        })
        .unwrap_or_else(|| ".".to_string())
}

/// The names a downloader gives the URLs among its operands, in `dir`:
/// the last component of the URL's path, or (`paths`) the whole path,
/// after the host unless `no_host`.
fn url_names(argv: &[Arg], dir: &str, paths: bool, no_host: bool) -> Vec<String> {
    argv[1..]
        .iter()
        .filter_map(|a| a.known()?.split_once("://").map(|(_, rest)| rest))
        .map(|rest| {
            let rest = rest.split(['?', '#']).next().unwrap_or(rest);
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            let name = match (paths, no_host) {
                (false, _) => path.rsplit('/').next().unwrap_or("").to_string(),
                (true, true) => path.to_string(),
                (true, false) => format!("{host}/{path}"),
            };
            format!("{}/{name}", dir.trim_end_matches('/'))
        })
        .filter(|n| !n.ends_with('/'))
        .collect()
}

/// dpkg's extracting actions (`-x`, `-X`, `--extract`, `--vextract`,
/// dpkg-deb's `-R`, `--raw-extract`).
fn extracts_package(argv: &[Arg]) -> bool {
    argv[1..].iter().any(|a| {
        !a.dynamic
            && (matches!(a.text.as_str(), "-x" | "-X" | "-R")
                || ["--extract", "--vextract", "--raw-extract"]
                    .iter()
                    .any(|l| abbreviation_of("dpkg", &a.text, l).is_some()))
    })
}

/// curl's `-O`/`--remote-name`/`--remote-name-all`, alone or in a cluster
/// of flags (`-sSLO`).
fn curl_remote_name(argv: &[Arg]) -> bool {
    argv[1..].iter().any(|a| {
        let t = a.text.as_str();
        !a.dynamic
            && (t.starts_with("--remote-name")
                || t.starts_with('-') && !t.starts_with("--") && t.contains('O'))
    })
}

/// wget's `-O FILE` (`--output-document`): the one file written, named.
fn wget_output_document(argv: &[Arg]) -> bool {
    argv[1..].iter().any(|a| {
        let t = a.text.as_str();
        a.dynamic
            || t.starts_with("--output-d")
            || t.starts_with('-') && !t.starts_with("--") && t.contains('O')
    })
}

/// git's options that take a value (as the next word) before and after
/// the subcommands read in [`git_unknown_names`].
const GIT_VALUES: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--namespace",
    "--exec-path",
    "--config-env",
    "-b",
    "-B",
    "--branch",
    "-o",
    "--origin",
    "-u",
    "--upload-pack",
    "--template",
    "--config",
    "--depth",
    "--reference",
    "--reference-if-able",
    "--shallow-since",
    "--shallow-exclude",
    "-j",
    "--jobs",
    "--filter",
    "--server-option",
    "--bundle-uri",
    "--reason",
    "--object-format",
    "--ref-format",
    "--initial-branch",
    "--shared",
];

fn git_unknown_names(argv: &[Arg], beneath: &mut Vec<usize>, attached: &mut Vec<String>) {
    let mut sub: Option<&str> = None;
    let mut positional: Vec<usize> = Vec::new();
    // `git -C D …` before the subcommand: where git's relative paths and
    // its `.` start (`git -C ~ init` makes `~/.git`).
    let mut c_dir: Option<String> = None;
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if sub.is_none()
            && t == "-C"
            && !a.dynamic
            && let Some(d) = argv.get(i + 1)
        {
            let d = d.text.trim_end_matches('/');
            c_dir = Some(match c_dir {
                Some(prev) if !d.starts_with('/') && !d.starts_with('~') => {
                    format!("{prev}/{d}")
                }
                _ => d.to_string(),
            });
        }
        if a.dynamic || !t.starts_with('-') || t == "-" {
            if sub.is_none() {
                sub = a.known();
            } else {
                positional.push(i);
            }
            i += 1;
            continue;
        }
        if t == "--" {
            break;
        }
        // `--work-tree=D` (global) and `--separate-git-dir=D` make a tree
        // or a git directory there.
        for long in ["--work-tree", "--separate-git-dir"] {
            if let Some((word, value)) = option_at(argv, i, long, "") {
                beneath.extend(word);
                attached.extend(value);
            }
        }
        // `--output=F`: the diff, log or archive written to F.
        let output_writes = matches!(
            sub,
            Some(
                "log"
                    | "show"
                    | "diff"
                    | "range-diff"
                    | "whatchanged"
                    | "diff-tree"
                    | "diff-files"
                    | "diff-index"
                    | "archive"
            )
        );
        if output_writes
            && let Some((word, value)) = option_at(
                argv,
                i,
                "--output",
                if sub == Some("archive") { "-o" } else { "" },
            )
        {
            beneath.extend(word);
            attached.extend(value);
        }
        // `git apply --directory=D`: the patch's paths beneath D.
        if sub == Some("apply")
            && let Some((word, value)) = option_at(argv, i, "--directory", "")
        {
            beneath.extend(word);
            attached.extend(value);
        }
        if sub == Some("format-patch")
            && let Some((word, value)) = option_at(argv, i, "--output-directory", "-o")
        {
            beneath.extend(word);
            attached.extend(value);
        }
        let takes_value = GIT_VALUES.contains(&t) && !(sub == Some("log") && t == "-o");
        i += if takes_value { 2 } else { 1 };
    }
    match sub {
        // `git clone URL DIR`: the last of two operands.
        Some("clone") if positional.len() >= 2 => beneath.extend(positional.last()),
        // `git init [D]`: D, or the cwd (or `-C`'s directory) itself.
        Some("init") => match (positional.first(), &c_dir) {
            (None, Some(c)) => attached.push(c.clone()),
            (None, None) => attached.push(".".to_string()),
            (Some(&p), Some(c))
                if !argv[p].dynamic
                    && !argv[p].text.starts_with('/')
                    && !argv[p].text.starts_with('~') =>
            {
                attached.push(format!("{c}/{}", argv[p].text));
            }
            (Some(&p), _) => beneath.push(p),
        },
        Some("worktree") if positional.first().is_some_and(|&p| argv[p].is("add")) => {
            beneath.extend(positional.get(1));
        }
        // `git bundle create FILE`.
        Some("bundle") if positional.first().is_some_and(|&p| argv[p].is("create")) => {
            beneath.extend(positional.get(1));
        }
        _ => {}
    }
}
