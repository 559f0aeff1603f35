//! Where a program writes through its options: the options whose value is
//! a written path, by program, and how they are spelled (an abbreviated
//! long option, `-t DIR` inside a cluster, `install -d`).

use crate::arg::Arg;

/// Options whose value is a path the program writes, by program.
pub(super) const WRITE_OPTIONS: &[(&str, &[&str])] = &[
    // `sort -o out`: the sorted output.
    ("sort", &["-o", "--output"]),
    // `curl -o out`, `-D headers`, `-c cookies`, `--trace file`: files curl writes.
    (
        "curl",
        &[
            "-o",
            "--output",
            "-D",
            "--dump-header",
            "-c",
            "--cookie-jar",
            "--trace",
            "--trace-ascii",
            "--libcurl",
            "--stderr",
            "--output-dir",
            "--etag-save",
            "--hsts",
            "--alt-svc",
        ],
    ),
    // `wget -O out`, `-o log`, `-a log`, `-P dir`: files wget writes.
    (
        "wget",
        &[
            "-O",
            "--output-document",
            "-o",
            "--output-file",
            "-a",
            "--append-output",
            "-P",
            "--directory-prefix",
            "--save-cookies",
            "--warc-file",
        ],
    ),
    // `less -o log`: less copies a piped input there (`-O` overwrites).
    ("less", &["-o", "--log-file", "-O", "--LOG-FILE"]),
    // `iconv -o out`: the converted output.
    ("iconv", &["-o", "--output"]),
    // `base64 -o out` (BSD and macOS): the encoded or decoded output.
    ("base64", &["-o", "--output"]),
    // `find -fprint f`: find writes its list there.
    ("find", &["-fprint", "-fprint0", "-fprintf", "-fls"]),
    // `git config --file f`: the config file written.
    ("git", &["--file", "-f"]),
    // `tar -f a.tar` when creating; see `tar_creates`.
    ("tar", &["-f", "--file"]),
];

/// Programs that take a long option by any unambiguous prefix (GNU
/// getopt_long, git's parse-options, less): `sort --out=f`,
/// `wget --output-doc=f`, `cp --t=DIR` are the options spelled out. curl
/// and find read their options only whole.
pub(super) fn abbreviates(name: &str) -> bool {
    !matches!(name, "curl" | "find")
}

/// Whether the long option `opt` as written (`--out`) names `full`
/// (`--output`) for `name`: whole, or an abbreviation of it.
pub(super) fn long_is(name: &str, opt: &str, full: &str) -> bool {
    opt == full || (opt.len() >= 3 && abbreviates(name) && full.starts_with(opt))
}

/// Short options of `cp`, `install`, `mv` and `ln` that take a value
/// (`-S SUFFIX`, install's `-m MODE`, `-o OWNER`, `-g GROUP`), so that a
/// `t` after one in a cluster is part of that value, not `-t DIR`.
pub(super) const TARGET_CLUSTER_VALUES: &[char] = &['S', 'm', 'o', 'g'];

/// `-t DIR` in a short-option cluster of a copier (`-rt.git/hooks`,
/// `-vt DIR`): `Some(attached value)` (empty when it is the next word).
pub(super) fn target_in_cluster(t: &str) -> Option<&str> {
    let letters = t.strip_prefix('-').filter(|l| !l.starts_with('-'))?;
    let at = letters.find(|c| c == 't' || TARGET_CLUSTER_VALUES.contains(&c))?;
    letters[at..].strip_prefix('t')
}

/// `install -d` (`-Dd`, `--directory`, `--dir`): its operands are
/// directories it makes, as `mkdir`'s are.
pub(super) fn makes_directories(args: &[Arg]) -> bool {
    args.iter().take_while(|a| !a.is("--")).any(|a| {
        let t = a.text.as_str();
        !a.dynamic
            && (long_is("install", t, "--directory")
                || t.strip_prefix('-').is_some_and(|l| {
                    !l.starts_with('-')
                        && l.split(TARGET_CLUSTER_VALUES)
                            .next()
                            .is_some_and(|l| l.contains('d'))
                }))
    })
}
