//! POLICY.md, "Spelling does not change meaning", points 6, 7, 8 and 12 as
//! a table: deny templates by meaning (recursive removal of `/`, the home
//! or its parent in any spelling of `-r` and of the path; recursive
//! permission changes of `/`; writing a block device by any program or path
//! spelling; `find` removing from `/`; fork bombs in any shape; operands
//! read from stdin), globs judged by what they can match, kernel aliases
//! (`/proc/self/root`, `/proc/self/cwd`, `/dev/fd/N`), and recursion
//! reaching the mounts below a directory. Each class has rows that must
//! stay auto-approved beside the rows that must not.
//!
//! Every row allows every command (`Bash(*)`), so a verdict other than
//! `auto_approve` comes from a template, the scope, or an opaque segment.
//! Where bash decides (what a glob matches), `globs_match_as_bash_does`
//! asks real bash.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::Verdict;
use berth_policy::case::{Case, CaseMount, CaseRules};

use crate::table::{ASK, AUTO, DENY};

/// Where the row runs.
#[derive(Clone, Copy, Debug)]
enum F {
    /// The host: `/work` in scope, everything else outside.
    Host,
    /// A container with the project mount only: every path in scope.
    Box,
    /// A container with the project, a host mount out of scope at
    /// `/srv/git` and one in scope at `/state/agents`.
    Mounts,
}
use F::*;

/// (command, frame, cwd (default `/work`), verdict).
type Row = (&'static str, F, Option<&'static str>, Verdict);

fn decide(row: &Row) -> berth_policy::Decision {
    let (cmd, frame, cwd, _) = *row;
    let mount = |target: &str, project: bool, in_scope: bool| CaseMount {
        target: target.to_string(),
        project,
        host: !project,
        in_scope,
    };
    let case = Case {
        command: Some(cmd.to_string()),
        rules: Some(CaseRules {
            allow: vec!["Bash(*)".to_string()],
            ask: Vec::new(),
            deny: Vec::new(),
        }),
        mode: Some("manual".to_string()),
        frame: Some(
            match frame {
                Host => "host",
                Box | Mounts => "container",
            }
            .to_string(),
        ),
        mounts: match frame {
            Mounts => Some(vec![
                mount("/work", true, true),
                mount("/srv/git", false, false),
                mount("/state/agents", false, true),
            ]),
            _ => None,
        },
        cwd: cwd.map(str::to_string),
        ..Case::default()
    };
    case.inputs().unwrap().decide()
}

fn check(table: &[Row]) {
    crate::table::check_by(
        table,
        decide,
        |r| r.3,
        |r| format!("{:?} ({:?}, cwd {:?})", r.0, r.1, r.2),
    );
}

