//! POLICY.md "Spelling does not change meaning", point 2: options are read
//! as the program reads them. Each row is a command line, the rules (allow,
//! ask, deny), the mode, the frame and the verdict the contract gives:
//! abbreviated long options, short clusters, attached values, `--`, global
//! options before a subcommand and aliases, per class (wrappers,
//! deny-template programs, program-running programs, privileged tools),
//! with the common spellings that must stay auto-approved.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::table::{ASK, AUTO, DENY, F, M, Row, check};

use F::*;
use M::{Auto as AutoMode, Manual};

#[test]
fn options_read_as_programs_read_them() {
    check(TABLE);
}

#[rustfmt::skip]
const TABLE: &[Row] = &[
    // Wrappers: abbreviated long options, clusters and attached values find
    // the command they run.
    ("env --sp='git push origin main'", &["env", "git"], &[], &[], AutoMode, Container, ASK),
    ("env -vS'git push origin main'", &["env", "git"], &[], &[], AutoMode, Container, ASK),
    ("env --split-s='rm -rf /'", &["env", "rm"], &[], &[], AutoMode, Container, DENY),
    ("env -iS'rm -rf x'", &["env"], &[], &["rm"], AutoMode, Container, DENY),
    ("env --ch=/tmp rm x", &["env"], &[], &["rm"], AutoMode, Container, DENY),
    ("timeout --kill 5 10 rm -rf /work/src", &["timeout", "rm"], &[], &["rm"], AutoMode, Container, DENY),
    ("timeout --sig=KILL 5 rm x", &["timeout"], &[], &["rm"], AutoMode, Container, DENY),
    ("timeout -sKILL 5 rm x", &["timeout"], &[], &["rm"], AutoMode, Container, DENY),
    ("nice -n5 rm x", &["nice"], &[], &["rm"], AutoMode, Container, DENY),
    ("nice -10 rm x", &["nice"], &[], &["rm"], AutoMode, Container, DENY),
    ("nice --adj=5 rm x", &["nice"], &[], &["rm"], AutoMode, Container, DENY),
    ("stdbuf -oL -eL rm x", &["stdbuf"], &[], &["rm"], AutoMode, Container, DENY),
    ("setsid -fw rm x", &["setsid"], &[], &["rm"], AutoMode, Container, DENY),
    ("ionice -c3 rm x", &["ionice"], &[], &["rm"], AutoMode, Container, DENY),
    ("chrt -r 5 rm x", &["chrt"], &[], &["rm"], AutoMode, Container, DENY),
    ("taskset -c 1 rm x", &["taskset"], &[], &["rm"], AutoMode, Container, DENY),
    ("xargs --max-a 1 rm", &["xargs"], &[], &["rm"], AutoMode, Container, DENY),
    ("xargs -n1 -P4 rm", &["xargs"], &[], &["rm"], AutoMode, Container, DENY),
    ("xargs -I{} rm {}", &["xargs"], &[], &["rm"], AutoMode, Container, DENY),
    ("flock --time 5 /tmp/l rm x", &["flock"], &[], &["rm"], AutoMode, Container, DENY),
    ("flock -w5 /tmp/l -c 'rm x'", &["flock"], &[], &["rm"], AutoMode, Container, DENY),
    ("watch -n1 'rm x'", &["watch"], &[], &["rm"], AutoMode, Container, DENY),
    ("watch --int 1 -x rm x", &["watch"], &[], &["rm"], AutoMode, Container, DENY),
    ("sudo -k rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("sudo --us=root rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("sudo -Eu root rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("doas -u root rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("su -c'rm -rf /work/src' root", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("su -lc 'rm -rf /work/src'", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("su root -c 'rm x'", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("su --comm='rm x' root", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("runuser -u bob -- rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("unshare -rm rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("nsenter -t 1 -m rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("npx -c 'rm x'", &["npx"], &[], &["rm"], AutoMode, Container, DENY),
    ("npx --call='rm x'", &["npx"], &[], &["rm"], AutoMode, Container, DENY),
    ("eval -- rm -rf /", &["eval", "rm"], &[], &[], AutoMode, Container, DENY),
    ("eval -- git push origin main", &["eval", "git"], &[], &[], AutoMode, Container, ASK),
    ("bash -o pipefail -c 'rm -rf /'", &["bash", "rm"], &[], &[], AutoMode, Container, DENY),
    ("bash -ec 'rm x'", &["bash"], &[], &["rm"], AutoMode, Container, DENY),
    ("script -qc 'rm x' /dev/null", &["script"], &[], &["rm"], AutoMode, Container, DENY),
    ("script --comm='rm x' /dev/null", &["script"], &[], &["rm"], AutoMode, Container, DENY),
    ("hyperfine -p'rm x' ls", &["hyperfine", "ls"], &[], &["rm"], AutoMode, Container, DENY),
    ("hyperfine --prepare='rm x' ls", &["hyperfine", "ls"], &[], &["rm"], AutoMode, Container, DENY),
    ("nodemon -x'rm x'", &["nodemon"], &[], &["rm"], AutoMode, Container, DENY),
    // Options the model does not know, and options that name a program.
    ("timeout --bogus 5 rm -rf /", &["timeout", "rm"], &[], &[], AutoMode, Container, DENY),
    ("sudo --frob rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("env --frob rm -rf /", &["env", "rm"], &[], &[], AutoMode, Container, DENY),
    ("xargs --frob rm x", &["xargs"], &[], &["rm"], AutoMode, Container, DENY),
    ("nice --frob ls", &["nice", "ls"], &[], &[], Manual, Container, ASK),
    ("hyperfine -Sbash ls", &["hyperfine", "ls"], &[], &[], AutoMode, Container, ASK),
    ("env --frobnicate ls", &["env", "ls"], &[], &[], AutoMode, Container, ASK),
    ("timeout --bogus 5 ls", &["timeout", "ls"], &[], &[], AutoMode, Container, ASK),
    ("xargs --frob ls", &["xargs", "ls"], &[], &[], AutoMode, Container, ASK),
    ("eval -x ls", &["eval", "ls"], &[], &[], AutoMode, Container, ASK),
    ("su -s /tmp/evil -c ls", &["su", "ls"], &[], &[], AutoMode, Container, ASK),
    ("bash $X -c 'ls'", &["bash", "ls"], &[], &[], AutoMode, Container, ASK),
    ("bash --rcf x -c ls", &["bash", "ls"], &[], &[], AutoMode, Container, ASK),
    ("bash --frob -c ls", &["bash", "ls"], &[], &[], AutoMode, Container, ASK),
    ("fish -C 'rm x' -c ls", &["fish", "ls"], &[], &[], AutoMode, Container, ASK),
    ("npx --shell=/tmp/evil -c ls", &["npx", "ls"], &[], &[], AutoMode, Container, ASK),
    // Wrappers: the usual spellings stay auto-approved.
    ("env FOO=1 make test", &["env", "make"], &[], &[], Manual, Container, AUTO),
    ("env -u HOME ls", &["env", "ls"], &[], &[], Manual, Container, AUTO),
    ("env -i FOO=1 ls", &["env", "ls"], &[], &[], Manual, Container, AUTO),
    ("timeout 60 cargo test", &["timeout", "cargo"], &[], &[], Manual, Container, AUTO),
    ("timeout --kill-after 5m 30s cargo test", &["timeout", "cargo"], &[], &[], Manual, Container, AUTO),
    ("timeout -s INT 5s sleep 10", &["timeout", "sleep"], &[], &[], Manual, Container, AUTO),
    ("nice -n 10 make", &["nice", "make"], &[], &[], Manual, Container, AUTO),
    ("nohup make", &["nohup", "make"], &[], &[], Manual, Container, AUTO),
    ("xargs -0 -n 1 gzip", &["xargs", "gzip"], &[], &[], Manual, Container, AUTO),
    ("xargs -I _ cp _ /tmp/backup/", &["xargs", "cp"], &[], &[], Manual, Container, AUTO),
    ("bash -c 'ls -l'", &["bash", "ls"], &[], &[], Manual, Container, AUTO),
    ("bash -lc 'cargo test'", &["bash", "cargo"], &[], &[], Manual, Container, AUTO),
    ("sh -e -c ls", &["sh", "ls"], &[], &[], Manual, Container, AUTO),
    ("npx --no-install eslint src/", &["npx", "eslint"], &[], &[], Manual, Container, AUTO),
    ("npx --package eslint eslint", &["npx", "eslint"], &[], &[], Manual, Container, AUTO),
    ("watch -n 1 ls", &["watch", "ls"], &[], &[], Manual, Container, AUTO),
    ("flock /tmp/l make", &["flock", "make"], &[], &[], Manual, Container, AUTO),
    ("script -q -c 'cargo test' /dev/null", &["script", "cargo"], &[], &[], Manual, Container, AUTO),
    // Deny-template programs: every spelling of recursive, unknown options opaque.
    ("rm --recu --force ~", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm --recursive --force /", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -f --rec /", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm / -r", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("chmod --recu 777 /", &["chmod"], &[], &[], AutoMode, Container, DENY),
    ("chown --rec nobody /", &["chown"], &[], &[], AutoMode, Container, DENY),
    ("rm --frobnicate x", &["rm"], &[], &[], AutoMode, Container, ASK),
    ("chmod --frob 644 x", &["chmod"], &[], &[], AutoMode, Container, ASK),
    ("rm -f build.log", &["rm"], &[], &[], Manual, Container, AUTO),
    ("rm -d coverage", &["rm"], &[], &[], Manual, Container, AUTO),
    ("rm --interactive core", &["rm"], &[], &[], Manual, Container, AUTO),
    ("chmod -R g+w,o+w src", &["chmod"], &[], &[], Manual, Container, AUTO),
    ("chmod -w notes.txt", &["chmod"], &[], &[], Manual, Container, AUTO),
    ("chmod 755 run.sh", &["chmod"], &[], &[], Manual, Container, AUTO),
    // Program-running programs: options by their meaning.
    ("tar -xf a.tar --to-com='sh -c x'", &["tar"], &[], &[], AutoMode, Container, ASK),
    ("tar --use-comp=./evil -cf a.tar src", &["tar"], &[], &[], AutoMode, Container, ASK),
    ("tar -cIevil -f a.tar src", &["tar"], &[], &[], AutoMode, Container, ASK),
    ("sed -ne '1e git push origin main' f", &["sed"], &[], &[], AutoMode, Container, ASK),
    ("sed --expr='1e id' f", &["sed"], &[], &[], AutoMode, Container, ASK),
    ("sed -n -e 's/a/b/' -e '2e id' f", &["sed"], &[], &[], AutoMode, Container, ASK),
    ("sed --fi=x.sed f", &["sed"], &[], &[], AutoMode, Container, ASK),
    ("sed --frob 's/a/b/' f", &["sed"], &[], &[], AutoMode, Container, ASK),
    ("perl -le 'system(\"git push origin main\")'", &["perl"], &[], &[], AutoMode, Container, ASK),
    ("perl -MPOSIX -we 'POSIX::system(1)'", &["perl"], &[], &[], AutoMode, Container, ASK),
    ("python3 -Sc 'import os; os.system(\"x\")'", &["python3"], &[], &[], AutoMode, Container, ASK),
    ("node --eval='require(\"child_process\").execSync(\"x\")'", &["node"], &[], &[], AutoMode, Container, ASK),
    ("ruby -we 'system(1)'", &["ruby"], &[], &[], AutoMode, Container, ASK),
    ("php -d auto_prepend_file=x.php -r 1", &["php"], &[], &[], AutoMode, Container, ASK),
    ("python3 -Z x.py", &["python3"], &[], &[], AutoMode, Container, ASK),
    ("vim '-c:!git push origin main' f", &["vim"], &[], &[], AutoMode, Container, ASK),
    ("vim -Rc ':!id' f", &["vim"], &[], &[], AutoMode, Container, ASK),
    ("vim --cm ':!id' f", &["vim"], &[], &[], AutoMode, Container, ASK),
    ("git fetch --upload-p='sh -c x' origin", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git rebase -fx 'git push origin main' HEAD~1", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git rebase --exe 'rm x' HEAD~1", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git -C . clone -uevil url", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git log --ext -p", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git rebase -i HEAD~3", &["git"], &[], &[], Manual, Container, AUTO),
    ("git fetch --prune origin", &["git"], &[], &[], Manual, Container, AUTO),
    ("git grep -n -e TODO", &["git"], &[], &[], Manual, Container, AUTO),
    ("gawk --sou='BEGIN{system(\"id\")}'", &["gawk"], &[], &[], AutoMode, Container, ASK),
    ("gawk -lext 'BEGIN{}'", &["gawk"], &[], &[], AutoMode, Container, ASK),
    ("awk --frob '{print}' f", &["awk"], &[], &[], AutoMode, Container, ASK),
    ("rg --pr=./evil x", &["rg"], &[], &[], AutoMode, Container, ASK),
    ("sort --compress-p=./evil f", &["sort"], &[], &[], AutoMode, Container, ASK),
    ("rsync --rs='sh -c x' a b", &["rsync"], &[], &[], AutoMode, Container, ASK),
    ("rsync -avze 'sh -c x' a b", &["rsync"], &[], &[], AutoMode, Container, ASK),
    ("man -aPevil ls", &["man"], &[], &[], AutoMode, Container, ASK),
    ("gdb --ev='shell id' ./a.out", &["gdb"], &[], &[], AutoMode, Container, ASK),
    ("gdb -eval-command='shell id' ./a.out", &["gdb"], &[], &[], AutoMode, Container, ASK),
    ("awk -F ',' '{print $NF}' notes.txt", &["awk"], &[], &[], Manual, Container, AUTO),
    ("awk -v n=2 'NR==n' notes.txt", &["awk"], &[], &[], Manual, Container, AUTO),
    ("rg -n --pretty TODO src", &["rg"], &[], &[], Manual, Container, AUTO),
    ("sort -k2 -t, notes.txt", &["sort"], &[], &[], Manual, Container, AUTO),
    ("rsync -av src/ /work/dst/", &["rsync"], &[], &[], Manual, Container, AUTO),
    ("python3 -c 'import sys; print(sys.version)'", &["python3"], &[], &[], Manual, Container, AUTO),
    ("python3 -m pytest -q tests/", &["python3"], &[], &[], Manual, Container, AUTO),
    ("node --no-lazy --inspect-brk server.js", &["node"], &[], &[], Manual, Container, AUTO),
    ("node --print 'process.versions'", &["node"], &[], &[], Manual, Container, AUTO),
    ("perl -ne 'print if /x/' notes.txt", &["perl"], &[], &[], Manual, Container, AUTO),
    // The vi family reads its commands from stdin when it is not a terminal
    // (`:!cmd` runs a shell command): POLICY.md amendment point 5.
    ("vim -R notes.txt", &["vim"], &[], &[], Manual, Container, ASK),
    ("tar -czf out.tgz src", &["tar"], &[], &[], Manual, Container, AUTO),
    ("tar -xf a.tar --to-stdout", &["tar"], &[], &[], Manual, Container, AUTO),
    ("sed -n 1,5p notes.txt", &["sed"], &[], &[], Manual, Container, AUTO),
    ("sed -i.bak 's/a/b/' notes.txt", &["sed"], &[], &[], Manual, Container, AUTO),
    ("sed --in-place '/^$/d' notes.txt", &["sed"], &[], &[], Manual, Container, AUTO),
    // Global options before a subcommand; aliases by meaning.
    ("npm --prefix . exec -c 'git push origin main'", &["npm", "git"], &[], &[], AutoMode, Container, ASK),
    ("npm --prefix . exec -c 'rm x'", &["npm"], &[], &["rm"], AutoMode, Container, DENY),
    ("npm pub", &["npm"], &[], &[], AutoMode, Container, ASK),
    ("npm publis --tag next", &["npm"], &[], &[], AutoMode, Container, ASK),
    ("npm -C web pub", &["npm"], &[], &[], AutoMode, Container, ASK),
    ("npm i left-pad", &["npm"], &[], &["npm install"], AutoMode, Container, DENY),
    ("npm rum build", &["npm"], &["npm run build"], &[], AutoMode, Container, ASK),
    ("npm run-script build", &["npm"], &["npm run *"], &[], AutoMode, Container, ASK),
    ("npm run build", &["npm"], &["npm run *"], &[], AutoMode, Container, ASK),
    ("npm install left-pad", &["npm"], &[], &["npm i *"], AutoMode, Container, DENY),
    ("npm --prefix . i left-pad", &["npm"], &[], &["npm i *-pad"], AutoMode, Container, DENY),
    ("git -C . push origin main --force", &["git"], &[], &["git push * --force"], AutoMode, Container, DENY),
    ("kubectl --context prod get pods", &["kubectl"], &[], &["kubectl --context prod"], AutoMode, Container, DENY),
    ("npm --prefix web test", &["npm"], &["npm --prefix web"], &[], AutoMode, Container, ASK),
    ("npm --weird publish", &["npm"], &[], &[], AutoMode, Container, ASK),
    ("kubectl -v 6 apply -f k8s/", &["kubectl"], &[], &[], AutoMode, Container, ASK),
    ("kubectl --v=6 delete pod x", &["kubectl"], &[], &[], AutoMode, Container, ASK),
    ("pnpm -r exec git push origin main", &["pnpm", "git"], &[], &[], AutoMode, Container, ASK),
    ("pnpm -r exec rm x", &["pnpm"], &[], &["rm"], AutoMode, Container, DENY),
    ("uv --directory . run rm -rf /", &["uv", "rm"], &[], &[], AutoMode, Container, DENY),
    ("cargo +nightly --locked run", &["cargo"], &[], &["cargo run"], AutoMode, Container, DENY),
    ("cargo r", &["cargo"], &[], &["cargo run"], AutoMode, Container, DENY),
    ("helm -n prod del app", &["helm"], &[], &[], AutoMode, Container, ASK),
    ("docker --context x push img", &["docker"], &[], &[], AutoMode, Container, ASK),
    ("gh -R o/r pr merge 1", &["gh"], &[], &[], AutoMode, Container, ASK),
    ("git -C . push origin main", &["git"], &[], &["git push"], AutoMode, Container, DENY),
    ("git --no-pager push origin main", &["git"], &[], &["git push"], AutoMode, Container, DENY),
    ("npm --prefix web test", &["npm"], &[], &[], Manual, Container, AUTO),
    ("npm -w web run build", &["npm"], &[], &[], Manual, Container, AUTO),
    ("npm i", &["npm"], &[], &[], Manual, Container, AUTO),
    ("npm --version", &["npm"], &[], &[], Manual, Container, AUTO),
    ("cargo +nightly --locked build", &["cargo"], &[], &[], Manual, Container, AUTO),
    ("cargo -vv test", &["cargo"], &[], &[], Manual, Container, AUTO),
    ("kubectl -v 6 get pods", &["kubectl"], &[], &[], Manual, Container, AUTO),
    ("git -C . status", &["git"], &[], &[], Manual, Container, AUTO),
    ("gh -R o/r pr view 1", &["gh"], &[], &[], Manual, Container, AUTO),
    ("docker --context x ps", &["docker"], &[], &[], Manual, Container, AUTO),
    ("uv --directory . run pytest", &["uv", "pytest"], &[], &[], Manual, Container, AUTO),
    ("pnpm -r exec tsc", &["pnpm", "tsc"], &[], &[], Manual, Container, AUTO),
    // The host frame reads options the same way.
    ("rm --recu --force ~", &["rm"], &[], &[], AutoMode, Host, DENY),
    ("env --sp='git push origin main'", &["env", "git"], &[], &[], AutoMode, Host, ASK),
    ("timeout 60 cargo test", &["timeout", "cargo"], &[], &[], Manual, Host, AUTO),
    ("npm --prefix web test", &["npm"], &[], &[], Manual, Host, AUTO),
];

/// Where the real program is installed, it decides: each line runs a
/// harmless `echo` through the wrapper's options as the wrapper reads them,
/// and what berth says the wrapper runs must print the same.
#[test]
fn wrappers_read_options_as_the_real_programs_do() {
    use berth_policy::arg::Arg;
    use berth_policy::wrapper::{Unwrap, unwrap};
    use std::process::{Command, Stdio};

    let lock = std::env::temp_dir().join("berth-option-meaning.lock");
    let lock = lock.to_string_lossy().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["env", "--sp=echo a b"],
        vec!["env", "--split-s", "echo a", "b"],
        vec!["env", "-iSecho a"],
        vec!["env", "-0iS", "echo a"],
        vec!["env", "--ch=/", "echo", "a"],
        vec!["env", "-u", "X", "FOO=1", "echo", "a"],
        vec!["env", "-uX", "echo", "a"],
        vec!["env", "--", "echo", "a"],
        vec!["timeout", "--kill", "5", "10", "echo", "a"],
        vec!["timeout", "-sKILL", "10", "echo", "a"],
        vec!["timeout", "--sig=KILL", "10", "echo", "a"],
        vec!["timeout", "-k5", "-v", "10", "echo", "a"],
        vec!["timeout", "--pres", "10", "echo", "a"],
        vec!["nice", "-n5", "echo", "a"],
        vec!["nice", "-5", "echo", "a"],
        vec!["nice", "--adj=1", "echo", "a"],
        vec!["stdbuf", "-oL", "-eL", "echo", "a"],
        vec!["stdbuf", "--out=L", "echo", "a"],
        vec!["xargs", "--max-a", "1", "echo", "a"],
        vec!["xargs", "-tn1", "echo", "a"],
        vec!["xargs", "-n1", "-P2", "echo", "a"],
        vec!["flock", "--time", "5", &lock, "echo", "a"],
        vec!["flock", "-w5", &lock, "-c", "echo a"],
        vec!["flock", "-c", "echo a", &lock],
        vec!["ionice", "-c3", "echo", "a"],
        vec!["taskset", "-c", "0", "echo", "a"],
        vec!["prlimit", "--nofile=1024", "echo", "a"],
        vec!["bash", "-ec", "echo a"],
        vec!["bash", "-o", "pipefail", "-c", "echo a"],
        vec!["bash", "+o", "posix", "-c", "echo a"],
        vec!["bash", "-c", "--", "echo a"],
    ];
    let mut failures = Vec::new();
    let mut ran = 0;
    for words in &cases {
        let real = Command::new(words[0])
            .args(&words[1..])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        let Ok(real) = real else { continue };
        if !real.status.success() {
            continue;
        }
        ran += 1;
        let printed = String::from_utf8_lossy(&real.stdout).trim().to_string();
        let argv: Vec<Arg> = words.iter().map(|w| Arg::lit(*w)).collect();
        let judged = match unwrap(&argv) {
            Unwrap::Command { start, .. } => words[start..].join(" "),
            Unwrap::Script { script, .. } => script.text,
            other => format!("{other:?}"),
        };
        let judged_prints = judged.strip_prefix("echo ").unwrap_or(&judged).trim();
        if judged_prints != printed {
            failures.push(format!(
                "{words:?}: the program printed {printed:?}, berth reads `{judged}`"
            ));
        }
    }
    eprintln!("{ran} of {} lines ran with the real programs", cases.len());
    assert!(ran > 0, "no wrapper is installed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `rm`'s options as GNU rm reads them: each spelling runs on a fresh
/// directory holding a file, and whether rm removed it recursively must be
/// what berth reads.
#[test]
fn rm_recursion_as_the_real_rm_reads_it() {
    use berth_policy::arg::Arg;
    use berth_policy::options::programs::rm_is_recursive;
    use std::process::{Command, Stdio};

    let spellings: &[&[&str]] = &[
        &["--recu", "--force"],
        &["--rec"],
        &["-fR"],
        &["-rf"],
        &["-f", "--recursive"],
        &["-f"],
        &["--force"],
        &["-d"],
        &["-v", "-f"],
    ];
    let root = std::env::temp_dir().join(format!("berth-rm-{}", std::process::id()));
    let mut failures = Vec::new();
    for (k, opts) in spellings.iter().enumerate() {
        let dir = root.join(format!("d{k}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), "x").unwrap();
        let dir_s = dir.to_string_lossy().to_string();
        let Ok(_) = Command::new("rm")
            .args(*opts)
            .arg(&dir_s)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
        else {
            return;
        };
        let removed = !dir.exists();
        let mut argv = vec![Arg::lit("rm")];
        argv.extend(opts.iter().map(|o| Arg::lit(*o)));
        argv.push(Arg::lit(dir_s));
        if rm_is_recursive(&argv) != Some(removed) {
            failures.push(format!(
                "rm {opts:?}: removed {removed}, berth reads {:?}",
                rm_is_recursive(&argv)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Interpreters' inline code as they read their options: each line prints
/// a mark from its code; berth must find that code.
#[test]
fn inline_code_as_the_real_interpreters_read_it() {
    use berth_policy::arg::Arg;
    use berth_policy::options::programs::interpreter_code;
    use std::process::{Command, Stdio};

    let cases: &[&[&str]] = &[
        &["perl", "-le", "print q(MARK)"],
        &["perl", "-l0e", "print q(MARK)"],
        &["perl", "-we", "print q(MARK)"],
        &["perl", "-Mstrict", "-e", "print q(MARK)"],
        &["perl", "-ne", "print q(MARK)", "/dev/null"],
        &["python3", "-Sc", "print('MARK')"],
        &["python3", "-c", "print('MARK')", "-x"],
        &["python3", "-Ic", "print('MARK')"],
        &["node", "--eval=console.log('MARK')"],
        &["node", "-e", "console.log('MARK')"],
        &["node", "--no-warnings", "-p", "'MARK'"],
        &["ruby", "-we", "puts 'MARK'"],
        &["php", "-r", "echo 'MARK';"],
    ];
    let mut failures = Vec::new();
    let mut ran = 0;
    for words in cases {
        let Ok(real) = Command::new(words[0])
            .args(&words[1..])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
        else {
            continue;
        };
        if !String::from_utf8_lossy(&real.stdout).contains("MARK") {
            continue;
        }
        ran += 1;
        let argv: Vec<Arg> = words.iter().map(|w| Arg::lit(*w)).collect();
        let found = match interpreter_code(&argv) {
            Some(Ok(code)) => code.iter().any(|c| c.text.contains("MARK")),
            _ => false,
        };
        if !found {
            failures.push(format!("{words:?}: runs code berth does not find"));
        }
    }
    assert!(ran > 0, "no interpreter is installed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