#[rustfmt::skip]
const RECURSIVE_REMOVAL: &[Row] = &[
    // every spelling of -r
    ("rm --recu --force ~", Box, None, DENY),
    ("rm --rec -f /", Box, None, DENY),
    ("rm --r /", Box, None, DENY),
    ("rm --recursive=x /", Box, None, DENY),
    ("rm -Rf /", Box, None, DENY),
    ("rm -fR /", Box, None, DENY),
    ("rm -f -R /", Box, None, DENY),
    ("rm -vfr -- /", Box, None, DENY),
    ("rm / -rf", Box, None, DENY),
    ("sudo rm --recursive /*", Box, None, DENY),
    // every glob of /'s children
    ("rm -rf /**", Box, None, DENY),
    ("rm -rf /*", Box, None, DENY),
    ("rm -rf /?*", Box, None, DENY),
    ("rm -rf /[!.]*", Box, None, DENY),
    ("rm -rf /[^.]*", Box, None, DENY),
    ("rm -rf /.[!.]*", Box, None, DENY),
    ("rm -rf /[a-z]*", Box, None, DENY),
    ("rm -rf /h*", Box, None, DENY),
    ("rm -rf /ho?e", Box, None, DENY),
    ("rm -rf /*/agent", Box, None, DENY),
    ("cd / && rm -rf ./*", Box, None, DENY),
    ("cd / && rm -rf .[!.]*", Box, None, DENY),
    // a glob that may reach some child of / is not auto-approved
    ("rm -rf /u*", Box, None, DENY), // it matches /usr
    // Moving it away is removing it by another name.
    ("mv ~ /tmp/old-home", Box, None, DENY),
    ("mv -t /tmp /usr", Box, None, DENY),
    ("mv /etc /etc.bak", Box, None, DENY),
    ("mv build /tmp/old-build", Box, None, AUTO),
    ("mv -S.txt notes /usr", Box, None, AUTO), // into /usr: `.txt` is the suffix, not `-t`
    ("mv -vt /tmp /etc", Box, None, DENY),
    ("mv ~/notes.txt ~/old.txt", Box, None, AUTO),
    ("mv \"$f\" \"$f.bak\"", Box, None, AUTO),
    ("rm -rf /x*", Box, None, ASK),
    ("rm -fr /usr", Box, None, DENY),
    ("rm -r -f /etc", Box, None, DENY),
    ("rm -rf /var/lib", Box, None, DENY),
    ("rm -rf /var/lib/app/cache", Box, None, AUTO),
    ("rm -rf /usr/local/share/app", Box, None, AUTO),
    ("rm -rf /t[m]p", Box, None, ASK),
    // the home and its parent
    ("rm -rf ~/..", Box, None, DENY),
    ("rm -rf $HOME/..", Box, None, DENY),
    ("rm -rf /home/agent/..", Box, None, DENY),
    ("rm -rf /home", Box, None, DENY),
    ("rm -rf /home/", Box, None, DENY),
    ("rm -rf /home/*", Box, None, DENY),
    ("rm -rf ~/*", Box, None, DENY),
    ("rm -rf ~/.[!.]*", Box, None, DENY),
    ("rm -rf ../..", Box, Some("/home/agent/x"), DENY),
    ("cd ~/x && rm -rf ../", Box, None, DENY),
    // kernel aliases of /
    ("rm -rf /proc/self/root", Box, None, DENY),
    ("rm -rf /proc/self/root/", Box, None, DENY),
    ("rm -rf /proc/1/root/*", Box, None, DENY),
    ("rm -rf /proc/thread-self/root/..", Box, None, DENY),
    ("rm -rf /proc/self/task/1/root", Box, None, DENY),
    ("rm -rf /proc/*/root", Box, None, DENY),
    ("rm -rf /proc/self/cwd/..", Box, None, DENY),
    ("rm -rf /proc/1/cwd", Box, None, ASK),
    ("rm -rf /proc/$$/root", Box, None, ASK),
    // an option that cannot be read may be -r
    ("rm $FLAGS /", Box, None, ASK),
    ("rm \"$@\" ~", Box, None, ASK),
    ("rm -rf \"$X\"", Box, None, ASK),
    ("rm -rf /tmp/$X", Box, None, ASK),
    ("rm -rf \"build/${X}\"", Box, None, ASK),
    ("rm -rf ~agent", Box, None, DENY),
    ("rm -rf ~agent/..", Box, None, DENY),
    // operands read from stdin or a file are not provable
    ("echo / | xargs rm -rf", Box, None, DENY),
    ("printf '/\\n' | xargs rm -rf", Box, None, DENY),
    ("echo build ~ | xargs -r rm -rf", Box, None, DENY),
    ("cat list.txt | xargs rm -rf", Box, None, ASK),
    ("echo \"'/'\" | xargs rm -rf", Box, None, ASK),
    ("find . -name node_modules | xargs rm -rf", Box, None, ASK),
    ("xargs -a list.txt rm -rf", Box, None, ASK),
    ("xargs rm -r < list.txt", Box, None, ASK),
    ("echo / | xargs -I{} rm -rf {}", Box, None, ASK),
    ("echo / | xargs -I % sh -c 'rm -rf %'", Box, None, ASK),
    // find removing from / or the home
    ("find / -mindepth 1 -exec rm -rf {} +", Box, None, DENY),
    ("find / -exec rm {} \\;", Box, None, DENY),
    ("find ~ -execdir rm -rf {} +", Box, None, DENY),
    ("find /proc/self/root -delete", Box, None, DENY),
    ("find -L / -mindepth 1 -delete", Box, None, DENY),
    ("find /home -maxdepth 1 -ok rm -r {} \\;", Box, None, DENY),
    ("find . -maxdepth 0 -exec rm -rf {}/.. \\;", Box, None, DENY),
    // recursive permission changes of /
    ("chmod -R 777 /proc/self/root", Box, None, DENY),
    ("chown -R nobody:nogroup /", Box, None, DENY),
    ("chown --rec nobody //", Box, None, DENY),
    ("chmod --recursive 755 /*", Box, None, DENY),
    ("chgrp -Rv staff /", Box, None, DENY),
    ("find / -exec chmod -R 777 {} +", Box, None, DENY),
    // must stay auto-approved
    ("rm -rf build/", Box, None, AUTO),
    ("rm -rf ./node_modules", Box, None, AUTO),
    ("rm -rf target dist .cache", Box, None, AUTO),
    ("rm -rf /work/build", Box, None, AUTO),
    ("rm -rf /tmp/scratch", Box, None, AUTO),
    ("rm -rf ~/.cache/pip", Box, None, AUTO),
    ("rm -rf *.egg-info", Box, None, AUTO),
    ("rm -f /tmp/*.log", Box, None, AUTO),
    ("rm -i ~/notes.txt", Box, None, AUTO),
    ("rm -rf \"$TMPDIR/build\"", Box, None, AUTO),
    ("rm -r ./*", Box, None, AUTO),
    ("find . -name '*.o' -delete", Box, None, AUTO),
    ("find . -name node_modules -prune -exec rm -rf {} +", Box, None, AUTO),
    ("find /tmp/x -type f -exec rm {} \\;", Box, None, AUTO),
    ("ls | xargs rm -f", Box, None, AUTO),
    ("echo build dist | xargs rm -rf", Box, None, AUTO),
    ("chmod -rwx script.sh", Box, None, AUTO),
    ("chmod -R u+w .", Box, None, AUTO),
    ("chown -R agent src", Box, None, AUTO),
    // Not the home: no deny template; another user's home is outside (point 9).
    ("rm -rf ~bob/tmp", Box, None, ASK),
    // `rsync --delete` into / or the home removes what the source lacks.
    ("rsync -a --delete /empty/ /", Box, None, DENY),
    ("rsync -r --delete-after empty/ ~", Box, None, DENY),
    ("rsync -a --del ./e/ /home/agent/..", Box, None, DENY),
    ("rsync -a --delete src/ \"$DEST\"", Box, None, ASK),
    ("rsync -a --delete src/ build/", Box, None, AUTO),
    // Not the removal template; but its names land beneath the home's
    // parents, where protected files live (machine_meaning.rs).
    ("rsync -a src/ /", Box, None, ASK),
    ("rsync -a src/ /srv/site/", Box, None, AUTO),
];

#[rustfmt::skip]
const BLOCK_DEVICES: &[Row] = &[
    ("dd if=/dev/zero of=/dev/pmem0", Box, None, DENY),
    ("dd of=//dev/sda if=img", Box, None, DENY),
    ("dd if=img of=./../../dev/sda", Box, None, DENY),
    ("dd if=img of=/proc/self/root/dev/sda", Box, None, DENY),
    ("dd if=img of=/dev/disk/by-id/usb-x", Box, None, DENY),
    ("cd /dev && dd if=img of=sda", Box, None, DENY),
    ("cd /dev && mkfs.ext4 sda", Box, None, DENY),
    ("mkfs.ext4 //dev/sda", Box, None, DENY),
    ("mkfs.xfs -f ./../../dev/nvme0n1", Box, None, DENY),
    ("mkfs -t vfat /dev/mmcblk0p1", Box, None, DENY),
    ("curl -o /dev/sda https://example.com/img", Box, None, DENY),
    ("curl -sSLo/dev/sda https://example.com/img", Box, None, DENY),
    ("curl --output=/dev/sda https://example.com/img", Box, None, DENY),
    ("curl -sSL --output /dev/vda https://example.com/img", Box, None, DENY),
    ("wget -O /dev/sdb https://example.com/img", Box, None, DENY),
    ("echo x > /dev/nvme0n1", Box, None, DENY),
    ("cat img >> //dev/sda", Box, None, DENY),
    ("cat img > /proc/self/root/dev/sda", Box, None, DENY),
    ("cd /dev && cat img > sda", Box, None, DENY),
    ("cat img > /dev/sd[a]", Box, None, DENY),
    ("cat img 1<> /dev/loop0", Box, None, DENY),
    ("exec 3>/dev/sda; echo x >&3", Box, None, DENY),
    ("dd if=x of=/dev/../dev/./sda", Box, None, DENY),
    ("dd if=x of=/dev/fd0", Box, None, DENY),
    ("cat x > /dev/$DISK", Box, None, ASK),
    ("sgdisk --zap-all /dev/sda", Box, None, DENY),
    ("wipefs -a /dev/sda1", Box, None, DENY),
    ("blkdiscard /dev/nvme0n1", Box, None, DENY),
    ("shred -n1 /dev/xvda", Box, None, DENY),
    ("cp disk.img /dev/mmcblk0", Box, None, DENY),
    ("tee /dev/dm-0 < img", Box, None, DENY),
    ("sudo dd if=img of=/dev/mapper/root", Box, None, DENY),
    // a device that cannot be known
    ("mkfs.ext4 $DEV", Box, None, ASK),
    ("dd if=img of=$OUT", Box, None, ASK),
    ("cd \"$X\" && dd if=img of=sda", Box, None, ASK),
    ("flashtool /dev/sda", Box, None, ASK),
    // must stay auto-approved
    ("dd if=a of=b", Box, None, AUTO),
    ("dd if=/dev/zero of=disk.img bs=1M count=16", Box, None, AUTO),
    ("dd if=/dev/urandom of=/tmp/key bs=32 count=1", Box, None, AUTO),
    ("cat /dev/null > log", Host, None, AUTO),
    ("echo hi > /dev/stdout", Host, None, AUTO),
    ("echo hi 2> /dev/tty", Host, None, AUTO),
    ("head -c 16 /dev/urandom > key", Host, None, AUTO),
    ("mkfs.ext4 -F disk.img", Box, None, AUTO),
    ("curl -o out.html https://example.com", Box, None, AUTO),
    ("curl -sSLo /tmp/x.tgz https://example.com/x.tgz", Box, None, AUTO),
    ("lsblk /dev/sda", Box, None, AUTO),
    ("fdisk -l /dev/sda", Box, None, AUTO),
    ("ls -l /dev/sd*", Box, None, AUTO),
    ("tee out.log < input", Box, None, AUTO),
    ("make 2>&1 | tee \"$LOG\"", Box, None, AUTO),
    ("ls src/dev/", Box, None, AUTO),
    ("cat x > /dev/fd/1", Box, None, AUTO),
];

#[rustfmt::skip]
const FORK_BOMBS: &[Row] = &[
    (":(){ :|:& };:", Box, None, DENY),
    ("f(){ f|f& }; f", Box, None, DENY),
    ("f(){ f <(f); }; f", Box, None, DENY),
    ("f(){ echo $(f); }; f", Box, None, DENY),
    ("f(){ echo `f`; }; f", Box, None, DENY),
    ("f(){ coproc f; }; f", Box, None, DENY),
    ("f(){ coproc { f; }; }; f", Box, None, DENY),
    ("f(){ (f); f; }; f", Box, None, DENY),
    ("f(){ f & f; }; f", Box, None, DENY),
    ("a(){ b|b& }; b(){ a; }; a", Box, None, DENY),
    ("a(){ b; }; b(){ a|a& }; a", Box, None, DENY),
    ("function g { g | g & }; g", Box, None, DENY),
    // must stay auto-approved
    ("f(){ echo hi; }; f | cat", Box, None, AUTO),
    ("f(){ ls; }; f & wait", Box, None, AUTO),
    ("f(){ echo $(date); }; f", Box, None, AUTO),
    ("f(){ f|f& }; echo never called", Box, None, AUTO),
    ("a(){ ls; }; b(){ a | a; }; b", Box, None, AUTO),
];

#[rustfmt::skip]
const GLOBS: &[Row] = &[
    // in a subcommand position: opaque
    ("git p?sh", Box, None, ASK),
    ("git pus[h] origin main", Box, None, ASK),
    ("git -C . p* origin", Box, None, ASK),
    ("npm publis?", Box, None, ASK),
    ("kubectl -n prod ap*ly -f k.yaml", Box, None, ASK),
    ("timeout 60 cargo pub*", Box, None, ASK),
    ("gh pr cr*", Box, None, ASK),
    ("docker compose p*sh", Box, None, ASK),
    ("gcloud run d?ploy", Box, None, ASK),
    ("aws s3 r? s3://bucket/x", Box, None, ASK),
    // in a path: the static prefix is judged
    ("cat /s*/git/p.git/config", Mounts, None, ASK),
    ("cat /srv/g?t/p.git/config", Mounts, None, ASK),
    ("cat /*/*/root/srv/git/p.git/config", Mounts, None, ASK),
    ("cat /proc/*/root/srv/git/p.git/config", Mounts, None, ASK),
    ("cat /s*/git/p.git/config", Box, None, AUTO),
    ("ls /t*", Mounts, None, AUTO),
    ("cat /wo*", Host, None, ASK),
    ("cat ../*", Host, None, ASK),
    ("cat ../w*/x", Host, None, ASK),
    ("cat /work/*/../../etc/passwd", Host, None, ASK),
    // must stay auto-approved
    ("ls *.rs", Host, None, AUTO),
    ("cat *.md", Host, None, AUTO),
    ("cat .e*", Host, None, AUTO),
    ("ls /work/src/*.rs", Host, None, AUTO),
    ("wc -l src/**/*.rs", Host, None, AUTO),
    ("git add *.rs", Box, None, AUTO),
    ("git add *", Box, None, AUTO),
    ("cargo run -- *.txt", Box, None, AUTO),
    ("go run *.go", Box, None, AUTO),
    ("gh pr list", Box, None, AUTO),
    ("aws s3 cp s3://bucket/ . --recursive --exclude '*' --include '*.txt'", Box, None, AUTO),
    ("git checkout -- *.rs", Box, None, AUTO),
    ("git status", Box, None, AUTO),
    ("cargo test -- --nocapture", Box, None, AUTO),
    ("npm run build", Box, None, AUTO),
    ("find . -name '*.rs'", Host, None, AUTO),
];

#[rustfmt::skip]
const KERNEL_ALIASES: &[Row] = &[
    ("cat /proc/self/root/srv/git/p.git/config", Mounts, None, ASK),
    ("cat /proc/1/root/srv/git/p.git/config", Mounts, None, ASK),
    ("cat /proc/thread-self/root/srv/git/x", Mounts, None, ASK),
    ("cat /proc/self/root/etc/passwd", Host, None, ASK),
    ("cd /proc/self/root/srv/git && cat p.git/config", Mounts, None, ASK),
    ("cat /proc/self/cwd/../etc/passwd", Host, None, ASK),
    ("cat /proc/1/cwd/x", Box, None, ASK),
    ("cat /proc/42/cwd", Box, None, ASK),
    ("cat /dev/fd/5", Host, None, ASK),
    ("cat /proc/self/fd/7", Host, None, ASK),
    // must stay auto-approved
    ("cat /proc/self/cwd/src/main.rs", Host, None, AUTO),
    ("cd /proc/self/cwd && cat x", Host, None, AUTO),
    ("ls /proc/self/cwd/*", Host, None, AUTO),
    ("cd /proc/1/cwd && cat x", Box, None, ASK),
    ("cat /proc/self/root/work/README.md", Host, None, AUTO),
    ("cat /proc/self/status", Box, None, AUTO),
    ("diff <(ls a) <(ls b)", Host, None, AUTO),
    ("cat /dev/fd/0", Host, None, AUTO),
    ("echo x > /dev/fd/2", Host, None, AUTO),
];

#[rustfmt::skip]
const RECURSION_BELOW: &[Row] = &[
    ("rm -rf /srv", Mounts, None, ASK),
    ("rm -r /srv/", Mounts, None, ASK),
    ("cd /srv && rm -rf .", Mounts, None, ASK),
    ("grep -r x /", Mounts, None, ASK),
    ("grep -R --include='*.c' x /srv", Mounts, None, ASK),
    ("grep -d recurse x /srv", Mounts, None, ASK),
    ("rg password /", Mounts, None, ASK),
    ("find / -name config", Mounts, None, ASK),
    ("find /srv -exec cat {} +", Mounts, None, ASK),
    ("du -sh /srv", Mounts, None, ASK),
    ("tar czf /tmp/x.tgz /srv", Mounts, None, ASK),
    ("tar -c -f /tmp/x.tar /", Mounts, None, ASK),
    ("cp -r /srv /tmp/copy", Mounts, None, ASK),
    ("cp -a / /tmp/copy", Mounts, None, ASK),
    ("chmod -R 755 /srv", Mounts, None, ASK),
    ("chown -R agent /srv", Mounts, None, ASK),
    ("ls -R /srv", Mounts, None, ASK),
    ("zip -r x.zip /srv", Mounts, None, ASK),
    ("rsync -a /srv /tmp/x", Mounts, None, ASK),
    ("grep -rl x ../..", Mounts, None, ASK),
    ("cat /srv/gi*", Mounts, None, ASK),
    ("rm -rf /s*", Mounts, None, DENY), // it matches /sbin and /sys
    ("cd / && rm -rf srv", Mounts, None, ASK),
    ("cd /srv && grep -r password", Mounts, None, ASK),
    ("cd / && du", Mounts, None, ASK),
    // must stay auto-approved
    ("rm -rf /srv", Box, None, AUTO),
    ("rm -rf /state", Mounts, None, AUTO),
    ("rm -rf build/", Mounts, None, AUTO),
    ("grep -r TODO src", Mounts, None, AUTO),
    ("grep -rn TODO .", Mounts, None, AUTO),
    ("grep x /srv", Mounts, None, AUTO),
    ("ls /srv", Mounts, None, AUTO),
    ("cp /srv/a.txt /tmp", Mounts, None, AUTO),
    ("find . -name '*.o' -delete", Mounts, None, AUTO),
    ("du -sh .", Mounts, None, AUTO),
    ("tar xzf x.tgz -C /tmp", Mounts, None, AUTO),
    ("rg TODO", Mounts, None, AUTO),
    ("ls -d /s*", Mounts, None, AUTO),
    ("grep -r x /srv/gitx", Mounts, None, AUTO),
];

#[test]
fn recursive_removal_by_meaning() {
    check(RECURSIVE_REMOVAL);
}

#[test]
fn block_devices_by_meaning() {
    check(BLOCK_DEVICES);
}

#[test]
fn fork_bombs_in_any_shape() {
    check(FORK_BOMBS);
}

#[test]
fn globs_by_what_they_can_match() {
    check(GLOBS);
}

#[test]
fn kernel_aliases_are_known() {
    check(KERNEL_ALIASES);
}

#[test]
fn recursion_reaches_what_lies_below() {
    check(RECURSION_BELOW);
}

/// `component_matches` answers as bash's pathname expansion does: names
/// are created in an empty directory and bash expands each pattern there
/// (leading dots, `[!…]`, `[^…]`, ranges, classes, an unclosed `[`).
#[test]
fn globs_match_as_bash_does() {
    use berth_policy::scope::component_matches;
    const NAMES: &[&str] = &[
        "home", "usr", "srv", "tmp", ".hidden", ".x", "a1", "Z", "[x", "ab-c", "proc", "self",
        "123",
    ];
    const PATTERNS: &[&str] = &[
        "*",
        "?*",
        "[!.]*",
        "[^.]*",
        ".[!.]*",
        ".*",
        "[a-z]*",
        "h*",
        "ho?e",
        "*s*",
        "[[:digit:]]*",
        "[[:upper:]]",
        "[x",
        "?",
        "[!a-z]*",
        "a[0-9]",
        "*-*",
        "[a-c]b-c",
        "s[e]lf",
        "**",
    ];
    let Ok(dir) = tempdir() else { return };
    for n in NAMES {
        std::fs::write(dir.join(n), b"").unwrap();
    }
    for p in PATTERNS {
        let out = std::process::Command::new("bash")
            .arg("--norc")
            .arg("-c")
            .arg("shopt -s nullglob; for f in $1; do printf '%s\\n' \"$f\"; done")
            .arg("bash")
            .arg(p)
            .current_dir(&dir)
            .output();
        let Ok(out) = out else { return }; // no bash here
        let mut bash: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        bash.sort();
        let mut ours: Vec<String> = NAMES
            .iter()
            .filter(|n| component_matches(p, n))
            .map(|n| n.to_string())
            .collect();
        ours.sort();
        assert_eq!(ours, bash, "pattern {p:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempdir() -> std::io::Result<std::path::PathBuf> {
    let d = std::env::temp_dir().join(format!("berth-globs-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}
